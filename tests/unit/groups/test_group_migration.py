"""Online migration between classic and consumer groups (``group.consumer.migration.policy``):
Kafka 4.0's ``GroupMetadataManagerTest`` cases that apply to one broker (names kept, snake_case),
the embedded consumer protocol, and a reload of converted groups from their records."""

from __future__ import annotations

from typing import Any

import pytest

from broker.coordinator.group.classic import Caller
from broker.coordinator.group.classic_group import ClassicGroup, GroupState
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer.group import ConsumerGroupState, TopicMetadata
from broker.coordinator.group.consumer.groups import (
    join_timeout_key,
    session_timeout_key,
    sync_timeout_key,
)
from broker.coordinator.group.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ClassicMemberMetadata,
    MemberState,
)
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
from broker.coordinator.group.consumer_protocol import (
    ConsumerProtocolError,
    encode_assignment,
    encode_subscription,
    parse_assignment,
    parse_subscription,
)
from broker.coordinator.group.member import ClassicGroupMember
from broker.coordinator.group.rebalance import heartbeat_key, join_key
from broker.coordinator.group.records import group_metadata_record, group_tombstone
from broker.errors import ErrorCode, InvalidConfigError
from broker.protocol.messages import JoinGroupRequest
from tests.unit.groups.consumer_support import (
    GROUP,
    a,
    build_group,
    consumer_context,
    member,
    topics,
)
from tests.unit.groups.context import Context

M1, M2, M3 = "member-id-1", "member-id-2", "member-id-3"


# ---- helpers ------------------------------------------------------------------------------------


def classic_group(
    ctx: Context,
    members: list[tuple[str, bytes, bytes]],
    generation: int = 0,
    state: GroupState = GroupState.STABLE,
    protocol_type: str = "consumer",
) -> ClassicGroup:
    """A classic group of ``(member id, subscription, assignment)`` members, from its record
    (``createClassicGroup`` + ``newGroupMetadataRecord`` replayed)."""
    group = ClassicGroup(GROUP, GroupState.STABLE, ctx.clock, generation_id=generation,
                         protocol_type=protocol_type, protocol_name="range")  # fmt: skip
    for member_id, sub, assignment in members:
        group.add(ClassicGroupMember(member_id, group_instance_id=None, client_id="client-id",
                                     client_host="client-host", rebalance_timeout_ms=10000,
                                     session_timeout_ms=5000, protocol_type=protocol_type,
                                     supported_protocols=(("range", sub),),
                                     assignment=assignment))  # fmt: skip
    ctx.replay(group_metadata_record(group, {m: asg for m, _, asg in members}))
    loaded = ctx.groups[GROUP]
    for cm in loaded.members.values():
        ctx.shard.classic.reschedule_heartbeat(loaded, cm)
    if state is GroupState.PREPARING_REBALANCE:
        ctx.shard.classic.prepare_rebalance(loaded, "test")
    return loaded


def join_protocols(sub: bytes) -> list[Any]:
    return [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=sub)]


def classic_join(ctx: Context, member_id: str, sub: bytes, **kw: Any) -> Any:
    """A JoinGroup of a classic consumer with the subscription ``sub``."""
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=kw.pop("session_ms", 5000),
        rebalance_timeout_ms=kw.pop("rebalance_ms", 10000),
        member_id=member_id,
        group_instance_id=kw.pop("instance_id", None),
        protocol_type=kw.pop("protocol_type", "consumer"),
        protocols=join_protocols(sub),
    )
    return ctx.shard.classic.join(Caller("client", "/127.0.0.1", kw.pop("version", 9)), request)


def classic_meta(sub: bytes, session_ms: int = 5000) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(session_ms, (("range", sub),))


