"""Validation that writes new records (``LogValidator.convertAndAssignOffsetsNonCompressed``,
``LogValidator.buildRecordsAndAssignOffsets``).

Rebuilds happen for a magic conversion, a codec change, an absolute-offset
rewrite (v0) or an inner-offset repair. The per-record work is compiled:

* legacy -> v2: ``scan.walk_legacy`` validates and encodes v2 records in one
  call (the caller passes the output buffer);
* v2 -> v2: records already in the builder's form (``canonical``) are copied
  as they are, others re-encoded by ``scan.reencode_v2``;
* v2 -> v0/v1: ``scan.v2_to_legacy``;
* legacy -> legacy (target magic 0/1 only, never the case for produce with
  toMagic 2): the slow path (materialised records and the legacy builder).

Codecs work on whole buffers (``codecs.compress`` releases the GIL).
``RecordsPlan`` carries what the validation loop collected.

Stats as Kafka counts them: ``convertAndAssignOffsetsNonCompressed`` ->
(builder.uncompressedBytesWritten, records, the whole method's time);
``buildRecordsAndAssignOffsets`` -> (decompressed size +
builder.uncompressedBytesWritten, records, the build's time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.errors import InvalidRecordError
from broker.records import scan
from broker.records.batch import (
    MAGIC_V1,
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.builder import assemble_v2_batch, builder_info, check_timestamp
from broker.records.legacy_builder import build_legacy, header_size, legacy_info, wrap_legacy
from broker.records.record import Record, SimpleRecord
from broker.records.stats import RecordValidationStats
from broker.validator.context import Context, PathResult

_LONG_MIN = -(2**63)


@dataclass(slots=True)
class V2Source:
    """A validated v2 batch's records (raw or decompressed)."""

    data: ReadableBuffer
    pos: int
    stop: int
    count: int
    base_offset: int
    base_timestamp: int
    lat_batch: bool
    batch_max_timestamp: int
    canonical: bool


@dataclass(slots=True)
class RecordsPlan:
    """What a rebuild needs: producer fields of the first batch, the records."""

    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    num_records: int = 0
    max_timestamp: int = -1
    min_timestamp: int = 2**63 - 1
    #: target v2: records already encoded by walk_legacy, and their first timestamp
    v2_records: memoryview | None = None
    first_timestamp: int = -1
    #: a v2 source batch (target v2: copy or re-encode; target legacy: convert)
    v2_source: V2Source | None = None
    #: target legacy from legacy sources: the slow path
    records: list[Record] = field(default_factory=list)


def build(
    ctx: Context, plan: RecordsPlan, next_offset: int, codec: int
) -> tuple[bytearray, int, int, int]:
    """Write the plan's records; returns (bytes, max timestamp, shallow offset,
    builder.uncompressedBytesWritten)."""
    if plan.num_records == 0:
        # an empty builder builds MemoryRecords.EMPTY (only non-client origins
        # can get here: clients are refused a batch without records)
        return bytearray(), -1, -1, 0
    if plan.min_timestamp < -1:
        # MemoryRecordsBuilder.appendWithOffset refuses it (IllegalArgumentException)
        check_timestamp(plan.min_timestamp)
    if ctx.to_magic >= MAGIC_V2:
        return _build_v2(ctx, plan, next_offset, codec)
    return _build_legacy(ctx, plan, next_offset, codec)


def _first_timestamp(src: V2Source) -> int:
    if src.lat_batch:
        return src.batch_max_timestamp
    _, p = scan.read_varint(src.data, src.pos, src.stop)
    delta, _ = scan.read_varlong(src.data, p + 1, src.stop)
    return _wrap(src.base_timestamp + delta)


def _wrap(x: int) -> int:
    return ((x + 2**63) & 0xFFFFFFFFFFFFFFFF) - 2**63


