"""One split of one segment turned into Arrow record batches, at each level.

The row layouts are in ``schemas.py``; the reading of damaged files in
``segment_scan.py``. Rows are gathered as tuples in schema order and
transposed into Arrow columns every ``rows_per_batch`` rows, so memory stays
bounded by one chunk whatever the segment's size.

Offset filters (``selection.py``) act on the walk: batches whose last offset
is below the lowest offset wanted are skipped without being decompressed,
and the walk stops at the first batch whose first offset is past the highest
(offsets increase along a segment). :class:`ScanStats` counts what was
framed, decoded and skipped, for tests and for the curious.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES
from broker.spark import schemas
from broker.spark.index_check import (
    BatchExtent,
    check_offset_index,
    check_time_index,
    load_offset_index,
    load_time_index,
)
from broker.spark.segment_scan import (
    DECODE_ERRORS,
    BatchFacts,
    RecordTuple,
    SegmentBytes,
    Span,
    batch_facts,
    codec_name,
    frame,
    header_facts,
    record_tuples,
)
from broker.spark.selection import Selection
from broker.spark.splits import FolderSplit, PackedSplit, SegmentSplit

DEFAULT_ROWS_PER_BATCH = 8192


@dataclass(frozen=True, slots=True)
class ReadOptions:
    verify_crc: bool = True
    values: bool = True
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH


@dataclass(slots=True)
class ScanStats:
    spans: int = 0
    unreadable_spans: int = 0
    decoded_batches: int = 0
    skipped_batches: int = 0
    stopped_early: bool = False
    rows: int = 0
    segments: list[str] = field(default_factory=list)


class _Chunks:
    """Row tuples gathered and handed out as Arrow record batches."""

    def __init__(self, level: str, rows_per_batch: int, stats: ScanStats) -> None:
        import pyarrow as pa

        self._pa = pa
        self.schema = schemas.arrow_schema(level)
        self.rows: list[tuple[Any, ...]] = []
        self.limit = rows_per_batch
        self.stats = stats

    @property
    def full(self) -> bool:
        return len(self.rows) >= self.limit

    def take(self) -> Any:
        pa = self._pa
        rows, self.rows = self.rows, []
        self.stats.rows += len(rows)
        columns = list(zip(*rows, strict=True))
        arrays = [
            pa.array(list(col), type=f.type) for col, f in zip(columns, self.schema, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _spans(split: SegmentSplit, data: SegmentBytes) -> Iterator[Span]:
    index = load_offset_index(split.segment.offset_index_path, split.segment.base_offset)
    positions = sorted({p for _, p in index.entries})
    return frame(data.buf, data.size, split.start, split.stop, positions)


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------


def _record_error_row(
    split: SegmentSplit, facts: BatchFacts, offset: int | None, error: str | None
) -> tuple[Any, ...]:
    seg = split.segment
    return (
        seg.topic,
        seg.partition,
        offset,
        None,
        facts.timestamp_type,
        None,
        None,
        None,
        facts.base_offset,
        facts.last_offset,
        facts.magic,
        None if facts.codec is None else codec_name(facts.codec),
        facts.producer_id,
        facts.producer_epoch,
        facts.base_sequence,
        facts.partition_leader_epoch,
        facts.is_transactional,
        facts.is_control,
        facts.crc_valid,
        seg.path,
        facts.position,
        error,
    )


def read_records(
    split: SegmentSplit,
    selection: Selection,
    options: ReadOptions = ReadOptions(),
    stats: ScanStats | None = None,
) -> Iterator[Any]:
    """Record batches of the ``records`` level for ``split``."""
    stats = stats if stats is not None else ScanStats()
    stats.segments.append(split.segment.path)
    chunks = _Chunks(schemas.LEVEL_RECORDS, options.rows_per_batch, stats)
    seg = split.segment
    low = selection.offsets.effective_low()
    high = selection.offsets.effective_high()
    wanted = selection.offsets.only
    with SegmentBytes(seg.path) as data:
        buf = data.buf
        for span in _spans(split, data):
            stats.spans += 1
            if not span.readable:
                stats.unreadable_spans += 1
                if selection.wants_offset(None):
                    facts = BatchFacts(span.position, span.size)
                    chunks.rows.append(_record_error_row(split, facts, None, span.problem))
            else:
                facts = header_facts(buf, span, options.verify_crc)
                if high is not None and facts.base_offset is not None and facts.base_offset >= high:
                    stats.stopped_early = True
                    break
                if facts.last_offset is not None and (
                    (low is not None and facts.last_offset < low)
                    or (
                        wanted is not None
                        and facts.base_offset is not None
                        and len(wanted) <= 64
                        and not any(facts.base_offset <= v <= facts.last_offset for v in wanted)
                    )
                ):
                    stats.skipped_batches += 1
                    continue
                try:
                    records = record_tuples(
                        buf, span, max_decompressed_bytes=options.max_decompressed_bytes
                    )
                except DECODE_ERRORS as exc:
                    offset = (
                        facts.base_offset if facts.base_offset is not None else facts.last_offset
                    )
                    if selection.wants_offset(offset):
                        chunks.rows.append(
                            _record_error_row(split, facts, offset, f"undecodable batch: {exc}")
                        )
                    continue
                stats.decoded_batches += 1
                if records and facts.base_offset is None:
                    facts.base_offset = records[0][0]  # a legacy wrapper's first offset
                if high is not None and facts.base_offset is not None and facts.base_offset >= high:
                    stats.stopped_early = True
                    break
                _append_records(
                    chunks,
                    split=split,
                    facts=facts,
                    records=records,
                    selection=selection,
                    values=options.values,
                )
            if chunks.full:
                yield chunks.take()
    if chunks.rows:
        yield chunks.take()


def _append_records(
    chunks: _Chunks,
    *,
    split: SegmentSplit,
    facts: BatchFacts,
    records: list[RecordTuple],
    selection: Selection,
    values: bool,
) -> None:
    seg = split.segment
    topic, partition, path = seg.topic, seg.partition, seg.path
    codec = codec_name(facts.codec if facts.codec is not None else 0)
    batch_part = (
        facts.base_offset,
        facts.last_offset,
        facts.magic,
        codec,
        facts.producer_id,
        facts.producer_epoch,
        facts.base_sequence,
        facts.partition_leader_epoch,
        facts.is_transactional,
        facts.is_control,
        facts.crc_valid,
        path,
        facts.position,
        None,
    )
    everything = selection.offsets.unbounded
    append = chunks.rows.append
    for offset, timestamp, ts_type, key, value, headers in records:
        if not everything and not selection.wants_offset(offset):
            continue
        append(
            (
                topic,
                partition,
                offset,
                timestamp,
                ts_type,
                key,
                value if values else None,
                headers,
                *batch_part,
            )
        )


# ---------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------


def read_batches(
    split: SegmentSplit, options: ReadOptions = ReadOptions(), stats: ScanStats | None = None
) -> Iterator[Any]:
    """Record batches of the ``batches`` level for ``split``."""
    stats = stats if stats is not None else ScanStats()
    stats.segments.append(split.segment.path)
    chunks = _Chunks(schemas.LEVEL_BATCHES, options.rows_per_batch, stats)
    seg = split.segment
    with SegmentBytes(seg.path) as data:
        for span in _spans(split, data):
            stats.spans += 1
            if not span.readable:
                stats.unreadable_spans += 1
            facts = batch_facts(
                data.buf,
                span,
                verify_crc=options.verify_crc,
                max_decompressed_bytes=options.max_decompressed_bytes,
            )
            if span.readable and facts.error is None:
                stats.decoded_batches += 1
            chunks.rows.append(
                (
                    seg.topic,
                    seg.partition,
                    seg.log_dir,
                    seg.path,
                    seg.base_offset,
                    facts.position,
                    facts.size,
                    facts.magic,
                    None if facts.codec is None else codec_name(facts.codec),
                    facts.timestamp_type,
                    facts.base_offset,
                    facts.last_offset,
                    facts.record_count,
                    facts.uncompressed_bytes,
                    facts.min_timestamp,
                    facts.max_timestamp,
                    facts.no_timestamp_records,
                    facts.header_max_timestamp,
                    facts.producer_id,
                    facts.producer_epoch,
                    facts.base_sequence,
                    facts.partition_leader_epoch,
                    facts.is_transactional,
                    facts.is_control,
                    facts.crc_valid,
                    facts.error,
                )
            )
            if chunks.full:
                yield chunks.take()
    if chunks.rows:
        yield chunks.take()


# ---------------------------------------------------------------------------
# index
# ---------------------------------------------------------------------------


def batch_extents(split: SegmentSplit) -> tuple[list[BatchExtent], int]:
    """Header facts of every readable entry of the whole segment, and its size."""
    seg = split.segment
    out: list[BatchExtent] = []
    with SegmentBytes(seg.path) as data:
        for span in _spans(SegmentSplit(seg), data):
            if span.readable:
                facts = header_facts(data.buf, span, verify_crc=False)
                assert facts.last_offset is not None and facts.header_max_timestamp is not None
                out.append(
                    BatchExtent(
                        span.position,
                        span.position + span.size,
                        facts.last_offset,
                        facts.header_max_timestamp,
                    )
                )
        return out, data.size


def read_index(
    split: FolderSplit, options: ReadOptions = ReadOptions(), stats: ScanStats | None = None
) -> Iterator[Any]:
    """Record batches of the ``index`` level: every index entry of every
    segment of the folder, checked against its ``.log``."""
    stats = stats if stats is not None else ScanStats()
    chunks = _Chunks(schemas.LEVEL_INDEX, options.rows_per_batch, stats)
    for seg in split.segments:
        stats.segments.append(seg.path)
        extents, log_size = batch_extents(SegmentSplit(seg))
        offset_index = load_offset_index(seg.offset_index_path, seg.base_offset)
        time_index = load_time_index(seg.time_index_path, seg.base_offset)
        findings = [
            *check_offset_index(offset_index, extents, log_size),
            *check_time_index(time_index, extents, segment_is_last=seg.is_last),
        ]
        for f in findings:
            chunks.rows.append(
                (
                    seg.topic,
                    seg.partition,
                    seg.log_dir,
                    seg.path,
                    seg.base_offset,
                    f.index,
                    f.slot,
                    f.offset,
                    f.position,
                    f.timestamp,
                    f.problem,
                    f.mismatch,
                )
            )
            if chunks.full:
                yield chunks.take()
    if chunks.rows:
        yield chunks.take()


def read_split(
    level: str,
    split: SegmentSplit | PackedSplit | FolderSplit,
    selection: Selection,
    options: ReadOptions = ReadOptions(),
    stats: ScanStats | None = None,
) -> Iterator[Any]:
    if isinstance(split, PackedSplit):
        return itertools.chain.from_iterable(
            read_split(level, part, selection, options, stats) for part in split.parts
        )
    if isinstance(split, FolderSplit):
        if level != schemas.LEVEL_INDEX:
            raise ValueError(f"a folder split is read at the index level, not {level!r}")
        return read_index(split, options, stats)
    if level == schemas.LEVEL_RECORDS:
        return read_records(split, selection, options, stats)
    if level == schemas.LEVEL_BATCHES:
        return read_batches(split, options, stats)
    raise ValueError(f"unknown level {level!r}; one of {', '.join(schemas.LEVELS)}")