def mixed_group(ctx: Context, policy_sub: bytes | None = None) -> tuple[Any, Any, bytes]:
    """``testLastConsumerProtocolMemberLeavingConsumerGroup``'s group: member 1 classic
    (foo 0-2, bar 0-1), member 2 consumer protocol (foo 3-5, bar 2), epoch 10."""
    foo, bar = topics(ctx, foo=6, bar=3)
    sub = policy_sub or encode_subscription(
        ["foo", "bar"], 1, [("foo", [0, 1, 2]), ("bar", [0, 1])]
    )
    m1 = member(M1, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                rebalance_timeout_ms=45000, classic_member_metadata=classic_meta(sub),
                assigned_partitions=a((foo, 0, 1, 2), (bar, 0, 1)))  # fmt: skip
    m2 = member(M2, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                rebalance_timeout_ms=45000, assigned_partitions=a((foo, 3, 4, 5), (bar, 2)))  # fmt: skip
    build_group(ctx, GROUP, 10, [m1, m2],
                {M1: a((foo, 0, 1, 2), (bar, 0, 1)), M2: a((foo, 3, 4, 5), (bar, 2))}, 10)  # fmt: skip
    return foo, bar, sub


# ---- the policy and the embedded protocol ------------------------------------------------------


def test_migration_policy_config():
    assert GroupConfig().consumer_group_migration_policy == "bidirectional"
    from broker.group_config_keys import _migration_policy, migration_policy

    for value in ("DISABLED", "Upgrade", "downgrade", "BIDIRECTIONAL"):
        _migration_policy("group.consumer.migration.policy", value)
        assert migration_policy(value) == value.lower()
    with pytest.raises(InvalidConfigError):
        _migration_policy("group.consumer.migration.policy", "sideways")
    flags = {
        p: (GroupConfig(consumer_group_migration_policy=p).upgrade_enabled,
            GroupConfig(consumer_group_migration_policy=p).downgrade_enabled)
        for p in ("disabled", "upgrade", "downgrade", "bidirectional")
    }  # fmt: skip
    assert flags == {"disabled": (False, False), "upgrade": (True, False),
                     "downgrade": (False, True), "bidirectional": (True, True)}  # fmt: skip


def test_consumer_protocol_bytes():
    # ConsumerProtocol.serializeAssignment v0 of foo-0, foo-1: version, 1 topic, "foo", [0, 1],
    # null user data
    assert encode_assignment([("foo", [0, 1])], 0) == bytes.fromhex(
        "0000000000010003666f6f000000020000000000000001ffffffff"
    )
    assert parse_assignment(encode_assignment([("foo", [0, 1])], 3)) == [("foo", [0, 1])]
    sub = parse_subscription(encode_subscription(["foo"], 3, [("foo", [2])], 7, "rack"))
    assert (sub.version, sub.topics, sub.owned_partitions, sub.generation_id, sub.rack_id) == (
        3, ["foo"], [("foo", [2])], 7, "rack")  # fmt: skip
    # a newer version reads as the highest known
    assert parse_subscription(b"\x00\x09" + encode_subscription(["x"], 3)[2:]).version == 3
    for bad in (b"", b"\x00", b"\x00\x00\x00\x00\x00\x05"):
        with pytest.raises(ConsumerProtocolError):
            parse_subscription(bad)


# ---- upgrade: classic -> consumer ---------------------------------------------------------------


