"""Consumer groups beside classic ones, their offsets, describing, deleting and replaying:
Kafka 4.0's ``GroupMetadataManagerTest`` and ``OffsetMetadataManagerTest`` consumer group
cases that apply (names kept, snake_case), and the "disabled" migration policy (the online
migration itself: test_group_migration.py)."""

from __future__ import annotations

from typing import Any

from broker.coordinator.group.consumer.group import ConsumerGroupState, TopicMetadata
from broker.coordinator.group.consumer.member import LEAVE_GROUP_MEMBER_EPOCH, MemberState
from broker.coordinator.group.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_subscription_record,
    member_tombstones,
    subscription_metadata_record,
    target_assignment_epoch_record,
    target_assignment_record,
)
from broker.coordinator.group.records import (
    empty_group_metadata_record,
    group_tombstone,
    offset_commit_record,
)
from broker.errors import ErrorCode
from broker.group_records.messages import decode_record
from broker.protocol.messages import OffsetDeleteRequest, OffsetFetchRequest
from tests.unit.groups.consumer_support import (
    GROUP,
    a,
    build_group,
    consumer_context,
    member,
    metadata,
    topics,
)


def stable_member_group(ctx: Any, member_epoch: int = 10, **fields: Any) -> Any:
    (foo,) = topics(ctx, foo=3)
    m = member("member", member_epoch=member_epoch, previous_member_epoch=member_epoch,
               subscribed_topic_names=["foo"], assigned_partitions=a((foo, 0, 1, 2)),
               **fields)  # fmt: skip
    build_group(ctx, GROUP, member_epoch, [m], {"member": a((foo, 0, 1, 2))}, member_epoch)
    return foo


def commit_code(ctx: Any, **kw: Any) -> int:
    reply = ctx.commit({("bar", 0): 100}, **kw)
    return int(reply.value.topics[0].partitions[0].error_code)


# ---- the migration policy "disabled": one group, one protocol ----------------------------------


def test_consumer_group_heartbeat_with_non_empty_classic_group():
    ctx, _ = consumer_context(consumer_group_migration_policy="disabled")
    ctx.stable_group(1)
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                                           subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert (ErrorCode(resp.error_code), resp.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a consumer group.",
    )
    assert records == [] and GROUP in ctx.groups


def test_consumer_group_heartbeat_with_empty_classic_group():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=3)
    assert commit_code(ctx) == ErrorCode.NONE  # a simple (offsets only) classic group
    assert ctx.groups[GROUP].is_empty
    assignor.prepare({"m": a((foo, 0, 1, 2))})
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                                           subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert resp.member_epoch == 1 and resp.error_code == 0
    assert records[0] == group_tombstone(GROUP)
    assert GROUP not in ctx.groups and GROUP in ctx.consumer.groups
    # the committed offsets stay with the group id
    assert ctx.shard.offsets.get(GROUP, "bar", 0).committed_offset == 100


def test_classic_group_join_with_empty_consumer_group():
    ctx, _ = consumer_context()
    build_group(ctx, GROUP, 10, [], {}, 10)
    assert ctx.consumer.groups[GROUP].state is ConsumerGroupState.EMPTY
    before = len(ctx.written)
    reply = ctx.join()
    assert ErrorCode(reply.value.error_code) is ErrorCode.MEMBER_ID_REQUIRED
    assert GROUP not in ctx.consumer.groups and GROUP in ctx.groups
    assert ctx.written[before] == [
        *group_tombstones(GROUP, ()),
        empty_group_metadata_record(ctx.group()),
    ]


