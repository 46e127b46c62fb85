"""``broker/partition/replica_manager.py``: the partitions this broker leads and its topics.

Topic names as Kafka's ``Topic.validate`` checks them, creation, growth and
deletion, what a missing partition is answered with (with and without
``cluster.nodes``), partitions found again over an existing log directory,
and waiting for queued appends at shutdown.
"""

from __future__ import annotations

import asyncio

import pytest

from broker.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidTopicError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from broker.partition.cluster_layout import ClusterLayout, NodeAddress
from broker.partition.replica_manager import ReplicaManager, validate_topic_name
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.validator import NullRecorder
from tests.aio import run
from tests.unit.partition.conftest import NOW_MS


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "can't be empty"),
        (".", 'cannot be "." or ".."'),
        ("..", 'cannot be "." or ".."'),
        ("x" * 250, "can't be longer than 249"),
        ("a/b", "contains a character other than"),
        ("ä", "contains a character other than"),
    ],
)
def test_illegal_topic_names(name, message):
    with pytest.raises(InvalidTopicError, match=message):
        validate_topic_name(name)


@pytest.mark.parametrize("name", ["t", "a.b-c_D9", "x" * 249, "__consumer_offsets", "..."])
def test_legal_topic_names(name):
    validate_topic_name(name)


def test_create_topic_adds_its_partitions(replicas):
    rm = replicas.manager
    version = rm.topics_version
    topic_id = rm.create_topic("t", 3)
    assert isinstance(topic_id, bytes)
    assert len(topic_id) == 16
    assert rm.partition_count("t") == 3
    assert rm.topics() == {"t": 3}
    assert [(p.topic, p.partition) for p in rm.partitions_of("t")] == [("t", 0), ("t", 1), ("t", 2)]
    partition = rm.get_partition("t", 1)
    assert partition is not None
    assert rm.partition_or_error("t", 1) is partition
    assert rm.get_partition("t", 3) is None
    assert rm.partition_count("u") is None
    assert rm.partitions_of("u") == []
    assert rm.topics_version > version


def test_create_topic_applies_its_config_overrides(replicas):
    replicas.manager.create_topic("t", 1, {"max.message.bytes": "1234"})
    partition = replicas.manager.partition_or_error("t", 0)
    assert partition.log.config.max_message_bytes == 1234


def test_new_topics_that_exist_collide_or_have_no_partitions_are_refused(replicas):
    rm = replicas.manager
    rm.create_topic("a_b", 1)
    with pytest.raises(TopicAlreadyExistsError, match="'a_b' already exists"):
        rm.create_topic("a_b", 1)
    # "." and "_" share metric names
    with pytest.raises(InvalidTopicError, match="collides with existing topic: a_b"):
        rm.check_new_topic("a.b", 1)
    with pytest.raises(InvalidPartitionsError, match="larger than 0"):
        rm.check_new_topic("c", 0)
    with pytest.raises(InvalidTopicError):
        rm.create_topic("bad/name", 1)
    assert rm.topics() == {"a_b": 1}


def test_create_partitions_grows_a_topic_only(replicas):
    rm = replicas.manager
    rm.create_topic("t", 2)
    rm.create_partitions("t", 4)
    assert rm.partition_count("t") == 4
    assert rm.get_partition("t", 3) is not None
    with pytest.raises(InvalidPartitionsError, match="already has 4 partitions"):
        rm.create_partitions("t", 4)
    with pytest.raises(InvalidPartitionsError, match="higher than the requested 3"):
        rm.create_partitions("t", 3)
    with pytest.raises(UnknownTopicOrPartitionError, match="'u' does not exist"):
        rm.create_partitions("u", 2)


def test_delete_topic_removes_its_partitions(replicas):
    rm = replicas.manager
    rm.create_topic("t", 2)
    partition = rm.partition_or_error("t", 0)
    version = rm.topics_version
    rm.delete_topic("t")
    assert partition.removed
    assert rm.get_partition("t", 0) is None
    assert rm.partition_count("t") is None
    assert rm.topics_version > version
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic t does not exist"):
        rm.delete_topic("t")
    with pytest.raises(UnknownTopicOrPartitionError, match="t-0"):
        rm.partition_or_error("t", 0)


def test_a_missing_partition_is_unknown_without_a_cluster_layout(replicas):
    rm = replicas.manager
    rm.create_topic("t", 1)
    assert rm.missing_partition_error("t", 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    missing = rm.missing_partition("t", 5)
    assert isinstance(missing, UnknownTopicOrPartitionError)
    assert str(missing) == "This server does not host this topic-partition: t-5"


def test_a_partition_another_node_leads_is_not_leader_or_follower(make_replicas):
    layout = ClusterLayout(
        [NodeAddress(0, "127.0.0.1", 9092), NodeAddress(1, "127.0.0.1", 9093)], 0
    )
    rm = make_replicas(layout=layout).manager
    rm.create_topic("t", 2)
    assert rm.get_partition("t", 0) is not None
    assert rm.get_partition("t", 1) is None  # node 1 leads it
    assert rm.missing_partition_error("t", 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    missing = rm.missing_partition("t", 1)
    assert isinstance(missing, NotLeaderOrFollowerError)
    assert missing.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert str(missing) == "This server is not the leader for that topic-partition: t-1"
    # one that does not exist anywhere
    assert isinstance(rm.missing_partition("t", 2), UnknownTopicOrPartitionError)


def test_a_new_replica_manager_finds_the_partitions_of_the_log_directory(replicas):
    replicas.manager.create_topic("t", 2)
    replicas.manager.partition_or_error("t", 1).append_records_as_leader(
        memoryview(bytearray(build_v2_batch([SimpleRecord(NOW_MS, b"k", b"v")]).buffer)), 9
    )
    again = ReplicaManager(replicas.log_manager, recorder=NullRecorder(), time_ms=lambda: NOW_MS)
    assert again.topics() == {"t": 2}
    assert again.partition_or_error("t", 1).log.log_end_offset == 1


def test_wait_queued_appends_returns_once_every_partition_is_done(make_replicas):
    replicas = make_replicas(inline_budget=0)
    rm = replicas.manager
    rm.create_topic("t", 2)
    payload = bytes(build_v2_batch([SimpleRecord(NOW_MS, b"k", b"v")]).buffer)

    async def main() -> None:
        jobs = [
            rm.partition_or_error("t", p).append(memoryview(bytearray(payload)), 9)
            for p in (0, 1, 1)
        ]
        assert all(isinstance(job, asyncio.Future) for job in jobs)
        await rm.wait_queued_appends()
        assert all(job.done() for job in jobs)  # type: ignore[union-attr]
        assert [p.queued_append for p in rm.partitions_of("t")] == [None, None]

    run(main())
    assert [p.log.log_end_offset for p in rm.partitions_of("t")] == [1, 2]