def test_consumer_group_heartbeat_with_stable_classic_group():
    ctx, assignor = consumer_context(consumer_group_migration_policy="upgrade")
    foo, bar = topics(ctx, foo=1, bar=1)
    sub = encode_subscription(["foo", "bar"], 1, [("foo", [0]), ("bar", [0])])
    asg = encode_assignment([("foo", [0]), ("bar", [0])], 1)
    old = classic_group(ctx, [(M1, sub, asg)])
    assignor.prepare({M1: a((foo, 0)), M2: a((bar, 0))})
    resp, records = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                           server_assignor="range",
                                           subscribed_topic_names=["foo", "bar"],
                                           topic_partitions=[])  # fmt: skip
    assert resp.error_code == 0 and resp.member_epoch == 1
    expected1 = member(M1, member_epoch=0, previous_member_epoch=0, client_id="client-id",
                       client_host="client-host", subscribed_topic_names=["foo", "bar"],
                       rebalance_timeout_ms=10000, server_assignor_name=None,
                       classic_member_metadata=classic_meta(sub),
                       assigned_partitions=a((foo, 0), (bar, 0)))  # fmt: skip
    expected2 = member(M2, member_epoch=1, previous_member_epoch=0,
                       state=MemberState.UNRELEASED_PARTITIONS,
                       subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=5000)  # fmt: skip
    # the target assignment's member records in any order (as Kafka's assertRecordsEquals)
    records[9:11] = sorted(records[9:11], key=lambda r: r[0], reverse=True)
    assert records == [
        group_tombstone(GROUP),
        member_subscription_record(GROUP, expected1),
        group_epoch_record(GROUP, 0),
        target_assignment_record(GROUP, M1, a((foo, 0), (bar, 0))),
        target_assignment_epoch_record(GROUP, 0),
        current_assignment_record(GROUP, expected1),
        member_subscription_record(GROUP, expected2),
        subscription_metadata_record(GROUP, {"bar": TopicMetadata(bar, "bar", 1),
                                             "foo": TopicMetadata(foo, "foo", 1)}),
        group_epoch_record(GROUP, 1),
        target_assignment_record(GROUP, M2, a((bar, 0))),
        target_assignment_record(GROUP, M1, a((foo, 0))),
        target_assignment_epoch_record(GROUP, 1),
        current_assignment_record(GROUP, expected2),
    ]  # fmt: skip
    assert GROUP not in ctx.groups and old.state is GroupState.DEAD
    group = ctx.consumer.groups[GROUP]
    assert set(group.members) == {M1, M2}
    assert ctx.timer.deadline(session_timeout_key(GROUP, M1)) == 5000
    assert ctx.timer.deadline(session_timeout_key(GROUP, M2)) == 45000
    assert not ctx.timer.is_scheduled(heartbeat_key(GROUP, M1))


def test_consumer_group_heartbeat_with_stable_classic_group_failing_to_persist():
    ctx, assignor = consumer_context()
    foo, _bar = topics(ctx, foo=1, bar=1)
    sub = encode_subscription(["foo"])
    old = classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0])], 0))], generation=3)
    assignor.prepare({M1: a((foo, 0)), M2: {}})
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.NOT_COORDINATOR
    # rolled back: the classic group is back as it was
    assert GROUP not in ctx.consumer.groups and ctx.groups[GROUP] is old
    assert old.state is GroupState.STABLE and old.generation_id == 3
    assert ctx.timer.is_scheduled(heartbeat_key(GROUP, M1))


def test_consumer_group_heartbeat_with_preparing_rebalance_classic_group():
    ctx, assignor = consumer_context()
    foo, _ = topics(ctx, foo=2, bar=1)
    sub = encode_subscription(["foo"])
    group = classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0, 1])], 0))],
                          generation=2)  # fmt: skip
    # member 1 rejoins for a new rebalance: its JoinGroup is parked
    parked = classic_join(ctx, M1, sub)
    ctx.shard.classic.prepare_rebalance(group, "test")
    assert group.state is GroupState.PREPARING_REBALANCE or parked.done()
    assignor.prepare({M1: a((foo, 0)), M2: a((foo, 1))})
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert resp.error_code == 0 and GROUP in ctx.consumer.groups
    if parked.done() and parked.value.error_code != 0:
        assert ErrorCode(parked.value.error_code) is ErrorCode.REBALANCE_IN_PROGRESS


def test_consumer_group_heartbeat_to_classic_group_with_empty_assignment_members():
    ctx, assignor = consumer_context()
    foo, _ = topics(ctx, foo=2, bar=1)
    sub = encode_subscription(["foo"])
    # member 2 joined and never synced: no assignment yet
    classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0, 1])], 0)), (M2, sub, b"")],
                  generation=1)  # fmt: skip
    assignor.prepare({M1: a((foo, 0)), M2: a((foo, 1)), M3: {}})
    resp, _ = ctx.consumer_heartbeat(member_id=M3, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert resp.error_code == 0
    group = ctx.consumer.groups[GROUP]
    assert group.members[M2].assigned_partitions == {}
    assert group.members[M1].classic_member_metadata == classic_meta(sub)


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_consumer_group_heartbeat_with_non_empty_classic_group_upgrade_disabled(policy):
    ctx, _ = consumer_context(consumer_group_migration_policy=policy)
    topics(ctx, foo=1)
    sub = encode_subscription(["foo"])
    classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0])], 0))])
    resp, records = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                           subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.GROUP_ID_NOT_FOUND
    assert records == [] and GROUP in ctx.groups


