"""Timing helpers shared by the benchmarks.

``best_of`` runs a callable repeatedly and keeps the fastest run: on a shared
2-core machine the minimum is the most repeatable estimate of the cost.
``Report.ratio`` prints a measurement next to its same-run baseline and the
goal it is held to, so a reader sees at once whether the goal is met.

Noise. Every measurement kept as the best of several rounds (``best_of``, or
a bench's own rounds passed to ``note_rounds``) also notes how far its
second-best round was from its best: the spread the bench itself saw. The
next ``Report.ratio`` adds up the two largest spreads noted since the
previous figure (its measured side and its baseline) as that figure's noise. A goal whose ratio misses its threshold (the ``>= 0.7x`` or
``<= 1.05x`` in the goal text) by no more than that noise is printed
``[goal missed, within noise +-N%]``; by more, or with no rounds to judge
the noise by, ``[goal MISSED]``. ``python -m bench`` exits 1 only for the
latter (and for benchmarks that fail), listing them at the end.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

DROP_CACHES = "/proc/sys/vm/drop_caches"


def settle() -> str:
    """Start a measured round from the same page-cache state every time (not timed).

    Writes every dirty page back (past ~2 GB of dirty page cache the kernel
    throttles writers), then, where the bench may (root on a machine that
    allows it), drops the clean page cache too. Measured on these VMs: once
    the page cache grows past what earlier rounds had freed (~1.5 GB of
    appends), copying into new page-cache pages got 3-5x slower
    (``copy_folio_from_iter_atomic``; CPU per 1 MB append 0.7 -> 2.2-3.6 ms,
    no dirty pages involved, gone when the cache is dropped between rounds):
    the guest touching memory the host has not backed yet. Without the drop,
    whichever round crosses that line looks several times slower, and a
    ratio depends on which side of it ran first. Returns what was done.
    """
    os.sync()
    try:
        with open(DROP_CACHES, "w") as f:
            f.write("1\n")
    except OSError:
        return "sync"
    return "sync + drop page cache"


#: relative spreads noted since the last figure (see the module docstring)
_pending_noise: list[float] = []
_GOAL = re.compile(r"(>=|<=|>|<)\s*([0-9]*\.?[0-9]+)x")


def note_rounds(values: Iterable[float], *, best: str = "min") -> None:
    """Note the spread of one measurement's rounds: how far the second-best round is
    from the best (``min`` for times, ``max`` for rates), relative to the best. One
    round notes nothing."""
    ordered = sorted(values, reverse=best == "max")
    if len(ordered) < 2 or ordered[0] <= 0:
        return
    _pending_noise.append(abs(ordered[1] - ordered[0]) / ordered[0])


def rounds_of(fn: Callable[[], Any], *, repeat: int = 5, number: int = 1) -> list[float]:
    """Seconds per call of ``fn`` in each of ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return rounds


def best_of(fn: Callable[[], Any], *, repeat: int = 5, number: int = 1) -> float:
    """Seconds per call of ``fn``, the minimum over ``repeat`` rounds of ``number`` calls
    (their spread noted as this measurement's noise)."""
    rounds = rounds_of(fn, repeat=repeat, number=number)
    note_rounds(rounds)
    return min(rounds)


def progress(text: str) -> None:
    """A line inside a long section, so a person sees the bench is moving."""
    print(f"    .. {text}", flush=True)


def verdict(ratio: float, goal: str, ok: bool | None, noise: float | None) -> str:
    """``met``, ``within noise`` or ``MISSED`` (see the module docstring)."""
    if ok is None:
        return ""
    if ok:
        return "met"
    match = _GOAL.search(goal)
    if match is None or noise is None:
        return "MISSED"
    op, threshold = match.group(1), float(match.group(2))
    best_case = ratio * (1 + noise) if op.startswith(">") else ratio * (1 - noise)
    reached = best_case >= threshold if op.startswith(">") else best_case <= threshold
    return "within noise" if reached else "MISSED"


class Report:
    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}
        #: goals missed beyond their noise, "section: name ratio (goal)"
        self.missed: list[str] = []
        self._section = "main"

    def section(self, name: str) -> None:
        self._section = name
        _pending_noise.clear()
        print(f"\n== {name}", flush=True)

    def value(self, name: str, value: float, unit: str) -> None:
        self.results.setdefault(self._section, {})[name] = {"value": value, "unit": unit}
        print(f"  {name:<58} {value:>14,.1f} {unit}", flush=True)

    def ratio(
        self,
        name: str,
        measured: float,
        baseline: float,
        *,
        goal: str = "",
        ok: bool | None = None,
    ) -> float:
        """Print measured/baseline (both in the same unit, e.g. seconds)."""
        r = measured / baseline if baseline else float("inf")
        # the measured side and the baseline: the two largest spreads noted for this figure
        noise = sum(sorted(_pending_noise)[-2:]) if _pending_noise else None
        _pending_noise.clear()
        judged = verdict(r, goal, ok, noise)
        self.results.setdefault(self._section, {})[name] = {
            "ratio": r,
            "measured": measured,
            "baseline": baseline,
            "goal": goal,
            "ok": ok,
            "noise": noise,
            "verdict": judged,
        }
        if judged == "MISSED":
            self.missed.append(f"{self._section}: {name} {r:.2f}x ({goal})")
        shown = {
            "": "",
            "met": "  [goal met]",
            "MISSED": "  [goal MISSED]",
            "within noise": f"  [goal missed, within noise +-{(noise or 0) * 100:.0f}%]",
        }[judged]
        print(f"  {name:<58} {r:>8.2f}x  {goal}{shown}", flush=True)
        return r
