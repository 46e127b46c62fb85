"""Log directories for the pipeline tests, written with the broker's own writers.

* :func:`v2_appends` / :func:`legacy_appends`: record sets as a producer
  (v2) or an old Kafka broker (v0/v1 message sets, compressed wrappers) would
  have had them appended, built with ``broker.records.builder`` and
  ``broker.records.legacy_builder``;
* :func:`write_partition`: appends them through ``UnifiedLog`` (segments
  rolled by size, offset and time indexes as ``LogSegment.append`` writes
  them, producer snapshots, checkpoints), then closes it cleanly;
* :func:`write_log_dir`: several partitions plus the log-dir checkpoints and
  clean-shutdown marker a stopped broker leaves;
* :func:`keyed_appends` / :func:`clean_partition`: updates of a few keys, and
  their partition cleaned by the log cleaner up to one of its segments, with
  the ``cleaner-offset-checkpoint`` and ``cleanup.policy=compact`` override a
  broker leaves;
* :func:`expected_records`: what each partition must read back as.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.config import TopicConfig
from broker.log import clean_loops
from broker.log.checkpoints import (
    CleanShutdownFile,
    atomic_write,
    cleaner_offset_checkpoint,
    encode_properties,
    log_start_offset_checkpoint,
    recovery_point_checkpoint,
)
from broker.log.cleaner import Cleaner
from broker.log.cleaning_plan import LogToClean, prepare_job
from broker.log.config_store import PREFIX, SUFFIX
from broker.log.files import TopicPartition
from broker.log.throttler import Throttler
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType, TimestampType
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord

BASE_TS = 1_700_000_000_000


@dataclass(frozen=True)
class Expected:
    """One record as a reader must return it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _record(i: int, *, headers: bool, ts_step: int) -> SimpleRecord:
    return SimpleRecord(
        timestamp=BASE_TS + i * ts_step,
        key=None if i % 7 == 3 else b"key-%d" % i,
        value=None if i % 11 == 5 else (b"value-%d-" % i) * (1 + i % 5),
        headers=((("h", b"%d" % i), ("n", None)) if headers and i % 2 else ()),
    )


def v2_appends(
    batches: int,
    per_batch: int,
    *,
    codec: int = CompressionType.NONE,
    start_offset: int = 0,
    ts_step: int = 1000,
    producer_id: int = -1,
    log_append_time: int | None = None,
) -> tuple[list[bytes], list[Expected]]:
    """``batches`` v2 batches of ``per_batch`` records (one append each)."""
    appends: list[bytes] = []
    expected: list[Expected] = []
    offset = start_offset
    for b in range(batches):
        records = [_record(offset + i, headers=True, ts_step=ts_step) for i in range(per_batch)]
        built = build_v2_batch(
            records,
            base_offset=offset,
            compression_type=codec,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=b * per_batch if producer_id >= 0 else -1,
            partition_leader_epoch=0,
            timestamp_type=(
                TimestampType.LOG_APPEND_TIME
                if log_append_time is not None
                else TimestampType.CREATE_TIME
            ),
            log_append_time=log_append_time if log_append_time is not None else -1,
        )
        appends.append(bytes(built.buffer))
        for i, r in enumerate(records):
            ts = log_append_time if log_append_time is not None else r.timestamp
            expected.append(Expected(offset + i, ts, r.key, r.value, r.headers))
        offset += per_batch
    return appends, expected


def legacy_appends(
    magic: int,
    sets: int,
    per_set: int,
    *,
    codec: int = CompressionType.NONE,
    start_offset: int = 0,
    ts_step: int = 1000,
    log_append_time: int | None = None,
) -> tuple[list[bytes], list[Expected]]:
    """``sets`` v0/v1 message sets of ``per_set`` records (one append each):
    uncompressed sets are one entry per record, compressed ones one wrapper."""
    appends: list[bytes] = []
    expected: list[Expected] = []
    offset = start_offset
    for _ in range(sets):
        records = [_record(offset + i, headers=False, ts_step=ts_step) for i in range(per_set)]
        lat = log_append_time is not None and magic == 1
        built = build_legacy(
            records,
            magic=magic,
            base_offset=offset,
            compression_type=codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
            log_append_time=log_append_time if lat and log_append_time is not None else -1,
        )
        appends.append(bytes(built.buffer))
        for i, r in enumerate(records):
            if magic == 0:
                ts = -1
            elif lat and log_append_time is not None:
                ts = log_append_time
            else:
                ts = r.timestamp
            expected.append(Expected(offset + i, ts, r.key, r.value))
        offset += per_set
    return appends, expected


def topic_config(**overrides: object) -> TopicConfig:
    settings: dict[str, object] = {
        "segment.bytes": 4096,
        "index.interval.bytes": 256,
        "segment.index.bytes": 4096,
    }
    settings.update({k.replace("_", "."): v for k, v in overrides.items()})
    return TopicConfig().with_overrides(settings)


def write_partition(
    partition_dir: Path, appends: Iterable[bytes], config: TopicConfig | None = None
) -> UnifiedLog:
    """Append each record set through ``UnifiedLog`` and close the log."""
    log = UnifiedLog.open(partition_dir, config or topic_config(), had_clean_shutdown=True)
    for records in appends:
        log.append(records)
    log.flush(include_empty_active=True)
    log.close()
    return log