def test_upgrade_refused_for_a_group_of_another_protocol_type():
    ctx, _ = consumer_context()
    classic_group(ctx, [(M1, b"whatever", b"")], protocol_type="connect")
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.GROUP_ID_NOT_FOUND
    assert resp.error_message == f"Group {GROUP} is not a consumer group."


def test_upgrade_refused_when_the_group_is_larger_than_the_consumer_group_max_size():
    ctx, _ = consumer_context(consumer_group_max_size=1)
    topics(ctx, foo=1)
    sub = encode_subscription(["foo"])
    classic_group(ctx, [(M1, sub, b""), (M3, sub, b"")])
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.GROUP_ID_NOT_FOUND


def test_upgrade_refused_when_the_embedded_protocol_is_malformed():
    ctx, _ = consumer_context()
    classic_group(ctx, [(M1, b"\x00\x00\x7f", b"")])
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.GROUP_ID_NOT_FOUND
    assert "malformed" in resp.error_message and GROUP in ctx.groups


# ---- classic members in a consumer group --------------------------------------------------------


def test_joining_consumer_group_with_new_dynamic_member():
    ctx, assignor = consumer_context()
    foo, bar, _ = mixed_group(ctx)
    sub = encode_subscription(["foo"], 1)
    first = classic_join(ctx, "", sub)
    assert ErrorCode(first.value.error_code) is ErrorCode.MEMBER_ID_REQUIRED
    new_id = first.value.member_id
    assert new_id and GROUP not in ctx.groups
    assignor.prepare({M1: a((foo, 0, 1), (bar, 0, 1)), M2: a((foo, 2, 3), (bar, 2)),
                      new_id: a((foo, 4, 5))})  # fmt: skip
    before = len(ctx.written)
    reply = classic_join(ctx, new_id, sub)
    assert reply.done() and reply.value.error_code == 0
    resp = reply.value
    assert (resp.member_id, resp.generation_id, resp.protocol_type, resp.protocol_name,
            resp.leader, resp.members) == (new_id, 11, "consumer", "range", "", [])  # fmt: skip
    records = ctx.written[before]
    group = ctx.consumer.groups[GROUP]
    joined = group.members[new_id]
    assert joined.classic_member_metadata == ClassicMemberMetadata(5000, (("range", sub),))
    assert records[0] == member_subscription_record(GROUP, joined.replace(
        member_epoch=0, previous_member_epoch=-1, state=MemberState.STABLE,
        assigned_partitions={}))  # fmt: skip
    assert group_epoch_record(GROUP, 11) in records
    # foo 4, 5 are still owned by member 2: the joining member waits for them
    assert (joined.member_epoch, joined.state) == (11, MemberState.UNRELEASED_PARTITIONS)
    assert ctx.timer.deadline(session_timeout_key(GROUP, new_id)) == 5000
    assert ctx.timer.deadline(sync_timeout_key(GROUP, new_id)) == 10000
    # its SyncGroup: its assigned partitions (none yet), the sync timer gone
    synced = ctx.sync(new_id, 11, protocol_type="consumer", protocol_name="range").value
    assert synced.error_code == 0 and parse_assignment(synced.assignment) == []
    assert not ctx.timer.is_scheduled(sync_timeout_key(GROUP, new_id))
    # described as a classic member of the consumer group
    described = {m.member_id: m.member_type for m in ctx.consumer.describe(GROUP).members}
    assert described == {M1: 0, M2: 1, new_id: 0}


