"""Timing helpers shared by the benchmarks.

``best_of`` runs a callable repeatedly and keeps the fastest run: on a shared
2-core machine the minimum is the most repeatable estimate of the cost.
``Report.ratio`` prints a measurement next to its same-run baseline and the
goal it is held to, so a reader sees at once whether the goal is met.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


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
