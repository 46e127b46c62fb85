"""Ports of Kafka's ``LogLoaderTest`` (``core/src/test/scala/unit/kafka/log/LogLoaderTest.scala``),
names in snake_case.

Left out, each for a reason that holds for this product:

* transactions are refused at produce time, so there is no transaction index
  or coordinator epoch to recover: testRecoverAfterNonMonotonicCoordinatorEpochWrite,
  testFullTransactionIndexRecovery, testRecoverOnlyLastSegment,
  testRecoverLastSegmentWithNoSnapshots;
* segments are never split (legacy offset-overflow splitting):
  testRecoveryOfSegmentWithOffsetOverflow, testRecoveryAfterCrashDuringSplitPhase1..5;
* ``message.format.version`` is ignored (IBP >= 3.0, as in Kafka 3.x KRaft), so
  there is no old-format topic: testProducerSnapshotsRecoveryAfterUncleanShutdownV1,
  testSkipTruncateAndReloadIfOldMessageFormatAndNoCleanShutdown,
  testSkipTruncateAndReloadIfOldMessageFormatAndCleanShutdown,
  testLeaderEpochCacheClearedAfterStaticMessageFormatDowngrade (its
  "a v0/v1 append clears the cache" half is kept below);
* no tiered storage: the ``true, 0`` case of testLogStartOffsetWhenRemoteStorageIsEnabled;
* testSkipLoadingIfEmptyProducerStateBeforeTruncation asserts calls on a
  mocked ProducerStateManager; its observable effects (snapshots at the
  map end offset, reload after truncation) are asserted instead.
"""

from __future__ import annotations

import gzip
import os
import random
import warnings
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import files, recovery
from broker.log.checkpoints import CleanShutdownFile, EpochEntry
from broker.log.manager import LogManager
from broker.log.offset_index import OffsetIndex
from broker.log.producer_state import list_snapshot_offsets
from broker.log.unified_log import UnifiedLog
from broker.records.batch import set_base_offset
from tests.unit.log.batches import legacy_entry, v2_batch
from tests.unit.log.helpers import MockTime, batch_offsets

INT_MAX = 2**31 - 1
RNG = random.Random(1234)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "kafka-0"


@pytest.fixture
def clock() -> MockTime:
    return MockTime()


def create_log(
    log_dir: Path,
    config: TopicConfig,
    clock: MockTime,
    *,
    log_start_offset: int = 0,
    recovery_point: int = 0,
    last_shutdown_clean: bool = True,
) -> UnifiedLog:
    return UnifiedLog.open(
        log_dir,
        config,
        log_start_offset=log_start_offset,
        recovery_point=recovery_point,
        had_clean_shutdown=last_shutdown_clean,
        time_ms=clock,
    )


def append_value(log: UnifiedLog, value: bytes, timestamp: int, epoch: int = 0, **kw: int) -> None:
    log.append(
        v2_batch(
            log.log_end_offset,
            [value],
            base_timestamp=timestamp,
            partition_leader_epoch=epoch,
            **kw,
        )
    )


def records_of(log: UnifiedLog) -> list[bytes]:
    out = []
    for segment in log.segments:
        for batch in segment.log.iter_batches():
            out.append(segment.log.read_batch_bytes(batch))
    return out


