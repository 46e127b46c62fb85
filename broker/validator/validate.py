"""The validator's one entry point and Kafka's choice of path.

``validate_records`` runs, in ``UnifiedLog.append``'s order:

1. ``ProduceRequest.validateRecords`` (produce version rules, ZSTD gate);
2. ``UnifiedLog.analyzeAndValidateRecords`` (framing, client base offset 0,
   max.message.bytes, CRC, codec ids) and the trim of a trailing partial batch;
3. ``LogValidator.validateMessagesAndAssignOffsets``, the same if/else as Kafka's
   (``_run``);
4. the post-rebuild size check (``UnifiedLog.append``, after the validator):
   a rebuilt batch larger than max.message.bytes -> RecordTooLargeError.

Decompression is bounded: by default ``max(64 MiB, 16 x max.message.bytes)``.
A batch can legitimately inflate far beyond its compressed size (repetitive
payloads compress 100-1000x), but a broker must not let one request allocate
without limit (Kafka does: a decompression bomb costs it memory). 16x the
largest accepted batch covers real producer data (gzip/zstd on JSON, logs,
Avro rarely exceed 10x); the 64 MiB floor keeps small max.message.bytes
topics usable. The argument ``max_decompressed_bytes`` overrides it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from broker.config import TopicConfig
from broker.config_key import LONG_MAX
from broker.errors import RecordTooLargeError, UnsupportedCompressionTypeError
from broker.records import batch as v2
from broker.records import scan
from broker.records.batch import MAGIC_V0, MAGIC_V2, CompressionType
from broker.records.origin import AppendOrigin
from broker.records.stats import EMPTY_STATS
from broker.validator.analysis import (
    RecordsAnalysis,
    analyze_records,
    check_request_records,
    frame_records,
)
from broker.validator.checks import (
    MAX_LISTED_RECORD_ERRORS,
    check_only_one_batch,
    report_rejected_v2,
)
from broker.validator.collect import collect
from broker.validator.context import Context, PathResult
from broker.validator.in_place import assign_offsets_non_compressed, finish_compressed_in_place
from broker.validator.inline import check_compress, check_raw
from broker.validator.rebuild import rebuild
from broker.validator.result import (
    MetricsRecorder,
    ValidationResult,
    batch_infos,
    v2_batch_info,
)

MIN_DECOMPRESSION_BOUND = 64 * 1024 * 1024
DECOMPRESSION_FACTOR = 16


def default_decompression_bound(max_message_bytes: int) -> int:
    return max(MIN_DECOMPRESSION_BOUND, DECOMPRESSION_FACTOR * max_message_bytes)


def target_compression(config: TopicConfig, source_codec: int) -> tuple[int, int | None]:
    """``BrokerCompressionType.targetCompression`` with the topic's level."""
    name = config.compression_type.lower()
    if name == "producer":
        codec = source_codec
    else:
        codec = int(CompressionType.for_name(name))
    if codec == CompressionType.GZIP:
        return codec, config.compression_gzip_level
    if codec == CompressionType.LZ4:
        return codec, config.compression_lz4_level
    if codec == CompressionType.ZSTD:
        return codec, config.compression_zstd_level
    return codec, None


