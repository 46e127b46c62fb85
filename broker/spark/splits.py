"""Cutting the selected segments into input partitions (one Spark task each).

One split per segment file, from its first byte to its end, except:

* an offset filter with a lower bound starts the split at the offset index
  entry for that offset (``OffsetIndex.lookup``: the largest entry whose
  offset is <= the target), so the batches before it are
  never read;
* a segment larger than ``max_bytes`` is cut at batch boundaries taken from
  its offset index: the first index position at least ``max_bytes`` past the
  previous cut. Every position used is checked first (a whole entry of a
  known magic with a matching CRC starts there, and for a lookup its last
  offset is not past the entry's): an index that lies costs speed, never
  records.

A split reads the entries that *start* in ``[start, stop)``; the last entry
may run past ``stop``, the next split starting exactly where it ends.

The index level (``index_check``) reads headers and index files only: one
split per partition folder (:class:`FolderSplit`) rather than per file.

Small splits then share tasks (:func:`pack`), as Spark's file sources pack
small files (``FilePartition.getFilePartitions``): with hundreds of small
segments a task per segment costs more than the reading. Each split counts
its bytes plus an open cost (``openCostInBytes``, 4 MiB as
``spark.sql.files.openCostInBytes``); a task takes splits in log order until
the next would pass the target (:func:`pack_target`, Spark's
``FilePartition.maxSplitBytes``: ``maxPartitionBytes``, or less when the
bytes spread over ``minPartitions`` tasks come to less, never below the open
cost). ``packBytes`` sets the target itself; ``packBytes=0``: one task per
split.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.records.batch import MAGIC_V2
from broker.records.buffers import ReadableBuffer
from broker.records.entries import Entry, summarize
from broker.spark.index_check import load_offset_index
from broker.spark.layout import SegmentFile
from broker.spark.segment_scan import SegmentBytes, is_plausible_start
from broker.spark.selection import Selection

DEFAULT_MAX_SPLIT_BYTES = 128 * 1024 * 1024
#: what opening one more split costs, in bytes of reading (spark.sql.files.openCostInBytes)
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SegmentSplit:
    """Entries of ``segment`` starting in ``[start, stop)`` (stop None: to the end)."""

    segment: SegmentFile
    start: int = 0
    stop: int | None = None


@dataclass(frozen=True, slots=True)
class FolderSplit:
    """Whole segments of one partition folder or, packed, of several (the
    index level: checking indexes reads headers only, so one task per folder
    rather than per file)."""

    segments: tuple[SegmentFile, ...]


@dataclass(frozen=True, slots=True)
class PackedSplit:
    """Several small splits read by one task, one after the other (``pack``)."""

    parts: tuple[SegmentSplit, ...]


def split_size(split: SegmentSplit) -> int:
    end = split.segment.size if split.stop is None else min(split.stop, split.segment.size)
    return max(end - split.start, 0)


def pack_target(sizes: Sequence[int], max_bytes: int, open_cost: int, min_partitions: int) -> int:
    """The size packed tasks aim at (Spark's ``FilePartition.maxSplitBytes``):
    ``max_bytes``, or the bytes (open costs included) spread over
    ``min_partitions`` tasks when that is less, but at least ``open_cost``."""
    total = sum(sizes) + open_cost * len(sizes)
    per_task = total // max(min_partitions, 1)
    return max(min(max_bytes, per_task), open_cost, 1)


def pack(
    splits: Sequence[SegmentSplit], pack_bytes: int, open_cost: int = 0
) -> list[SegmentSplit | PackedSplit]:
    """Splits gathered, in order, into tasks of about ``pack_bytes``, each
    split counting its bytes plus ``open_cost`` (Spark's
    ``FilePartition.getFilePartitions``: a task is closed when the next split
    would take it past ``pack_bytes``); a split of ``pack_bytes`` or more
    stays alone. ``pack_bytes`` 0: one task per split."""
    if pack_bytes <= 0:
        return list(splits)
    out: list[SegmentSplit | PackedSplit] = []
    group: list[SegmentSplit] = []
    total = 0

    def close() -> None:
        if len(group) == 1:
            out.append(group[0])
        elif group:
            out.append(PackedSplit(tuple(group)))
        group.clear()

    for split in splits:
        size = split_size(split)
        if size >= pack_bytes:
            close()
            total = 0
            out.append(split)
            continue
        if group and total + size > pack_bytes:
            close()
            total = 0
        group.append(split)
        total += size + open_cost
    close()
    return out


def _entry_summary(buf: ReadableBuffer, pos: int) -> tuple[int, int | None, int]:
    """(magic, base offset or None, last offset) of the plausible entry at ``pos``."""
    size = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True) + 12
    magic = buf[pos + 16]
    s = summarize(buf, Entry(pos, size, magic, 0))
    return magic, s.base_offset, s.last_offset


def lookup_start(
    buf: ReadableBuffer, file_size: int, entries: Sequence[tuple[int, int]], target: int
) -> int:
    """Where a scan for ``target`` may start: the position of the largest
    trustworthy index entry whose offset is <= target, else 0."""
    offsets = [o for o, _ in entries]
    slot = bisect.bisect_right(offsets, target) - 1
    while slot >= 0:
        offset, position = entries[slot]
        if is_plausible_start(buf, position, file_size):
            _magic, _base, last = _entry_summary(buf, position)
            if last <= offset:
                return position
        slot -= 1
    return 0


def plan_segment(segment: SegmentFile, selection: Selection, max_bytes: int) -> list[SegmentSplit]:
    """The splits of one segment that may hold selected offsets."""
    low = selection.offsets.effective_low()
    high = selection.offsets.effective_high()
    if segment.size == 0:
        return [SegmentSplit(segment)]
    needs_index = (low is not None and low > segment.base_offset) or segment.size > max_bytes
    if not needs_index:
        return [SegmentSplit(segment)]
    entries = load_offset_index(segment.offset_index_path, segment.base_offset).entries
    if not entries:
        return [SegmentSplit(segment)]
    with SegmentBytes(segment.path) as data:
        buf = data.buf
        view = memoryview(buf)
        try:
            start = 0
            if low is not None and low > segment.base_offset:
                start = lookup_start(view, data.size, entries, low)
            cuts = [start]
            positions = sorted({p for _, p in entries if p > start})
            i = 0
            while i < len(positions):
                wanted = cuts[-1] + max_bytes
                i = bisect.bisect_left(positions, wanted, lo=i)
                while i < len(positions) and not is_plausible_start(view, positions[i], data.size):
                    i += 1
                if i == len(positions):
                    break
                position = positions[i]
                magic, base, _last = _entry_summary(view, position)
                if high is not None and magic == MAGIC_V2 and base is not None and base >= high:
                    # every entry from here on holds offsets >= high
                    return _splits(segment, cuts, stop=position)
                cuts.append(position)
                i += 1
        finally:
            view.release()
    return _splits(segment, cuts, stop=None)


def _splits(segment: SegmentFile, cuts: list[int], stop: int | None) -> list[SegmentSplit]:
    bounds: list[int | None] = [*cuts[1:], stop]
    return [SegmentSplit(segment, begin, end) for begin, end in zip(cuts, bounds, strict=True)]


def plan(
    segments: Sequence[SegmentFile],
    selection: Selection,
    max_bytes: int = DEFAULT_MAX_SPLIT_BYTES,
) -> list[SegmentSplit]:
    """Splits of every segment the selection may need, in segment order.

    See :func:`plan_folders` for the index level.
    """
    if selection.nothing:
        return []
    low = selection.offsets.effective_low()
    high = selection.offsets.effective_high()
    out: list[SegmentSplit] = []
    for segment in segments:
        if not selection.wants_partition(segment.topic, segment.partition):
            continue
        if not segment.may_hold(low, high):
            continue
        out.extend(plan_segment(segment, selection, max_bytes))
    return out


def folder_groups(segments: Sequence[SegmentFile], selection: Selection) -> list[list[SegmentFile]]:
    """The segments of each partition folder the selection wants, folder by folder."""
    if selection.nothing:
        return []
    folders: dict[str, list[SegmentFile]] = {}
    for segment in segments:
        if selection.wants_partition(segment.topic, segment.partition):
            folders.setdefault(str(Path(segment.path).parent), []).append(segment)
    return list(folders.values())


def plan_folders(
    segments: Sequence[SegmentFile],
    selection: Selection,
    pack_bytes: int = 0,
    open_cost: int = 0,
) -> list[FolderSplit]:
    """One split per partition folder the selection wants, every segment
    whole; with ``pack_bytes``, folders share splits as :func:`pack` packs
    segments (a folder counts its bytes plus ``open_cost`` per segment)."""
    out: list[FolderSplit] = []
    group: list[SegmentFile] = []
    total = 0
    for found in folder_groups(segments, selection):
        size = sum(s.size for s in found)
        if group and (pack_bytes <= 0 or total + size > pack_bytes):
            out.append(FolderSplit(tuple(group)))
            group, total = [], 0
        group.extend(found)
        total += size + open_cost * len(found)
    if group:
        out.append(FolderSplit(tuple(group)))
    return out
