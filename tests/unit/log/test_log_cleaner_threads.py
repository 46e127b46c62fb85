"""The log cleaner's threads in a LogManager (Kafka's LogCleanerIntegrationTest
cases that apply to one broker, and LogCleanerTest's metric cases)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker.config import BrokerConfig
from broker.log.cleaner_manager import IN_PROGRESS
from broker.log.files import TopicPartition
from broker.log.log_cleaner import CleanerConfig, LogCleaner
from broker.log.manager import LogManager
from tests.unit.log.cleaner_helpers import append_record, keys_in_log

T = TypeVar("T")


class Owner:
    """A thread that owns the logs, as the event loop does in the broker."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    def call(self, fn: Callable[[], T]) -> T:
        future: Future[T] = Future()
        self._queue.put((fn, future))
        return future.result(timeout=30)

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(5)


def config(**keys: object) -> BrokerConfig:
    props = {"log.cleaner.backoff.ms": "20", "log.cleaner.dedupe.buffer.size": str(1 << 20)}
    props.update({k: str(v) for k, v in keys.items()})
    return BrokerConfig.from_properties(props)


@pytest.fixture
def owner() -> Iterator[Owner]:
    o = Owner()
    yield o
    o.stop()


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


COMPACT = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
}


def fill(manager: LogManager, tp: TopicPartition, count: int, keys: int) -> None:
    log = manager.get_log(tp)
    assert log is not None
    for i in range(count):
        append_record(log, i % keys, i)
    log.roll()


def test_cleaner_threads_clean_the_dirtiest_log_and_checkpoint(
    tmp_path: Path, owner: Owner
) -> None:
    manager = LogManager([tmp_path], config(**{"log.cleaner.threads": 2}))
    manager.startup()
    tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
    owner.call(lambda: manager.create_topic("t", 2, COMPACT))
    for tp in tps:
        owner.call(lambda tp=tp: fill(manager, tp, 200, 10))
    cleaner = manager.cleaner
    assert cleaner is not None
    manager.start_cleaner(owner.call)
    try:
        for tp in tps:
            log = manager.get_log(tp)
            assert log is not None
            end = log.active_segment.base_offset
            wait_for(
                lambda tp=tp, end=end: cleaner.manager.all_cleaner_checkpoints().get(tp, 0) >= end
            )
            keys = owner.call(lambda log=log: keys_in_log(log))
            assert sorted(keys) == list(range(10))
        assert (tmp_path / "cleaner-offset-checkpoint").read_text().startswith("0\n2\n")
        snapshot = owner.call(cleaner.snapshot)
        assert snapshot.dead_thread_count == 0
        assert 0 < snapshot.cleaner_recopy_percent < 100
    finally:
        manager.stop_cleaner()
        manager.shutdown()
    # the checkpoint survives a restart
    again = LogManager([tmp_path], config(**{"log.cleaner.enable": "false"}))
    assert again.cleaner is None
    from broker.log.checkpoints import cleaner_offset_checkpoint

    assert set(cleaner_offset_checkpoint(tmp_path).read()) == set(tps)


def test_marks_partitions_as_offline_and_populates_uncleanable_metrics(
    tmp_path: Path, owner: Owner
) -> None:
    """``testMarksPartitionsAsOfflineAndPopulatesUncleanableMetrics``: a corrupt
    partition becomes uncleanable (metrics count it and its bytes), the others
    are still cleaned."""
    manager = LogManager([tmp_path], config())
    manager.startup()
    owner.call(lambda: manager.create_topic("t", 2, COMPACT))
    good, bad = TopicPartition("t", 0), TopicPartition("t", 1)
    for tp in (good, bad):
        owner.call(lambda tp=tp: fill(manager, tp, 100, 10))
    bad_log = manager.get_log(bad)
    assert bad_log is not None
    with open(bad_log.segments[0].log.path, "r+b") as f:
        f.seek(30)
        f.write(b"\xff\xff")
    cleaner = manager.cleaner
    assert cleaner is not None
    manager.start_cleaner(owner.call)
    try:
        wait_for(lambda: bad in cleaner.manager.uncleanable_partitions(tmp_path))
        good_log = manager.get_log(good)
        assert good_log is not None
        end = good_log.active_segment.base_offset
        wait_for(lambda: cleaner.manager.all_cleaner_checkpoints().get(good, 0) >= end)
        snapshot = owner.call(cleaner.snapshot)
        count, size = snapshot.uncleanable[str(tmp_path)]
        assert count == 1 and size > 0
        assert snapshot.dead_thread_count == 0
    finally:
        manager.stop_cleaner()
        manager.shutdown()


def test_is_thread_failed(tmp_path: Path) -> None:
    """``testIsThreadFailed``: a thread that fails outside a cleaning dies and counts."""

    def broken_owner(_fn: Callable[[], Any]) -> Any:
        raise RuntimeError("the owner is gone")

    cleaner = LogCleaner(
        CleanerConfig(num_threads=1, dedupe_buffer_size=1 << 16, backoff_ms=10),
        [tmp_path],
        dict,
        owner_call=broken_owner,
    )
    cleaner.startup()
    try:
        wait_for(lambda: not cleaner.running)
        assert cleaner.dead_thread_count == 1
        assert cleaner.snapshot().dead_thread_count == 1
    finally:
        cleaner.shutdown()


def test_max_clean_time_secs(tmp_path: Path) -> None:
    """``testMaxCleanTimeSecs``: with no cleaning yet every gauge is 0."""
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 16), [tmp_path], dict)
    snapshot = cleaner.snapshot()
    assert snapshot.max_buffer_utilization_percent == 0
    assert snapshot.max_clean_time_secs == 0
    assert snapshot.max_compaction_delay_secs == 0
    assert snapshot.cleaner_recopy_percent == 0
    assert snapshot.uncleanable == {str(tmp_path): (0, 0)}


def test_cleaner_config_from_kafka_keys() -> None:
    c = CleanerConfig.from_broker(
        config(**{"log.cleaner.threads": 2, "log.cleaner.io.buffer.size": 1 << 20})
    )
    assert c.map_memory_per_thread == (1 << 20) // 2
    assert c.io_buffer_per_thread == (1 << 20) // 2 // 2
    default = CleanerConfig.from_broker(BrokerConfig())
    assert default == CleanerConfig(max_io_bytes_per_second=default.max_io_bytes_per_second)
    assert default.max_io_bytes_per_second > 1e300


def test_retention_waits_while_a_log_is_cleaned_and_deletion_aborts(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], config())
    manager.startup()
    manager.create_topic(
        "t", 1, {**COMPACT, "cleanup.policy": "compact,delete", "retention.ms": "1"}
    )
    tp = TopicPartition("t", 0)
    fill(manager, tp, 100, 10)
    assert manager.cleaner is not None
    cm = manager.cleaner.manager
    time.sleep(0.01)
    cm.set_cleaning_state(tp, IN_PROGRESS)
    assert manager.cleanup_logs() == 0
    cm.done_cleaning(tp, tmp_path, 5)
    assert manager.cleanup_logs() > 0
    cm.set_cleaning_state(tp, IN_PROGRESS)
    manager.delete_log(tp)
    state = cm.cleaning_state(tp)
    assert state is not None and state.resume
    assert tp not in cm.all_cleaner_checkpoints()
    cm.done_cleaning(tp, tmp_path, 50)
    assert cm.cleaning_state(tp) is None
    assert tp not in cm.all_cleaner_checkpoints()
    manager.shutdown()