def test_joining_consumer_group_throws_exception_if_protocol_is_not_supported():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    reply = classic_join(ctx, "", encode_subscription(["foo"]), protocol_type="connect")
    assert ErrorCode(reply.value.error_code) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_joining_consumer_group_throws_exception_if_group_over_max_size():
    ctx, _ = consumer_context(consumer_group_max_size=2)
    mixed_group(ctx)
    reply = classic_join(ctx, "", encode_subscription(["foo"]))
    assert ErrorCode(reply.value.error_code) is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_joining_consumer_group_failing_to_persist_records():
    ctx, assignor = consumer_context()
    foo, bar, _ = mixed_group(ctx)
    assignor.prepare({M1: a((foo, 0, 1, 2), (bar, 0, 1)), M2: a((foo, 3, 4, 5), (bar, 2)),
                      "new": {}})  # fmt: skip
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    reply = classic_join(ctx, "new", encode_subscription(["foo", "bar"]))
    assert ErrorCode(reply.value.error_code) is ErrorCode.NOT_COORDINATOR
    assert set(ctx.consumer.groups[GROUP].members) == {M1, M2}
    assert not ctx.timer.is_scheduled(sync_timeout_key(GROUP, "new"))


def test_classic_group_sync_to_consumer_group_with_all_consumer_protocol_versions():
    for version in range(4):
        ctx, _ = consumer_context()
        foo, bar = topics(ctx, foo=3, bar=1)
        sub = encode_subscription(["foo", "bar"], version)
        m1 = member(M1, member_epoch=10, previous_member_epoch=9,
                    subscribed_topic_names=["foo", "bar"], classic_member_metadata=classic_meta(sub),
                    assigned_partitions=a((foo, 0, 1, 2), (bar, 0)))  # fmt: skip
        build_group(ctx, GROUP, 10, [m1], {M1: a((foo, 0, 1, 2), (bar, 0))}, 10)
        synced = ctx.sync(M1, 10, protocol_type="consumer", protocol_name="range").value
        assert synced.error_code == 0
        assert synced.assignment == encode_assignment([("bar", [0]), ("foo", [0, 1, 2])], version)
        assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")


