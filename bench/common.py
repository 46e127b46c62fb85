"""Timing helpers shared by the benchmarks.

``best_of`` runs a callable repeatedly and keeps the fastest run: on a shared
2-core machine the minimum is the most repeatable estimate of the cost.
``Report.ratio`` prints a measurement next to its same-run baseline and the
goal it is held to, so a reader sees at once whether the goal is met.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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


def best_of(fn: Callable[[], Any], *, repeat: int = 5, number: int = 1) -> float:
    """Seconds per call of ``fn``, the minimum over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


class Report:
    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}
        self._section = "main"

    def section(self, name: str) -> None:
        self._section = name
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
        verdict = "" if ok is None else ("  [goal met]" if ok else "  [goal MISSED]")
        self.results.setdefault(self._section, {})[name] = {
            "ratio": r,
            "measured": measured,
            "baseline": baseline,
            "goal": goal,
            "ok": ok,
        }
        print(f"  {name:<58} {r:>8.2f}x  {goal}{verdict}", flush=True)
        return r
