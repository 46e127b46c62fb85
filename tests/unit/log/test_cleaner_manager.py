"""Choosing logs to clean and the cleaning states (Kafka's LogCleanerManagerTest
cases that apply: no replication, no transactions, no log dir failures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log.checkpoints import cleaner_offset_checkpoint
from broker.log.cleaner_manager import (
    ABORTED,
    IN_PROGRESS,
    LogCleanerManager,
    LogCleaningError,
    paused,
)
from broker.log.cleaning_plan import cleanable_offsets
from broker.log.files import TopicPartition
from broker.log.unified_log import UnifiedLog
from tests.unit.log.cleaner_helpers import append_records
from tests.unit.log.helpers import MockTime


def create_log(
    log_dir: Path, tp: TopicPartition, clock: MockTime, **overrides: object
) -> UnifiedLog:
    """``createLowRetentionLogConfig``: min.cleanable.dirty.ratio 0.05."""
    config = TopicConfig(
        cleanup_policy=("compact",), segment_bytes=2048, min_cleanable_dirty_ratio=0.05
    ).with_overrides({k.replace("_", "."): v for k, v in overrides.items()})
    return UnifiedLog.open(log_dir / f"{tp.topic}-{tp.partition}", config, time_ms=clock)


def write_records(log: UnifiedLog, batches: int, per_batch: int, per_segment: int) -> None:
    for i in range(batches):
        start = log.log_end_offset
        append_records(
            log, [(b"key-%d" % o, b"value-%d" % o) for o in range(start, start + per_batch)]
        )
        if i % per_segment == 0:
            log.roll()
    log.roll()


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path / "data"
        self.dir.mkdir()
        self.clock = MockTime()
        self.logs: dict[TopicPartition, UnifiedLog] = {}

    def filthy(self, partitions: list[TopicPartition], start: int, increment: int) -> None:
        """``setupIncreasinglyFilthyLogs``."""
        batches = start
        for tp in partitions:
            log = create_log(self.dir, tp, self.clock)
            self.logs[tp] = log
            write_records(log, batches, 1, 5)
            batches += increment

    def manager(self, checkpoints: dict[TopicPartition, int] | None = None) -> LogCleanerManager:
        if checkpoints:
            cleaner_offset_checkpoint(self.dir).write(checkpoints)
        return LogCleanerManager([self.dir], lambda: dict(self.logs), self.clock)

    def close(self) -> None:
        for log in self.logs.values():
            log.close()


TPS = [TopicPartition("wishing-well", i) for i in range(3)]


@pytest.fixture
def env(tmp_path: Path):  # type: ignore[no-untyped-def]
    e = Env(tmp_path)
    yield e
    e.close()


def test_grab_filthiest_compacted_log_throws_exception(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    tp = TopicPartition("A", 1)
    env.filthy([tp], 4, 0)
    manager = env.manager({tp: 1})

    def broken(*_args: object) -> int:
        raise RuntimeError("Error!")

    monkeypatch.setattr("broker.log.cleaner_manager.max_compaction_delay", broken)
    with pytest.raises(LogCleaningError) as info:
        manager.grab_filthiest_compacted_log(env.clock())
    assert info.value.log is env.logs[tp]
    assert isinstance(info.value.__cause__, RuntimeError)


def test_grab_filthiest_compacted_log_returns_log_with_dirtiest_ratio(env: Env) -> None:
    env.filthy(TPS, 20, 5)
    manager = env.manager(dict.fromkeys(TPS, 20))
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None
    assert filthiest.topic_partition == TPS[2]
    assert filthiest.log.topic_partition == TPS[2]
    assert manager.cleaning_state(TPS[2]) == IN_PROGRESS
    assert manager.dirtiest_log_cleanable_ratio == filthiest.cleanable_ratio


def test_grab_filthiest_compacted_log_ignores_uncleanable_partitions(env: Env) -> None:
    env.filthy(TPS, 20, 5)
    manager = env.manager(dict.fromkeys(TPS, 20))
    manager.mark_partition_uncleanable(env.dir, TPS[2])
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.topic_partition == TPS[1]


def test_grab_filthiest_compacted_log_ignores_in_progress_partitions(env: Env) -> None:
    env.filthy(TPS, 20, 5)
    manager = env.manager(dict.fromkeys(TPS, 20))
    manager.set_cleaning_state(TPS[2], IN_PROGRESS)
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.topic_partition == TPS[1]


def test_grab_filthiest_compacted_log_ignores_both_in_progress_partitions_and_uncleanable_partitions(
    env: Env,
) -> None:
    env.filthy(TPS, 20, 5)
    manager = env.manager(dict.fromkeys(TPS, 20))
    manager.set_cleaning_state(TPS[2], IN_PROGRESS)
    manager.mark_partition_uncleanable(env.dir, TPS[1])
    assert manager.grab_filthiest_compacted_log(env.clock()) is None


def test_dirty_offset_reset_if_larger_than_end_offset(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    env.filthy([tp], 20, 5)
    manager = env.manager({tp: 200})
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.first_dirty_offset == 0


def test_dirty_offset_reset_if_smaller_than_start_offset(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    env.filthy([tp], 20, 5)
    env.logs[tp].maybe_increment_log_start_offset(10)
    manager = env.manager({tp: 0})
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.first_dirty_offset == 10


def test_log_start_offset_larger_than_active_segment_base_offset(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    log = create_log(env.dir, tp, env.clock)
    env.logs[tp] = log
    for _ in range(3):
        start = log.log_end_offset
        append_records(log, [(b"k%d" % o, b"v") for o in range(start, start + 3)])
    assert log.number_of_segments == 1
    log.maybe_increment_log_start_offset(2)
    manager = env.manager({tp: 0})
    # the active segment is uncleanable and hence not filthy
    assert manager.grab_filthiest_compacted_log(env.clock()) is None


def test_dirty_offset_larger_than_active_segment_base_offset(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    log = create_log(env.dir, tp, env.clock)
    env.logs[tp] = log
    for _ in range(2):
        start = log.log_end_offset
        append_records(log, [(b"k%d" % o, b"v") for o in range(start, start + 3)])
    assert log.active_segment.base_offset == 0
    manager = env.manager({tp: 3})
    assert manager.grab_filthiest_compacted_log(env.clock()) is None


def test_update_checkpoints_should_add_offset_to_partition(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    assert manager.all_cleaner_checkpoints().get(tp, 0) != 107
    manager.update_checkpoints(env.dir, update=(tp, 107))
    assert manager.all_cleaner_checkpoints()[tp] == 107
    # the file is Kafka's OffsetCheckpointFile
    assert (env.dir / "cleaner-offset-checkpoint").read_text() == "0\n1\nlog 0 107\n"
    assert env.manager().all_cleaner_checkpoints() == {tp: 107}


def test_update_checkpoints_should_remove_partition_data(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    manager.update_checkpoints(env.dir, update=(tp, 107))
    manager.update_checkpoints(env.dir, remove=tp)
    assert tp not in manager.all_cleaner_checkpoints()


def test_maybe_truncate_checkpoint_should_truncate_data(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    manager.update_checkpoints(env.dir, update=(tp, 107))
    manager.maybe_truncate_checkpoint(env.dir, tp, 1000)
    assert manager.all_cleaner_checkpoints()[tp] == 107
    manager.maybe_truncate_checkpoint(env.dir, tp, 1)
    assert manager.all_cleaner_checkpoints()[tp] == 1


def test_concurrent_log_cleanup_and_topic_deletion(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    manager.set_cleaning_state(tp, IN_PROGRESS)
    manager.abort_cleaning(tp)  # topic deletion: does not wait
    with pytest.raises(Exception, match="aborted"):
        manager.check_cleaning_aborted(tp)
    manager.done_cleaning(tp, env.dir, 3)
    assert manager.cleaning_state(tp) is None
    assert tp not in manager.all_cleaner_checkpoints()


def test_abort_and_pause_then_resume(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    manager.abort_and_pause_cleaning(tp)
    assert manager.cleaning_state(tp) == paused(1)
    manager.abort_and_pause_cleaning(tp)
    assert manager.cleaning_state(tp) == paused(2)
    assert manager.grab_filthiest_compacted_log(env.clock()) is None
    manager.resume_cleaning([tp])
    manager.resume_cleaning([tp])
    assert manager.cleaning_state(tp) is None
    with pytest.raises(ValueError, match="not paused"):
        manager.resume_cleaning([tp])


def test_cleanable_offsets_active_segment(tmp_path: Path) -> None:
    clock = MockTime()
    log = create_log(tmp_path, TopicPartition("t", 0), clock, segment_bytes=1024)
    while log.number_of_segments < 8:
        append_records(log, [(log.log_end_offset, log.log_end_offset)])
    offsets = cleanable_offsets(log, 0, clock())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == log.active_segment.base_offset
    log.close()


def test_cleanable_offsets_for_time(tmp_path: Path) -> None:
    clock = MockTime()
    lag = 60 * 60 * 1000
    log = create_log(tmp_path, TopicPartition("t", 0), clock, segment_bytes=1024,
                     min_compaction_lag_ms=lag)  # fmt: skip
    t0 = clock()
    while log.number_of_segments < 4:
        append_records(log, [(log.log_end_offset, log.log_end_offset)], timestamp=t0)
    active_at_t0 = log.active_segment
    clock.sleep(lag + 1)
    t1 = clock()
    while log.number_of_segments < 8:
        append_records(log, [(log.log_end_offset, log.log_end_offset)], timestamp=t1)
    offsets = cleanable_offsets(log, 0, clock())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == active_at_t0.base_offset
    log.close()


def test_cleanable_offsets_for_short_time(tmp_path: Path) -> None:
    clock = MockTime()
    lag = 60 * 60 * 1000
    log = create_log(tmp_path, TopicPartition("t", 0), clock, segment_bytes=1024,
                     min_compaction_lag_ms=lag)  # fmt: skip
    t0 = clock()
    while log.number_of_segments < 8:
        append_records(log, [(log.log_end_offset, log.log_end_offset)], timestamp=t0)
    clock.sleep(lag + 1)
    offsets = cleanable_offsets(log, 0, clock())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == log.active_segment.base_offset
    log.close()


def test_cleanable_offsets_needs_checkpoint_reset(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    env.filthy([tp], 20, 5)
    log = env.logs[tp]
    log.maybe_increment_log_start_offset(10)
    assert not cleanable_offsets(log, 15, env.clock()).force_update_checkpoint
    log.maybe_increment_log_start_offset(20)
    assert cleanable_offsets(log, 15, env.clock()).force_update_checkpoint
    assert cleanable_offsets(log, 25, env.clock()).force_update_checkpoint


def test_done_cleaning(env: Env) -> None:
    tp = TopicPartition("log", 0)
    env.filthy([tp], 5, 0)
    manager = env.manager()
    with pytest.raises(ValueError):
        manager.done_cleaning(tp, env.dir, 1)
    manager.set_cleaning_state(tp, paused(1))
    with pytest.raises(ValueError):
        manager.done_cleaning(tp, env.dir, 1)
    manager.set_cleaning_state(tp, IN_PROGRESS)
    manager.done_cleaning(tp, env.dir, 1)
    assert manager.cleaning_state(tp) is None
    assert manager.all_cleaner_checkpoints()[tp] == 1
    manager.set_cleaning_state(tp, ABORTED)
    manager.done_cleaning(tp, env.dir, 1)
    assert manager.cleaning_state(tp) == paused(1)
    assert tp in manager.all_cleaner_checkpoints()


def test_checkpoint_updated_for_invalid_offset_no_cleaning(env: Env) -> None:
    tp = TopicPartition("foo", 0)
    env.filthy([tp], 20, 5)
    env.logs[tp].maybe_increment_log_start_offset(20)
    manager = env.manager({tp: 15})
    assert manager.grab_filthiest_compacted_log(env.clock()) is None
    assert manager.all_cleaner_checkpoints()[tp] == 20


def test_checkpoint_updated_for_invalid_offset_not_selected(env: Env) -> None:
    tps = [TopicPartition("foo", 0), TopicPartition("foo", 1)]
    env.filthy(tps, 20, 5)
    env.logs[tps[0]].maybe_increment_log_start_offset(15)
    manager = env.manager({tps[0]: 10, tps[1]: 5})
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.topic_partition == tps[1]
    assert manager.all_cleaner_checkpoints()[tps[0]] == 15


def test_max_compaction_lag_makes_a_log_cleanable_below_the_ratio(env: Env) -> None:
    tp = TopicPartition("lag", 0)
    log = create_log(env.dir, tp, env.clock, min_cleanable_dirty_ratio=0.99,
                     max_compaction_lag_ms=1000)  # fmt: skip
    env.logs[tp] = log
    write_records(log, 10, 1, 5)
    manager = env.manager({tp: 5})
    assert manager.grab_filthiest_compacted_log(env.clock()) is None
    env.clock.sleep(10_000)
    filthiest = manager.grab_filthiest_compacted_log(env.clock())
    assert filthiest is not None and filthiest.need_compaction_now


def test_uncleanable_partitions_are_forgotten_when_deleted(env: Env) -> None:
    env.filthy(TPS[:2], 5, 5)
    manager = env.manager()
    manager.mark_partition_uncleanable(env.dir, TPS[0])
    manager.mark_partition_uncleanable(env.dir, TPS[1])
    assert manager.uncleanable_bytes(env.dir, env.clock()) > 0
    env.logs.pop(TPS[0]).close()
    manager.maintain_uncleanable_partitions()
    assert manager.uncleanable_partitions(env.dir) == {TPS[1]}
