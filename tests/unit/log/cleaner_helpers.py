"""Helpers of the log cleaner tests (Kafka's LogCleanerTest helpers, ``LogTestUtils``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from broker.config import TopicConfig
from broker.log import clean_loops
from broker.log.cleaner import Cleaner, CleanerStats
from broker.log.cleaning_plan import LogToClean, prepare_job
from broker.log.files import TopicPartition
from broker.log.results import LogAppendResult
from broker.log.throttler import Throttler
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType, TimestampType, read_header
from broker.records.builder import build_v2_batch
from broker.records.control import ControlRecordType
from broker.records.iterate import Batch, iter_batches
from broker.records.record import Record, SimpleRecord
from tests.unit.log.helpers import MockTime

TP = TopicPartition("test", 0)
LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

#: LogCleanerTest's logConfig: segment.bytes 1024, segment.index.bytes 1024, compact
BASE_CONFIG = TopicConfig(
    cleanup_policy=("compact",),
    segment_bytes=1024,
    segment_index_bytes=1024,
    file_delete_delay_ms=1000,
)


def make_log(
    tmp_path: Path,
    clock: MockTime | None = None,
    name: str = "test-0",
    **overrides: object,
) -> UnifiedLog:
    config = dataclasses.replace(BASE_CONFIG, **overrides)  # type: ignore[arg-type]
    return UnifiedLog.open(tmp_path / name, config, time_ms=clock or MockTime())


def reopen(log: UnifiedLog, clock: MockTime | None = None) -> UnifiedLog:
    directory, config = log.dir, log.config
    log.close()
    return UnifiedLog.open(directory, config, time_ms=clock or MockTime())


def make_cleaner(
    capacity: int,
    check_done: Callable[[TopicPartition], None] = lambda _tp: None,
    max_message_size: int = 64 * 1024,
    superseded_memory: int = 0,
) -> Cleaner:
    """``makeCleaner``: a map of ``capacity`` slots (capped), load factor 0.75;
    with a superseded bitmap of ``superseded_memory`` bytes (none in Kafka's)."""
    offset_map = clean_loops.OffsetMap(min(capacity, 50_000) * 24, superseded_memory)
    return Cleaner(
        0,
        offset_map,
        io_buffer_size=max_message_size,
        max_io_buffer_size=max_message_size,
        dup_buffer_load_factor=0.75,
        throttler=Throttler(float("inf")),
        check_done=check_done,
    )


def key(k: int) -> bytes:
    return str(k).encode()


def append_record(
    log: UnifiedLog,
    k: int | bytes | None,
    value: int | bytes | None,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    sequence: int = -1,
    timestamp: int | None = None,
    compression: int = CompressionType.NONE,
) -> LogAppendResult:
    """``appendAsLeader(record(key, value, ...))``: a one-record batch at the LEO."""
    return append_records(
        log,
        [(k, value)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        sequence=sequence,
        timestamp=timestamp,
        compression=compression,
    )


def _bytes(x: int | bytes | None) -> bytes | None:
    if x is None or isinstance(x, bytes):
        return x
    return str(x).encode()


def append_records(
    log: UnifiedLog,
    items: Iterable[tuple[int | bytes | None, int | bytes | None]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    sequence: int = -1,
    timestamp: int | None = None,
    compression: int = CompressionType.NONE,
    transactional: bool = False,
    offsets: list[int] | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> LogAppendResult:
    ts = log._time_ms() if timestamp is None else timestamp
    records = [SimpleRecord(ts, _bytes(k), _bytes(v)) for k, v in items]
    built = build_v2_batch(
        records,
        base_offset=log.log_end_offset if offsets is None else offsets[0],
        offsets=offsets,
        compression_type=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=sequence,
        is_transactional=transactional,
        partition_leader_epoch=0,
        timestamp_type=timestamp_type,
        log_append_time=ts if timestamp_type is TimestampType.LOG_APPEND_TIME else -1,
    )
    return log.append(built.buffer)


def append_marker(
    log: UnifiedLog, producer_id: int, epoch: int, commit: bool = True
) -> LogAppendResult:
    """A transaction marker (as the coordinator writes it; tests only)."""
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = SimpleRecord(
        log._time_ms(),
        bytes([0, 0, 0, kind]),
        bytes([0, 0, 0, 0, 0, 0]),
    )
    built = build_v2_batch(
        [record],
        base_offset=log.log_end_offset,
        producer_id=producer_id,
        producer_epoch=epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=0,
    )
    return log.append(built.buffer)


def batches(log: UnifiedLog) -> Iterator[Batch]:
    for segment in log.segments:
        data = segment.log.pread(0, segment.size)
        yield from iter_batches(data, file=True)


def records(log: UnifiedLog) -> Iterator[tuple[Batch, Record]]:
    for b in batches(log):
        for r in b.records():
            yield b, r


def keys_in_log(log: UnifiedLog) -> list[int]:
    """``LogTestUtils.keysInLog``: keys of the records with a key and a value."""
    return [
        int(r.key)
        for b, r in records(log)
        if r.key is not None and r.value is not None and not b.header().is_control_batch
    ]


def offsets_in_log(log: UnifiedLog) -> list[int]:
    return [r.offset for _, r in records(log) if r.key is not None and r.value is not None]


def last_offsets_per_batch(log: UnifiedLog) -> list[int]:
    return [
        b.header().last_offset if b.magic >= 2 else b.legacy_header().offset for b in batches(log)
    ]


def last_sequences(log: UnifiedLog) -> dict[int, int]:
    out = {}
    for b in batches(log):
        h = b.header()
        if not h.is_control_batch and h.has_producer_id:
            out[h.producer_id] = h.last_sequence
    return out


def headers(log: UnifiedLog) -> list[tuple[int, ...]]:
    return [tuple(read_header(b.buf, b.position)) for b in batches(log) if b.magic >= 2]


def clean(
    cleaner: Cleaner,
    log: UnifiedLog,
    first_dirty: int,
    uncleanable: int | None = None,
    *,
    now: int | None = None,
    need_compaction_now: bool = False,
) -> tuple[int, CleanerStats]:
    """``cleaner.clean(LogToClean(tp, log, first_dirty, uncleanable))``."""
    ltc = LogToClean.of(
        TP,
        log,
        first_dirty,
        log.active_segment.base_offset if uncleanable is None else uncleanable,
        need_compaction_now,
    )
    job = prepare_job(ltc, log._time_ms() if now is None else now)
    return cleaner.clean(job)


def clean_segments(
    cleaner: Cleaner, log: UnifiedLog, count: int | None = None, *, now: int = 0
) -> CleanerStats:
    """``cleaner.cleanSegments(log, first ``count`` segments, map, ...)`` with the
    cleaner's own (pre-filled) map as a group."""
    ltc = LogToClean.of(TP, log, 0, log.active_segment.base_offset)
    job = prepare_job(ltc, now)
    views = job.segments if count is None else job.segments[:count]
    stats = CleanerStats()
    producers = clean_loops.ActiveProducers(job.active_producers)
    cleaner.clean_segments(job, views, producers, stats)
    return stats


def runs(values: Iterable[int]) -> list[int]:
    return list(values)
