"""Rewriting one partition's log as v2 batches (what one ``convert`` task does).

The source is read segment by segment (``segment_scan``: damaged bytes are
skipped and reported, never guessed at); the destination is written through
the broker's own ``UnifiedLog``, so its segments, ``.index`` and
``.timeindex`` entries (``LogSegment.append``), producer snapshots
(``ProducerStateManager.java``) and
leader-epoch checkpoint are exactly what the broker itself would write for
those appends. Each source segment starts a destination segment at the same
base offset (the log rolls there), so the files line up one to one.

What each source entry becomes (offsets and timestamps always kept):

* a v2 batch: copied byte for byte; with a target codec different from its
  own (and not a control batch) its records section is decompressed and
  recompressed and the header rewritten around it -- every field kept, a
  new CRC;
* a compressed v0/v1 wrapper: one v2 batch of its inner records, with the
  wrapper's codec (or the target codec);
* consecutive uncompressed v0/v1 entries: grouped into v2 batches of up to
  ``batch_bytes`` of records (an old broker appended them one message set
  at a time but stored each record as its own entry; a v2 batch per record
  would cost 61 bytes of header each). A group ends at a timestamp-type
  change, and a LogAppendTime group at a timestamp change, because a v2
  LogAppendTime batch gives all its records one timestamp.

v2 batches made from v1 keep the timestamp type (CreateTime or
LogAppendTime, as MemoryRecordsBuilder writes a LogAppendTime batch: record
deltas from the original timestamps, the append time as max timestamp).
v0 records have no timestamp: they become CreateTime records with timestamp
-1, as Kafka's own up-conversion writes them (``LogValidator``). Producer
fields are "none" (-1), the partition leader epoch -1: v0/v1 carry neither.

Entries that cannot be framed, fail their CRC or cannot be decoded are left
out and listed in the result (Kafka's recovery would truncate the log
there; here the rest of the log is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from broker.config import TopicConfig
from broker.log.checkpoints import PartitionMetadataFile
from broker.log.files import parse_topic_partition_name
from broker.log.unified_log import UnifiedLog
from broker.records import batch as v2
from broker.records import codecs
from broker.records.batch import (
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
)
from broker.records.builder import assemble_v2_batch, build_v2_batch
from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES
from broker.records.record import Record, SimpleRecord
from broker.spark.index_check import load_offset_index
from broker.spark.layout import partition_segments
from broker.spark.segment_scan import (
    DECODE_ERRORS,
    SegmentBytes,
    Span,
    batch_records,
    frame,
    header_facts,
)

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
DEFAULT_BATCH_BYTES = 16 * 1024


@dataclass
class PartitionResult:
    """What converting one partition did."""

    topic: str
    partition: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    segments: int = 0
    batches_in: int = 0
    legacy_entries_in: int = 0
    batches_out: int = 0
    recompressed_batches: int = 0
    records: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    problems: list[str] = field(default_factory=list)


def conversion_config(index_interval_bytes: int = 4096) -> TopicConfig:
    """Segments never roll by themselves (the source's boundaries decide)."""
    return TopicConfig().with_overrides(
        {
            "segment.bytes": INT_MAX,
            "segment.ms": LONG_MAX,
            "segment.jitter.ms": 0,
            "index.interval.bytes": index_interval_bytes,
        }
    )


@dataclass
class _Group:
    """Consecutive uncompressed legacy records waiting to become one v2 batch."""

    timestamp_type: TimestampType
    records: list[Record] = field(default_factory=list)
    size: int = 0


class _Writer:
    def __init__(
        self, log: UnifiedLog, result: PartitionResult, codec: int | None, batch_bytes: int
    ) -> None:
        self.log = log
        self.result = result
        self.codec = codec
        self.batch_bytes = batch_bytes
        self.group: _Group | None = None

    def append(self, data: bytes | bytearray, records: int) -> None:
        self.log.append(data)
        self.result.batches_out += 1
        self.result.records += records
        self.result.bytes_out += len(data)

    def records_batch(
        self,
        records: Sequence[Record],
        codec: int,
        timestamp_type: TimestampType,
        log_append_time: int = NO_TIMESTAMP,
    ) -> None:
        built = build_v2_batch(
            [SimpleRecord(r.timestamp, r.key, r.value, r.headers) for r in records],
            base_offset=records[0].offset,
            offsets=[r.offset for r in records],
            compression_type=codec,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
        )
        self.append(built.buffer, len(records))

    def flush_group(self) -> None:
        group, self.group = self.group, None
        if group is None or not group.records:
            return
        codec = self.codec if self.codec is not None else CompressionType.NONE
        if group.timestamp_type is TimestampType.LOG_APPEND_TIME:
            self.records_batch(
                group.records, codec, TimestampType.LOG_APPEND_TIME, group.records[0].timestamp
            )
        else:
            self.records_batch(group.records, codec, TimestampType.CREATE_TIME)

    def legacy_single(self, record: Record) -> None:
        ts_type = (
            TimestampType.LOG_APPEND_TIME
            if record.timestamp_type is TimestampType.LOG_APPEND_TIME
            else TimestampType.CREATE_TIME
        )
        group = self.group
        if group is not None and (
            group.timestamp_type is not ts_type
            or group.size >= self.batch_bytes
            or (
                ts_type is TimestampType.LOG_APPEND_TIME
                and group.records[0].timestamp != record.timestamp
            )
            or record.offset <= group.records[-1].offset
        ):
            self.flush_group()
            group = None
        if group is None:
            group = self.group = _Group(ts_type)
        group.records.append(record)
        group.size += record.size_in_bytes

    def legacy_wrapper(self, wrapper_codec: int, records: Sequence[Record]) -> None:
        self.flush_group()
        codec = self.codec if self.codec is not None else wrapper_codec
        first = records[0]
        if first.magic == MAGIC_V1 and first.timestamp_type is TimestampType.LOG_APPEND_TIME:
            self.records_batch(records, codec, TimestampType.LOG_APPEND_TIME, first.timestamp)
        else:
            self.records_batch(records, codec, TimestampType.CREATE_TIME)

    def v2_batch(self, buf: memoryview, span: Span, max_decompressed_bytes: int) -> None:
        self.flush_group()
        h = v2.read_header(buf, span.position)
        raw = buf[span.position : span.position + span.size]
        target = self.codec
        if target is None or target == h.compression_type or h.is_control_batch:
            self.append(bytes(raw), h.records_count)
            return
        payload = raw[RECORDS_OFFSET:]
        if h.compression_type != CompressionType.NONE:
            records_section: bytes | bytearray | memoryview = codecs.decompress(
                h.compression_type, payload, max_size=max_decompressed_bytes
            )
        else:
            records_section = payload
        rebuilt = assemble_v2_batch(
            records_section,
            num_records=h.records_count,
            base_offset=h.base_offset,
            last_offset_delta=h.last_offset_delta,
            base_timestamp=h.base_timestamp,
            max_timestamp=h.max_timestamp,
            compression_type=target,
            timestamp_type=h.timestamp_type,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            is_transactional=h.is_transactional,
            is_control=h.is_control_batch,
            has_delete_horizon=h.has_delete_horizon,
            partition_leader_epoch=h.partition_leader_epoch,
        )
        self.result.recompressed_batches += 1
        self.append(rebuilt, h.records_count)


def convert_partition(
    source_dir: str,
    dest_log_dir: str,
    *,
    codec: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    index_interval_bytes: int = 4096,
    log_start_offset: int | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> PartitionResult:
    """Convert ``source_dir`` (a ``<topic>-<partition>`` folder) into a folder
    of the same name under ``dest_log_dir``; ``codec`` None keeps each
    batch's codec."""
    source = Path(source_dir)
    tp = parse_topic_partition_name(source.name)
    result = PartitionResult(tp.topic, tp.partition)
    segments = partition_segments(source)
    first_base = segments[0].base_offset if segments else (log_start_offset or 0)
    metadata = PartitionMetadataFile(source)
    topic_id = metadata.read() if metadata.exists() else None
    log = UnifiedLog.open(
        Path(dest_log_dir) / source.name,
        conversion_config(index_interval_bytes),
        log_start_offset=first_base,
        had_clean_shutdown=True,
        topic_id=topic_id,
    )
    writer = _Writer(log, result, codec, batch_bytes)
    try:
        for segment in segments:
            result.segments += 1
            result.bytes_in += segment.size
            if log.active_segment.size > 0 and segment.base_offset >= log.log_end_offset:
                writer.flush_group()
                log.roll(segment.base_offset)
            index = load_offset_index(segment.offset_index_path, segment.base_offset)
            positions = sorted({p for _, p in index.entries})
            with SegmentBytes(segment.path) as data:
                view = memoryview(data.buf)
                try:
                    for span in frame(view, data.size, 0, None, positions):
                        _convert_span(writer, view, span, segment.path, max_decompressed_bytes)
                finally:
                    view.release()
            writer.flush_group()
        if log_start_offset is not None and log_start_offset > log.log_start_offset:
            log.maybe_increment_log_start_offset(min(log_start_offset, log.log_end_offset))
        result.log_start_offset = log.log_start_offset
        result.log_end_offset = log.log_end_offset
        log.flush(include_empty_active=True)
    finally:
        log.close()
    return result


def _convert_span(
    writer: _Writer, view: memoryview, span: Span, path: str, max_decompressed_bytes: int
) -> None:
    result = writer.result
    where = f"{path} at byte {span.position}"
    if not span.readable:
        result.problems.append(f"{where}: {span.size} bytes skipped ({span.problem})")
        return
    result.batches_in += 1
    facts = header_facts(view, span, verify_crc=True)
    if not facts.crc_valid:
        result.problems.append(f"{where}: batch skipped, its CRC does not match")
        return
    try:
        if span.magic == MAGIC_V2:
            writer.v2_batch(view, span, max_decompressed_bytes)
            return
        result.legacy_entries_in += 1
        records = batch_records(view, span, max_decompressed_bytes=max_decompressed_bytes)
    except DECODE_ERRORS as exc:
        result.problems.append(f"{where}: batch skipped, undecodable ({exc})")
        return
    if facts.codec == CompressionType.NONE:
        writer.legacy_single(records[0])
    else:
        assert facts.codec is not None
        writer.legacy_wrapper(facts.codec, records)