def validate_records(
    records: memoryview,
    *,
    topic: str,
    partition: int,
    config: TopicConfig,
    next_offset: int,
    partition_leader_epoch: int,
    now_ms: int,
    produce_version: int,
    recorder: MetricsRecorder,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    max_decompressed_bytes: int | None = None,
    to_magic: int = MAGIC_V2,
    zstd_allowed_by_ibp: bool = True,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
    inline_budget: int | None = None,
    request_checked: bool = False,
) -> ValidationResult:
    """Validate a partition's records and assign offsets from ``next_offset``.

    ``records`` must be writable: it is patched in place when Kafka does so
    (offsets, leader epoch, max timestamp and CRC of the batch header).
    ``to_magic`` is always 2 for produce with KRaft; 0/1 are Kafka's older
    message formats (tests). ``zstd_allowed_by_ibp`` False models an
    inter.broker.protocol.version < 2.1 (the ZSTD gate of
    ``LogValidator.validateMessagesAndAssignOffsetsCompressed``). Raises the
    ``broker.errors`` exception of the first failing check, with the code
    Kafka's ``Errors.forException`` gives its exception.

    ``request_checked``: the caller made ``ProduceRequest.validateRecords``'s
    checks already (the produce handler does, before the partition's meters).

    ``inline_budget``: the cost this call may spend (``validator/inline.py``);
    a validation that would spend more raises ``OffloadRequired`` before it
    changes anything, and is to be run again without a budget elsewhere.
    """
    original = records.nbytes
    check_raw(inline_budget, original)
    if origin is AppendOrigin.CLIENT and not request_checked:
        check_request_records(records, produce_version)
    analysis = analyze_records(
        records, max_message_bytes=config.max_message_bytes, origin=origin, recorder=recorder
    )
    now = now_ms
    if analysis.valid_bytes == 0:
        return ValidationResult(
            records[:0], -1, -1, 0, -1, -1, -1, False, original_size_in_bytes=original, now_ms=now
        )
    trimmed = records[: analysis.valid_bytes]
    target, level = target_compression(config, analysis.source_compression_type)
    if (
        analysis.entries == 1
        and analysis.magic_mask == _V2_ONLY
        and target == CompressionType.NONE == analysis.source_compression_type
        and origin is AppendOrigin.CLIENT
        and to_magic == MAGIC_V2
    ):
        return _in_place_v2(
            trimmed, next_offset=next_offset, leader_epoch=partition_leader_epoch, now=now,
            config=config, original_size=original, topic=topic, partition=partition,
            recorder=recorder,
        )  # fmt: skip
    result = validate_messages_and_assign_offsets(
        trimmed,
        topic_partition=f"{topic}-{partition}",
        next_offset=next_offset,
        source_compression_type=analysis.source_compression_type,
        target_compression_type=target,
        target_level=level,
        compacted=config.compacted,
        to_magic=to_magic,
        log_append_time=config.log_append_time,
        timestamp_before_max_ms=config.timestamp_before_max_ms,
        timestamp_after_max_ms=config.timestamp_after_max_ms,
        partition_leader_epoch=partition_leader_epoch,
        origin=origin,
        now_ms=now,
        recorder=recorder,
        max_decompressed_bytes=(
            max_decompressed_bytes
            if max_decompressed_bytes is not None
            else default_decompression_bound(config.max_message_bytes)
        ),
        zstd_allowed_by_ibp=zstd_allowed_by_ibp,
        clock_ns=clock_ns,
        analysis=analysis,
        inline_budget=inline_budget,
    )
    batches = tuple(batch_infos(result.validated))
    if result.message_size_maybe_changed:
        for b in batches:
            if b.size_in_bytes > config.max_message_bytes:
                raise RecordTooLargeError(
                    f"Message batch size is {b.size_in_bytes} bytes in append to partition "
                    f"{topic}-{partition} which exceeds the maximum configured size of "
                    f"{config.max_message_bytes}."
                )
    return ValidationResult(
        validated_records=result.validated,
        first_offset=next_offset,
        last_offset=next_offset + result.num_records - 1,
        num_records=result.num_records,
        max_timestamp=result.max_timestamp,
        shallow_offset_of_max_timestamp=result.shallow_offset_of_max_timestamp,
        log_append_time_ms=now if config.log_append_time else -1,
        message_size_maybe_changed=result.message_size_maybe_changed,
        stats=result.stats,
        batches=batches,
        source_compression_type=analysis.source_compression_type,
        target_compression_type=target,
        original_size_in_bytes=original,
        valid_bytes=analysis.valid_bytes,
        now_ms=now,
    )


_V2_ONLY = 1 << MAGIC_V2


def _in_place_v2(
    records: memoryview,
    *,
    next_offset: int,
    leader_epoch: int,
    now: int,
    config: TopicConfig,
    original_size: int,
    topic: str,
    partition: int,
    recorder: MetricsRecorder,
) -> ValidationResult:
    """The common produce: one uncompressed v2 batch from a client to an
    uncompressed log, the branch of ``_run`` that ends in
    ``assign_offsets_non_compressed``'s v2 case, taken without the general
    path's layers (they were a large share of a small request's broker time;
    docs/performance.md). The rules are the one call of
    ``scan.assign_in_place_v2``, as on that path; a rejected batch is
    reported as that path reports it (``checks.report_rejected_v2``). The
    client-batch checks passed, so the last offset delta is ``count - 1``."""
    try:
        done = scan.assign_in_place_v2(
            records, next_offset=next_offset, partition_leader_epoch=leader_epoch, now=now,
            before_max=config.timestamp_before_max_ms, after_max=config.timestamp_after_max_ms,
            compacted=config.compacted, log_append_time=config.log_append_time,
            client_origin=True, error_limit=MAX_LISTED_RECORD_ERRORS,
        )  # fmt: skip
    except scan.BatchRejected as rejected:
        report_rejected_v2(
            records, rejected, tp=f"{topic}-{partition}", now=now,
            before_max=config.timestamp_before_max_ms,
            after_max=config.timestamp_after_max_ms, recorder=recorder,
        )  # fmt: skip
    count, max_ts, shallow, attributes, batch_max_ts, pid, epoch, base_seq = done
    last_offset = next_offset + count - 1
    batch = v2_batch_info(
        0, records.nbytes, base_offset=next_offset, last_offset_delta=count - 1,
        max_timestamp=batch_max_ts, attributes=attributes, producer_id=pid, producer_epoch=epoch,
        base_sequence=base_seq, partition_leader_epoch=leader_epoch,
    )  # fmt: skip
    return ValidationResult(
        validated_records=records,
        first_offset=next_offset,
        last_offset=last_offset,
        num_records=count,
        max_timestamp=max_ts,
        shallow_offset_of_max_timestamp=shallow,
        log_append_time_ms=now if config.log_append_time else -1,
        message_size_maybe_changed=False,
        stats=EMPTY_STATS,
        batches=(batch,),
        source_compression_type=CompressionType.NONE,
        target_compression_type=CompressionType.NONE,
        original_size_in_bytes=original_size,
        valid_bytes=records.nbytes,
        now_ms=now,
    )


