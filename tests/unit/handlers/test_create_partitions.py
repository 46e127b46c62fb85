"""CreatePartitions through the dispatcher."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode
from broker.log.files import TopicPartition
from broker.protocol.messages import CreatePartitionsRequest
from tests.unit.handlers.helpers import AdminBroker

P = CreatePartitionsRequest.CreatePartitionsTopic
A = CreatePartitionsRequest.CreatePartitionsAssignment


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic("t", 1, **{"retention.ms": "12345"})
        yield b


def grow(broker, version, *topics, validate_only=False):
    resp = broker.call(
        version,
        CreatePartitionsRequest(topics=list(topics), timeout_ms=1000, validate_only=validate_only),
    )
    return resp.results


def spec(name, count, assignments=None):
    return P(
        name=name,
        count=count,
        assignments=None if assignments is None else [A(broker_ids=b) for b in assignments],
    )


@pytest.mark.parametrize("version", range(4))
def test_grows_the_topic_with_its_configs(broker, version):
    [result] = grow(broker, version, spec("t", 3))
    assert (result.name, result.error_code, result.error_message) == ("t", 0, None)
    assert broker.replica_manager.partition_count("t") == 3
    for p in (1, 2):
        log = broker.log_manager.get_log(TopicPartition("t", p))
        assert log.config.retention_ms == 12345
        assert broker.replica_manager.get_partition("t", p) is not None
    broker.append("t", 2, [1])  # the new partition takes data


def test_manual_assignment_on_this_broker(broker):
    [result] = grow(broker, 3, spec("t", 3, [[0], [0]]))
    assert result.error_code == 0
    assert broker.replica_manager.partition_count("t") == 3


def test_validate_only_creates_nothing(broker):
    [result] = grow(broker, 3, spec("t", 5), validate_only=True)
    assert result.error_code == 0
    assert broker.replica_manager.partition_count("t") == 1


@pytest.mark.parametrize(
    ("count", "assignments", "code", "message"),
    [
        (1, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
        (
            0,
            None,
            ErrorCode.INVALID_PARTITIONS,
            "The topic t currently has 1 partition(s); 0 would not be an increase.",
        ),
        (
            3,
            [[0]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ),
        (
            2,
            [[1]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "includes broker 1, but no such broker is registered.",
        ),
        (2, [[]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica list"),
        (2, [[0, 0]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "more than once"),
        (10_002, None, ErrorCode.POLICY_VIOLATION, "excessively large batch operation"),
    ],
)
def test_refusals(broker, count, assignments, code, message):
    [result] = grow(broker, 3, spec("t", count, assignments))
    assert result.error_code == code
    assert message in result.error_message
    assert broker.replica_manager.partition_count("t") == 1


def test_unknown_and_duplicate_topics(broker):
    broker.create_topic("u", 1)
    results = grow(broker, 2, spec("nope", 2), spec("u", 2), spec("t", 2), spec("u", 3))
    assert [(r.name, r.error_code) for r in results] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("u", ErrorCode.INVALID_REQUEST),
        ("t", ErrorCode.NONE),
    ]
    assert results[1].error_message == "Duplicate topic name."
    assert broker.replica_manager.partition_count("u") == 1
