"""CreateTopics through the dispatcher."""

from __future__ import annotations

import uuid

import pytest

from broker.config import ConfigSource
from broker.errors import ErrorCode
from broker.log.files import TopicPartition
from broker.protocol.messages import CreateTopicsRequest
from tests.unit.handlers.helpers import AdminBroker

T = CreateTopicsRequest.CreatableTopic
A = CreateTopicsRequest.CreatableReplicaAssignment


def topic(name, partitions=1, rf=1, assignments=(), **configs):
    return T(
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        assignments=[A(partition_index=i, broker_ids=list(b)) for i, b in assignments],
        configs=[
            CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v)
            for k, v in configs.items()
        ],
    )


def create(broker, version, *topics, validate_only=False):
    resp = broker.call(
        version,
        CreateTopicsRequest(topics=list(topics), timeout_ms=1000, validate_only=validate_only),
    )
    return resp.topics


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path, **{"num.partitions": "3", "log.retention.hours": "24"}) as b:
        yield b


@pytest.mark.parametrize("version", range(8))
def test_creates_the_partition_logs_in_every_version(broker, version):
    [result] = create(broker, version, topic("orders", 2))
    assert (result.name, result.error_code) == ("orders", 0)
    assert broker.replica_manager.partition_count("orders") == 2
    for p in range(2):
        assert broker.log_manager.get_log(TopicPartition("orders", p)).dir.is_dir()
    if version >= 1:
        assert result.error_message is None
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (2, 1)
        assert result.configs
    else:
        assert result.configs == [] and result.num_partitions == -1
    expected_id = uuid.UUID(bytes=broker.log_manager.topic_id("orders"))
    assert result.topic_id == (expected_id if version >= 7 else uuid.UUID(int=0))


def test_v5_reports_effective_configs_with_sources(broker):
    [result] = create(broker, 5, topic("c", 1, retention_bytes="1000", cleanup_policy="compact"))
    configs = {c.name: c for c in result.configs}
    assert [c.name for c in result.configs] == sorted(configs)
    assert (configs["retention.bytes"].value, configs["retention.bytes"].config_source) == (
        "1000",
        ConfigSource.TOPIC_CONFIG,
    )
    assert configs["cleanup.policy"].value == "compact"
    # set through log.retention.hours=24 in the broker's configuration
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
        "86400000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
        "1073741824",
        ConfigSource.DEFAULT_CONFIG,
    )
    assert not any(c.read_only or c.is_sensitive for c in result.configs)


def test_configs_are_persisted_and_used_by_the_logs(broker, tmp_path):
    [result] = create(broker, 7, topic("p", 2, max_message_bytes="2000", compression_type="gzip"))
    assert result.error_code == 0
    assert broker.log_manager.config_store.overrides("p") == {
        "max.message.bytes": "2000",
        "compression.type": "gzip",
    }
    for p in range(2):
        config = broker.log_manager.get_log(TopicPartition("p", p)).config
        assert (config.max_message_bytes, config.compression_type) == (2000, "gzip")
    broker.close()
    with AdminBroker(tmp_path) as again:
        assert again.log_manager.get_log(TopicPartition("p", 1)).config.max_message_bytes == 2000


def test_validate_only_checks_and_creates_nothing(broker):
    [result] = create(broker, 5, topic("v", 4, retention_ms="5"), validate_only=True)
    assert result.error_code == 0
    assert result.num_partitions == 4
    assert broker.replica_manager.partition_count("v") is None
    assert broker.log_manager.config_store.overrides("v") == {}
    [bad] = create(broker, 5, topic("v", 4, retention_ms="x"), validate_only=True)
    assert bad.error_code == ErrorCode.INVALID_CONFIG


def test_defaults_from_minus_one(broker):
    [result] = create(broker, 5, topic("d", -1, -1))
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 3, 1)
    assert broker.replica_manager.partition_count("d") == 3