def write_log_dir(
    log_dir: Path,
    partitions: dict[TopicPartition, Sequence[bytes]],
    config: TopicConfig | None = None,
) -> dict[TopicPartition, int]:
    """Every partition written, then the checkpoints and the clean-shutdown
    marker of a broker that stopped cleanly; returns each log end offset."""
    log_dir.mkdir(parents=True, exist_ok=True)
    ends: dict[TopicPartition, int] = {}
    starts: dict[TopicPartition, int] = {}
    for tp, appends in partitions.items():
        log = write_partition(log_dir / f"{tp.topic}-{tp.partition}", appends, config)
        ends[tp] = log.log_end_offset
        starts[tp] = log.log_start_offset
    recovery_point_checkpoint(log_dir).write(ends)
    log_start_offset_checkpoint(log_dir).write({tp: o for tp, o in starts.items() if o > 0})
    CleanShutdownFile(log_dir).write()
    return ends


def keyed_appends(batches: int, per_batch: int, keys: int) -> list[bytes]:
    """v2 batches of updates to ``keys`` keys in turn, every 4th record a key of
    its own instead (kept by a cleaning), every 7th a tombstone."""
    out = []
    for b in range(batches):
        records = []
        for i in range(b * per_batch, (b + 1) * per_batch):
            value = None if i % 7 == 6 else b"update-%d" % i
            key = b"once-%d" % i if i % 4 == 1 else b"key-%d" % (i % keys)
            records.append(SimpleRecord(BASE_TS + i, key, value))
        out.append(bytes(build_v2_batch(records, base_offset=b * per_batch).buffer))
    return out


def clean_partition(log_dir: Path, tp: TopicPartition, config: TopicConfig, upto: int) -> int:
    """Clean the partition's segments before its ``upto``-th segment with the
    broker's log cleaner (tombstones kept: the delete horizon is ahead) and
    leave what a broker leaves: the first dirty offset in the log dir's
    ``cleaner-offset-checkpoint``, ``cleanup.policy=compact`` in the topic's
    overrides file. Returns the first dirty offset."""
    log = UnifiedLog.open(log_dir / f"{tp.topic}-{tp.partition}", config, had_clean_shutdown=True)
    try:
        uncleanable = log.segments[upto].base_offset
        cleaner = Cleaner(
            0,
            clean_loops.OffsetMap(1 << 16),
            io_buffer_size=1 << 16,
            max_io_buffer_size=1 << 20,
            dup_buffer_load_factor=0.75,
            throttler=Throttler(float("inf")),
            check_done=lambda _tp: None,
        )
        job = prepare_job(LogToClean.of(tp, log, 0, uncleanable), BASE_TS)
        first_dirty, _stats = cleaner.clean(job)
        log.flush(include_empty_active=True)
    finally:
        log.close()
    checkpoint = cleaner_offset_checkpoint(log_dir)
    checkpoint.write({**checkpoint.read(), tp: first_dirty})
    overrides = {"cleanup.policy": "compact"}
    atomic_write(log_dir / f"{PREFIX}{tp.topic}{SUFFIX}", encode_properties(overrides))
    return first_dirty


def flip_byte(path: str | Path, position: int) -> None:
    """Invert one byte of a file (a CRC failure when it lies inside a batch)."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def overwrite(path: str | Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def cut(path: str | Path, size: int) -> None:
    """Truncate a file (a torn tail when ``size`` falls inside a batch)."""
    with open(path, "r+b") as f:
        f.truncate(size)


def batch_positions(path: str | Path) -> list[tuple[int, int]]:
    """(position, size) of every entry of an intact segment."""
    from broker.records.entries import iter_file_entries

    data = Path(path).read_bytes()
    return [(e.position, e.size_in_bytes) for e in iter_file_entries(data)]


def read_through_log(
    partition_dir: Path, *, clean: bool = True, now_ms: int = BASE_TS + 60_000
) -> tuple[UnifiedLog, list[Expected]]:
    """Open the partition with the broker's log (recovering it when not
    ``clean``) and read every record from the log start offset the way the
    Fetch path does: ``UnifiedLog.read`` from an offset, then the next."""
    from broker.records.iterate import iter_records

    log = UnifiedLog.open(
        partition_dir, TopicConfig(), had_clean_shutdown=clean, time_ms=lambda: now_ms
    )
    out: list[Expected] = []
    start = log.log_start_offset
    while start < log.log_end_offset:
        info = log.read(start, 1 << 20, min_one_message=True)
        assert info.records is not None
        data = info.records.read()
        last = start - 1
        for r in iter_records(data):
            if r.offset >= start:
                out.append(Expected(r.offset, r.timestamp, r.key, r.value, r.headers))
            last = max(last, r.offset)
        start = last + 1
    return log, out


def plain_records(paths: Sequence[str]) -> dict[tuple[str, int], list[Expected]]:
    """Every record of every intact batch, decoded in this process with
    ``broker.records.iterate`` (the reference a Spark read is compared to)."""
    from broker.records.iterate import iter_batches
    from broker.spark.layout import discover

    out: dict[tuple[str, int], list[Expected]] = {}
    for seg in discover(paths):
        data = Path(seg.path).read_bytes()
        records = out.setdefault((seg.topic, seg.partition), [])
        for batch in iter_batches(data, file=True):
            records.extend(
                Expected(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()
            )
    return {tp: records for tp, records in out.items() if records}
