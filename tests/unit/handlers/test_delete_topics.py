"""DeleteTopics through the dispatcher."""

from __future__ import annotations

import uuid

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import DeleteTopicsRequest, ListOffsetsRequest
from tests.unit.handlers.helpers import AdminBroker

ZERO = uuid.UUID(int=0)


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic("gone", 2, **{"retention.ms": "1000"})
        b.create_topic("kept", 1)
        yield b


def by_names(broker, version, *names):
    resp = broker.call(version, DeleteTopicsRequest(topic_names=list(names), timeout_ms=1000))
    return [(r.name, r.error_code) for r in resp.responses], resp.responses


def by_states(broker, *states):
    topics = [DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=i) for n, i in states]
    return broker.call(6, DeleteTopicsRequest(topics=topics, timeout_ms=1000)).responses


def topic_id(broker, name):
    return uuid.UUID(bytes=broker.log_manager.topic_id(name))


@pytest.mark.parametrize("version", range(6))
def test_delete_by_name_removes_logs_configs_and_metrics(broker, version):
    broker.metrics.topic("gone").bytes_in.inc(5)
    dirs = [broker.log_manager.logs_by_topic("gone")[p].dir for p in range(2)]
    codes, responses = by_names(broker, version, "gone")
    assert codes == [("gone", ErrorCode.NONE)]
    assert broker.replica_manager.partition_count("gone") is None
    assert broker.log_manager.logs_by_topic("gone") == {}
    assert broker.log_manager.config_store.overrides("gone") == {}
    assert not any(d.exists() for d in dirs)
    assert any(
        p.name.startswith("gone-0.") and p.name.endswith("-delete")
        for p in dirs[0].parent.iterdir()
    )
    assert 'topic="gone"' not in broker.metrics.render().decode()
    assert broker.replica_manager.partition_count("kept") == 1
    assert responses[0].error_message is None


def test_a_deleted_topic_is_unknown_to_list_offsets_and_can_be_created_again(broker):
    old_id = topic_id(broker, "gone")
    by_names(broker, 4, "gone")
    resp = broker.call(
        5,
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="gone", partitions=[ListOffsetsRequest.ListOffsetsPartition(timestamp=-1)]
                )
            ],
        ),
    )
    assert resp.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    broker.create_topic("gone", 1)
    assert topic_id(broker, "gone") != old_id
    assert broker.log_manager.config_store.overrides("gone") == {}


def test_unknown_names(broker):
    codes, responses = by_names(broker, 5, "nope", "kept")
    assert codes == [("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("kept", ErrorCode.NONE)]
    assert "nope" in responses[0].error_message
    _, old = by_names(broker, 4, "nope")
    assert old[0].error_message is None  # not on the wire before v5


def test_duplicate_names_are_invalid_request(broker):
    codes, _ = by_names(broker, 4, "gone", "gone")
    assert codes == [("gone", ErrorCode.INVALID_REQUEST)] * 2
    assert broker.replica_manager.partition_count("gone") == 2


def test_v6_by_id_and_by_name(broker):
    gone = topic_id(broker, "gone")
    results = by_states(broker, (None, gone), ("kept", ZERO))
    assert [(r.name, r.topic_id, r.error_code) for r in results] == [
        ("gone", gone, ErrorCode.NONE),
        ("kept", results[1].topic_id, ErrorCode.NONE),
    ]
    assert results[1].topic_id != ZERO
    assert broker.replica_manager.topics() == {}


def test_v6_refusals(broker):
    gone = topic_id(broker, "gone")
    kept = topic_id(broker, "kept")
    unknown = uuid.uuid4()
    results = by_states(
        broker,
        ("gone", gone),  # both name and id
        (None, ZERO),  # neither
        (None, unknown),
        ("kept", ZERO),  # its id is also given below
        (None, kept),
    )
    assert [(r.name, r.error_code) for r in results] == [
        ("gone", ErrorCode.INVALID_REQUEST),
        (None, ErrorCode.INVALID_REQUEST),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
        ("kept", ErrorCode.INVALID_REQUEST),
        ("kept", ErrorCode.NONE),
    ]
    assert results[0].error_message == "You may not specify both topic name and topic id."
    assert results[3].error_message == (
        "The provided topic name maps to an ID that was already supplied."
    )
    assert broker.replica_manager.partition_count("gone") == 2
    assert broker.replica_manager.partition_count("kept") is None


def test_v6_duplicate_ids(broker):
    gone = topic_id(broker, "gone")
    results = by_states(broker, (None, gone), (None, gone))
    assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST] * 2
    assert results[0].error_message == "Duplicate topic id."


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (0, ErrorCode.INVALID_REQUEST),
        (2, ErrorCode.INVALID_REQUEST),
        (3, ErrorCode.TOPIC_DELETION_DISABLED),
        (6, ErrorCode.TOPIC_DELETION_DISABLED),
    ],
)
def test_deletion_disabled(tmp_path, version, code):
    with AdminBroker(tmp_path, **{"delete.topic.enable": "false"}) as b:
        b.create_topic("t", 1)
        if version >= 6:
            results = by_states(b, ("t", ZERO), ("other", ZERO))
        else:
            _, results = by_names(b, version, "t", "other")
        assert [r.error_code for r in results] == [code, code]
        assert b.replica_manager.partition_count("t") == 1
