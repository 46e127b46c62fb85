"""The time index ``NNNNNNNNNNNNNNNNNNNN.timeindex`` (``TimeIndex.java``).

A sparse map from timestamps to offsets::

    entry (12 bytes, big-endian)
      Timestamp      => Int64   max timestamp seen up to and including ...
      RelativeOffset => Int32   ... the batch ending at this offset (minus base offset)

Timestamps strictly increase (an entry is only added when the timestamp is
greater than the last one, so a segment of v0 batches keeps an empty time
index); offsets never decrease. The last slot is reserved for the entry
written when the segment stops being active, so the index reports "full"
one entry early. ``lookup`` returns the largest entry <= the target
timestamp, or (-1, base offset).
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from broker.log.errors import (
    CorruptIndexError,
    IndexFullError,
    IndexTimestampError,
    InvalidOffsetError,
)
from broker.log.held_field import HeldField
from broker.log.index import AbstractIndex, IndexEntry
from broker.log.results import TimestampOffset

NO_TIMESTAMP = -1

_ENTRY = struct.Struct(">qi")


class TimeIndex(AbstractIndex):
    """Timestamp -> offset, 12-byte entries (``TimeIndex.java``)."""

    __slots__ = ("_own_last",)
    ENTRY_SIZE = 12

    # ---- append state (held by the active segment's append owner while attached) ----
    _mm = HeldField[mmap.mmap | None]("_own_mm", "ti_mm")
    _entries = HeldField[int]("_own_entries", "ti_entries")
    _max_entries = HeldField[int]("_own_max_entries", "ti_max_entries")
    _last = HeldField[TimestampOffset]("_own_last", "ti_last")

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last = self._last_entry_from_file()

    def _parse(self, mm: mmap.mmap, slot: int) -> IndexEntry:
        timestamp, relative = _ENTRY.unpack_from(mm, slot * 12)
        return IndexEntry(timestamp, self.base_offset + relative)

    def _last_entry_from_file(self) -> TimestampOffset:
        if self._entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self._entries - 1)

    def _after_truncate(self) -> None:
        self._last = self._last_entry_from_file()

    def is_full(self) -> bool:
        # the last slot is kept for the roll / close entry
        return self._entries >= self._max_entries - 1

    def last_entry(self) -> TimestampOffset:
        return self._last

    def entry(self, n: int) -> TimestampOffset:
        if n >= self._entries or n < 0:
            raise IndexError(
                f"Attempt to fetch the {n}th entry from time index {self.path} "
                f"which has size {self._entries}"
            )
        timestamp, relative = _ENTRY.unpack_from(self._buffer(), n * 12)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= target, else (-1, base offset)."""
        self._check_open()
        slot = self.largest_lower_bound_slot(target_timestamp)
        if slot == -1:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is greater than the last one.

        An equal offset with an equal timestamp is the roll/close entry written
        twice and is ignored; a smaller offset or timestamp is a bug. (The active
        segment's appends write their entries through its append owner,
        ``broker.log.active_segment``.)
        """
        self._check_open()
        if not skip_full_check and self.is_full():
            raise IndexFullError(
                f"Attempt to append to a full time index (size = {self._entries})."
            )
        last = self._last
        if self._entries != 0 and offset < last.offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than "
                f"the last offset appended ({last.offset}) to {self.path}"
            )
        if self._entries != 0 and timestamp < last.timestamp:
            raise IndexTimestampError(
                f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger "
                f"than the last timestamp appended ({last.timestamp}) to {self.path}"
            )
        if timestamp > last.timestamp:
            _ENTRY.pack_into(
                self._buffer(), self._entries * 12, timestamp, self.relative_offset(offset)
            )
            self._entries += 1
            self._last = TimestampOffset(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        self._check_open()
        slot = self.largest_lower_bound_slot(offset, by_value=True)
        if slot < 0:
            new_entries = 0
        elif self.entry(slot).offset == offset:
            new_entries = slot
        else:
            new_entries = slot + 1
        self._truncate_to_entries(new_entries)

    def sanity_check(self) -> None:
        last = self._last
        if self._entries != 0 and last.timestamp < self.entry(0).timestamp:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but "
                f"the last timestamp is {last.timestamp} which is less than the first timestamp "
                f"{self.entry(0).timestamp}"
            )
        if self._entries != 0 and last.offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but "
                f"the last offset is {last.offset} which is less than the first offset "
                f"{self.base_offset}"
            )
        if self._length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self._length} bytes which is "
                f"neither positive nor a multiple of {self.ENTRY_SIZE}"
            )

    def check_entries_increasing(self) -> None:
        """Every timestamp greater and every offset not smaller than the previous."""
        if self._entries == 0:
            return
        mm = self._buffer()
        prev_ts, prev_rel = None, -1
        for ts, rel in _ENTRY.iter_unpack(mm[: self._entries * 12]):
            if (prev_ts is not None and ts <= prev_ts) or rel < prev_rel:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has entries out of "
                    f"order (timestamp {ts}, relative offset {rel})"
                )
            prev_ts, prev_rel = ts, rel


def check_time_index_file(path: Path, base_offset: int) -> None:
    """``TimeIndex.sanityCheck`` on the file itself (no mapping)."""
    length = os.path.getsize(path)
    if length % TimeIndex.ENTRY_SIZE != 0:
        raise CorruptIndexError(
            f"Time index file {path} is corrupt, found {length} bytes which is neither positive "
            f"nor a multiple of {TimeIndex.ENTRY_SIZE}"
        )
    if length == 0:
        return
    with open(path, "rb") as f:
        first_ts, _first_rel = _ENTRY.unpack(f.read(TimeIndex.ENTRY_SIZE))
        f.seek(length - TimeIndex.ENTRY_SIZE)
        last_ts, last_rel = _ENTRY.unpack(f.read(TimeIndex.ENTRY_SIZE))
    if last_ts < first_ts:
        raise CorruptIndexError(
            f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
            f"timestamp is {last_ts} which is less than the first timestamp {first_ts}"
        )
    if last_rel < 0:
        raise CorruptIndexError(
            f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
            f"offset is {base_offset + last_rel} which is less than the first offset {base_offset}"
        )