@pytest.mark.parametrize(
    ("partitions", "rf", "code", "words"),
    [
        (1, 3, ErrorCode.INVALID_REPLICATION_FACTOR, "replication factor of 3 cannot be reached"),
        (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR, "must be larger than 0"),
        (1, -2, ErrorCode.INVALID_REPLICATION_FACTOR, "must be larger than 0"),
        (0, 1, ErrorCode.INVALID_PARTITIONS, "invalid non-positive value"),
        (-5, 1, ErrorCode.INVALID_PARTITIONS, "invalid non-positive value"),
    ],
)
def test_partitions_and_replication_factor(broker, partitions, rf, code, words):
    [result] = create(broker, 5, topic("x", partitions, rf))
    assert result.error_code == code
    assert words in result.error_message
    # a failed creation reports no configs (KafkaApis resets them)
    assert (result.configs, result.num_partitions, result.replication_factor) == ([], -1, -1)
    assert broker.replica_manager.partition_count("x") is None


def test_manual_assignment_on_this_broker(broker):
    [result] = create(broker, 5, topic("m", -1, -1, assignments=[(0, [0]), (1, [0])]))
    assert (result.error_code, result.num_partitions) == (0, 2)


@pytest.mark.parametrize(
    ("partitions", "rf", "assignments", "code", "words"),
    [
        (-1, 1, [(0, [0])], ErrorCode.INVALID_REQUEST, "replication factor was not set to -1"),
        (1, -1, [(0, [0])], ErrorCode.INVALID_REQUEST, "numPartitions was not set to -1"),
        (-1, -1, [(0, [0, 1])], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "broker 1, but no such"),
        (-1, -1, [(0, [])], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica list"),
        (-1, -1, [(0, [0, 0])], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "more than once"),
        (-1, -1, [(0, [0]), (2, [0])], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "consecutive"),
        (-1, -1, [(0, [0]), (0, [0])], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "multiple manual"),
    ],
)
def test_bad_manual_assignments(broker, partitions, rf, assignments, code, words):
    [result] = create(broker, 5, topic("m", partitions, rf, assignments=assignments))
    assert result.error_code == code
    assert words in result.error_message


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"foo.bar": "1"}, "Unknown topic config name: foo.bar"),
        (
            {"retention.ms": "soon"},
            "Invalid value soon for configuration retention.ms: Expected value to be a 64-bit integer",
        ),
        ({"segment.bytes": "10"}, "Invalid value 10 for configuration segment.bytes"),
        ({"compression.type": "brotli"}, "String must be one of"),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
        (
            {"min.compaction.lag.ms": "9", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (9) > max.compaction.lag.ms (5)",
        ),
    ],
)
def test_bad_configs_are_invalid_config_with_kafkas_messages(broker, configs, message):
    t = topic("bad")
    t.configs = [
        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
    ]
    [result] = create(broker, 5, t)
    assert result.error_code == ErrorCode.INVALID_CONFIG
    assert message in result.error_message
    assert broker.replica_manager.partition_count("bad") is None


def test_names(broker):
    broker.create_topic("a.b")
    results = create(
        broker,
        4,
        topic("a.b"),
        topic("a_b"),
        topic("bad name"),
        topic("x" * 250),
        topic("__cluster_metadata"),
        topic("ok"),
    )
    assert [(r.name, r.error_code) for r in results] == [
        ("a.b", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("a_b", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("x" * 250, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("__cluster_metadata", ErrorCode.INVALID_REQUEST),
        ("ok", ErrorCode.NONE),
    ]
    assert results[0].error_message == "Topic 'a.b' already exists."
    assert "collides with existing topic: a.b" in results[1].error_message


def test_a_name_twice_is_one_invalid_request_result(broker):
    results = create(broker, 5, topic("twice"), topic("other"), topic("twice", 3))
    assert [(r.name, r.error_code) for r in results] == [
        ("twice", ErrorCode.INVALID_REQUEST),
        ("other", ErrorCode.NONE),
    ]
    assert results[0].error_message == "Duplicate topic name."
    assert broker.replica_manager.partition_count("twice") is None


def test_partitions_per_request_are_bounded(broker):
    results = create(broker, 5, topic("big", 6000), topic("bigger", 5000), validate_only=True)
    assert results[0].error_code == ErrorCode.NONE
    assert results[1].error_code == ErrorCode.POLICY_VIOLATION
    assert "excessively large" in results[1].error_message
    [alone] = create(broker, 5, topic("huge", 10_001), validate_only=True)
    assert alone.error_code == ErrorCode.POLICY_VIOLATION


def test_errors_are_counted_for_the_request_metrics(broker):
    create(broker, 5, topic("ok1"), topic("bad", 0))
    text = broker.metrics.render().decode()
    assert 'request="CreateTopics"' in text
    assert 'error="INVALID_PARTITIONS"' in text
