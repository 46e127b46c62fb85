"""The ordered segments of one partition (``LogSegments.java``)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from broker.log.active_segment import ActiveSegment
from broker.log.segment import LogSegment


class LogSegments:
    """Segments by base offset, ascending; the last one is the active segment.

    A log's list is followed by its append owner (:meth:`follow`): whenever
    the last segment changes, the owner takes over the new active segment's
    state (and hands the old one's back)."""

    __slots__ = ("_appender", "_bases", "_segments")

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._segments: list[LogSegment] = []
        self._appender: ActiveSegment | None = None

    def follow(self, appender: ActiveSegment) -> None:
        """``appender`` owns the state of the active segment from now on."""
        self._appender = appender
        self._active_changed()

    def _active_changed(self) -> None:
        appender = self._appender
        if appender is not None:
            appender.attach(self._segments[-1] if self._segments else None)

    def add(self, segment: LogSegment) -> LogSegment:
        i = bisect.bisect_left(self._bases, segment.base_offset)
        if i < len(self._bases) and self._bases[i] == segment.base_offset:
            self._segments[i] = segment
        else:
            self._bases.insert(i, segment.base_offset)
            self._segments.insert(i, segment)
        self._active_changed()
        return segment

    def remove(self, base_offset: int) -> None:
        i = bisect.bisect_left(self._bases, base_offset)
        if i < len(self._bases) and self._bases[i] == base_offset:
            del self._bases[i]
            del self._segments[i]
            self._active_changed()

    def clear(self) -> None:
        self._bases.clear()
        self._segments.clear()
        self._active_changed()

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(list(self._segments))

    def __bool__(self) -> bool:
        return bool(self._segments)

    def __contains__(self, base_offset: object) -> bool:
        return base_offset in self._bases

    @property
    def base_offsets(self) -> list[int]:
        return list(self._bases)

    def get(self, base_offset: int) -> LogSegment | None:
        i = bisect.bisect_left(self._bases, base_offset)
        if i < len(self._bases) and self._bases[i] == base_offset:
            return self._segments[i]
        return None

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def active(self) -> LogSegment:
        """The active segment (a method: cheaper than the property on the append path)."""
        return self._segments[-1]

    @property
    def first_segment(self) -> LogSegment | None:
        return self._segments[0] if self._segments else None

    @property
    def last_segment(self) -> LogSegment | None:
        return self._segments[-1] if self._segments else None

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= ``offset``."""
        i = bisect.bisect_right(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_right(self._bases, offset)
        return self._segments[i] if i < len(self._segments) else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_left(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    def values(self, start: int, end: int) -> list[LogSegment]:
        """Segments that may hold offsets in [start, end): from the floor
        segment of ``start`` up to those with base < ``end``."""
        if start == end:
            return []
        i = bisect.bisect_right(self._bases, start) - 1
        i = max(i, 0)
        j = bisect.bisect_left(self._bases, end)
        return self._segments[i:j]

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)
