"""ListOffsets through the dispatcher, every version boundary that changes behaviour."""

from __future__ import annotations

import os

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import ListOffsetsRequest
from tests.unit.handlers.helpers import AdminBroker

TOPIC = "events"
# offsets 0..4 with these timestamps (two batches)
TIMESTAMPS = [(100, 200, 300), (150, 500)]


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path) as b:
        b.create_topic(TOPIC, 2)
        for batch in TIMESTAMPS:
            b.append(TOPIC, 0, list(batch))
        yield b


def request(*partitions, topic=TOPIC, replica_id=-1, isolation_level=0):
    return ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=p,
                        timestamp=ts,
                        current_leader_epoch=epoch,
                        max_num_offsets=n,
                    )
                    for p, ts, epoch, n in partitions
                ],
            )
        ],
    )


def one(broker, version, timestamp, *, partition=0, epoch=-1, topic=TOPIC, **kw):
    resp = broker.call(version, request((partition, timestamp, epoch, 1), topic=topic, **kw))
    return resp.topics[0].partitions[0]


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_latest_and_earliest_in_every_version(broker, version):
    latest = one(broker, version, -1)
    earliest = one(broker, version, -2)
    assert (latest.error_code, latest.offset, latest.timestamp) == (0, 5, -1)
    assert (earliest.error_code, earliest.offset, earliest.timestamp) == (0, 0, -1)
    # leader epochs only from v4; before that the field is not on the wire
    expected_epoch = 0 if version >= 4 else -1
    assert latest.leader_epoch == expected_epoch
    assert earliest.leader_epoch == expected_epoch


def test_latest_of_an_empty_partition_is_zero_with_the_leader_epoch(broker):
    p = one(broker, 9, -1, partition=1)
    assert (p.error_code, p.offset, p.leader_epoch) == (0, 0, 0)
    p = one(broker, 9, -2, partition=1)
    assert (p.error_code, p.offset, p.leader_epoch) == (0, 0, 0)


@pytest.mark.parametrize(
    ("target", "offset", "found_ts"),
    [(0, 0, 100), (100, 0, 100), (101, 1, 200), (150, 1, 200), (301, 4, 500), (500, 4, 500)],
)
def test_by_timestamp_finds_the_first_offset_at_or_after(broker, target, offset, found_ts):
    p = one(broker, 5, target)
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (0, offset, found_ts, 0)


def test_by_timestamp_past_the_largest_is_none_with_unknown_offset(broker):
    p = one(broker, 5, 501)
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (0, -1, -1, -1)


@pytest.mark.parametrize(("timestamp", "first_version"), [(-3, 7), (-4, 8), (-5, 9)])
def test_special_timestamps_need_their_version(broker, timestamp, first_version):
    before = one(broker, first_version - 1, timestamp)
    assert before.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert (before.offset, before.timestamp) == (-1, -1)
    assert one(broker, first_version, timestamp).error_code == ErrorCode.NONE


def test_max_timestamp_is_the_record_with_the_largest_timestamp(broker):
    p = one(broker, 7, -3)
    assert (p.offset, p.timestamp, p.leader_epoch) == (4, 500, 0)
    empty = one(broker, 7, -3, partition=1)
    assert (empty.error_code, empty.offset, empty.timestamp) == (0, -1, -1)


def test_earliest_local_is_the_log_start_and_latest_tiered_is_unknown(broker):
    local = one(broker, 8, -4)
    assert (local.offset, local.leader_epoch) == (0, 0)
    tiered = one(broker, 9, -5)
    assert (tiered.error_code, tiered.offset, tiered.leader_epoch) == (0, -1, -1)


def test_unknown_negative_timestamps_are_unsupported(broker):
    assert one(broker, 9, -6).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert one(broker, 0, -3).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_earliest_follows_the_log_start_offset(broker):
    log = broker.replica_manager.get_partition(TOPIC, 0).log
    log.maybe_increment_log_start_offset(3)
    p = one(broker, 9, -2)
    assert (p.offset, p.leader_epoch) == (3, 0)
    assert one(broker, 9, 0).offset == 3  # the search starts at the log start offset