def test_classic_group_sync_to_consumer_group_errors():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    code = lambda reply: ErrorCode(reply.value.error_code)  # noqa: E731
    # test_classic_group_sync_to_consumer_group_with_unknown_member_id
    assert code(ctx.sync("unknown", 10)) is ErrorCode.UNKNOWN_MEMBER_ID
    # a consumer protocol member is unknown to the classic protocol
    assert code(ctx.sync(M2, 10)) is ErrorCode.UNKNOWN_MEMBER_ID
    # test_classic_group_sync_to_consumer_group_with_illegal_generation
    assert code(ctx.sync(M1, 9)) is ErrorCode.ILLEGAL_GENERATION
    # test_classic_group_sync_to_consumer_group_with_inconsistent_group_protocol
    assert code(ctx.sync(M1, 10, protocol_type="connect")) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert code(ctx.sync(M1, 10, protocol_name="roundrobin")) is (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    # test_classic_group_sync_to_consumer_group_with_fenced_instance_id
    assert code(ctx.sync(M1, 10, instance_id="unknown-instance")) is ErrorCode.UNKNOWN_MEMBER_ID


def test_classic_group_sync_to_consumer_group_rebalance_in_progress():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.replay(group_epoch_record(GROUP, 11))
    reply = ctx.sync(M1, 10)
    assert ErrorCode(reply.value.error_code) is ErrorCode.REBALANCE_IN_PROGRESS
    assert ctx.timer.is_scheduled(join_timeout_key(GROUP, M1))


def test_classic_group_heartbeat_to_consumer_group_maintains_session():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.timer.advance(4000)
    assert ctx.heartbeat(M1, 10) == ErrorCode.NONE
    assert ctx.timer.deadline(session_timeout_key(GROUP, M1)) == 4000 + 5000


def test_classic_group_heartbeat_to_consumer_group_rebalance_in_progress():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.replay(group_epoch_record(GROUP, 11))
    assert ctx.heartbeat(M1, 10) == ErrorCode.REBALANCE_IN_PROGRESS
    assert ctx.timer.deadline(join_timeout_key(GROUP, M1)) == 45000


def test_classic_group_heartbeat_to_consumer_errors():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    # ..._with_unknown_member, ..._with_illegal_generation_id,
    # ..._with_member_not_using_classic_protocol, ..._with_fenced_instance_id
    assert ctx.heartbeat("unknown", 10) == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(M1, 9) == ErrorCode.ILLEGAL_GENERATION
    assert ctx.heartbeat(M2, 10) == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(M1, 10, instance_id="other") == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_member_using_classic_protocol_fenced_when_session_timeout():
    ctx, _ = consumer_context(consumer_group_migration_policy="upgrade")
    mixed_group(ctx)
    ctx.consumer.schedule_session_timeout(GROUP, M1, 5000)
    before = len(ctx.written)
    ctx.timer.advance(5000)
    assert M1 not in ctx.consumer.groups[GROUP].members
    written = [r for batch in ctx.written[before:] for r in batch]
    assert written[:3] == member_tombstones(GROUP, M1)
    assert written[-1] == group_epoch_record(GROUP, 11)


def test_consumer_group_member_using_classic_protocol_fenced_when_join_timeout():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.replay(group_epoch_record(GROUP, 11))
    assert ctx.heartbeat(M1, 10) == ErrorCode.REBALANCE_IN_PROGRESS
    ctx.timer.advance(4000)
    assert ctx.heartbeat(M1, 10) == ErrorCode.REBALANCE_IN_PROGRESS  # the join timer stays
    ctx.timer.advance(41000)  # 45 s since the first REBALANCE_IN_PROGRESS
    assert M1 not in ctx.consumer.groups[GROUP].members


def test_consumer_group_member_using_classic_protocol_batch_leave_group():
    ctx, _ = consumer_context()
    foo, _bar = topics(ctx, foo=6, bar=3)
    sub = encode_subscription(["foo", "bar"])
    m1 = member(M1, member_epoch=10, subscribed_topic_names=["foo", "bar"],
                classic_member_metadata=classic_meta(sub), instance_id="instance-1",
                assigned_partitions=a((foo, 0, 1)))  # fmt: skip
    m2 = member(M2, member_epoch=10, subscribed_topic_names=["foo"],
                classic_member_metadata=classic_meta(sub), assigned_partitions=a((foo, 2, 3)))  # fmt: skip
    m3 = member(M3, member_epoch=10, subscribed_topic_names=["foo"],
                assigned_partitions=a((foo, 4, 5)))  # fmt: skip
    build_group(ctx, GROUP, 10, [m1, m2, m3], {M1: a((foo, 0, 1)), M2: a((foo, 2, 3)),
                                                M3: a((foo, 4, 5))}, 10)  # fmt: skip
    before = len(ctx.written)
    resp = ctx.leave(("", "instance-1"), (M2, None), (M3, None), ("unknown", None))
    assert [(m.member_id, m.error_code) for m in resp.members] == [
        (M1, 0), (M2, 0), (M3, ErrorCode.UNKNOWN_MEMBER_ID),
        ("unknown", ErrorCode.UNKNOWN_MEMBER_ID)]  # fmt: skip
    assert ctx.written[before] == [
        *member_tombstones(GROUP, M1),
        *member_tombstones(GROUP, M2),
        subscription_metadata_record(GROUP, {"foo": TopicMetadata(foo, "foo", 6)}),
        group_epoch_record(GROUP, 11),
    ]
    assert set(ctx.consumer.groups[GROUP].members) == {M3}


def test_classic_group_leave_to_consumer_group_without_valid_leave_group_member():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    before = len(ctx.written)
    resp = ctx.leave(("unknown", None))
    assert [m.error_code for m in resp.members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert len(ctx.written) == before


def test_classic_group_leave_to_consumer_group_failing_to_persist():
    """Answered only once the tombstones are written: a failed write answers its error
    (Kafka's ``handleOperationException``) and the members, and their sessions, stay."""
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    resp = ctx.leave((M1, None))
    assert ErrorCode(resp.error_code) is ErrorCode.NOT_COORDINATOR
    assert set(ctx.consumer.groups[GROUP].members) == {M1, M2}
    assert ctx.timer.is_scheduled(session_timeout_key(GROUP, M1))


# ---- downgrade: consumer -> classic -------------------------------------------------------------


def test_last_consumer_protocol_member_leaving_consumer_group():
    ctx, _ = consumer_context(consumer_group_migration_policy="downgrade")
    foo, bar, sub = mixed_group(ctx)
    ctx.replay(subscription_metadata_record(GROUP, {"foo": TopicMetadata(foo, "foo", 6),
                                                    "bar": TopicMetadata(bar, "bar", 3)}))  # fmt: skip
    resp, records = ctx.consumer_heartbeat(member_id=M2, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                           rebalance_timeout_ms=5000,
                                           subscribed_topic_names=["foo", "bar"],
                                           topic_partitions=[])  # fmt: skip
    assert resp.error_code == 0 and resp.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
    assignment = encode_assignment([("bar", [0, 1]), ("foo", [0, 1, 2])], 1)
    expected = ClassicGroup(GROUP, GroupState.STABLE, ctx.clock, generation_id=10,
                            protocol_type="consumer", protocol_name="range", leader_id=M1)  # fmt: skip
    expected.add(ClassicGroupMember(M1, group_instance_id=None, client_id="client",
                                    client_host="/127.0.0.1", rebalance_timeout_ms=45000,
                                    session_timeout_ms=5000, protocol_type="consumer",
                                    supported_protocols=(("range", sub),),
                                    assignment=assignment))  # fmt: skip
    assert records == [
        *group_tombstones(GROUP, [M1, M2]),
        group_metadata_record(expected, {M1: assignment}),
    ]
    assert GROUP not in ctx.consumer.groups
    classic = ctx.groups[GROUP]
    assert classic.state is GroupState.PREPARING_REBALANCE
    assert ctx.timer.is_scheduled(heartbeat_key(GROUP, M1))
    assert ctx.timer.is_scheduled(join_key(GROUP))
    assert not ctx.timer.is_scheduled(session_timeout_key(GROUP, M1))
    # the classic member rejoins: the classic group's next generation
    reply = classic_join(ctx, M1, sub)
    assert reply.done() and reply.value.error_code == 0 and reply.value.generation_id == 11
    assert reply.value.leader == M1


def test_last_consumer_protocol_member_leaving_consumer_group_failing_to_persist():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    resp, _ = ctx.consumer_heartbeat(member_id=M2, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert ErrorCode(resp.error_code) is ErrorCode.NOT_COORDINATOR
    # rolled back: the consumer group is back, the classic one gone
    assert GROUP not in ctx.groups
    assert set(ctx.consumer.groups[GROUP].members) == {M1, M2}
    assert ctx.timer.is_scheduled(session_timeout_key(GROUP, M1))


def test_last_consumer_protocol_member_session_timeout_in_consumer_group():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.consumer.schedule_session_timeout(GROUP, M1, 60_000)
    ctx.consumer.schedule_session_timeout(GROUP, M2)
    ctx.timer.advance(45000)
    assert GROUP not in ctx.consumer.groups
    assert ctx.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    assert set(ctx.groups[GROUP].members) == {M1}


def test_last_consumer_protocol_member_rebalance_timeout_in_consumer_group():
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.consumer.schedule_rebalance_timeout(GROUP, M2, 10, 1000)
    ctx.timer.advance(1000)
    assert GROUP not in ctx.consumer.groups and set(ctx.groups[GROUP].members) == {M1}


@pytest.mark.parametrize("policy", ["disabled", "upgrade"])
def test_last_consumer_protocol_member_leaving_with_downgrade_disabled(policy):
    ctx, _ = consumer_context(consumer_group_migration_policy=policy)
    mixed_group(ctx)
    resp, records = ctx.consumer_heartbeat(member_id=M2, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert resp.error_code == 0
    assert records[:3] == member_tombstones(GROUP, M2)
    assert set(ctx.consumer.groups[GROUP].members) == {M1} and GROUP not in ctx.groups


def test_last_classic_member_leaving_keeps_the_consumer_group():
    # only a consumer protocol member leaving triggers the downgrade
    ctx, _ = consumer_context()
    mixed_group(ctx)
    ctx.leave((M1, None))
    assert set(ctx.consumer.groups[GROUP].members) == {M2} and GROUP not in ctx.groups


def test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    sub = encode_subscription(["foo", "bar"], 1)
    m1 = member(M1, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                rebalance_timeout_ms=45000, classic_member_metadata=classic_meta(sub),
                assigned_partitions=a((foo, 0, 1, 2), (bar, 0, 1)))  # fmt: skip
    m2 = member(M2, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                instance_id="instance-2", rebalance_timeout_ms=45000,
                assigned_partitions=a((foo, 3, 4, 5), (bar, 2)))  # fmt: skip
    build_group(ctx, GROUP, 10, [m1, m2],
                {M1: a((foo, 0, 1, 2), (bar, 0, 1)), M2: a((foo, 3, 4, 5), (bar, 2))}, 10)  # fmt: skip
    reply = classic_join(ctx, "", sub, instance_id="instance-2")
    assert reply.done() and reply.value.error_code == 0
    new_id = reply.value.member_id
    assert GROUP not in ctx.consumer.groups
    classic = ctx.groups[GROUP]
    # no rebalance: the new member takes the replaced member's assignment
    assert classic.state is GroupState.STABLE and set(classic.members) == {M1, new_id}
    assert parse_assignment(classic.members[new_id].assignment) == [
        ("bar", [2]), ("foo", [3, 4, 5])]  # fmt: skip
    assert classic.static_member_id("instance-2") == new_id


# ---- reloading converted groups ------------------------------------------------------------------


def reload(ctx: Context) -> Context:
    """A new shard replaying everything ``ctx`` wrote (a broker restart)."""
    fresh, _ = consumer_context()
    fresh.topics = ctx.topics
    fresh.shard.consumer.topics = ctx.topics
    for batch in ctx.written:
        for key, value in batch:
            fresh.shard.replay(0, key, value)
    fresh.shard.on_loaded()
    return fresh


def test_converted_groups_reload_from_their_records():
    ctx, assignor = consumer_context()
    foo, _ = topics(ctx, foo=2, bar=1)
    sub = encode_subscription(["foo"], 1)
    classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0, 1])], 1))], generation=4)
    ctx.written.insert(0, [group_metadata_record(ctx.groups[GROUP],
                                                 {M1: ctx.groups[GROUP].members[M1].assignment})])  # fmt: skip
    assignor.prepare({M1: a((foo, 0)), M2: a((foo, 1))})
    ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                           subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    upgraded = reload(ctx)
    assert GROUP not in upgraded.groups
    group = upgraded.consumer.groups[GROUP]
    live = ctx.consumer.groups[GROUP]
    assert group.members == live.members and group.group_epoch == live.group_epoch == 5
    assert group.members[M1].classic_member_metadata == classic_meta(sub)
    assert group.target_assignment == live.target_assignment
    assert upgraded.timer.is_scheduled(session_timeout_key(GROUP, M1))
    # member 2 (consumer protocol) leaves: back to classic, and that reloads too
    ctx.consumer_heartbeat(member_id=M2, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert GROUP in ctx.groups
    downgraded = reload(ctx)
    assert GROUP not in downgraded.consumer.groups
    classic = downgraded.groups[GROUP]
    assert (classic.state, classic.generation_id, classic.protocol_type, classic.protocol_name,
            set(classic.members)) == (GroupState.STABLE, 5, "consumer", "range", {M1})  # fmt: skip
    assert parse_assignment(classic.members[M1].assignment) == parse_assignment(
        ctx.groups[GROUP].members[M1].assignment
    )
    assert downgraded.timer.is_scheduled(heartbeat_key(GROUP, M1))


def test_consumer_group_state_metrics_follow_conversions():
    ctx, assignor = consumer_context()
    foo, _ = topics(ctx, foo=2, bar=1)
    sub = encode_subscription(["foo"])
    classic_group(ctx, [(M1, sub, encode_assignment([("foo", [0, 1])], 0))])
    assert ctx.consumer.states()["Stable"] == 0
    assignor.prepare({M1: a((foo, 0)), M2: a((foo, 1))})
    ctx.consumer_heartbeat(member_id=M2, member_epoch=0, rebalance_timeout_ms=5000,
                           subscribed_topic_names=["foo"], topic_partitions=[])  # fmt: skip
    assert sum(ctx.consumer.states().values()) == 1 and not ctx.groups
    assert ctx.consumer.groups[GROUP].state is not ConsumerGroupState.EMPTY
