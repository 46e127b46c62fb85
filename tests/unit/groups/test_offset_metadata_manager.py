"""Cases of Kafka 3.9's ``OffsetMetadataManagerTest`` for classic and simple groups, names kept."""

from __future__ import annotations

from broker.coordinator.group.classic_group import GroupState
from broker.errors import ErrorCode
from broker.group_records.messages import decode_record
from broker.protocol.messages import OffsetDeleteRequest, OffsetFetchRequest
from tests.unit.groups.context import GROUP, Context


def _codes(reply):
    return [p.error_code for t in reply.value.topics for p in t.partitions]


def _fetch(ctx, *partitions, group_id=GROUP):
    topics = {}
    for topic, p in partitions:
        topics.setdefault(topic, []).append(p)
    group = ctx.shard.offsets.fetch(
        group_id,
        [
            OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in topics.items()
        ],
    )
    return {
        (t.name, p.partition_index): p.committed_offset for t in group.topics for p in t.partitions
    }


def test_offset_commit_with_unknown_group():
    ctx = Context()
    assert _codes(ctx.commit({("foo", 0): 1}, generation=10, version=8)) == [
        ErrorCode.ILLEGAL_GENERATION
    ]
    assert _codes(ctx.commit({("foo", 0): 1}, generation=10, version=9)) == [
        ErrorCode.GROUP_ID_NOT_FOUND
    ]


def test_simple_group_offset_commit():
    ctx = Context()
    assert _codes(ctx.commit({("foo", 0): 100, ("foo", 1): 7})) == [ErrorCode.NONE] * 2
    assert ctx.group().state is GroupState.EMPTY and ctx.group().protocol_type is None
    records = [decode_record(k, v) for k, v in ctx.written[-1]]
    assert [(r.record_type, r.key, r.value_version, r.value["offset"]) for r in records] == [
        (1, {"group": GROUP, "topic": "foo", "partition": 0}, 3, 100),
        (1, {"group": GROUP, "topic": "foo", "partition": 1}, 3, 7),
    ]
    assert _fetch(ctx, ("foo", 0), ("foo", 1), ("foo", 2)) == {
        ("foo", 0): 100,
        ("foo", 1): 7,
        ("foo", 2): -1,
    }


def test_generic_group_offset_commit_with_unknown_member_id():
    ctx = Context()
    ctx.stable_group(1)
    assert _codes(ctx.commit({("foo", 0): 1}, member_id="x", generation=1)) == [
        ErrorCode.UNKNOWN_MEMBER_ID
    ]


def test_generic_group_offset_commit_with_illegal_generation():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    assert _codes(ctx.commit({("foo", 0): 1}, member_id=member_id, generation=5)) == [
        ErrorCode.ILLEGAL_GENERATION
    ]


def test_generic_group_offset_commit_with_fenced_instance_id():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    ctx.sync(reply.value.member_id, 1, {})
    assert _codes(
        ctx.commit({("foo", 0): 1}, member_id="other", instance_id="a", generation=1)
    ) == [ErrorCode.FENCED_INSTANCE_ID]


def test_generic_group_offset_commit_while_in_completing_rebalance_state():
    ctx = Context()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    assert _codes(ctx.commit({("foo", 0): 1}, member_id=leader, generation=1)) == [
        ErrorCode.REBALANCE_IN_PROGRESS
    ]


def test_generic_group_offset_commit_without_member_id_and_generation():
    ctx = Context()
    ctx.stable_group(1)
    assert _codes(ctx.commit({("foo", 0): 1})) == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_generic_group_offset_commit_with_retention_time():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    ctx.clock.now = 1000
    ctx.commit({("foo", 0): 1}, member_id=member_id, generation=1, retention_ms=1234)
    record = decode_record(*ctx.written[-1][0])
    assert record.value_version == 1
    assert record.value["expireTimestamp"] == 2234


def test_generic_group_offset_commit_maintains_session():
    ctx = Context()
    (member_id,) = ctx.stable_group(1, session_ms=1000)
    for _ in range(4):
        ctx.timer.advance(600)
        ctx.commit({("foo", 0): 1}, member_id=member_id, generation=1)
    assert ctx.group().has_member(member_id)


def test_consumer_group_offset_commit_with_offset_metadata_too_large():
    ctx = Context(offset_metadata_max_size=5)
    assert _codes(ctx.commit({("foo", 0): 1}, metadata="toolong")) == [
        ErrorCode.OFFSET_METADATA_TOO_LARGE
    ]
    assert _fetch(ctx, ("foo", 0)) == {("foo", 0): -1}


def test_offset_commit_is_visible_once_written():
    ctx = Context()
    ctx.hold = True
    reply = ctx.commit({("foo", 0): 5})
    assert not reply.done() and _fetch(ctx, ("foo", 0)) == {("foo", 0): -1}
    ctx.release()
    assert _codes(reply) == [ErrorCode.NONE] and _fetch(ctx, ("foo", 0)) == {("foo", 0): 5}