def test_unknown_partition_and_topic(broker):
    assert one(broker, 9, -1, partition=7).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert one(broker, 9, -1, topic="nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert one(broker, 0, -1, topic="nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_duplicate_partitions_are_invalid_request_from_v1(broker):
    resp = broker.call(1, request((0, -1, -1, 1), (0, -2, -1, 1), (1, -1, -1, 1)))
    codes = [p.error_code for p in resp.topics[0].partitions]
    assert codes == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    # v0 does not check (ListOffsetsRequest only collects duplicates for v1+ handling)
    resp = broker.call(0, request((0, -1, -1, 1), (0, -2, -1, 1)))
    assert [p.old_style_offsets for p in resp.topics[0].partitions] == [[5], [0]]


@pytest.mark.parametrize(
    ("epoch", "code"),
    [
        (-1, ErrorCode.NONE),
        (0, ErrorCode.NONE),
        (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
        (-2, ErrorCode.FENCED_LEADER_EPOCH),
    ],
)
def test_current_leader_epoch_is_checked_from_v4(broker, epoch, code):
    p = one(broker, 4, -1, epoch=epoch)
    assert p.error_code == code
    if code != ErrorCode.NONE:
        assert (p.offset, p.timestamp) == (-1, -1)
    # v3 has no current_leader_epoch on the wire: never checked
    assert one(broker, 3, -1, epoch=epoch).error_code == ErrorCode.NONE


@pytest.mark.parametrize("isolation", [0, 1])
def test_read_committed_and_uncommitted_see_the_log_end_offset(broker, isolation):
    # no transactions: last stable offset = high watermark = log end offset
    assert one(broker, 2, -1, isolation_level=isolation).offset == 5
    assert one(broker, 2, 100, isolation_level=isolation).offset == 0


def test_replica_ids_other_than_consumers_see_the_log_end_offset(broker):
    assert one(broker, 9, -1, replica_id=-2).offset == 5
    # isolation level is not looked at for replica requests
    assert one(broker, 9, -1, replica_id=5, isolation_level=9).error_code == ErrorCode.NONE


def test_unknown_isolation_level_is_invalid_request(broker):
    resp = broker.call(2, request((0, -1, -1, 1), (1, -2, -1, 1), isolation_level=2))
    assert [p.error_code for p in resp.topics[0].partitions] == [ErrorCode.INVALID_REQUEST] * 2


class TestV0:
    def test_latest_lists_the_log_end_and_segment_bases(self, broker):
        log = broker.replica_manager.get_partition(TOPIC, 0).log
        log.roll()
        broker.append(TOPIC, 0, [600])  # offset 5 in the second segment
        resp = broker.call(0, request((0, -1, -1, 10)))
        p = resp.topics[0].partitions[0]
        assert p.error_code == 0
        assert p.old_style_offsets == [6, 5, 0]
        resp = broker.call(0, request((0, -1, -1, 2)))
        assert resp.topics[0].partitions[0].old_style_offsets == [6, 5]

    def test_earliest_is_the_log_start(self, broker):
        resp = broker.call(0, request((0, -2, -1, 5)))
        assert resp.topics[0].partitions[0].old_style_offsets == [0]

    def test_empty_active_segment_is_not_listed(self, broker):
        resp = broker.call(0, request((1, -1, -1, 5)))
        assert resp.topics[0].partitions[0].old_style_offsets == [0]

    def test_by_time_uses_segment_modification_times(self, broker):
        log = broker.replica_manager.get_partition(TOPIC, 0).log
        first = log.segments[0]
        os.utime(first.log.path, ns=(1_000_000_000_000, 1_000_000_000_000))  # t = 1e6 ms
        log.roll()
        broker.append(TOPIC, 0, [600])
        second = log.segments[1]
        os.utime(second.log.path, ns=(2_000_000_000_000, 2_000_000_000_000))  # t = 2e6 ms
        offsets = lambda ts: broker.call(0, request((0, ts, -1, 10))).topics[0].partitions[0]  # noqa: E731
        assert offsets(999_999).old_style_offsets == []
        assert offsets(1_000_000).old_style_offsets == [0]
        assert offsets(2_500_000).old_style_offsets == [5, 0]

    def test_negative_max_num_offsets_is_invalid_request(self, broker):
        p = broker.call(0, request((0, -1, -1, -1))).topics[0].partitions[0]
        assert (p.error_code, p.old_style_offsets) == (ErrorCode.INVALID_REQUEST, [])