def _build_v2(
    ctx: Context, plan: RecordsPlan, next_offset: int, codec: int
) -> tuple[bytearray, int, int, int]:
    src = plan.v2_source
    records: ReadableBuffer
    if src is not None:
        first_ts = _first_timestamp(src)
        if src.canonical:
            records = memoryview(src.data)[src.pos : src.stop]
        else:
            # a re-encoded record grows at most 17 bytes (timestamp, offset and
            # length varints at full width)
            out = scan.new_buffer((src.stop - src.pos) + 24 * src.count + 16)
            end = scan.reencode_v2(
                src.data, src.pos, src.stop, count=src.count, base_timestamp=src.base_timestamp,
                lat_batch=src.lat_batch, batch_max_timestamp=src.batch_max_timestamp, out=out,
                out_pos=0,
            )  # fmt: skip
            records = memoryview(out)[:end]
    else:
        if plan.v2_records is None:  # collect() fills one of the two for a v2 target
            raise RuntimeError("rebuild plan without records")
        records = plan.v2_records
        first_ts = plan.first_timestamp
    n = plan.num_records
    last_offset = next_offset + n - 1
    is_lat = ctx.log_append_time
    out_batch = assemble_v2_batch(
        records,
        num_records=n,
        base_offset=next_offset,
        last_offset_delta=n - 1,
        base_timestamp=first_ts,
        max_timestamp=ctx.now if is_lat else plan.max_timestamp,
        compression_type=codec,
        level=ctx.target_level,
        timestamp_type=TimestampType.LOG_APPEND_TIME if is_lat else TimestampType.CREATE_TIME,
        producer_id=plan.producer_id,
        producer_epoch=plan.producer_epoch,
        base_sequence=plan.base_sequence,
        is_transactional=plan.is_transactional,
        partition_leader_epoch=ctx.partition_leader_epoch,
    )
    max_ts, shallow = builder_info(is_lat, ctx.now, plan.max_timestamp, last_offset)
    with memoryview(records) as view:
        written = view.nbytes + RECORD_BATCH_OVERHEAD
    return out_batch, max_ts, shallow, written


def _build_legacy(
    ctx: Context, plan: RecordsPlan, next_offset: int, codec: int
) -> tuple[bytearray, int, int, int]:
    magic = ctx.to_magic
    is_lat = ctx.log_append_time
    ts_type = TimestampType.LOG_APPEND_TIME if is_lat else TimestampType.CREATE_TIME
    if codec == CompressionType.ZSTD:
        raise InvalidRecordError(f"ZStandard compression is not supported for magic {magic}")
    src = plan.v2_source
    if src is None:
        built = build_legacy(
            [SimpleRecord(r.timestamp, r.key, r.value, r.headers) for r in plan.records],
            magic=magic,
            base_offset=next_offset,
            compression_type=codec,
            level=ctx.target_level,
            timestamp_type=ts_type,
            log_append_time=ctx.now,
        )
        return (
            built.buffer,
            built.max_timestamp,
            built.shallow_offset_of_max_timestamp,
            (built.uncompressed_bytes_written),
        )
    compressed = codec != CompressionType.NONE
    # a legacy entry is at most 27 bytes longer than the v2 record it comes from
    out = scan.new_buffer((src.stop - src.pos) + 34 * src.count + 64)
    written, end, _first, last, max_ts, offset_of_max, had_headers = scan.v2_to_legacy(
        src.data, src.pos, src.stop, count=src.count, base_offset=src.base_offset,
        base_timestamp=src.base_timestamp, lat_batch=src.lat_batch,
        batch_max_timestamp=src.batch_max_timestamp, to_magic=magic, renumber_from=next_offset,
        relative_offsets=compressed and magic >= MAGIC_V1, first_offset=_LONG_MIN,
        log_append_time=ctx.now if is_lat else -1, clamp_timestamps=False, out=out, out_pos=0,
    )  # fmt: skip
    if written < 0:
        raise InvalidRecordError("Invalid negative timestamp")
    if had_headers:
        raise InvalidRecordError(f"Magic v{magic} does not support record headers")
    uncompressed = end + header_size(magic, codec)
    if compressed:
        result = wrap_legacy(
            memoryview(out)[:end],
            magic=magic,
            compression_type=codec,
            level=ctx.target_level,
            last_offset=last,
            timestamp=ctx.now if is_lat else max_ts,
            timestamp_type=ts_type,
        )
    else:
        result = out[:end]
    info_max, shallow = legacy_info(
        compressed, is_lat, log_append_time=ctx.now, max_timestamp=max_ts,
        offset_of_max=offset_of_max, base_offset=next_offset, last_offset=last,
    )  # fmt: skip
    return result, info_max, shallow, uncompressed


def rebuild(
    ctx: Context,
    plan: RecordsPlan,
    next_offset: int,
    codec: int,
    *,
    uncompressed_size: int,
    started_ns: int | None,
) -> PathResult:
    """Build and report. ``started_ns`` None: time only the build (compressed
    path); else time from there (the uncompressed conversion times its whole
    method, validation included) and count no decompressed bytes."""
    start = ctx.clock_ns() if started_ns is None else started_ns
    out, max_ts, shallow, written = build(ctx, plan, next_offset, codec)
    elapsed = ctx.clock_ns() - start
    stats = RecordValidationStats(uncompressed_size + written, plan.num_records, elapsed)
    return PathResult(out, plan.num_records, max_ts, shallow, True, stats)