def test_classic_requests_to_a_consumer_group_know_no_member():
    # the member uses the consumer protocol: not one the classic requests know
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    assert ErrorCode(ctx.sync("member", 10).value.error_code) is ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat("member", 10) == ErrorCode.UNKNOWN_MEMBER_ID
    leave = ctx.leave(("member", None))
    assert [m.error_code for m in leave.members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert set(ctx.consumer.groups[GROUP].members) == {"member"}


# ---- offsets ------------------------------------------------------------------------------------


def test_consumer_group_offset_commit_with_unknown_member_id():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    assert commit_code(ctx, member_id="other", generation=10) == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_offset_commit_with_stale_member_epoch():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    for epoch in (9, 11):
        assert commit_code(ctx, member_id="member", generation=epoch) == (
            ErrorCode.STALE_MEMBER_EPOCH
        )


def test_consumer_group_offset_commit_with_version_smaller_than_version9():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    # a consumer protocol member commits with v9+; before, Kafka answers UNSUPPORTED_VERSION
    assert commit_code(ctx, member_id="member", generation=10, version=8) == (
        ErrorCode.UNSUPPORTED_VERSION
    )


def test_consumer_group_offset_commit_from_admin_client():
    ctx, _ = consumer_context()
    build_group(ctx, GROUP, 10, [], {}, 10)
    before = len(ctx.written)
    assert commit_code(ctx) == ErrorCode.NONE  # generation -1, no member, the group empty
    assert ctx.written[before] == [
        offset_commit_record(GROUP, "bar", 0, offset=100, leader_epoch=-1, metadata="",
                             commit_timestamp=0, expire_timestamp=-1)
    ]  # fmt: skip
    # with members, an admin commit is refused
    stable_member_group(ctx)
    assert commit_code(ctx) == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_offset_commit():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    assert commit_code(ctx, member_id="member", generation=10) == ErrorCode.NONE
    assert ctx.shard.offsets.get(GROUP, "bar", 0).committed_offset == 100


def fetch(ctx: Any, member_id: str | None, epoch: int) -> Any:
    topics = [OffsetFetchRequest.OffsetFetchRequestTopics(name="bar", partition_indexes=[0])]
    return ctx.shard.offsets.fetch(GROUP, topics, member_id, epoch)


def test_consumer_group_offset_fetch_with_member_id_and_epoch():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    commit_code(ctx, member_id="member", generation=10)
    got = fetch(ctx, "member", 10)
    assert got.error_code == 0 and got.topics[0].partitions[0].committed_offset == 100


def test_consumer_group_offset_fetch_from_admin_client():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    commit_code(ctx, member_id="member", generation=10)
    assert fetch(ctx, None, -1).topics[0].partitions[0].committed_offset == 100


def test_consumer_group_offset_fetch_with_unknown_member_id():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    assert ErrorCode(fetch(ctx, "other", 10).error_code) is ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_offset_fetch_with_stale_member_epoch():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    assert ErrorCode(fetch(ctx, "member", 9).error_code) is ErrorCode.STALE_MEMBER_EPOCH


def test_consumer_group_offset_delete():
    ctx, _ = consumer_context()
    stable_member_group(ctx)
    commit_code(ctx, member_id="member", generation=10)
    request = OffsetDeleteRequest(
        group_id=GROUP,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=name,
                partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)],
            )
            for name in ("foo", "bar")
        ],
    )
    # a non-empty consumer group may delete the offsets of topics it does not subscribe to
    resp = ctx.shard.offsets.delete(request).value
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("foo", ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
        ("bar", ErrorCode.NONE),
    ]
    assert ctx.shard.offsets.get(GROUP, "bar", 0) is None


# ---- describing, deleting, expiring -------------------------------------------------------------


def test_consumer_group_describe_no_errors():
    ctx, _ = consumer_context()
    foo = stable_member_group(ctx, instance_id="i", rack_id="r")
    described = ctx.consumer.describe(GROUP)
    assert (described.error_code, described.group_state, described.group_epoch,
            described.assignment_epoch, described.assignor_name) == (0, "Stable", 10, 10, "range")  # fmt: skip
    (m,) = described.members
    assert (m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            m.subscribed_topic_names, m.member_type) == (
        "member", "i", "r", 10, "client", "/127.0.0.1", ["foo"], 1)  # fmt: skip
    for assignment in (m.assignment, m.target_assignment):
        ((tp,),) = [assignment.topic_partitions]
        assert (tp.topic_id, tp.topic_name, tp.partitions) == (foo, "foo", [0, 1, 2])


