"""LogManager: directories, locks, start-up and shutdown, topics, configs, ticks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.errors import InvalidConfigError, KafkaStorageError, UnknownTopicOrPartitionError
from broker.log.checkpoints import CleanShutdownFile, recovery_point_checkpoint
from broker.log.errors import LogDirLockedError
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


def fill(manager: LogManager, tp: TopicPartition, n: int) -> None:
    log = manager.get_or_create_log(tp)
    for _ in range(n):
        log.append(v2_batch(log.log_end_offset, [b"x" * 40]))


def test_a_second_manager_on_the_same_dir_is_refused(tmp_path: Path) -> None:
    first = LogManager([tmp_path / "d"])
    first.startup()
    with pytest.raises(LogDirLockedError, match=r"Failed to acquire lock on file \.lock"):
        LogManager([tmp_path / "d"]).startup()
    first.shutdown()
    second = LogManager([tmp_path / "d"])
    second.startup()
    second.shutdown()


def test_a_second_process_on_the_same_dir_is_refused(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "d"])
    manager.startup()
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from broker.log.manager import LogManager\n"
        "try:\n"
        f"    LogManager([Path({str(tmp_path / 'd')!r})]).startup()\n"
        "except Exception as e:\n"
        "    print(type(e).__name__); sys.exit(3)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert result.returncode == 3, result.stderr
    assert "LogDirLockedError" in result.stdout
    manager.shutdown()


def test_meta_properties_written_and_checked(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "d"], BrokerConfig({"node.id": 4}))
    manager.startup()
    text = (tmp_path / "d" / "meta.properties").read_text()
    assert "node.id=4" in text and "version=1" in text and "directory.id=" in text
    cluster_id = manager.cluster_id
    manager.shutdown()
    with pytest.raises(KafkaStorageError, match="node id"):
        LogManager([tmp_path / "d"], BrokerConfig({"node.id": 5})).startup()
    again = LogManager([tmp_path / "d"], BrokerConfig({"node.id": 4}))
    again.startup()
    assert again.cluster_id == cluster_id
    again.shutdown()


def test_shutdown_writes_checkpoints_and_marker_and_startup_is_clean(tmp_path: Path) -> None:
    d = tmp_path / "d"
    manager = LogManager([d])
    manager.startup()
    manager.create_topic("t", 2)
    fill(manager, TopicPartition("t", 1), 5)
    manager.shutdown()
    assert CleanShutdownFile(d).read_broker_epoch() == -1
    assert recovery_point_checkpoint(d).read() == {
        TopicPartition("t", 0): 0,
        TopicPartition("t", 1): 5,
    }
    manager = LogManager([d])
    manager.startup()
    assert not CleanShutdownFile(d).exists()
    log = manager.get_log(TopicPartition("t", 1))
    assert log is not None and log.log_end_offset == 5 and log.recovered_segments == 0
    manager.shutdown()


def test_unclean_start_recovers_from_the_checkpointed_recovery_point(tmp_path: Path) -> None:
    d = tmp_path / "d"
    manager = LogManager([d])
    manager.startup()
    tp = TopicPartition("t", 0)
    manager.create_topic("t", 1, {"segment.bytes": "300"})
    fill(manager, tp, 20)
    log = manager.get_log(tp)
    assert log is not None
    log.flush()
    manager.checkpoint_recovery_offsets()
    fill(manager, tp, 5)
    for lg in manager.all_logs():
        lg.close_handlers()
    manager._release_locks()  # crash
    manager = LogManager([d])
    manager.startup()
    log = manager.get_log(tp)
    assert log is not None
    assert log.log_end_offset == 25
    assert 0 < log.recovered_segments < log.number_of_segments
    assert log.recovery_point == 20
    manager.shutdown()


def test_partitions_spread_over_log_dirs_and_load_from_all(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, BrokerConfig({"num.recovery.threads.per.data.dir": 2}))
    manager.startup()
    manager.create_topic("t", 4)
    placed = {log.dir.parent.name for log in manager.all_logs()}
    assert placed == {"a", "b"}
    manager.shutdown()
    manager = LogManager(dirs)
    manager.startup()
    assert manager.topics() == {"t": 4}
    manager.shutdown()


def test_topic_ids_persist_in_partition_metadata(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "d"])
    manager.startup()
    topic_id = manager.create_topic("orders", 2)
    text = manager.topic_id_string("orders")
    assert text is not None and len(text) == 22
    assert (
        tmp_path / "d" / "orders-1" / "partition.metadata"
    ).read_text() == f"version: 0\ntopic_id: {text}"
    manager.shutdown()
    manager = LogManager([tmp_path / "d"])
    manager.startup()
    assert manager.topic_id("orders") == topic_id
    assert manager.topic_for_id(topic_id) == "orders"
    manager.shutdown()


def test_topic_configs_persist_and_alter_takes_effect(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "d"], BrokerConfig({"log.segment.bytes": 100000}))
    manager.startup()
    manager.create_topic("t", 1, {"retention.ms": 5000})
    assert manager.topic_config("t").retention_ms == 5000
    assert manager.topic_config("t").segment_bytes == 100000  # broker default
    with pytest.raises(InvalidConfigError):
        manager.alter_topic_config("t", {"segment.bytes": "x"})
    config = manager.alter_topic_config("t", {"segment.bytes": 200}, ["retention.ms"])
    assert config.segment_bytes == 200 and config.retention_ms == 604_800_000
    log = manager.get_log(TopicPartition("t", 0))
    assert log is not None and log.config.segment_bytes == 200
    fill(manager, TopicPartition("t", 0), 5)
    assert log.number_of_segments > 1
    manager.shutdown()
    manager = LogManager([tmp_path / "d"])
    manager.startup()
    assert manager.topic_config("t").segment_bytes == 200
    assert (tmp_path / "d" / "topic-config-t.properties").exists()
    manager.shutdown()


def test_delete_renames_then_removes_the_partition_dir(tmp_path: Path) -> None:
    clock = MockTime()
    manager = LogManager([tmp_path / "d"], time_ms=clock)
    manager.startup()
    manager.create_topic("gone", 1, {"file.delete.delay.ms": 1000})
    fill(manager, TopicPartition("gone", 0), 3)
    manager.delete_topic("gone")
    names = [p.name for p in (tmp_path / "d").iterdir() if p.is_dir()]
    assert len(names) == 1 and names[0].startswith("gone-0.") and names[0].endswith("-delete")
    assert manager.get_log(TopicPartition("gone", 0)) is None
    assert manager.topic_id("gone") is None
    with pytest.raises(UnknownTopicOrPartitionError):
        manager.delete_topic("gone")
    clock.sleep(1000)
    manager.delete_expired_files()
    assert not [p for p in (tmp_path / "d").iterdir() if p.is_dir()]
    assert not (tmp_path / "d" / "topic-config-gone.properties").exists()
    manager.shutdown()


def test_ticks(tmp_path: Path) -> None:
    clock = MockTime()
    manager = LogManager([tmp_path / "d"], time_ms=clock)
    manager.startup()
    manager.create_topic(
        "t", 1, {"segment.bytes": "200", "retention.bytes": "0", "flush.ms": "1000"}
    )
    tp = TopicPartition("t", 0)
    fill(manager, tp, 10)
    log = manager.get_log(tp)
    assert log is not None
    assert manager.flush_dirty_logs() == 1  # a roll left a flush to do
    clock.sleep(1000)
    manager.flush_dirty_logs()
    assert log.recovery_point == log.log_end_offset
    assert manager.cleanup_logs() > 0
    assert log.log_start_offset > 0
    manager.checkpoint_log_start_offsets()
    # only a start offset above the first segment's base is written (Kafka)
    assert (tmp_path / "d" / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    fill(manager, tp, 3)
    log.maybe_increment_log_start_offset(log.log_start_offset + 1)
    manager.checkpoint_log_start_offsets()
    assert (
        tmp_path / "d" / "log-start-offset-checkpoint"
    ).read_text() == f"0\n1\nt 0 {log.log_start_offset}\n"
    stats = manager.log_stats()
    assert stats[0].topic == "t" and stats[0].log_end_offset == 13
    manager.shutdown()


@pytest.mark.parametrize(
    ("policy", "deletes"), [("delete", True), ("compact,delete", True), ("compact", False)]
)
def test_retention_follows_the_delete_policy(tmp_path: Path, policy: str, deletes: bool) -> None:
    """Kafka's cleaner applies retention to compact,delete logs; compact alone keeps all."""
    manager = LogManager([tmp_path / "d"], time_ms=MockTime())
    manager.startup()
    manager.create_topic(
        "t", 1, {"segment.bytes": "200", "retention.bytes": "0", "cleanup.policy": policy}
    )
    tp = TopicPartition("t", 0)
    fill(manager, tp, 10)
    log = manager.get_log(tp)
    assert log is not None and log.number_of_segments > 1
    assert (manager.cleanup_logs() > 0) is deletes
    assert (log.log_start_offset > 0) is deletes
    manager.shutdown()


