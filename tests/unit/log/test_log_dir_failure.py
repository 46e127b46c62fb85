"""A log dir that fails (deleted, its disk gone): offline, not a traceback per tick.

Kafka's ``LogDirFailureChannel`` and ``LogManager.handleLogDirFailure``: the
first I/O error of a dir takes it offline; its partitions answer
KAFKA_STORAGE_ERROR and leave the periodic tasks; the other dirs carry on;
once none is left the broker stops (``on_all_dirs_offline``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

import pytest

from broker.errors import KafkaStorageError
from broker.log import local_log
from broker.log.checkpoints import CleanShutdownFile
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from tests.unit.log.batches import v2_batch

A = TopicPartition("a", 0)


def two_dirs(
    tmp_path: Path, overrides: dict[str, object] | None = None
) -> tuple[LogManager, Path, Path, list[int]]:
    """A manager over two dirs with one partition of topic a in each; the list
    counts the ``on_all_dirs_offline`` calls."""
    one, two = (tmp_path / "one").absolute(), (tmp_path / "two").absolute()
    manager = LogManager([one, two])
    manager.startup()
    calls: list[int] = []
    manager.on_all_dirs_offline = lambda: calls.append(1)
    manager.create_topic("a", 2, overrides)
    return manager, one, two, calls


def log_in(manager: LogManager, directory: Path) -> TopicPartition:
    (tp,) = [lg.topic_partition for lg in manager.all_logs() if lg.dir.parent == directory]
    return tp


def test_a_failed_dir_refuses_its_logs_and_the_other_dir_carries_on(tmp_path: Path) -> None:
    manager, one, two, calls = two_dirs(tmp_path)
    failed, alive = log_in(manager, one), log_in(manager, two)
    manager.handle_log_dir_failure(one, "Disk error in directory one")
    assert manager.offline_log_dirs == {one: "Disk error in directory one"}
    assert manager.live_log_dirs == [two]
    assert [lg.topic_partition for lg in manager.all_logs()] == [alive]
    offline_log = manager.get_log(failed)
    assert offline_log is not None
    with pytest.raises(KafkaStorageError):
        offline_log.append(v2_batch(0, [b"x"]))
    live_log = manager.get_log(alive)
    assert live_log is not None
    live_log.append(v2_batch(0, [b"x"]))
    assert live_log.log_end_offset == 1
    # new partitions go to the live dir only
    manager.create_topic("b", 2)
    assert {lg.dir.parent for lg in manager.all_logs()} == {two}
    assert calls == []
    manager.shutdown()
    assert CleanShutdownFile(two).exists()
    assert not CleanShutdownFile(one).exists()


def test_only_the_first_failure_of_a_dir_counts_and_the_last_dir_stops_the_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager, one, two, calls = two_dirs(tmp_path)
    manager.handle_log_dir_failure(one, "first")
    manager.handle_log_dir_failure(one, "second")
    assert manager.offline_log_dirs == {one: "first"}
    assert calls == []
    with caplog.at_level(logging.ERROR, logger="broker.log.manager"):
        manager.handle_log_dir_failure(two, "the last one")
    assert calls == [1]
    assert "Shutdown broker because all log dirs in" in caplog.text
    manager.handle_log_dir_failure(two, "again")
    assert calls == [1]
    with pytest.raises(KafkaStorageError, match="No log directory is online"):
        manager.create_topic("c", 1)
    manager.shutdown()


def test_a_deleted_dir_goes_offline_at_the_checkpoint_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager, one, two, calls = two_dirs(tmp_path)
    shutil.rmtree(one)
    with caplog.at_level(logging.ERROR, logger="broker.log.manager"):
        manager.checkpoint_recovery_offsets()
        manager.checkpoint_log_start_offsets()
        manager.checkpoint_recovery_offsets()
    assert list(manager.offline_log_dirs) == [one]
    assert manager.offline_log_dirs[one].startswith(
        f"Disk error while writing recovery offsets checkpoint in directory {one}: "
    )
    assert caplog.text.count("Stopping serving logs in dir") == 1
    assert "Traceback" not in caplog.text
    assert manager.live_log_dirs == [two]
    assert calls == []
    manager.shutdown()


def test_an_io_error_of_a_flush_takes_its_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, one, two, calls = two_dirs(tmp_path, {"flush.ms": 0})
    failing = manager.get_log(log_in(manager, one))
    assert failing is not None
    failing.append(v2_batch(0, [b"x"]))
    real_fsync = local_log.os.fsync

    def fsync(fd: int) -> None:
        # the descriptors a flush of the failing log fsyncs are dups of its .log's
        if os.path.samefile(f"/proc/self/fd/{fd}", failing.segments[0].log.path):
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(local_log.os, "fsync", fsync)
    manager.flush_dirty_logs(now_ms=2**62)
    monkeypatch.setattr(local_log.os, "fsync", real_fsync)
    assert list(manager.offline_log_dirs) == [one]
    assert "Error while flushing log for a-" in manager.offline_log_dirs[one]
    assert "Input/output error" in manager.offline_log_dirs[one]
    assert manager.live_log_dirs == [two]
    assert calls == []
    manager.shutdown()
