"""The validation loop of the paths that may rebuild (``LogValidator``'s
``convertAndAssignOffsetsNonCompressed``, ``validateMessagesAndAssignOffsetsCompressed``).

``collect`` runs ``validateBatch`` and the per-record checks over every
batch with one compiled walk per batch (decompressing a compressed batch
once, bounded), and gathers what a rebuild needs (:class:`RecordsPlan`)
together with the in-place verdict of the inner-offset rule and the
decompressed size Kafka reports as temporary memory.

The inner-offset rule and Kafka's quirk: when the compressed v2 batch started in place
(same codec, magic 2) Kafka reads it with the skip-key-value iterator; a
non-consecutive inner offset then flips to a rebuild that cannot read the
skipped keys and values and fails with UNKNOWN_SERVER_ERROR. We answer
INVALID_RECORD instead (docs/deviations.md). With a codec change the batch
is rebuilt with consecutive offsets, as in Kafka.
"""

from __future__ import annotations

from broker.errors import InvalidRecordError
from broker.records import batch as v2
from broker.records import codecs, legacy, scan
from broker.records.batch import (
    MAGIC_V0,
    MAGIC_V2,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.codec_output import DecompressedSizeExceeded
from broker.records.entries import iter_buffer_entries
from broker.records.iterate import legacy_records
from broker.records.legacy_builder import header_size
from broker.validator.checks import (
    MAX_LISTED_RECORD_ERRORS,
    RecordContext,
    check_batch_magic,
    check_producer_format,
    check_v2_batch,
    record_errors,
    v2_record_context,
)
from broker.validator.context import Context
from broker.validator.inline import OffloadRequired, decompression_bound
from broker.validator.rebuild import RecordsPlan, V2Source


def _v2_bound(legacy_bytes: int) -> int:
    """Room for legacy entries written as v2 records: an entry takes at least
    26 bytes (12 + a 14-byte v0 record) and its v2 record at most 6 bytes more
    than the entry (length, timestamp, offset varints: 5 + 10 + 5, attributes
    1, key/value varints 5 + 5, header count 1 = 32, against 26 + 0 ... 8)."""
    return legacy_bytes + (legacy_bytes // 26 + 1) * 6 + 64


def _decompress(
    ctx: Context, codec: int, payload: memoryview, magic: int = MAGIC_V2
) -> bytes | bytearray:
    """The batch's records, decompressed within the bound, and within the
    inline budget when there is one (else :class:`OffloadRequired`)."""
    bound = decompression_bound(ctx.inline_budget, codec, ctx.max_decompressed_bytes)
    if bound < ctx.max_decompressed_bytes and codecs.size_hint(codec, payload) > bound:
        raise OffloadRequired(f"a stream that says it inflates past {bound} bytes")
    try:
        return codecs.decompress(codec, payload, max_size=bound, magic=magic)
    except DecompressedSizeExceeded:
        if bound < ctx.max_decompressed_bytes:
            raise OffloadRequired(f"decompressing more than {bound} bytes inline") from None
        raise


def collect(ctx: Context, in_place: bool) -> tuple[RecordsPlan, bool, int]:
    """Validate every batch; returns (plan, in_place, uncompressed size)."""
    if ctx.analysis.first_magic >= MAGIC_V2:
        return _collect_v2(ctx, in_place)
    if ctx.source_codec == CompressionType.NONE:
        return _collect_legacy_set(ctx, in_place)
    return _collect_legacy_wrapper(ctx, in_place)


def _errors(
    ctx: Context,
    errors: list[tuple[int, int, int, int, int]] | None,
    counts: tuple[int, ...] | None,
    rc: RecordContext,
) -> None:
    record_errors(
        errors, counts, rc, tp=ctx.tp, now=ctx.now, before_max=ctx.before_max,
        after_max=ctx.after_max, recorder=ctx.recorder,
    )  # fmt: skip


def _collect_v2(ctx: Context, in_place: bool) -> tuple[RecordsPlan, bool, int]:
    buf = ctx.records
    h = v2.read_header(buf, 0)
    check_v2_batch(
        ctx.analysis.first_magic,
        h,
        origin=ctx.origin,
        to_magic=ctx.to_magic,
        tp=ctx.tp,
        recorder=ctx.recorder,
    )
    size = header_size(ctx.to_magic, h.compression_type)
    if h.compression_type != CompressionType.NONE and h.records_count != 0:
        # (a batch declaring no record is not read at all, as in Kafka's iterators)
        data = _decompress(ctx, h.compression_type, buf[RECORDS_OFFSET : h.size_in_bytes])
        pos, stop = 0, len(data)
        src_buf: ReadableBuffer = data
    else:
        src_buf, pos, stop = buf, RECORDS_OFFSET, h.size_in_bytes
    lat_batch = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    max_ts, min_ts, consecutive, canonical, errors, counts = scan.walk_v2(
        src_buf, pos, stop, count=h.records_count, base_offset=h.base_offset,
        base_timestamp=h.base_timestamp, lat_batch=lat_batch,
        batch_max_timestamp=h.max_timestamp, now=ctx.now, before_max=ctx.before_max,
        after_max=ctx.after_max, create_time=ctx.create_time, compacted=ctx.compacted,
        want_canonical=not in_place, error_limit=MAX_LISTED_RECORD_ERRORS,
    )  # fmt: skip
    if counts:
        _errors(ctx, errors, counts, v2_record_context(src_buf, h))
    if h.records_count:
        size += stop - pos
    if ctx.to_magic > MAGIC_V0 and not consecutive:
        if in_place:
            raise InvalidRecordError(
                "Inner offsets of the compressed record batch are not consecutive "
                f"from 0 in topic partition {ctx.tp}"
            )
        in_place = False
    plan = RecordsPlan(
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
        is_transactional=h.is_transactional,
        num_records=h.records_count,
        max_timestamp=max_ts if ctx.to_magic > MAGIC_V0 else -1,
        min_timestamp=min_ts,
        v2_source=V2Source(
            src_buf,
            pos,
            stop,
            h.records_count,
            h.base_offset,
            h.base_timestamp,
            lat_batch,
            h.max_timestamp,
            canonical,
        ),
    )
    return plan, in_place, size


def _collect_legacy_set(ctx: Context, in_place: bool) -> tuple[RecordsPlan, bool, int]:
    """Uncompressed v0/v1 entries (each its own batch) going to a rebuild."""
    buf = ctx.records
    first_magic = ctx.analysis.first_magic
    to_v2 = ctx.to_magic >= MAGIC_V2
    out = scan.new_buffer(_v2_bound(len(buf))) if to_v2 else None
    n, _stop, out_end, max_ts, min_ts, consecutive, first_ts, errors, counts = scan.walk_legacy(
        buf, 0, len(buf), wrapper_magic=-1, wrapper_offset=0, wrapper_timestamp=0,
        wrapper_lat=False, now=ctx.now, before_max=ctx.before_max, after_max=ctx.after_max,
        create_time=ctx.create_time, compacted=ctx.compacted, out=out, out_pos=0,
        error_limit=MAX_LISTED_RECORD_ERRORS,
    )  # fmt: skip
    if errors and counts:
        # an uncompressed set stops at its first error, which is always listed
        _index, code, _offset, _ts, position = errors[0]
        magic = buf[position + legacy.RECORD_MAGIC_OFFSET]
        if code == scan.ERR_MAGIC:
            check_batch_magic(first_magic, magic, ctx.tp, ctx.recorder)
        _errors(ctx, errors, counts, RecordContext(buf, magic))
    size = header_size(ctx.to_magic, CompressionType.NONE) * ctx.analysis.entries + len(buf)
    if first_magic > MAGIC_V0 and ctx.to_magic > MAGIC_V0 and not consecutive:
        in_place = False
    plan = RecordsPlan(
        num_records=n,
        max_timestamp=max_ts if ctx.to_magic > MAGIC_V0 else -1,
        min_timestamp=min_ts,
        first_timestamp=first_ts,
    )
    if out is not None:
        plan.v2_records = memoryview(out)[:out_end]
    elif not in_place:
        plan.records = [
            legacy.read_record(buf, e.position, e.size_in_bytes) for e in iter_buffer_entries(buf)
        ]
    return plan, in_place, size


def _collect_legacy_wrapper(ctx: Context, in_place: bool) -> tuple[RecordsPlan, bool, int]:
    buf = ctx.records
    lh = legacy.read_entry_header(buf, 0)
    check_producer_format(False, -1, ctx.to_magic)
    size = header_size(ctx.to_magic, lh.compression_type)
    if lh.compression_type == CompressionType.ZSTD:
        raise InvalidRecordError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {lh.magic}"
        )
    _, _, value_pos, value_len = legacy.key_value_spans(buf, 0, lh.size_in_bytes)
    if value_len < 0:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {lh.magic})"
        )
    inner = _decompress(ctx, lh.compression_type, buf[value_pos : value_pos + value_len], lh.magic)
    to_v2 = ctx.to_magic >= MAGIC_V2
    out = scan.new_buffer(_v2_bound(len(inner))) if to_v2 else None
    lat = lh.timestamp_type is TimestampType.LOG_APPEND_TIME
    n, stop, out_end, max_ts, min_ts, consecutive, first_ts, errors, counts = scan.walk_legacy(
        inner, 0, len(inner), wrapper_magic=lh.magic, wrapper_offset=lh.offset,
        wrapper_timestamp=lh.timestamp, wrapper_lat=lat, now=ctx.now,
        before_max=ctx.before_max, after_max=ctx.after_max, create_time=ctx.create_time,
        compacted=ctx.compacted, out=out, out_pos=0, error_limit=MAX_LISTED_RECORD_ERRORS,
    )  # fmt: skip
    if counts:
        rc = RecordContext(
            inner, lh.magic, wrapper_timestamp=lh.timestamp, wrapper_type=lh.timestamp_type
        )
        _errors(ctx, errors, counts, rc)
    size += stop
    tracked = lh.magic > MAGIC_V0 and ctx.to_magic > MAGIC_V0
    if tracked and not consecutive:
        in_place = False
    plan = RecordsPlan(
        num_records=n,
        max_timestamp=max_ts if tracked else -1,
        min_timestamp=min_ts,
        first_timestamp=first_ts,
    )
    if out is not None:
        plan.v2_records = memoryview(out)[:out_end]
    elif not in_place:
        plan.records = legacy_records(buf, 0, lh.size_in_bytes, ctx.max_decompressed_bytes)
    return plan, in_place, size