def test_unknown_folder_in_a_log_dir_stops_startup(tmp_path: Path) -> None:
    (tmp_path / "d" / "notapartition").mkdir(parents=True)
    with pytest.raises(KafkaStorageError, match="should only contain Kafka topic data"):
        LogManager([tmp_path / "d"]).startup()
    # the failed start released its lock
    (tmp_path / "d" / "notapartition").rmdir()
    manager = LogManager([tmp_path / "d"])
    manager.startup()
    manager.shutdown()


def test_a_deleted_partition_keeps_its_descriptors_until_removed(tmp_path: Path) -> None:
    clock = MockTime()
    manager = LogManager([tmp_path / "d"], time_ms=clock)
    manager.startup()
    manager.create_topic("gone", 1, {"file.delete.delay.ms": 1000})
    tp = TopicPartition("gone", 0)
    fill(manager, tp, 3)
    log = manager.get_log(tp)
    assert log is not None
    info = log.read(0, 10_000)
    assert info.records is not None
    manager.delete_topic("gone")
    # a fetch that got its slice before the deletion can still send it
    assert info.records.read()[:8] == (0).to_bytes(8, "big")
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    clock.sleep(1000)
    manager.delete_expired_files()
    assert not [p for p in (tmp_path / "d").iterdir() if p.is_dir()]
    manager.shutdown()
