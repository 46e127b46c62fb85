"""AlterConfigs and IncrementalAlterConfigs through the dispatcher."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode, RecordTooLargeError
from broker.log.files import TopicPartition
from broker.protocol.messages import AlterConfigsRequest, IncrementalAlterConfigsRequest
from broker.records.batch import CompressionType, TimestampType
from broker.records.iterate import iter_batches
from tests.unit.handlers.helpers import AdminBroker

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic("t", 2, **{"retention.ms": "1000", "cleanup.policy": "compact"})
        yield b


def legacy(broker, version, *resources, validate_only=False):
    resp = broker.call(
        version,
        AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=rtype,
                    resource_name=name,
                    configs=[AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in cfg],
                )
                for rtype, name, cfg in resources
            ],
            validate_only=validate_only,
        ),
    )
    return [
        (r.resource_type, r.resource_name, r.error_code, r.error_message) for r in resp.responses
    ]


def incremental(broker, version, *resources, validate_only=False):
    resp = broker.call(
        version,
        IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=rtype,
                    resource_name=name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterableConfig(
                            name=k, config_operation=op, value=v
                        )
                        for k, op, v in ops
                    ],
                )
                for rtype, name, ops in resources
            ],
            validate_only=validate_only,
        ),
    )
    return [
        (r.resource_type, r.resource_name, r.error_code, r.error_message) for r in resp.responses
    ]


def overrides(broker, topic="t"):
    return broker.log_manager.config_store.overrides(topic)


def log_config(broker, partition=0, topic="t"):
    return broker.log_manager.get_log(TopicPartition(topic, partition)).config


# ---- AlterConfigs -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(3))
def test_legacy_replaces_the_whole_override_set(broker, version, tmp_path):
    [result] = legacy(broker, version, (TOPIC, "t", [("max.message.bytes", "5000")]))
    assert result == (TOPIC, "t", 0, None)
    assert overrides(broker) == {"max.message.bytes": "5000"}
    for p in (0, 1):
        config = log_config(broker, p)
        assert config.max_message_bytes == 5000
        assert config.retention_ms == 604_800_000  # back to the default
        assert config.cleanup_policy == ("delete",)
    broker.close()
    with AdminBroker(tmp_path) as again:  # persisted in the log dirs
        assert again.log_manager.config_store.overrides("t") == {"max.message.bytes": "5000"}
        assert log_config(again, 1).max_message_bytes == 5000


def test_legacy_empty_set_removes_every_override(broker):
    [result] = legacy(broker, 1, (TOPIC, "t", []))
    assert result[2] == 0
    assert overrides(broker) == {}
    assert log_config(broker).cleanup_policy == ("delete",)


def test_legacy_validate_only_changes_nothing(broker):
    [result] = legacy(broker, 2, (TOPIC, "t", [("retention.ms", "5")]), validate_only=True)
    assert result[2] == 0
    assert overrides(broker) == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert log_config(broker).retention_ms == 1000


@pytest.mark.parametrize(
    ("configs", "code", "message"),
    [
        (
            [("retention.ms", "x")],
            ErrorCode.INVALID_CONFIG,
            "Invalid value x for configuration retention.ms",
        ),
        ([("nope", "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: nope"),
        (
            [("message.timestamp.type", "WallClock")],
            ErrorCode.INVALID_CONFIG,
            "String must be one of: CreateTime, LogAppendTime",
        ),
        (
            [("retention.ms", None)],
            ErrorCode.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            [("retention.ms", "1"), ("retention.ms", "2")],
            ErrorCode.INVALID_REQUEST,
            "Error due to duplicate config keys",
        ),
    ],
)
def test_legacy_refusals_change_nothing(broker, configs, code, message):
    [result] = legacy(broker, 0, (TOPIC, "t", configs))
    assert result[2] == code
    assert message in result[3]
    assert overrides(broker) == {"retention.ms": "1000", "cleanup.policy": "compact"}


def test_topic_resource_names(broker):
    results = legacy(
        broker,
        0,
        (TOPIC, "missing", [("retention.ms", "5")]),
        (TOPIC, "", [("retention.ms", "5")]),
        (TOPIC, "bad name", [("retention.ms", "5")]),
        (TOPIC, "missing", [("retention.ms", "x")]),
    )
    # "missing" twice: both copies refused before anything else is looked at
    assert [(r[1], r[2]) for r in results] == [
        ("missing", ErrorCode.INVALID_REQUEST),
        ("", ErrorCode.INVALID_REQUEST),
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("missing", ErrorCode.INVALID_REQUEST),
    ]
    assert results[0][3] == "Each resource must appear at most once."
    assert results[1][3] == "Default topic resources are not allowed."
    [missing] = legacy(broker, 0, (TOPIC, "missing", [("retention.ms", "5")]))
    assert missing[2:] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "The topic 'missing' does not exist.",
    )
    # configs are checked before existence, as Kafka's controller does
    [bad] = legacy(broker, 0, (TOPIC, "missing", [("retention.ms", "x")]))
    assert bad[2] == ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize("call", [legacy, incremental])
def test_broker_resources_are_refused_with_a_message(broker, call):
    def cfg(name, value):
        return (name, value) if call is legacy else (name, SET, value)

    results = call(
        broker,
        0,
        (BROKER, "0", [cfg("log.retention.hours", "1")]),
        (BROKER, "", [cfg("message.max.bytes", "10")]),
        (BROKER, "1", [cfg("log.retention.hours", "1")]),
        (BROKER, "x", [cfg("log.retention.hours", "1")]),
        (BROKER, "00", [cfg("no.such.broker.key", "1")]),
        (BROKER_LOGGER, "0", [cfg("kafka", "DEBUG")]),
        (42, "0", []),
    )
    codes = [r[2] for r in results]
    assert codes == [ErrorCode.INVALID_REQUEST] * 7
    messages = [r[3] for r in results]
    assert messages[0].startswith("Cannot update these configs dynamically: log.retention.hours.")
    assert "server.properties" in messages[0]
    assert messages[1].startswith("Cannot update these configs dynamically: message.max.bytes.")
    assert messages[2] == "Unexpected broker id, expected 0, but received 1"
    assert messages[3] == "Node id must be an integer, but it is: x"
    assert messages[4] == "Unknown broker configs: no.such.broker.key"
    assert messages[5] == "Resource type BROKER_LOGGER is not supported by this broker"
    assert messages[6] == "Unknown resource type 42"
    [nothing] = call(broker, 0, (BROKER, "0", []))
    assert nothing[2] == ErrorCode.NONE


def test_changes_apply_to_the_next_append(broker):
    broker.append("t", 0, [1, 2])
    [result] = legacy(
        broker,
        2,
        (TOPIC, "t", [("compression.type", "gzip"), ("message.timestamp.type", "LogAppendTime")]),
    )
    assert result[2] == 0
    broker.append("t", 0, [3, 4])
    log = broker.log_manager.get_log(TopicPartition("t", 0))
    log.flush()
    headers = []
    for segment in log.segments:
        data = segment.log.path.read_bytes()
        headers += [b.header() for b in iter_batches(data, 0, segment.size, file=True)]
    assert [h.compression_type for h in headers] == [CompressionType.NONE, CompressionType.GZIP]
    assert [h.timestamp_type for h in headers] == [
        TimestampType.CREATE_TIME,
        TimestampType.LOG_APPEND_TIME,
    ]
    assert headers[1].max_timestamp == broker.now


# ---- IncrementalAlterConfigs ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_set_and_delete_keep_other_overrides(broker, version):
    [result] = incremental(
        broker,
        version,
        (TOPIC, "t", [("segment.bytes", SET, "1048576"), ("retention.ms", DELETE, None)]),
    )
    assert result == (TOPIC, "t", 0, None)
    assert overrides(broker) == {"cleanup.policy": "compact", "segment.bytes": "1048576"}
    config = log_config(broker, 1)
    assert (config.segment_bytes, config.retention_ms) == (1048576, 604_800_000)


def test_delete_of_a_key_without_override_is_a_no_op(broker):
    [result] = incremental(broker, 1, (TOPIC, "t", [("flush.ms", DELETE, None)]))
    assert result[2] == 0
    assert overrides(broker) == {"retention.ms": "1000", "cleanup.policy": "compact"}


def test_append_and_subtract_list_items(broker):
    broker.create_topic("fresh", 1)
    steps = [
        ("fresh", APPEND, "compact", "delete,compact"),  # starts from the effective value
        ("fresh", APPEND, "compact", "delete,compact"),  # present already
        ("fresh", SUBTRACT, "delete", "compact"),
        ("fresh", SUBTRACT, "compact,delete", ""),
        ("t", APPEND, "delete", "compact,delete"),
    ]
    for topic, op, value, expected in steps:
        [result] = incremental(broker, 1, (TOPIC, topic, [("cleanup.policy", op, value)]))
        assert result[2] == 0, result
        assert overrides(broker, topic)["cleanup.policy"] == expected
    assert log_config(broker, topic="fresh").cleanup_policy == ()
    assert log_config(broker, topic="t").cleanup_policy == ("compact", "delete")


def test_append_starts_from_the_broker_default(tmp_path):
    with AdminBroker(tmp_path, **{"log.cleanup.policy": "compact"}) as b:
        b.create_topic("c", 1)
        [result] = incremental(b, 1, (TOPIC, "c", [("cleanup.policy", APPEND, "delete")]))
        assert result[2] == 0
        assert overrides(b, "c") == {"cleanup.policy": "compact,delete"}


@pytest.mark.parametrize(
    ("ops", "code", "message"),
    [
        (
            [("retention.ms", APPEND, "5")],
            ErrorCode.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (
            [("segment.ms", SUBTRACT, "5")],
            ErrorCode.INVALID_CONFIG,
            "Can't SUBTRACT to key segment.ms",
        ),
        (
            [("cleanup.policy", APPEND, "shred")],
            ErrorCode.INVALID_CONFIG,
            "Invalid value shred for configuration cleanup.policy",
        ),
        ([("retention.ms", 7, "5")], ErrorCode.INVALID_REQUEST, "Unknown operation type 7"),
        (
            [("retention.ms", SET, None)],
            ErrorCode.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
            ErrorCode.INVALID_REQUEST,
            "duplicate config keys",
        ),
        (
            [("retention.ms", SET, "5"), ("segment.bytes", SET, "1")],
            ErrorCode.INVALID_CONFIG,
            "Invalid value 1 for configuration segment.bytes",
        ),
        (
            [("unknown.key", SET, "5")],
            ErrorCode.INVALID_CONFIG,
            "Unknown topic config name: unknown.key",
        ),
    ],
)
def test_incremental_refusals_change_nothing(broker, ops, code, message):
    [result] = incremental(broker, 0, (TOPIC, "t", ops))
    assert result[2] == code
    assert message in result[3]
    assert overrides(broker) == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert log_config(broker).retention_ms == 1000


def test_incremental_validate_only(broker):
    [result] = incremental(
        broker, 1, (TOPIC, "t", [("retention.ms", SET, "7")]), validate_only=True
    )
    assert result[2] == 0
    assert overrides(broker)["retention.ms"] == "1000"


def test_incremental_resources_fail_alone(broker):
    broker.create_topic("u", 1)
    results = incremental(
        broker,
        1,
        (TOPIC, "u", [("retention.ms", SET, "x")]),
        (TOPIC, "t", [("retention.ms", SET, "2000")]),
        (TOPIC, "nope", [("retention.ms", SET, "2000")]),
    )
    assert [r[2] for r in results] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert overrides(broker)["retention.ms"] == "2000"
    assert overrides(broker, "u") == {}


def test_segment_bytes_and_max_message_bytes_apply_to_the_next_append(broker):
    broker.append("t", 1, [broker.now])
    log = broker.log_manager.get_log(TopicPartition("t", 1))
    assert log.number_of_segments == 1
    [result] = incremental(
        broker,
        1,
        (TOPIC, "t", [("segment.bytes", SET, "100"), ("max.message.bytes", SET, "200")]),
    )
    assert result[2] == 0
    broker.append("t", 1, [broker.now])  # 83 + 83 bytes > 100: rolls first
    assert log.number_of_segments == 2
    with pytest.raises(RecordTooLargeError):
        broker.append("t", 1, [broker.now] * 10)