def test_log_recovery_is_called_upon_broker_crash(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    manager = LogManager([log_dir])
    manager.startup()
    log = manager.create_topic("t", 1) and manager.get_log(files.TopicPartition("t", 0))
    assert log is not None
    for i in range(10):
        append_value(log, b"%d" % i, 1000 + i)
    manager.shutdown()
    assert CleanShutdownFile(log_dir).exists()

    calls: list[bool] = []
    real_load = recovery.load_log

    def spy(*args: object, **kwargs: object) -> recovery.LoadedLog:
        calls.append(bool(kwargs["had_clean_shutdown"]))
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    recovery_module_load = "broker.log.unified_log.load_log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recovery_module_load, spy)
        manager = LogManager([log_dir])
        manager.startup()
        assert calls == [True]
        # the marker is deleted as soon as it is seen
        assert not CleanShutdownFile(log_dir).exists()
        for lg in manager.all_logs():
            lg.close_handlers()
        manager._release_locks()  # a crash: no shutdown

        calls.clear()
        manager = LogManager([log_dir])
        manager.startup()
        assert calls == [False]
        for lg in manager.all_logs():
            lg.close_handlers()
        manager._release_locks()

        # an error while loading propagates; the marker stays deleted and the
        # next start is unclean
        CleanShutdownFile(log_dir).write()

        def boom(*args: object, **kwargs: object) -> recovery.LoadedLog:
            raise RuntimeError("load failed")

        mp.setattr(recovery_module_load, boom)
        with pytest.raises(RuntimeError):
            LogManager([log_dir]).startup()
        assert not CleanShutdownFile(log_dir).exists()
        mp.setattr(recovery_module_load, spy)
        calls.clear()
        manager = LogManager([log_dir])
        manager.startup()
        assert calls == [False]
        manager.shutdown()


def _instrumented(mp: pytest.MonkeyPatch) -> tuple[set[int], set[int]]:
    reads: set[int] = set()
    recovered: set[int] = set()
    real_replay = recovery.replay_segment_producers
    real_recover = recovery.recover_segment

    def replay(psm, segment, start, end):  # type: ignore[no-untyped-def]
        reads.add(segment.base_offset)
        return real_replay(psm, segment, start, end)

    def recover(segment, psm=None, cache=None):  # type: ignore[no-untyped-def]
        recovered.add(segment.base_offset)
        return real_recover(segment, psm, cache)

    mp.setattr(recovery, "replay_segment_producers", replay)
    mp.setattr(recovery, "recover_segment", recover)
    return reads, recovered


def test_producer_snapshots_recovery_after_unclean_shutdown_current_message_format(
    log_dir: Path, clock: MockTime
) -> None:
    config = TopicConfig(segment_bytes=640)
    log = create_log(log_dir, config, clock)
    assert log.producer_state.oldest_snapshot_offset is None
    for i in range(101):
        append_value(
            log, str(i).encode(), clock(), producer_id=7, producer_epoch=0, base_sequence=i
        )
    assert log.number_of_segments >= 5
    segment_offsets = [s.base_offset for s in log.segments]
    active_offset = segment_offsets[-1]
    after_rp = segment_offsets[-3]
    rp_segment = segment_offsets[-4]
    before = {o for o in segment_offsets if o < rp_segment}
    after = {o for o in segment_offsets if o >= rp_segment}
    recovery_point = rp_segment + 1
    assert recovery_point < after_rp
    log.close()
    leo = log.log_end_offset
    expected_snapshots = {*segment_offsets[-4:], leo}

    log.producer_state.delete_snapshots_before(segment_offsets[-2])
    with pytest.MonkeyPatch.context() as mp:
        reads, recovered = _instrumented(mp)
        log = create_log(
            log_dir, config, clock, recovery_point=rp_segment, last_shutdown_clean=False
        )
        # every segment before the recovery point segment is read to rebuild producer state
        assert reads == before
        assert recovered == after
        assert set(list_snapshot_offsets(log_dir)) == expected_snapshots
        assert log.producer_state.last_entry(7) is not None
        assert log.producer_state.last_entry(7).last_seq == 100  # type: ignore[union-attr]
        log.close()

    log.producer_state.delete_snapshots_before(rp_segment)
    with pytest.MonkeyPatch.context() as mp:
        reads, recovered = _instrumented(mp)
        log = create_log(
            log_dir, config, clock, recovery_point=recovery_point, last_shutdown_clean=False
        )
        assert reads == set()  # the snapshot at the recovery point segment is enough
        assert recovered == after
        assert set(list_snapshot_offsets(log_dir)) == expected_snapshots
        log.close()
    assert active_offset in expected_snapshots


def test_skip_loading_if_empty_producer_state_before_truncation(
    log_dir: Path, clock: MockTime
) -> None:
    config = TopicConfig(segment_bytes=1024 * 1024)
    log = create_log(log_dir, config, clock, last_shutdown_clean=False)
    assert log.producer_state.map_end_offset == 0
    assert list_snapshot_offsets(log_dir) == []  # offset 0: nothing to snapshot
    append_value(log, b"a", clock())
    assert log.producer_state.map_end_offset == 1
    append_value(log, b"b", clock())
    assert log.producer_state.map_end_offset == 2
    log.truncate_to(1)
    assert log.producer_state.map_end_offset == 1
    assert list_snapshot_offsets(log_dir) == [1]
    log.close()


def test_skip_truncate_and_reload_if_new_message_format_and_clean_shutdown(
    log_dir: Path, clock: MockTime
) -> None:
    config = TopicConfig(segment_bytes=200)
    log = create_log(log_dir, config, clock)
    for i in range(10):
        append_value(log, b"value-%d" % i, clock())
    bases = [s.base_offset for s in log.segments]
    log.close()
    for offset in list_snapshot_offsets(log_dir):
        files.producer_snapshot_file(log_dir, offset).unlink()
    with pytest.MonkeyPatch.context() as mp:
        reads, recovered = _instrumented(mp)
        log = create_log(log_dir, config, clock, last_shutdown_clean=True)
        assert reads == set()
        assert recovered == set()
    assert list_snapshot_offsets(log_dir) == sorted({*bases[-2:], log.log_end_offset})
    log.close()


def test_load_producers_after_delete_records_mid_segment(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    append_value(log, b"a", clock(), producer_id=1, producer_epoch=0, base_sequence=0)
    append_value(log, b"b", clock(), producer_id=2, producer_epoch=0, base_sequence=0)
    assert log.producer_state.producer_id_count == 2
    log.maybe_increment_log_start_offset(1)
    assert log.producer_state.producer_id_count == 2
    log.close()
    log = create_log(log_dir, config, clock, log_start_offset=1, last_shutdown_clean=False)
    assert log.producer_state.producer_id_count == 2
    log.close()


def test_loading_log_keeps_largest_stray_producer_state_snapshot(
    log_dir: Path, clock: MockTime
) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    append_value(log, b"a", clock(), producer_id=1, producer_epoch=0, base_sequence=0)
    log.roll()
    append_value(log, b"b", clock(), producer_id=1, producer_epoch=0, base_sequence=1)
    log.roll()
    append_value(log, b"c", clock(), producer_id=1, producer_epoch=0, base_sequence=2)
    append_value(log, b"d", clock(), producer_id=1, producer_epoch=0, base_sequence=3)
    log.close()
    assert list_snapshot_offsets(log_dir) == [1, 2, 4]
    # a stray snapshot between segments
    files.producer_snapshot_file(log_dir, 3).write_bytes(bytes.fromhex("0001 48674BC7 00000000"))
    log = create_log(log_dir, config, clock, last_shutdown_clean=False)
    assert list_snapshot_offsets(log_dir) == [1, 2, 4]
    log.close()


def test_load_producers_after_delete_records_on_segment(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    append_value(log, b"a", clock(), producer_id=1, producer_epoch=0, base_sequence=0)
    log.roll()
    append_value(log, b"b", clock(), producer_id=2, producer_epoch=0, base_sequence=0)
    assert log.number_of_segments == 2
    assert log.producer_state.producer_id_count == 2
    log.maybe_increment_log_start_offset(1)
    log.delete_old_segments()
    assert log.number_of_segments == 1
    log.close()
    log = create_log(log_dir, config, clock, log_start_offset=1, last_shutdown_clean=False)
    assert set(log.producer_state.active_producers) == {2}
    log.close()


def _verify_recovered(log: UnifiedLog, expected: dict[str, int], recovery_point: int) -> None:
    active = log.active_segment
    assert log.recovery_point == recovery_point
    assert log.log_end_offset == expected["leo"]
    assert active.offset_index.last_offset == expected["last_index_offset"]
    assert active.offset_index.entries == expected["index_entries"]
    assert active.time_index.last_entry().timestamp == expected["last_ts"]
    assert active.time_index.last_entry().offset == expected["last_ts_offset"]
    assert active.time_index.entries == expected["time_entries"]


def test_log_recovers_to_correct_offset(log_dir: Path, clock: MockTime) -> None:
    num_messages, message_size = 100, 100
    config = TopicConfig(
        segment_bytes=7 * message_size,
        index_interval_bytes=3 * message_size,
        segment_index_bytes=4096,
    )
    log = create_log(log_dir, config, clock)
    for i in range(num_messages):
        append_value(log, os.urandom(message_size), clock() + i * 10)
    assert log.log_end_offset == num_messages
    active = log.active_segment
    expected = {
        "leo": log.log_end_offset,
        "last_index_offset": active.offset_index.last_offset,
        "index_entries": active.offset_index.entries,
        "last_ts": active.largest_timestamp(),
        "last_ts_offset": log.log_end_offset - 1,
        "time_entries": active.time_index.entries
        + (0 if active.time_index.last_entry().offset == log.log_end_offset - 1 else 1),
    }
    last_offset = log.log_end_offset
    log.close()
    log = create_log(log_dir, config, clock, recovery_point=last_offset, last_shutdown_clean=False)
    _verify_recovered(log, expected, last_offset)
    log.close()
    log = create_log(log_dir, config, clock, recovery_point=10, last_shutdown_clean=False)
    _verify_recovered(log, expected, 10)
    log.flush()
    _verify_recovered(log, expected, last_offset)
    log.close()


def _fill(log: UnifiedLog, clock: MockTime, n: int, size: int = 10) -> None:
    for i in range(n):
        append_value(log, bytes([65 + i % 26]) * size, clock() + i * 10)


def _check_reads_and_timestamps(log: UnifiedLog, clock: MockTime, n: int) -> None:
    for i in range(n):
        info = log.read(i, 100, True)
        assert info.records is not None
        assert batch_offsets_from(info.records.read())[0] == i
        found = log.fetch_offset_by_timestamp(clock() + i * 10)
        assert found is not None and found.offset == i


def batch_offsets_from(data: bytes) -> list[int]:
    from broker.records.entries import iter_file_entries

    return [e.offset for e in iter_file_entries(data)]


def test_index_rebuild(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_dir, config, clock)
    _fill(log, clock, 50)
    index_files = [s.offset_index_path for s in log.segments]
    time_index_files = [s.time_index_path for s in log.segments]
    log.close()
    for path in index_files + time_index_files:
        path.unlink()
    log = create_log(log_dir, config, clock, last_shutdown_clean=False)
    assert all(p.exists() for p in index_files)
    _check_reads_and_timestamps(log, clock, 50)
    # the first offset of each segment maps to the segment base
    for segment in log.segments:
        found = log.fetch_offset_by_timestamp(
            segment.read_max_timestamp_and_offset_so_far().timestamp
        )
        assert found is not None
    log.close()


def test_rebuild_time_index_for_old_messages(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_dir, config, clock)
    for _ in range(50):
        log.append(legacy_entry(log.log_end_offset, 0, b"v0-value"))
    time_index_files = [s.time_index_path for s in log.segments]
    log.close()
    for path in time_index_files:
        path.unlink()
    log = create_log(log_dir, config, clock, last_shutdown_clean=False)
    for segment in log.segments:
        assert segment.time_index.entries == 0
        if segment is not log.active_segment:
            assert segment.time_index_path.stat().st_size == 0
    log.close()


def test_corrupt_index_rebuild(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_dir, config, clock)
    _fill(log, clock, 50)
    paths = [p for s in log.segments for p in (s.offset_index_path, s.time_index_path)]
    log.close()
    for path in paths:
        path.write_bytes(b"  ")
    log = create_log(log_dir, config, clock, last_shutdown_clean=False)
    _check_reads_and_timestamps(log, clock, 50)
    log.close()


def test_bogus_index_segments_are_removed(log_dir: Path, clock: MockTime) -> None:
    bogus_index1 = files.offset_index_file(log_dir, 0)
    bogus_time_index1 = files.time_index_file(log_dir, 0)
    bogus_index2 = files.offset_index_file(log_dir, 5)
    bogus_time_index2 = files.time_index_file(log_dir, 5)
    log_dir.mkdir(parents=True)
    for path in (bogus_index1, bogus_time_index1, bogus_index2, bogus_time_index2):
        path.write_bytes(b"")
    config = TopicConfig(segment_bytes=200, segment_index_bytes=1000, index_interval_bytes=1)
    log = create_log(log_dir, config, clock)
    assert bogus_index1.stat().st_size > 0
    assert bogus_time_index1.stat().st_size > 0
    assert not bogus_index2.exists()
    assert not bogus_time_index2.exists()
    for _ in range(10):
        append_value(log, b"test", clock())
    log.close()


def test_reopen_then_truncate(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=10000)
    log = create_log(log_dir, config, clock)
    for _ in range(100):
        append_value(log, b"test", clock())
    log.close()
    log = create_log(log_dir, config, clock)
    log.truncate_to(3)
    assert log.number_of_segments == 1
    assert log.log_end_offset == 3
    log.close()


def test_open_deletes_obsolete_files(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=120, retention_ms=999)
    log = create_log(log_dir, config, clock)
    for _ in range(100):
        append_value(log, b"test", clock() - 1000)  # old enough for retention.ms
    assert log.number_of_segments > 1
    log.delete_old_segments()
    assert any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    log.close_handlers()
    log = create_log(log_dir, config, clock)
    assert log.number_of_segments == 1
    assert not any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    log.close()


def test_corrupt_log(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    recovery_point = 50
    for _ in range(10):
        log = create_log(log_dir, config, clock)
        num_messages = 50 + RNG.randrange(50)
        for _ in range(num_messages):
            append_value(log, b"test", clock())
        before = records_of(log)
        log.close()
        with open(log.active_segment.offset_index_path, "ab") as f:
            f.write(os.urandom(RNG.randrange(1024) + 1))
        with open(log.active_segment.log.path, "ab") as f:
            f.write(os.urandom(RNG.randrange(1024) + 1))
        log = create_log(
            log_dir, config, clock, recovery_point=recovery_point, last_shutdown_clean=False
        )
        assert log.log_end_offset == num_messages
        assert records_of(log) == before
        log.close()
        log.delete()


def test_over_compacted_log_recovery(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    log = create_log(log_dir, config, clock)
    log.append(v2_batch(0, [b"v1"], keys=[b"k1"]))
    assert log.active_segment.base_offset == 0
    log.append(v2_batch(INT_MAX + 2, [b"v3"], keys=[b"k3"]))
    assert log.active_segment.base_offset == INT_MAX + 2
    assert files.producer_snapshot_file(log_dir, INT_MAX + 2).exists()
    log.append(v2_batch(INT_MAX + 3, [b"v4"], keys=[b"k4"]))
    log.append(v2_batch(INT_MAX + 4, [b"v5"], keys=[b"k5"]))
    assert log.active_segment.base_offset == INT_MAX + 2
    log.close()
    index_files = [p for p in log_dir.iterdir() if p.name.endswith(".index")]
    assert len(index_files) == 2
    for path in index_files:
        index = OffsetIndex(path, files.offset_from_file_name(path.name))
        assert index.last_offset >= 0
        index.close()


def _gzip_v2(base_offset: int, values: list[bytes]) -> bytes:
    with warnings.catch_warnings():  # kafka-python's import uses a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(2, 1, 1 << 20, offset=0)
    for v in values:
        builder.append(timestamp=0, key=None, value=v)
    builder.close()
    data = bytearray(builder.buffer())
    set_base_offset(data, 0, base_offset)  # outside the CRC; kafka-python packs it as int32
    return bytes(data)


def test_over_compacted_log_recovery_multi_record(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    log = create_log(log_dir, config, clock)
    log.append(_gzip_v2(0, [b"v1"]))
    assert log.active_segment.base_offset == 0
    log.append(_gzip_v2(INT_MAX + 2, [b"v3", b"v4"]))
    assert log.active_segment.base_offset == INT_MAX + 2
    assert files.producer_snapshot_file(log_dir, INT_MAX + 2).exists()
    log.append(_gzip_v2(INT_MAX + 4, [b"v5", b"v6"]))
    log.append(_gzip_v2(INT_MAX + 6, [b"v7", b"v8"]))
    assert log.active_segment.base_offset == INT_MAX + 2
    log.close()
    index_files = [p for p in log_dir.iterdir() if p.name.endswith(".index")]
    assert len(index_files) == 2


def _gzip_v1_wrapper(last_offset: int, values: list[bytes]) -> bytes:
    inner = b"".join(legacy_entry(i, 1, v, key=b"k") for i, v in enumerate(values))
    return legacy_entry(last_offset, 1, gzip.compress(inner), attributes=1)


def test_over_compacted_log_recovery_multi_record_v1(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    log = create_log(log_dir, config, clock)
    log.append(legacy_entry(0, 1, b"v1", key=b"k1"))
    assert log.active_segment.base_offset == 0
    log.append(_gzip_v1_wrapper(INT_MAX + 3, [b"v3", b"v4"]))
    assert log.active_segment.base_offset == 3
    assert files.producer_snapshot_file(log_dir, 3).exists()
    log.append(_gzip_v1_wrapper(INT_MAX + 5, [b"v5", b"v6"]))
    assert log.active_segment.base_offset == INT_MAX + 4
    assert files.producer_snapshot_file(log_dir, INT_MAX + 4).exists()
    log.append(_gzip_v1_wrapper(INT_MAX + 7, [b"v7", b"v8"]))
    assert log.active_segment.base_offset == INT_MAX + 4
    log.close()
    index_files = [p for p in log_dir.iterdir() if p.name.endswith(".index")]
    assert len(index_files) == 3


def test_legacy_append_clears_leader_epoch_cache(log_dir: Path, clock: MockTime) -> None:
    log = create_log(log_dir, TopicConfig(), clock)
    append_value(log, b"a", clock(), epoch=5)
    assert log.leader_epoch_cache.entries() == [EpochEntry(5, 0)]
    log.append(legacy_entry(1, 1, b"old"))
    assert log.leader_epoch_cache.entries() == []
    log.close()


def test_clean_shutdown_file(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig(segment_bytes=1000, index_interval_bytes=10000)
    log = create_log(log_dir, config, clock)
    for _ in range(100):
        append_value(log, b"test", clock())
    leo = log.log_end_offset
    log.close()
    with pytest.MonkeyPatch.context() as mp:
        _reads, recovered = _instrumented(mp)
        log = create_log(log_dir, config, clock, last_shutdown_clean=True)
        assert recovered == set()
    assert log.log_end_offset == leo
    log.close()


def test_log_recovers_for_leader_epoch(log_dir: Path, clock: MockTime) -> None:
    log = create_log(log_dir, TopicConfig(), clock)
    for epoch, value in ((1, b"a"), (2, b"b"), (2, b"c"), (3, b"d")):
        append_value(log, value, clock(), epoch=epoch)
    assert log.leader_epoch_cache.entries() == [
        EpochEntry(1, 0),
        EpochEntry(2, 1),
        EpochEntry(3, 3),
    ]
    log.leader_epoch_cache.truncate_from_end(1)
    assert log.leader_epoch_cache.entries() == [EpochEntry(1, 0)]
    log.close()
    log = create_log(log_dir, TopicConfig(), clock, last_shutdown_clean=False)
    assert log.leader_epoch_cache.entries() == [
        EpochEntry(1, 0),
        EpochEntry(2, 1),
        EpochEntry(3, 3),
    ]
    log.close()


def test_log_end_less_than_start_after_reopen(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    for i in range(5):
        append_value(log, str(i).encode(), clock())
        log.roll()
    assert log.number_of_segments == 6
    start_offset = 4
    log.maybe_increment_log_start_offset(start_offset)
    assert log.log_end_offset > log.log_start_offset
    target = log.segments[1]
    target.log.path.write_bytes(b"corruptRecord")
    log.close()
    log = create_log(
        log_dir, config, clock, log_start_offset=start_offset, last_shutdown_clean=False
    )
    assert log.number_of_segments == 1
    assert log.log_start_offset == start_offset
    assert log.log_end_offset == start_offset
    only = log.segments[0]
    assert only.base_offset == start_offset
    assert only.log.path.exists()
    assert only.offset_index_path.exists()
    assert only.time_index_path.exists()
    log.close()


def test_corrupted_log_recovery_does_not_delete_producer_state_snapshots_post_recovery(
    log_dir: Path, clock: MockTime
) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    for i in range(9):
        append_value(log, str(i).encode(), clock())
        log.roll()
    assert log.number_of_segments == 10
    assert log.active_segment.base_offset == 9
    for offset in range(1, 10):
        assert files.producer_snapshot_file(log_dir, offset).exists()
    log.maybe_increment_log_start_offset(4)
    log.segments[1].log.path.write_bytes(b"corruptRecord")
    log.close()
    log = create_log(log_dir, config, clock, log_start_offset=4, last_shutdown_clean=False)
    assert log.number_of_segments == 1
    assert (log.log_start_offset, log.active_segment.base_offset, log.log_end_offset) == (4, 4, 4)
    assert [o for o in range(1, 5) if files.producer_snapshot_file(log_dir, o).exists()] == []
    for i in range(5):
        append_value(log, str(i).encode(), clock())
        log.roll()
    assert log.log_end_offset == 9
    clock.sleep(config.file_delete_delay_ms)
    log.delete_expired_files()
    for offset in range(5, 10):
        assert files.producer_snapshot_file(log_dir, offset).exists()
    assert not any(p.name.endswith(files.DELETED_FILE_SUFFIX) for p in log_dir.iterdir())
    log.close()


def test_recover_with_empty_active_segment(log_dir: Path, clock: MockTime) -> None:
    num_messages, message_size = 100, 100
    config = TopicConfig(
        segment_bytes=7 * message_size,
        index_interval_bytes=3 * message_size,
        segment_index_bytes=4096,
    )
    log = create_log(log_dir, config, clock)
    for i in range(num_messages):
        append_value(log, os.urandom(message_size), clock() + i * 10)
    log.roll()
    log.flush()
    with pytest.raises(FileNotFoundError):
        log.active_segment.sanity_check(True)
    last_offset = log.log_end_offset
    log.close_handlers()

    log = create_log(log_dir, config, clock, recovery_point=last_offset, last_shutdown_clean=False)
    assert log.recovery_point == last_offset
    assert log.log_end_offset == num_messages
    assert log.active_segment.time_index.entries == 0
    log.active_segment.sanity_check(True)
    for i in range(num_messages):
        append_value(log, os.urandom(message_size), clock() + i * 10)
    log.roll()
    with pytest.raises(FileNotFoundError):
        log.active_segment.sanity_check(True)
    log.flush(include_empty_active=True)
    log.active_segment.sanity_check(True)
    last_offset = log.log_end_offset
    log.close_handlers()

    log = create_log(log_dir, config, clock, recovery_point=last_offset, last_shutdown_clean=False)
    assert log.recovery_point == last_offset
    assert log.log_end_offset == 2 * num_messages
    assert log.active_segment.time_index.entries == 0
    log.active_segment.sanity_check(True)
    log.close()


def test_log_start_offset_when_remote_storage_is_enabled(log_dir: Path, clock: MockTime) -> None:
    config = TopicConfig()
    log = create_log(log_dir, config, clock)
    for i in range(10):
        append_value(log, str(i).encode(), clock())
        if i == 4:
            log.roll()
    log.close()
    for segment in list(log.segments)[:1]:
        for path in (segment.log.path, segment.offset_index_path, segment.time_index_path):
            path.unlink(missing_ok=True)
    log = create_log(log_dir, config, clock, log_start_offset=0, last_shutdown_clean=True)
    assert log.log_start_offset == 5
    assert batch_offsets(log.segments[0].log)[0] == 5
    log.close()
