"""Validation that patches the request's bytes where they lie.

``assign_offsets_non_compressed`` is ``LogValidator.assignOffsetsNonCompressed``:
uncompressed records whose magic is already the target. A v2 batch is
validated and patched by one call of ``scan.assign_in_place_v2`` (the rules:
batch checks, record walk, header), which ``validate.py`` also calls directly
for the common produce; a rejected batch is reported by
``checks.report_rejected_v2``. Legacy entries: one compiled walk performs
every per-record check and returns aggregates (no Python object per
record); then each entry's offset and, inside its CRC, timestamp type and
max timestamp.

The v2 batch header fields it changes (``records/batch.py``)::

    offset  size  field                      changed to
    0       8     baseOffset                 lastOffset - lastOffsetDelta
    12      4     partitionLeaderEpoch       the leader's epoch (outside the CRC)
    17      4     crc                        recomputed when 21 or 35 changed
    21      2     attributes                 timestamp type bit (LogAppendTime topic)
    35      8     maxTimestamp               now (LogAppendTime) or the records' max

``finish_compressed_in_place`` is the in-place branch of
``LogValidator.validateMessagesAndAssignOffsetsCompressed``: the compressed payload
is kept byte for byte, only the header of the single batch changes.

Inner offsets of an uncompressed v2 batch are not checked (Kafka does not);
max timestamp / shallow offset follow ``LogValidator`` of 3.8+ (KAFKA-16310,
KAFKA-16341, KAFKA-16342).
"""

from __future__ import annotations

from broker.records import batch as v2
from broker.records import legacy, scan
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, NO_TIMESTAMP, TimestampType
from broker.records.entries import iter_buffer_entries
from broker.records.origin import AppendOrigin
from broker.records.stats import EMPTY_STATS, RecordValidationStats
from broker.validator.checks import (
    MAX_LISTED_RECORD_ERRORS,
    RecordContext,
    check_batch_magic,
    check_only_one_batch,
    record_errors,
    report_rejected_v2,
)
from broker.validator.context import Context, PathResult


def _topic_type(ctx: Context) -> TimestampType:
    return TimestampType.LOG_APPEND_TIME if ctx.log_append_time else TimestampType.CREATE_TIME


def assign_offsets_non_compressed(ctx: Context, next_offset: int) -> PathResult:
    a = ctx.analysis
    check_only_one_batch(a.entries, a.first_magic, 0)
    if a.first_magic >= MAGIC_V2:
        return _v2_non_compressed(ctx, next_offset)
    return _legacy_non_compressed(ctx, next_offset)


def _v2_non_compressed(ctx: Context, next_offset: int) -> PathResult:
    """One v2 batch (already at toMagic, so ``validateBatch``'s checks 1, 7
    and 8 hold): every rule is ``scan.assign_in_place_v2``'s."""
    buf = ctx.records
    try:
        count, max_timestamp, shallow, *_ = scan.assign_in_place_v2(
            buf, next_offset=next_offset, partition_leader_epoch=ctx.partition_leader_epoch,
            now=ctx.now, before_max=ctx.before_max, after_max=ctx.after_max,
            compacted=ctx.compacted, log_append_time=ctx.log_append_time,
            client_origin=ctx.origin is AppendOrigin.CLIENT, error_limit=MAX_LISTED_RECORD_ERRORS,
        )  # fmt: skip
    except scan.BatchRejected as rejected:
        report_rejected_v2(
            buf, rejected, tp=ctx.tp, now=ctx.now, before_max=ctx.before_max,
            after_max=ctx.after_max, recorder=ctx.recorder,
        )  # fmt: skip
    return PathResult(buf, count, max_timestamp, shallow, False, EMPTY_STATS)


def _legacy_non_compressed(ctx: Context, next_offset: int) -> PathResult:
    buf = ctx.records
    first_magic = ctx.analysis.first_magic
    _n, _stop, _o, _max, _min, _c, _f, errors, counts = scan.walk_legacy(
        buf, 0, len(buf), wrapper_magic=-1, wrapper_offset=0, wrapper_timestamp=0,
        wrapper_lat=False, now=ctx.now, before_max=ctx.before_max, after_max=ctx.after_max,
        create_time=ctx.create_time, compacted=ctx.compacted, out=None, out_pos=0,
        error_limit=MAX_LISTED_RECORD_ERRORS,
    )  # fmt: skip
    if errors and counts:
        # an uncompressed set stops at its first error, which is always listed
        _index, code, _offset, _ts, position = errors[0]
        if code == scan.ERR_MAGIC:
            check_batch_magic(first_magic, buf[position + legacy.RECORD_MAGIC_OFFSET], ctx.tp,
                              ctx.recorder)  # fmt: skip
        magic = buf[position + legacy.RECORD_MAGIC_OFFSET]
        record_errors(
            errors, counts, RecordContext(buf, magic), tp=ctx.tp, now=ctx.now,
            before_max=ctx.before_max, after_max=ctx.after_max, recorder=ctx.recorder,
        )  # fmt: skip
    topic_type = _topic_type(ctx)
    counter = next_offset
    max_timestamp = NO_TIMESTAMP
    shallow = -1
    for entry in iter_buffer_entries(buf):
        counter += 1
        legacy.set_offset(buf, entry.position, counter - 1)
        if entry.magic > MAGIC_V0:
            ts = legacy.read_entry_header(buf, entry.position).timestamp
            if ts > max_timestamp:
                max_timestamp, shallow = ts, counter - 1
            legacy.set_max_timestamp(
                buf, entry.position, topic_type, ctx.now if ctx.log_append_time else ts
            )
    if ctx.log_append_time:
        if ctx.to_magic == MAGIC_V0:
            max_timestamp, shallow = NO_TIMESTAMP, -1
        elif ctx.to_magic == MAGIC_V1:
            max_timestamp, shallow = ctx.now, next_offset
        else:
            max_timestamp, shallow = ctx.now, counter - 1
    return PathResult(buf, counter - next_offset, max_timestamp, shallow, False, EMPTY_STATS)


def finish_compressed_in_place(
    ctx: Context, next_offset: int, num_records: int, max_timestamp: int, uncompressed_size: int
) -> PathResult:
    """offsetCounter += records; last offset, max timestamp and leader epoch
    written into the single batch (v2 or v1 wrapper)."""
    buf = ctx.records
    last_offset = next_offset + num_records - 1
    magic = buf[v2.MAGIC_OFFSET]
    if magic >= MAGIC_V2:
        v2.set_last_offset(buf, 0, last_offset)
    else:
        legacy.set_offset(buf, 0, last_offset)
    if ctx.log_append_time:
        max_timestamp = ctx.now
    if ctx.to_magic >= MAGIC_V1:
        if magic >= MAGIC_V2:
            v2.set_max_timestamp(buf, 0, _topic_type(ctx), max_timestamp)
        else:
            legacy.set_max_timestamp(buf, 0, _topic_type(ctx), max_timestamp)
    if ctx.to_magic >= MAGIC_V2:
        v2.set_partition_leader_epoch(buf, 0, ctx.partition_leader_epoch)
    stats = RecordValidationStats(uncompressed_size, 0, 0)
    return PathResult(buf, num_records, max_timestamp, last_offset, False, stats)
