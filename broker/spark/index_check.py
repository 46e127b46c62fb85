"""Checking a segment's ``.index`` and ``.timeindex`` against its ``.log``.

File layouts (``broker/log/offset_index.py``, ``broker/log/time_index.py``)::

    .index      RelativeOffset int32 | Position int32          (8 bytes per entry)
    .timeindex  Timestamp int64      | RelativeOffset int32    (12 bytes per entry)

What an entry must say (``OffsetIndex``/``TimeIndex`` as ``LogSegment.append``
and ``LogSegment.recover`` write them):

* offset entry (O, P): the append whose last offset is O starts at byte P.
  So P is the start of a batch, and O is the last offset of that batch or,
  when one append carried several batches (a produce request of several
  batches, an uncompressed v0/v1 message set), of a later batch that still
  ends before the next entry's position. Offsets strictly increase, and so
  do positions.
* time entry (T, O): T is the largest batch max timestamp seen up to the
  batch holding offset O, and O lies in the batch where T was reached. Kafka
  versions differ on which offset of that batch they write (the record's
  before 3.7, the batch's last offset after: ``LogValidator``'s
  shallowOffsetOfMaxTimestamp, KAFKA-16310), so any offset
  of that batch is accepted. Timestamps strictly increase, offsets never
  decrease. A segment that stopped being active (all but the last of a
  partition) ends with an entry for its max timestamp (``onBecomeInactiveSegment``).

Slots left all-zero at the end of a file are the pre-allocated tail of an
untrimmed index (a running broker's active segment): reported for
information, not as mismatches. A missing index file is reported the same
way (Kafka rebuilds a missing ``.index`` and creates an empty ``.timeindex``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")

OFFSET_INDEX = "offset"
TIME_INDEX = "time"


class BatchExtent(NamedTuple):
    """What the index checks need of one readable batch."""

    position: int
    end: int
    last_offset: int
    max_timestamp: int  # the batch's max timestamp field (-1: none)


@dataclass(frozen=True, slots=True)
class IndexFinding:
    """One index entry and its verdict (``problem`` None: as it should be).

    ``slot`` -1 marks a finding about the file rather than an entry.
    """

    index: str  # OFFSET_INDEX or TIME_INDEX
    slot: int
    offset: int | None
    position: int | None
    timestamp: int | None
    problem: str | None
    mismatch: bool


@dataclass(frozen=True, slots=True)
class IndexFile:
    """Decoded entries of an index file: (key, value) pairs in file order,
    absolute offsets (``.index``: (offset, position); ``.timeindex``:
    (timestamp, offset))."""

    exists: bool
    entries: list[tuple[int, int]]
    zero_tail_slots: int
    stray_bytes: int


def load_offset_index(path: str, base_offset: int) -> IndexFile:
    data = _read(path)
    if data is None:
        return IndexFile(False, [], 0, 0)
    usable = len(data) - len(data) % 8
    raw = list(_OFFSET_ENTRY.iter_unpack(data[:usable]))
    zeros = _zero_tail(raw)
    entries = [(base_offset + rel, pos) for rel, pos in raw[: len(raw) - zeros]]
    return IndexFile(True, entries, zeros, len(data) - usable)


def load_time_index(path: str, base_offset: int) -> IndexFile:
    data = _read(path)
    if data is None:
        return IndexFile(False, [], 0, 0)
    usable = len(data) - len(data) % 12
    raw = list(_TIME_ENTRY.iter_unpack(data[:usable]))
    zeros = _zero_tail(raw)
    entries = [(ts, base_offset + rel) for ts, rel in raw[: len(raw) - zeros]]
    return IndexFile(True, entries, zeros, len(data) - usable)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _zero_tail(raw: Sequence[tuple[int, int]]) -> int:
    n = 0
    for key, value in reversed(raw):
        if key or value:
            break
        n += 1
    return n


def _file_findings(kind: str, name: str, index: IndexFile, entry_size: int) -> list[IndexFinding]:
    out: list[IndexFinding] = []
    if not index.exists:
        out.append(IndexFinding(kind, -1, None, None, None, f"no {name} file", False))
    if index.zero_tail_slots:
        out.append(
            IndexFinding(
                kind,
                -1,
                None,
                None,
                None,
                f"{index.zero_tail_slots} zero-filled slots after the last entry "
                "(pre-allocated, not trimmed)",
                False,
            )
        )
    if index.stray_bytes:
        out.append(
            IndexFinding(
                kind,
                -1,
                None,
                None,
                None,
                f"file length is not a multiple of {entry_size} ({index.stray_bytes} stray bytes)",
                True,
            )
        )
    return out


def check_offset_index(
    index: IndexFile, batches: Sequence[BatchExtent], log_size: int
) -> list[IndexFinding]:
    """A finding per entry of the ``.index`` (see the module docstring)."""
    out = _file_findings(OFFSET_INDEX, ".index", index, 8)
    by_position = {b.position: i for i, b in enumerate(batches)}
    by_last_offset = {b.last_offset: i for i, b in enumerate(batches)}
    entries = index.entries
    for slot, (offset, position) in enumerate(entries):
        problem: str | None = None
        if slot and (offset <= entries[slot - 1][0] or position <= entries[slot - 1][1]):
            prev_offset, prev_position = entries[slot - 1]
            problem = f"out of order: after offset {prev_offset} at position {prev_position}"
        elif position >= log_size:
            problem = f"position {position} is past the end of the log ({log_size} bytes)"
        elif position not in by_position:
            problem = f"position {position} is not the start of a batch"
        else:
            first = by_position[position]
            last_of_first = batches[first].last_offset
            if offset < last_of_first:
                problem = (
                    f"offset {offset} is below the last offset {last_of_first} "
                    f"of the batch at position {position}"
                )
            elif offset > last_of_first:
                j = by_last_offset.get(offset)
                following = entries[slot + 1][1] if slot + 1 < len(entries) else None
                if j is None or j < first:
                    problem = (
                        f"offset {offset} is not the last offset of the batch at position "
                        f"{position} ({last_of_first}) nor of a later batch"
                    )
                elif following is not None and following < batches[j].end:
                    problem = (
                        f"the append of batches {position}..{batches[j].end} it describes "
                        f"overlaps the next entry's position {following}"
                    )
        out.append(
            IndexFinding(OFFSET_INDEX, slot, offset, position, None, problem, problem is not None)
        )
    return out


def check_time_index(
    index: IndexFile, batches: Sequence[BatchExtent], *, segment_is_last: bool
) -> list[IndexFinding]:
    """A finding per entry of the ``.timeindex`` (see the module docstring)."""
    out = _file_findings(TIME_INDEX, ".timeindex", index, 12)
    last_offsets = [b.last_offset for b in batches]
    running: list[int] = []
    top = -1
    for b in batches:
        top = max(top, b.max_timestamp)
        running.append(top)
    entries = index.entries
    for slot, (timestamp, offset) in enumerate(entries):
        problem: str | None = None
        i = bisect.bisect_left(last_offsets, offset)
        if slot and (timestamp <= entries[slot - 1][0] or offset < entries[slot - 1][1]):
            prev_ts, prev_offset = entries[slot - 1]
            problem = f"out of order: after timestamp {prev_ts} at offset {prev_offset}"
        elif i == len(batches):
            last = last_offsets[-1] if last_offsets else None
            problem = f"offset {offset} is past the last batch of the segment (last offset {last})"
        elif timestamp != batches[i].max_timestamp:
            problem = (
                f"timestamp {timestamp} is not the max timestamp {batches[i].max_timestamp} "
                f"of the batch holding offset {offset}"
            )
        elif i and running[i - 1] > timestamp:
            problem = (
                f"timestamp {timestamp} is below the max timestamp {running[i - 1]} "
                "of an earlier batch"
            )
        out.append(
            IndexFinding(TIME_INDEX, slot, offset, None, timestamp, problem, problem is not None)
        )
    segment_max = running[-1] if running else -1
    if not segment_is_last and segment_max >= 0 and (not entries or entries[-1][0] != segment_max):
        found = entries[-1][0] if entries else None
        out.append(
            IndexFinding(
                TIME_INDEX,
                -1,
                None,
                None,
                found,
                f"last entry {found} is not the segment's max timestamp {segment_max} "
                "(the entry written when the segment was rolled)",
                True,
            )
        )
    return out