def validate_messages_and_assign_offsets(
    records: memoryview,
    *,
    topic_partition: str,
    next_offset: int,
    source_compression_type: int,
    target_compression_type: int,
    now_ms: int,
    recorder: MetricsRecorder,
    target_level: int | None = None,
    compacted: bool = False,
    to_magic: int = MAGIC_V2,
    log_append_time: bool = False,
    timestamp_before_max_ms: int = LONG_MAX,
    timestamp_after_max_ms: int = LONG_MAX,
    partition_leader_epoch: int = -1,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    max_decompressed_bytes: int = MIN_DECOMPRESSION_BOUND,
    zstd_allowed_by_ibp: bool = True,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
    analysis: RecordsAnalysis | None = None,
    inline_budget: int | None = None,
) -> PathResult:
    """``LogValidator`` itself (constructor arguments as keywords), without the
    request and append checks around it: Kafka's LogValidatorTest drives this
    level. ``analysis`` is the framing already done by ``analyze_records``;
    without it the entries are framed here (no size or CRC checks, as the
    validator does not make them)."""
    if analysis is None:
        analysis = frame_records(records)
    ctx = Context(
        records=records,
        tp=topic_partition,
        analysis=analysis,
        source_codec=source_compression_type,
        target_codec=target_compression_type,
        target_level=target_level,
        compacted=compacted,
        to_magic=to_magic,
        log_append_time=log_append_time,
        before_max=timestamp_before_max_ms,
        after_max=timestamp_after_max_ms,
        partition_leader_epoch=partition_leader_epoch,
        origin=origin,
        now=now_ms,
        recorder=recorder,
        max_decompressed_bytes=max_decompressed_bytes,
        clock_ns=clock_ns,
        inline_budget=inline_budget,
    )
    return _run(ctx, next_offset, zstd_allowed_by_ibp)


def _run(ctx: Context, next_offset: int, zstd_allowed_by_ibp: bool) -> PathResult:
    """``LogValidator.validateMessagesAndAssignOffsets``: both codecs NONE -> in
    place if every batch already has toMagic, else converted; anything else ->
    the compressed path."""
    if ctx.source_codec == CompressionType.NONE and ctx.target_codec == CompressionType.NONE:
        if ctx.analysis.all_magic(ctx.to_magic):
            return assign_offsets_non_compressed(ctx, next_offset)
        return _convert_non_compressed(ctx, next_offset)
    return _validate_compressed(ctx, next_offset, zstd_allowed_by_ibp)


def _convert_non_compressed(ctx: Context, next_offset: int) -> PathResult:
    """``LogValidator.convertAndAssignOffsetsNonCompressed``: rebuilt at toMagic,
    uncompressed."""
    start = ctx.clock_ns()
    a: RecordsAnalysis = ctx.analysis
    check_only_one_batch(a.entries, a.first_magic, CompressionType.NONE)
    plan, _, _ = collect(ctx, False)
    return rebuild(
        ctx, plan, next_offset, CompressionType.NONE, uncompressed_size=0, started_ns=start
    )


def _validate_compressed(ctx: Context, next_offset: int, zstd_allowed_by_ibp: bool) -> PathResult:
    """``LogValidator.validateMessagesAndAssignOffsetsCompressed``: in place or
    rebuilt with the target codec."""
    if ctx.target_codec == CompressionType.ZSTD and not zstd_allowed_by_ibp:
        raise UnsupportedCompressionTypeError(
            "Produce requests to inter.broker.protocol.version < 2.1 broker are not allowed "
            "to use ZStandard compression"
        )
    a: RecordsAnalysis = ctx.analysis
    check_only_one_batch(a.entries, a.first_magic, ctx.source_codec)
    first_is_control = a.first_magic >= MAGIC_V2 and v2.read_header(ctx.records, 0).is_control_batch
    # in place while the codec type stays (levels never count) ...
    in_place = ctx.source_codec == ctx.target_codec
    # ... and the magic is already toMagic, toMagic 0 excepted (absolute inner offsets)
    if a.first_magic != ctx.to_magic or ctx.to_magic == MAGIC_V0:
        in_place = False
    # "do not compress control records unless they are written compressed"
    if ctx.source_codec == CompressionType.NONE and first_is_control:
        in_place = True
    # non-consecutive inner offsets, found while the records are walked, turn it off
    plan, in_place, uncompressed_size = collect(ctx, in_place)
    if in_place:
        return finish_compressed_in_place(
            ctx, next_offset, plan.num_records, plan.max_timestamp, uncompressed_size
        )
    check_compress(ctx.inline_budget, ctx.target_codec, uncompressed_size)
    return rebuild(
        ctx,
        plan,
        next_offset,
        ctx.target_codec,
        uncompressed_size=uncompressed_size,
        started_ns=None,
    )
