"""The offset index ``NNNNNNNNNNNNNNNNNNNN.index`` (``OffsetIndex.java``).

A sparse map from offsets to positions in the segment's ``.log``::

    entry (8 bytes, big-endian)
      RelativeOffset => Int32   offset - base offset of the segment
      Position       => Int32   byte position in the .log where the append starts

Entry (O, P): the append whose *last* offset is O starts at byte P, so a
scan for any offset >= O may start at P. Offsets strictly increase.
``lookup`` returns the largest entry <= the target, or (base offset, 0).
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import NamedTuple

from broker.log.errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from broker.log.held_field import HeldField
from broker.log.index import AbstractIndex, IndexEntry

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    """Offset -> file position, 8-byte entries (``OffsetIndex.java``)."""

    __slots__ = ("_own_last_offset",)
    ENTRY_SIZE = 8

    # ---- append state (held by the active segment's append owner while attached) ----
    _mm = HeldField[mmap.mmap | None]("_own_mm", "oi_mm")
    _entries = HeldField[int]("_own_entries", "oi_entries")
    _max_entries = HeldField[int]("_own_max_entries", "oi_max_entries")
    _last_offset = HeldField[int]("_own_last_offset", "oi_last_offset")

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last_offset = self._last_entry().offset

    def _parse(self, mm: mmap.mmap, slot: int) -> IndexEntry:
        relative, position = _ENTRY.unpack_from(mm, slot * 8)
        return IndexEntry(self.base_offset + relative, position)

    def _last_entry(self) -> OffsetPosition:
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(self._entries - 1)

    def _after_truncate(self) -> None:
        self._last_offset = self._last_entry().offset

    @property
    def last_offset(self) -> int:
        return self._last_offset

    def entry(self, n: int) -> OffsetPosition:
        if n >= self._entries or n < 0:
            raise IndexError(
                f"Attempt to fetch the {n}th entry from index {self.path}, "
                f"which has size {self._entries}"
            )
        relative, position = _ENTRY.unpack_from(self._buffer(), n * 8)
        return OffsetPosition(self.base_offset + relative, position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target, else (base offset, 0)."""
        self._check_open()
        slot = self.largest_lower_bound_slot(target_offset)
        if slot == -1:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def fetch_upper_bound_offset(
        self, fetch_offset: OffsetPosition, fetch_size: int
    ) -> OffsetPosition | None:
        """An entry guaranteed to lie past ``fetch_size`` bytes from
        ``fetch_offset.position`` (not necessarily the first such)."""
        self._check_open()
        slot = self.smallest_upper_bound_slot(fetch_offset.position + fetch_size, by_value=True)
        if slot == -1:
            return None
        return self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        """``OffsetIndex.append`` (the active segment's appends write their entries
        through its append owner, ``broker.log.active_segment``, and come here
        only for an entry this refuses)."""
        self._check_open()
        if self.is_full():
            raise IndexFullError(f"Attempt to append to a full index (size = {self._entries}).")
        if self._entries == 0 or offset > self._last_offset:
            _ENTRY.pack_into(
                self._buffer(), self._entries * 8, self.relative_offset(offset), position
            )
            self._entries += 1
            self._last_offset = offset
        else:
            raise InvalidOffsetError(
                f"Attempt to append an offset {offset} to position {self._entries} no larger "
                f"than the last offset appended ({self._last_offset}) to {self.path}"
            )

    def truncate_to(self, offset: int) -> None:
        self._check_open()
        slot = self.largest_lower_bound_slot(offset)
        # no entry <= offset: drop all; an entry for exactly this offset: drop
        # it and everything after; otherwise keep up to the floor entry
        if slot < 0:
            new_entries = 0
        elif self.entry(slot).offset == offset:
            new_entries = slot
        else:
            new_entries = slot + 1
        self._truncate_to_entries(new_entries)

    def sanity_check(self) -> None:
        if self._entries != 0 and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {self.path} has non-zero size but the last "
                f"offset is {self._last_offset} which is less than the base offset "
                f"{self.base_offset}"
            )
        if self._length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self._length} bytes which is "
                f"neither positive nor a multiple of {self.ENTRY_SIZE}"
            )

    def check_entries_increasing(self) -> None:
        """Stricter than Kafka's sanity check: every entry's offset > the
        previous one and positions never decrease (used when we reopen files
        whose trimming we cannot vouch for)."""
        if self._entries == 0:
            return
        mm = self._buffer()
        prev_rel, prev_pos = -1, -1
        for rel, pos in _ENTRY.iter_unpack(mm[: self._entries * 8]):
            if rel <= prev_rel or pos < prev_pos or pos < 0:
                raise CorruptIndexError(
                    f"Corrupt index found, index file {self.path} has entries out of order "
                    f"(relative offset {rel} at position {pos} after {prev_rel} at {prev_pos})"
                )
            prev_rel, prev_pos = rel, pos


def check_offset_index_file(path: Path, base_offset: int, log_size: int) -> None:
    """``OffsetIndex.sanityCheck`` on the file itself (no mapping): length a
    multiple of 8, last offset >= base offset, last position within the log."""
    length = os.path.getsize(path)
    if length % OffsetIndex.ENTRY_SIZE != 0:
        raise CorruptIndexError(
            f"Index file {path} is corrupt, found {length} bytes which is neither positive "
            f"nor a multiple of {OffsetIndex.ENTRY_SIZE}"
        )
    if length == 0:
        return
    with open(path, "rb") as f:
        f.seek(length - OffsetIndex.ENTRY_SIZE)
        relative, position = _ENTRY.unpack(f.read(OffsetIndex.ENTRY_SIZE))
    if relative < 0:
        raise CorruptIndexError(
            f"Corrupt index found, index file {path} has non-zero size but the last offset is "
            f"{base_offset + relative} which is less than the base offset {base_offset}"
        )
    if position < 0 or position > log_size:
        raise CorruptIndexError(
            f"Corrupt index found, index file {path} has its last entry at position {position} "
            f"past the end of the log ({log_size} bytes)"
        )