def test_consumer_group_describe_with_errors():
    ctx, _ = consumer_context()
    described = ctx.consumer.describe("unknown")
    assert ErrorCode(described.error_code) is ErrorCode.GROUP_ID_NOT_FOUND
    ctx.stable_group(1)  # a classic group is not a consumer group either
    assert ErrorCode(ctx.consumer.describe(GROUP).error_code) is ErrorCode.GROUP_ID_NOT_FOUND


def test_consumer_group_delete():
    ctx, _ = consumer_context()
    build_group(ctx, GROUP, 10, [], {}, 10)
    commit_code(ctx)
    before = len(ctx.written)
    assert ctx.shard.offsets.delete_group(GROUP).value is ErrorCode.NONE
    written = ctx.written[before]
    assert written[-len(group_tombstones(GROUP, ())) :] == group_tombstones(GROUP, ())
    assert GROUP not in ctx.consumer.groups and ctx.shard.offsets.offsets.get(GROUP) is None
    # with members: NON_EMPTY_GROUP
    stable_member_group(ctx)
    assert ctx.shard.offsets.delete_group(GROUP).value is ErrorCode.NON_EMPTY_GROUP


def test_consumer_group_maybe_delete():
    ctx, _ = consumer_context(offsets_retention_ms=1000)
    build_group(ctx, GROUP, 10, [], {}, 10)
    commit_code(ctx)
    ctx.clock.now += 1000
    assert ctx.shard.offsets.cleanup_expired() == 1 + len(group_tombstones(GROUP, ()))
    assert GROUP not in ctx.consumer.groups


def test_non_empty_consumer_group_keeps_subscribed_offsets():
    ctx, _ = consumer_context(offsets_retention_ms=1000)
    stable_member_group(ctx)
    ctx.commit({("foo", 0): 5, ("bar", 0): 7}, member_id="member", generation=10)
    ctx.clock.now += 1000
    ctx.shard.offsets.cleanup_expired()
    assert ctx.shard.offsets.get(GROUP, "foo", 0) is not None  # subscribed: kept
    assert ctx.shard.offsets.get(GROUP, "bar", 0) is None  # expired from its commit
    assert GROUP in ctx.consumer.groups


# ---- replay ---------------------------------------------------------------------------------------


def test_replay_consumer_group_member_metadata():
    ctx, _ = consumer_context()
    m = member("m", subscribed_topic_names=["foo"], instance_id="i", rack_id="r")
    ctx.replay(member_subscription_record(GROUP, m))
    got = ctx.consumer.groups[GROUP].members["m"]
    assert (got.instance_id, got.rack_id, got.subscribed_topic_names) == ("i", "r", {"foo"})


def test_replay_consumer_group_member_metadata_tombstone():
    ctx, _ = consumer_context()
    m = member("m", subscribed_topic_names=["foo"])
    ctx.replay(member_subscription_record(GROUP, m))
    ctx.replay(current_assignment_record(GROUP, m.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH)))
    ctx.replay(*member_tombstones(GROUP, "m")[2:])
    assert ctx.consumer.groups[GROUP].members == {}
    # a tombstone of an unknown group or member is ignored
    ctx.replay(*member_tombstones("other", "m"))
    assert "other" not in ctx.consumer.groups


def test_replay_consumer_group_metadata():
    ctx, _ = consumer_context()
    ctx.replay(group_epoch_record(GROUP, 10))
    assert ctx.consumer.groups[GROUP].group_epoch == 10


def test_replay_consumer_group_metadata_tombstone():
    ctx, _ = consumer_context()
    ctx.replay(group_epoch_record(GROUP, 10))
    ctx.replay(*group_tombstones(GROUP, ()))
    assert GROUP not in ctx.consumer.groups


def test_replay_consumer_group_partition_metadata():
    ctx, _ = consumer_context()
    (foo,) = topics(ctx, foo=3)
    ctx.replay(subscription_metadata_record(GROUP, metadata(ctx, "foo")))
    assert ctx.consumer.groups[GROUP].subscription_metadata == {"foo": TopicMetadata(foo, "foo", 3)}
    ctx.replay(group_tombstones(GROUP, ())[-2])
    assert ctx.consumer.groups[GROUP].subscription_metadata == {}


