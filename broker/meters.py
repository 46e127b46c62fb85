"""Counters and histograms cheap enough for the request path.

prometheus_client's ``Counter.inc`` and ``Histogram.observe`` take a lock per
value and walk the buckets in Python, so Kafka's eight request histograms
plus a few counters were a large share of the whole produce path for a small
batch (docs/performance.md, "Figures moved from the code"). The broker updates
these meters from one thread only (the event loop's), so they need no lock:
an ``inc`` is a float addition, an ``observe`` a C ``bisect`` into the bucket
list, several times cheaper. ``broker/metrics.py`` exposes them through a collector
under the same names, types and units as prometheus_client would.

Not thread-safe by design: anything updated from other threads (the log
flush timer, which fsync worker threads feed) uses prometheus_client's own
locked metrics.

Histogram buckets follow Prometheus' ``le`` rule: a value goes into the first
bucket whose upper bound is >= the value; above the last bound, into +Inf.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator


class Counter:
    """A monotonically increasing value."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount


class Histogram:
    """Counts per bucket (not cumulative) and the sum of observed values."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last slot is +Inf
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount

    def cumulative(self) -> list[int]:
        out = []
        running = 0
        for c in self.counts:
            running += c
            out.append(running)
        return out


class CounterFamily:
    """A counter with labels; children are created on first use and kept."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._children: dict[tuple[str, ...], Counter] = {}
        if not labelnames:
            self._children[()] = Counter()

    def labels(self, *values: str) -> Counter:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
            child = self._children[values] = Counter()
        return child

    def inc(self, amount: float = 1) -> None:
        """For a family without labels."""
        self._children[()].inc(amount)

    def remove(self, *values: str) -> None:
        self._children.pop(values, None)

    def samples(self) -> Iterator[tuple[tuple[str, ...], float]]:
        for values, child in list(self._children.items()):
            yield values, child.value


class HistogramFamily:
    """A histogram with labels; children are created on first use and kept."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        buckets: tuple[float, ...],
    ) -> None:
        if list(buckets) != sorted(buckets):
            raise ValueError(f"{name}: buckets must be increasing")
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.buckets = buckets
        self._children: dict[tuple[str, ...], Histogram] = {}

    def labels(self, *values: str) -> Histogram:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
            child = self._children[values] = Histogram(self.buckets)
        return child

    def remove(self, *values: str) -> None:
        self._children.pop(values, None)

    def samples(self) -> Iterator[tuple[tuple[str, ...], list[int], float]]:
        for values, child in list(self._children.items()):
            yield values, child.cumulative(), child.sum