def test_offset_commit_write_failure_transforms_error():
    ctx = Context()
    ctx.fail_with = ErrorCode.REQUEST_TIMED_OUT
    assert _codes(ctx.commit({("foo", 0): 5})) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert _fetch(ctx, ("foo", 0)) == {("foo", 0): -1}


def test_fetch_offsets_with_unknown_group():
    ctx = Context()
    assert _fetch(ctx, ("foo", 0), group_id="unknown") == {("foo", 0): -1}


def test_fetch_all_offsets_with_unknown_group():
    ctx = Context()
    assert ctx.shard.offsets.fetch_all("unknown").topics == []


def test_generic_group_offset_delete():
    ctx = Context()
    ctx.commit({("foo", 0): 1, ("bar", 0): 2})
    request = OffsetDeleteRequest(
        group_id=GROUP,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name="foo", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition()]
            )
        ],
    )
    reply = ctx.shard.offsets.delete(request)
    assert _codes(reply) == [ErrorCode.NONE]
    assert decode_record(*ctx.written[-1][0]).value is None
    assert _fetch(ctx, ("foo", 0), ("bar", 0)) == {("foo", 0): -1, ("bar", 0): 2}


def test_generic_group_offset_delete_with_errors():
    ctx = Context()
    ctx.stable_group(1)
    ctx.commit({("foo", 0): 1}, member_id=ctx.group().leader_id, generation=1)
    request = OffsetDeleteRequest(
        group_id=GROUP,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name="foo", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition()]
            )
        ],
    )
    # the group consumes foo: its offsets stay
    assert _codes(ctx.shard.offsets.delete(request)) == [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC]
    unknown = OffsetDeleteRequest(group_id="unknown", topics=[])
    assert ctx.shard.offsets.delete(unknown).value.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_delete_group_all_offsets():
    ctx = Context()
    ctx.commit({("foo", 0): 1, ("foo", 1): 2})
    assert ctx.shard.offsets.delete_group(GROUP).value == ErrorCode.NONE
    kinds = [(decode_record(k, v).record_type, v) for k, v in ctx.written[-1]]
    assert kinds == [(1, None), (1, None), (2, None)]
    assert GROUP not in ctx.groups


def test_classic_group_delete():
    ctx = Context()
    ctx.stable_group(1)
    assert ctx.shard.offsets.delete_group(GROUP).value == ErrorCode.NON_EMPTY_GROUP
    assert ctx.shard.offsets.delete_group("unknown").value == ErrorCode.GROUP_ID_NOT_FOUND


def test_cleanup_expired_offsets_group_has_no_offsets():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    ctx.leave((member_id, None))
    ctx.clock.now += ctx.config.offsets_retention_ms
    assert ctx.shard.offsets.cleanup_expired() == 1  # the empty group's tombstone
    assert GROUP not in ctx.groups


def test_cleanup_expired_offsets():
    ctx = Context(offsets_retention_ms=1000)
    ctx.commit({("foo", 0): 1})
    ctx.clock.now = 500
    ctx.commit({("foo", 1): 1})
    ctx.clock.now = 1000
    # a simple consumer's offsets expire one retention after their commit
    assert ctx.shard.offsets.cleanup_expired() == 1
    assert _fetch(ctx, ("foo", 0), ("foo", 1)) == {("foo", 0): -1, ("foo", 1): 1}
    ctx.clock.now = 1500
    assert ctx.shard.offsets.cleanup_expired() == 2  # the last offset and the group
    assert GROUP not in ctx.groups


def test_cleanup_expired_offsets_empty_offset_expiration_condition():
    ctx = Context(offsets_retention_ms=1000)
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    ctx.sync(leader, 1, {leader: b""})
    ctx.commit({("bar", 0): 1}, member_id=leader, generation=1)
    ctx.join(leader)  # PreparingRebalance: no offset may expire
    ctx.clock.now += 10_000
    assert ctx.shard.offsets.cleanup_expired() == 0


def test_replay():
    ctx = Context()
    ctx.commit({("foo", 0): 10})
    ctx.commit({("foo", 0): 11})
    other = Context()
    for offset, (key, value) in enumerate(r for batch in ctx.written for r in batch):
        other.shard.replay(offset, key, value)
    assert _fetch(other, ("foo", 0)) == {("foo", 0): 11}
    assert other.group().state is GroupState.EMPTY
    key = ctx.written[-1][0][0]
    other.shard.replay(99, key, None)
    assert _fetch(other, ("foo", 0)) == {("foo", 0): -1}


def test_on_partitions_deleted():
    ctx = Context()
    ctx.commit({("foo", 0): 1, ("bar", 0): 2})
    assert ctx.shard.offsets.remove_topic("foo") == 1
    assert _fetch(ctx, ("foo", 0), ("bar", 0)) == {("foo", 0): -1, ("bar", 0): 2}