def test_replay_consumer_group_target_assignment_member():
    ctx, _ = consumer_context()
    (foo,) = topics(ctx, foo=3)
    ctx.replay(target_assignment_record(GROUP, "m", a((foo, 0, 1))))
    group = ctx.consumer.groups[GROUP]
    assert group.target_assignment == {"m": a((foo, 0, 1))}
    assert group.inverted_target_assignment == {foo: {0: "m", 1: "m"}}
    ctx.replay(member_tombstones(GROUP, "m")[1])
    assert group.target_assignment == {} and group.inverted_target_assignment == {}


def test_replay_consumer_group_target_assignment_metadata():
    ctx, _ = consumer_context()
    ctx.replay(target_assignment_epoch_record(GROUP, 10))
    assert ctx.consumer.groups[GROUP].assignment_epoch == 10
    ctx.replay(group_tombstones(GROUP, ())[0])
    assert ctx.consumer.groups[GROUP].assignment_epoch == -1


def test_replay_consumer_group_current_member_assignment():
    ctx, _ = consumer_context()
    (foo,) = topics(ctx, foo=3)
    m = member("m", member_epoch=10, previous_member_epoch=9,
               state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=a((foo, 0)),
               partitions_pending_revocation=a((foo, 1)))  # fmt: skip
    ctx.replay(current_assignment_record(GROUP, m))
    group = ctx.consumer.groups[GROUP]
    got = group.members["m"]
    assert (got.member_epoch, got.previous_member_epoch, got.state) == (
        10, 9, MemberState.UNREVOKED_PARTITIONS
    )  # fmt: skip
    assert group.current_partition_epoch == {foo: {0: 10, 1: 10}}
    ctx.replay(member_tombstones(GROUP, "m")[0])
    assert group.members["m"].member_epoch == LEAVE_GROUP_MEMBER_EPOCH
    assert group.current_partition_epoch == {}


def test_replayed_offsets_before_the_group_records_give_way():
    """Loading a log where the group's offsets come first (a simple classic group holds them,
    ``getOrMaybeCreatePersistedConsumerGroup``) and its consumer records after."""
    ctx, _ = consumer_context()
    ctx.replay(offset_commit_record(GROUP, "bar", 0, offset=3, leader_epoch=-1, metadata="",
                                    commit_timestamp=0, expire_timestamp=-1))  # fmt: skip
    assert GROUP in ctx.groups
    ctx.replay(group_epoch_record(GROUP, 4))
    assert GROUP not in ctx.groups and ctx.consumer.groups[GROUP].group_epoch == 4
    assert ctx.shard.offsets.get(GROUP, "bar", 0).committed_offset == 3


def test_records_are_kafkas_bytes():
    """Every consumer group record decodes with the schemas dump-log and Kafka read."""
    ctx, _ = consumer_context()
    (foo,) = topics(ctx, foo=3)
    m = member("m", member_epoch=2, assigned_partitions=a((foo, 0)), subscribed_topic_names=["foo"])
    records = [
        member_subscription_record(GROUP, m),
        subscription_metadata_record(GROUP, metadata(ctx, "foo")),
        group_epoch_record(GROUP, 2),
        target_assignment_record(GROUP, "m", a((foo, 0))),
        target_assignment_epoch_record(GROUP, 2),
        current_assignment_record(GROUP, m),
    ]
    types = [decode_record(k, v).record_type for k, v in records]
    assert types == [5, 4, 3, 7, 6, 8]
    value = decode_record(*records[-1]).value
    assert value == {
        "MemberEpoch": 2, "PreviousMemberEpoch": -1, "State": 0,
        "AssignedPartitions": [{"TopicId": foo, "Partitions": [0]}],
        "PartitionsPendingRevocation": [],
    }  # fmt: skip
    assert decode_record(*records[0]).value["SubscribedTopicNames"] == ["foo"]
