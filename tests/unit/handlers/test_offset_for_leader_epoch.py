"""OffsetForLeaderEpoch through the dispatcher."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import OffsetForLeaderEpochRequest
from tests.unit.handlers.helpers import AdminBroker

TOPIC = "t"


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic(TOPIC, 2)
        yield b


def ask(broker, version, leader_epoch, *, partition=0, current=-1, topic=TOPIC):
    resp = broker.call(
        version,
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=topic,
                    partitions=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=partition,
                            current_leader_epoch=current,
                            leader_epoch=leader_epoch,
                        )
                    ],
                )
            ],
        ),
    )
    assert resp.topics[0].topic == topic
    p = resp.topics[0].partitions[0]
    assert p.partition == partition
    return p.error_code, p.leader_epoch, p.end_offset


def test_a_new_partition_knows_epoch_zero_ending_at_its_log_end(broker):
    # Partition.makeLeader puts (0, LEO) in the cache before any append
    assert ask(broker, 4, 0, partition=1) == (0, 0, 0)
    broker.append(TOPIC, 1, [1, 2, 3])
    assert ask(broker, 4, 0, partition=1) == (0, 0, 3)
    log = broker.replica_manager.get_partition(TOPIC, 1).log
    assert [tuple(e) for e in log.leader_epoch_cache.entries()] == [(0, 0)]


def test_epoch_zero_survives_a_restart(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic(TOPIC, 1)
    with AdminBroker(tmp_path) as b:
        assert ask(b, 4, 0) == (0, 0, 0)


@pytest.fixture
def epochs(broker):
    """Cache (0, 0), (2, 5); log end offset 7 (a log written by leaders 0 and 2)."""
    broker.append(TOPIC, 0, [1, 2, 3, 4, 5])
    broker.append(TOPIC, 0, [6, 7])
    log = broker.replica_manager.get_partition(TOPIC, 0).log
    log.leader_epoch_cache.assign(2, 5)
    assert [tuple(e) for e in log.leader_epoch_cache.entries()] == [(0, 0), (2, 5)]
    return broker


@pytest.mark.parametrize(
    ("requested", "answer"),
    [
        (0, (0, 5)),  # the next epoch's start offset
        (1, (0, 5)),  # unknown epoch between two: the one below it, ending where the next starts
        (2, (2, 7)),  # the latest epoch ends at the log end offset
        (3, (-1, -1)),  # above every epoch: undefined
        (-1, (-1, -1)),  # undefined epoch asked
    ],
)
def test_end_offsets_from_the_cache(epochs, requested, answer):
    assert ask(epochs, 3, requested) == (0, *answer)


def test_an_epoch_below_every_cached_one_ends_at_the_first_start(epochs):
    log = epochs.replica_manager.get_partition(TOPIC, 0).log
    log.maybe_increment_log_start_offset(6)  # cache becomes (2, 6)
    assert ask(epochs, 3, 1) == (0, 1, 6)


def test_v0_has_no_leader_epoch_in_the_answer(epochs):
    assert ask(epochs, 0, 2) == (0, -1, 7)
    assert ask(epochs, 1, 2) == (0, 2, 7)


@pytest.mark.parametrize(
    ("current", "code"),
    [
        (-1, ErrorCode.NONE),
        (0, ErrorCode.NONE),
        (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
        (-5, ErrorCode.FENCED_LEADER_EPOCH),
    ],
)
def test_current_leader_epoch_is_checked_from_v2(broker, current, code):
    result = ask(broker, 2, 0, current=current)
    assert result[0] == code
    if code != ErrorCode.NONE:
        assert result[1:] == (-1, -1)
    # v1 does not carry current_leader_epoch
    assert ask(broker, 1, 0, current=current)[0] == ErrorCode.NONE


def test_unknown_partition(broker):
    assert ask(broker, 4, 0, partition=9)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert ask(broker, 4, 0, topic="other")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
