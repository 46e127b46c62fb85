"""Which topics, partitions and offsets a read wants.

Built from the data source options (``topics``, ``partitions``,
``startOffset``, ``endOffset``) and from the filters Spark pushes down
(``pyspark.sql.datasource.Filter``; reference of the representation in
PySpark's ``datasource.py``), and used at three depths:

* planning: partition folders and segment files outside the selection are
  never opened (a segment covers [its base offset, the next one's));
* reading a segment: the walk starts at the offset index entry for the
  lowest offset wanted and stops at the first batch past the highest;
* rows: each record is kept only if it matches, so a pushed filter is
  handled exactly and Spark need not evaluate it again.

Supported filters (anything else is left to Spark): ``topic`` =, IN;
``partition`` and ``offset`` =, IN, <, <=, >, >=. The data source's
``batches`` and ``index`` levels have no ``offset`` column: only topic and
partition filters are taken there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

INT_COLUMNS = ("partition", "offset")


@dataclass(frozen=True, slots=True)
class Range:
    """Integers in ``[low, high)`` (None: unbounded) and, if given, in ``only``."""

    low: int | None = None
    high: int | None = None
    only: frozenset[int] | None = None

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        if self.low is not None and value < self.low:
            return False
        if self.high is not None and value >= self.high:
            return False
        return self.only is None or value in self.only

    @property
    def unbounded(self) -> bool:
        return self.low is None and self.high is None and self.only is None

    @property
    def empty(self) -> bool:
        if self.only is not None and not self._kept():
            return True
        return self.low is not None and self.high is not None and self.low >= self.high

    def _kept(self) -> list[int]:
        return [v for v in self.only or () if v in self]

    def effective_low(self) -> int | None:
        """Smallest value that can match (None: unbounded)."""
        if self.only is not None:
            kept = self._kept()
            return min(kept) if kept else self.low
        return self.low

    def effective_high(self) -> int | None:
        """One past the largest value that can match (None: unbounded)."""
        if self.only is not None:
            kept = self._kept()
            return max(kept) + 1 if kept else self.high
        return self.high

    def at_least(self, value: int) -> Range:
        return replace(self, low=value if self.low is None else max(self.low, value))

    def below(self, value: int) -> Range:
        return replace(self, high=value if self.high is None else min(self.high, value))

    def among(self, values: Iterable[int]) -> Range:
        wanted = frozenset(values)
        return replace(self, only=wanted if self.only is None else self.only & wanted)


@dataclass(frozen=True, slots=True)
class Selection:
    topics: frozenset[str] | None = None
    partitions: Range = Range()
    offsets: Range = Range()

    def wants_topic(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    def wants_partition(self, topic: str, partition: int) -> bool:
        return self.wants_topic(topic) and partition in self.partitions

    def wants_offset(self, offset: int | None) -> bool:
        """SQL semantics: a null offset (an error row) matches no offset predicate."""
        if self.offsets.unbounded:
            return True
        return offset is not None and offset in self.offsets

    @property
    def nothing(self) -> bool:
        return (
            (self.topics is not None and not self.topics)
            or self.partitions.empty
            or self.offsets.empty
        )

    def with_topics(self, topics: Iterable[str]) -> Selection:
        wanted = frozenset(topics)
        return replace(self, topics=wanted if self.topics is None else self.topics & wanted)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def from_options(options: Mapping[str, str]) -> Selection:
    """``topics`` / ``partitions``: comma-separated lists; ``startOffset``
    (inclusive) and ``endOffset`` (exclusive). Keys are case-insensitive."""
    lowered = {k.lower(): v for k, v in options.items()}
    selection = Selection()
    topics = lowered.get("topics")
    if topics:
        selection = selection.with_topics(t.strip() for t in topics.split(",") if t.strip())
    partitions = lowered.get("partitions")
    if partitions:
        selection = replace(
            selection,
            partitions=selection.partitions.among(
                int(p) for p in partitions.split(",") if p.strip()
            ),
        )
    start = lowered.get("startoffset")
    if start:
        selection = replace(selection, offsets=selection.offsets.at_least(int(start)))
    end = lowered.get("endoffset")
    if end:
        selection = replace(selection, offsets=selection.offsets.below(int(end)))
    return selection


def apply_filter(selection: Selection, flt: Any, columns: Iterable[str]) -> Selection | None:
    """``selection`` narrowed by one pushed filter, or None when the filter is
    not one this reader handles (Spark then evaluates it)."""
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        LessThan,
        LessThanOrEqual,
    )

    attribute = getattr(flt, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None
    column = attribute[0]
    if column not in columns:
        return None
    if column == "topic":
        if isinstance(flt, EqualTo) and isinstance(flt.value, str):
            return selection.with_topics([flt.value])
        if isinstance(flt, In) and all(isinstance(v, str) for v in flt.value):
            return selection.with_topics(flt.value)
        return None
    if column not in INT_COLUMNS:
        return None
    current: Range = selection.partitions if column == "partition" else selection.offsets
    narrowed: Range | None = None
    if isinstance(flt, In):
        if all(_is_int(v) for v in flt.value):
            narrowed = current.among(flt.value)
    elif _is_int(getattr(flt, "value", None)):
        value: int = flt.value
        if isinstance(flt, EqualTo):
            narrowed = current.among([value])
        elif isinstance(flt, GreaterThan):
            narrowed = current.at_least(value + 1)
        elif isinstance(flt, GreaterThanOrEqual):
            narrowed = current.at_least(value)
        elif isinstance(flt, LessThan):
            narrowed = current.below(value)
        elif isinstance(flt, LessThanOrEqual):
            narrowed = current.below(value + 1)
    if narrowed is None:
        return None
    if column == "partition":
        return replace(selection, partitions=narrowed)
    return replace(selection, offsets=narrowed)
