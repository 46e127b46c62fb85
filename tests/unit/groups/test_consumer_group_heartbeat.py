"""ConsumerGroupHeartbeat on a shard: Kafka 4.0's ``GroupMetadataManagerTest`` consumer group
cases that apply to one broker, names kept (snake_case).

Each test builds the group from its records (``ConsumerGroupBuilder``), sends
heartbeats through the shard with a mock assignor (``MockPartitionAssignor``:
it answers the assignment the test prepared) and checks the response and the
records written, which the shard has also applied to the group.
"""

from __future__ import annotations

import uuid

import pytest

from broker.coordinator.group.consumer.assignor import PartitionAssignorError
from broker.coordinator.group.consumer.group import ConsumerGroupState, TopicMetadata
from broker.coordinator.group.consumer.groups import rebalance_timeout_key, session_timeout_key
from broker.coordinator.group.consumer.heartbeat import validate_heartbeat
from broker.coordinator.group.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
)
from broker.coordinator.group.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    member_subscription_record,
    member_tombstones,
    subscription_metadata_record,
    target_assignment_epoch_record,
    target_assignment_record,
)
from broker.coordinator.group.errors import GroupError
from broker.errors import ErrorCode
from broker.protocol.messages import ConsumerGroupHeartbeatRequest
from tests.unit.groups.consumer_support import (
    GROUP,
    a,
    build_group,
    consumer_context,
    member,
    metadata,
    owned,
    response,
    topics,
)

FOO_BAR = ("foo", "bar")


def join(ctx, member_id, **fields):
    """A full first heartbeat (epoch 0) as Kafka's tests send it."""
    fields.setdefault("rebalance_timeout_ms", 5000)
    fields.setdefault("subscribed_topic_names", list(FOO_BAR))
    fields.setdefault("server_assignor", "range")
    fields.setdefault("topic_partitions", [])
    return ctx.consumer_heartbeat(member_id=member_id, member_epoch=0, **fields)


def two_member_group(ctx, foo, bar, **extra):
    m1 = member("m1", member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
                subscribed_topic_names=FOO_BAR, assigned_partitions=a((foo, 0, 1, 2), (bar, 0, 1)),
                **extra.get("m1", {}))  # fmt: skip
    m2 = member("m2", member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
                subscribed_topic_names=FOO_BAR, assigned_partitions=a((foo, 3, 4, 5), (bar, 2)),
                **extra.get("m2", {}))  # fmt: skip
    build_group(
        ctx, GROUP, 10, [m1, m2],
        {"m1": a((foo, 0, 1, 2), (bar, 0, 1)), "m2": a((foo, 3, 4, 5), (bar, 2))}, 10,
    )  # fmt: skip
    return m1, m2


def error(resp):
    return ErrorCode(resp.error_code), resp.error_message


# ---- the request's checks ----------------------------------------------------------------------


def check(version=1, **fields):
    fields.setdefault("group_id", "foo")
    with pytest.raises(GroupError) as info:
        validate_heartbeat(ConsumerGroupHeartbeatRequest(**fields), version, ("range",))
    return info.value.code, str(info.value)


def test_consumer_heartbeat_request_validation():
    invalid = ErrorCode.INVALID_REQUEST
    assert check(0, group_id="") == (invalid, "GroupId can't be empty.")
    assert check(0, group_id="   ") == (invalid, "GroupId can't be empty.")
    assert check(0, member_epoch=0) == (
        invalid, "RebalanceTimeoutMs must be provided in first request."
    )  # fmt: skip
    assert check(0, member_epoch=0, rebalance_timeout_ms=5000) == (
        invalid, "TopicPartitions must be empty when (re-)joining."
    )  # fmt: skip
    assert check(0, member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=owned((uuid.uuid4(), 1))) == (
        invalid, "TopicPartitions must be empty when (re-)joining."
    )  # fmt: skip
    assert check(0, member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=[]) == (
        invalid,
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
    )
    assert check(0, member_epoch=1) == (invalid, "MemberId can't be empty.")
    # KIP-1082: from v1 the member id is the client's, on every request
    assert check(1, member_epoch=0) == (invalid, "MemberId can't be empty.")
    assert check(member_id="m", member_epoch=1, instance_id="") == (
        invalid, "InstanceId can't be empty."
    )  # fmt: skip
    assert check(member_id="m", member_epoch=1, rack_id="") == (invalid, "RackId can't be empty.")
    assert check(member_id="m", member_epoch=1, server_assignor="bar") == (
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor bar is not supported. Supported assignors: range.",
    )
    assert check(member_id="m", member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                 rebalance_timeout_ms=5000, subscribed_topic_names=list(FOO_BAR),
                 topic_partitions=[]) == (invalid, "InstanceId can't be null.")  # fmt: skip
    assert check(member_id="m", member_epoch=-3) == (invalid, "MemberEpoch is invalid.")
    # a join with a regex and no names is complete
    validate_heartbeat(
        ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0,
                                      rebalance_timeout_ms=5000, topic_partitions=[],
                                      subscribed_topic_regex="t.*"), 1, ("range",),
    )  # fmt: skip


def test_consumer_heartbeat_regex_validation():
    ctx, _assignor = consumer_context()
    resp, records = join(ctx, "m1", subscribed_topic_names=None, subscribed_topic_regex="[t")
    code, message = error(resp)
    assert code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert message.startswith("SubscribedTopicRegex `[t` is not a valid regular expression")
    assert records == [] and GROUP not in ctx.consumer.groups


def test_member_id_generation():
    ctx, assignor = consumer_context()
    assignor.prepare({})
    resp, _ = join(ctx, "")  # v0: the coordinator generates it
    assert resp.member_id
    # a bumped epoch, and no partitions as no topic exists
    assert resp == response(resp.member_id, 1, assignment=[])


def test_unknown_group_id():
    ctx, _ = consumer_context()
    resp, _ = ctx.consumer_heartbeat(member_id="m", member_epoch=100, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=list(FOO_BAR), topic_partitions=[])  # fmt: skip
    assert error(resp) == (ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {GROUP} not found.")


def test_unknown_member_id_joins_consumer_group():
    ctx, _assignor = consumer_context()
    join(ctx, "m1")
    resp, _ = ctx.consumer_heartbeat(member_id="m2", member_epoch=1, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=list(FOO_BAR), topic_partitions=[])  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_member_epoch_validation():
    ctx, _ = consumer_context()
    foo = uuid.uuid4()
    m = member("m", member_epoch=100, previous_member_epoch=99, rebalance_timeout_ms=5000,
               subscribed_topic_names=FOO_BAR, assigned_partitions=a((foo, 1, 2, 3)))  # fmt: skip
    build_group(ctx, GROUP, 100, [m], {"m": a((foo, 1, 2, 3))}, 100)
    fenced = ErrorCode.FENCED_MEMBER_EPOCH
    for epoch, parts in ((200, None), (50, None), (99, None)):
        resp, _ = ctx.consumer_heartbeat(member_id="m", member_epoch=epoch, rebalance_timeout_ms=5000,
                                         subscribed_topic_names=list(FOO_BAR), topic_partitions=parts)  # fmt: skip
        assert ErrorCode(resp.error_code) is fenced, epoch
    # the previous epoch with a subset of the partitions: the bump's answer was lost
    resp, _ = ctx.consumer_heartbeat(member_id="m", member_epoch=99, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=list(FOO_BAR),
                                     topic_partitions=owned((foo, 1, 2)))  # fmt: skip
    assert resp.member_epoch == 100 and resp.error_code == 0


# ---- joining, subscribing, leaving -------------------------------------------------------------


def test_member_joins_empty_consumer_group():
    ctx, assignor = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2))})
    assert GROUP not in ctx.consumer.groups
    resp, records = join(ctx, "m")
    assert resp == response("m", 1, assignment=[(foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2)])
    expected = member("m", member_epoch=1, previous_member_epoch=0, rebalance_timeout_ms=5000,
                      subscribed_topic_names=FOO_BAR,
                      assigned_partitions=a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2)))  # fmt: skip
    assert records == [
        member_subscription_record(GROUP, expected.replace(member_epoch=0)),
        subscription_metadata_record(GROUP, metadata(ctx, "foo", "bar")),
        group_epoch_record(GROUP, 1),
        target_assignment_record(GROUP, "m", a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2))),
        target_assignment_epoch_record(GROUP, 1),
        current_assignment_record(GROUP, expected),
    ]
    group = ctx.consumer.groups[GROUP]
    assert group.members["m"] == expected
    assert group.state is ConsumerGroupState.STABLE


def test_updating_subscription_triggers_new_target_assignment():
    ctx, assignor = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    m = member("m", member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"],
               assigned_partitions=a((foo, 0, 1, 2, 3, 4, 5)))  # fmt: skip
    build_group(ctx, GROUP, 10, [m], {"m": a((foo, 0, 1, 2, 3, 4, 5))}, 10)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2))})
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=10,
                                           subscribed_topic_names=list(FOO_BAR))  # fmt: skip
    assert resp == response("m", 11, assignment=[(foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2)])
    expected = m.replace(member_epoch=11, previous_member_epoch=10,
                         subscribed_topic_names=frozenset(FOO_BAR),
                         assigned_partitions=a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2)))  # fmt: skip
    assert records == [
        member_subscription_record(GROUP, expected),
        subscription_metadata_record(GROUP, metadata(ctx, "foo", "bar")),
        group_epoch_record(GROUP, 11),
        target_assignment_record(GROUP, "m", a((foo, 0, 1, 2, 3, 4, 5), (bar, 0, 1, 2))),
        target_assignment_epoch_record(GROUP, 11),
        current_assignment_record(GROUP, expected),
    ]


def test_new_joining_member_triggers_new_target_assignment():
    ctx, assignor = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    two_member_group(ctx, foo, bar)
    assignor.prepare({
        "m1": a((foo, 0, 1), (bar, 0)), "m2": a((foo, 2, 3), (bar, 1)),
        "m3": a((foo, 4, 5), (bar, 2)),
    })  # fmt: skip
    resp, records = join(ctx, "m3")
    assert resp == response("m3", 11, assignment=[])
    expected3 = member("m3", state=MemberState.UNRELEASED_PARTITIONS, member_epoch=11,
                       previous_member_epoch=0, rebalance_timeout_ms=5000,
                       subscribed_topic_names=FOO_BAR)  # fmt: skip
    assert records[:2] == [
        member_subscription_record(GROUP, expected3.replace(member_epoch=0, previous_member_epoch=-1,
                                                            state=MemberState.STABLE)),
        group_epoch_record(GROUP, 11),
    ]  # fmt: skip
    assert sorted(records[2:5]) == sorted([
        target_assignment_record(GROUP, "m1", a((foo, 0, 1), (bar, 0))),
        target_assignment_record(GROUP, "m2", a((foo, 2, 3), (bar, 1))),
        target_assignment_record(GROUP, "m3", a((foo, 4, 5), (bar, 2))),
    ])  # fmt: skip
    assert records[5:] == [
        target_assignment_epoch_record(GROUP, 11),
        current_assignment_record(GROUP, expected3),
    ]


def test_leaving_member_bumps_group_epoch():
    ctx, _assignor = consumer_context()
    foo, bar, _zar = topics(ctx, foo=6, bar=3, zar=1)
    # zar only for m2: the metadata must be recomputed when it leaves
    two_member_group(ctx, foo, bar, m2={})
    ctx.replay(member_subscription_record(
        GROUP, ctx.consumer.groups[GROUP].members["m2"].replace(
            subscribed_topic_names=frozenset({"foo", "bar", "zar"}))),
        subscription_metadata_record(GROUP, metadata(ctx, "foo", "bar", "zar")))  # fmt: skip
    resp, records = ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                           rebalance_timeout_ms=5000,
                                           subscribed_topic_names=list(FOO_BAR),
                                           topic_partitions=[])  # fmt: skip
    assert resp == response("m2", LEAVE_GROUP_MEMBER_EPOCH, interval=0)
    assert records == [
        *member_tombstones(GROUP, "m2"),
        subscription_metadata_record(GROUP, metadata(ctx, "foo", "bar")),
        group_epoch_record(GROUP, 11),
    ]
    assert set(ctx.consumer.groups[GROUP].members) == {"m1"}


# ---- static members ----------------------------------------------------------------------------


def static_group(ctx, foo, bar):
    return two_member_group(ctx, foo, bar, m1={"instance_id": "i1"}, m2={"instance_id": "i2"})


def test_static_member_gets_back_assignment_upon_rejoin():
    ctx, _assignor = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    _, m2 = static_group(ctx, foo, bar)
    resp, records = ctx.consumer_heartbeat(member_id="m2", instance_id="i2", member_epoch=-2,
                                           subscribed_topic_names=list(FOO_BAR),
                                           topic_partitions=[])  # fmt: skip
    assert resp == response("m2", -2, interval=0)
    assert records == [current_assignment_record(GROUP, m2.replace(member_epoch=-2))]
    # it comes back under a new member id with the same instance id
    resp, records = join(ctx, "m2-again", instance_id="i2")
    assert resp == response("m2-again", 10, assignment=[(foo, 3, 4, 5), (bar, 2)])
    copied = m2.replace(member_id="m2-again", member_epoch=0, previous_member_epoch=0)
    assert records == [
        *member_tombstones(GROUP, "m2"),
        member_subscription_record(GROUP, copied),
        target_assignment_record(GROUP, "m2-again", a((foo, 3, 4, 5), (bar, 2))),
        current_assignment_record(GROUP, copied),
        current_assignment_record(GROUP, copied.replace(member_epoch=10)),
    ]
    group = ctx.consumer.groups[GROUP]
    assert set(group.members) == {"m1", "m2-again"} and group.static_members["i2"] == "m2-again"
    assert not ctx.timer.is_scheduled(session_timeout_key(GROUP, "m2"))
    assert not ctx.timer.is_scheduled(rebalance_timeout_key(GROUP, "m2"))


def test_no_group_epoch_bump_when_static_member_temporarily_leaves():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    _, m2 = static_group(ctx, foo, bar)
    resp, records = ctx.consumer_heartbeat(member_id="m2", instance_id="i2",
                                           member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                           rebalance_timeout_ms=5000,
                                           subscribed_topic_names=list(FOO_BAR),
                                           topic_partitions=[])  # fmt: skip
    assert resp == response("m2", LEAVE_GROUP_STATIC_MEMBER_EPOCH, interval=0)
    assert records == [current_assignment_record(GROUP, m2.replace(member_epoch=-2))]
    assert ctx.consumer.groups[GROUP].group_epoch == 10


def test_leaving_static_member_bumps_group_epoch():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, records = ctx.consumer_heartbeat(member_id="m2", instance_id="i2",
                                           member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                           rebalance_timeout_ms=5000,
                                           subscribed_topic_names=list(FOO_BAR),
                                           topic_partitions=[])  # fmt: skip
    assert resp == response("m2", LEAVE_GROUP_MEMBER_EPOCH, interval=0)
    assert records == [*member_tombstones(GROUP, "m2"), group_epoch_record(GROUP, 11)]


def test_should_thrown_unreleased_instance_id_exception_when_new_member_joins_with_in_use_instance_id():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, records = join(ctx, "m3", instance_id="i1")
    assert error(resp) == (
        ErrorCode.UNRELEASED_INSTANCE_ID,
        "Static member m3 with instance id i1 cannot join the group because the instance id is "
        "owned by m1 member.",
    )
    assert records == []


def test_should_thrown_unknown_member_id_exception_when_unknown_static_member_joins():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, _ = ctx.consumer_heartbeat(member_id="m3", instance_id="unknown", member_epoch=11,
                                     rebalance_timeout_ms=5000,
                                     subscribed_topic_names=list(FOO_BAR),
                                     topic_partitions=[])  # fmt: skip
    assert error(resp) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id unknown is unknown.")


def test_should_throw_fenced_instance_id_exception_when_static_member_with_different_member_id_joins():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, _ = ctx.consumer_heartbeat(member_id="m3", instance_id="i1", member_epoch=11,
                                     rebalance_timeout_ms=5000,
                                     subscribed_topic_names=list(FOO_BAR),
                                     topic_partitions=[])  # fmt: skip
    assert error(resp) == (
        ErrorCode.FENCED_INSTANCE_ID, "Static member m3 with instance id i1 was fenced by member m1."
    )  # fmt: skip


def test_should_throw_unknown_member_id_exception_when_unknown_static_member_leaves():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, _ = ctx.consumer_heartbeat(member_id="m2", instance_id="unknown",
                                     member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)  # fmt: skip
    assert error(resp) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id unknown is unknown.")


def test_should_throw_fenced_instance_id_exception_when_static_member_with_different_member_id_leaves():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    static_group(ctx, foo, bar)
    resp, _ = ctx.consumer_heartbeat(member_id="m9", instance_id="i1",
                                     member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)  # fmt: skip
    assert ErrorCode(resp.error_code) is ErrorCode.FENCED_INSTANCE_ID


# ---- responses and reconciliation --------------------------------------------------------------


def test_consumer_group_heartbeat_full_response():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=2)
    assignor.prepare({"m": a((foo, 0, 1))})
    resp, _ = join(ctx, "m", subscribed_topic_names=["foo"])
    assert resp == response("m", 1, assignment=[(foo, 0, 1)])
    # a partial heartbeat: nothing changed, no assignment in the answer
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=1)
    assert resp == response("m", 1) and records == []
    # a full one (rebalance timeout, names and owned partitions set) gets it again
    resp, _ = ctx.consumer_heartbeat(member_id="m", member_epoch=1, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=["foo"],
                                     topic_partitions=owned((foo, 0, 1)))  # fmt: skip
    assert resp == response("m", 1, assignment=[(foo, 0, 1)])


def test_reconciliation_process():
    ctx, assignor = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    two_member_group(ctx, foo, bar)
    assignor.prepare({
        "m1": a((foo, 0, 1), (bar, 0)), "m2": a((foo, 2, 3), (bar, 2)),
        "m3": a((foo, 4, 5), (bar, 1)),
    })  # fmt: skip
    group = ctx.consumer.groups[GROUP]

    def state(member_id):
        return group.members[member_id].state

    assert group.state is ConsumerGroupState.STABLE
    # m3 joins: a new target; it owns nothing yet (all is owned) at epoch 11
    resp, records = join(ctx, "m3")
    assert resp == response("m3", 11, assignment=[])
    assert records[-1] == current_assignment_record(GROUP, member(
        "m3", state=MemberState.UNRELEASED_PARTITIONS, member_epoch=11, previous_member_epoch=0,
        rebalance_timeout_ms=5000, subscribed_topic_names=FOO_BAR))  # fmt: skip
    assert state("m3") is MemberState.UNRELEASED_PARTITIONS
    assert group.state is ConsumerGroupState.RECONCILING
    # m1 stays at 10 and must revoke foo-2 and bar-1
    resp, records = ctx.consumer_heartbeat(member_id="m1", member_epoch=10)
    assert resp == response("m1", 10, assignment=[(foo, 0, 1), (bar, 0)])
    assert records == [current_assignment_record(GROUP, member(
        "m1", state=MemberState.UNREVOKED_PARTITIONS, member_epoch=10, previous_member_epoch=10,
        assigned_partitions=a((foo, 0, 1), (bar, 0)),
        partitions_pending_revocation=a((foo, 2), (bar, 1))))]  # fmt: skip
    assert ctx.timer.is_scheduled(rebalance_timeout_key(GROUP, "m1"))
    # m2 must revoke foo-4, foo-5
    resp, records = ctx.consumer_heartbeat(member_id="m2", member_epoch=10)
    assert resp == response("m2", 10, assignment=[(foo, 3), (bar, 2)])
    assert records == [current_assignment_record(GROUP, member(
        "m2", state=MemberState.UNREVOKED_PARTITIONS, member_epoch=10, previous_member_epoch=10,
        assigned_partitions=a((foo, 3), (bar, 2)),
        partitions_pending_revocation=a((foo, 4, 5))))]  # fmt: skip
    # m3 still waits
    resp, records = ctx.consumer_heartbeat(member_id="m3", member_epoch=11)
    assert resp == response("m3", 11)
    assert records == [current_assignment_record(GROUP, member(
        "m3", state=MemberState.UNRELEASED_PARTITIONS, member_epoch=11,
        previous_member_epoch=11))]  # fmt: skip
    # m1 acknowledges: it reports what it still owns, moves to 11 and is stable
    resp, records = ctx.consumer_heartbeat(member_id="m1", member_epoch=10,
                                           topic_partitions=owned((foo, 0, 1), (bar, 0)))  # fmt: skip
    assert resp == response("m1", 11)
    assert records == [current_assignment_record(GROUP, member(
        "m1", member_epoch=11, previous_member_epoch=10,
        assigned_partitions=a((foo, 0, 1), (bar, 0))))]  # fmt: skip
    assert not ctx.timer.is_scheduled(rebalance_timeout_key(GROUP, "m1"))
    assert state("m1") is MemberState.STABLE and group.state is ConsumerGroupState.RECONCILING
    # m2 heartbeats without acknowledging: nothing
    resp, records = ctx.consumer_heartbeat(member_id="m2", member_epoch=10)
    assert resp == response("m2", 10) and records == []
    # m3 gets bar-1, released by m1, and still waits for foo-4, foo-5
    resp, records = ctx.consumer_heartbeat(member_id="m3", member_epoch=11)
    assert resp == response("m3", 11, assignment=[(bar, 1)])
    assert records == [current_assignment_record(GROUP, member(
        "m3", state=MemberState.UNRELEASED_PARTITIONS, member_epoch=11, previous_member_epoch=11,
        assigned_partitions=a((bar, 1))))]  # fmt: skip
    # again: m2 has not revoked, nothing changes
    resp, records = ctx.consumer_heartbeat(member_id="m3", member_epoch=11)
    assert resp == response("m3", 11) and records == []
    assert state("m3") is MemberState.UNRELEASED_PARTITIONS
    # m2 acknowledges: epoch 11, and foo-2 (released by m1) with it
    resp, records = ctx.consumer_heartbeat(member_id="m2", member_epoch=10,
                                           topic_partitions=owned((foo, 3), (bar, 2)))  # fmt: skip
    assert resp == response("m2", 11, assignment=[(foo, 2, 3), (bar, 2)])
    assert records == [current_assignment_record(GROUP, member(
        "m2", member_epoch=11, previous_member_epoch=10,
        assigned_partitions=a((foo, 2, 3), (bar, 2))))]  # fmt: skip
    assert state("m2") is MemberState.STABLE and group.state is ConsumerGroupState.RECONCILING
    # m3 gets the rest and the group is stable
    resp, records = ctx.consumer_heartbeat(member_id="m3", member_epoch=11,
                                           topic_partitions=owned((bar, 1)))  # fmt: skip
    assert resp == response("m3", 11, assignment=[(foo, 4, 5), (bar, 1)])
    assert records == [current_assignment_record(GROUP, member(
        "m3", member_epoch=11, previous_member_epoch=11,
        assigned_partitions=a((foo, 4, 5), (bar, 1))))]  # fmt: skip
    assert state("m3") is MemberState.STABLE
    assert group.state is ConsumerGroupState.STABLE
    epochs = [e for ps in group.current_partition_epoch.values() for e in ps.values()]
    assert len(epochs) == 9 and set(epochs) == {11}


def test_new_member_is_rejected_with_maximum_members_is_reached():
    ctx, _assignor = consumer_context(consumer_group_max_size=2)
    foo, bar = topics(ctx, foo=6, bar=3)
    two_member_group(ctx, foo, bar)
    resp, records = join(ctx, "m3")
    assert error(resp) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 2 members.",
    )
    assert records == []


def test_consumer_group_states():
    ctx, _assignor = consumer_context()
    (foo,) = topics(ctx, foo=2)
    build_group(ctx, GROUP, 10, [], {}, 10)
    group = ctx.consumer.groups[GROUP]
    assert group.state is ConsumerGroupState.EMPTY
    m = member("m", member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"])
    ctx.replay(member_subscription_record(GROUP, m))
    ctx.replay(group_epoch_record(GROUP, 11))
    assert group.state is ConsumerGroupState.ASSIGNING
    ctx.replay(target_assignment_record(GROUP, "m", a((foo, 0, 1))),
               target_assignment_epoch_record(GROUP, 11))  # fmt: skip
    assert group.state is ConsumerGroupState.RECONCILING
    ctx.replay(current_assignment_record(GROUP, m.replace(
        state=MemberState.UNREVOKED_PARTITIONS, member_epoch=11)))  # fmt: skip
    assert group.state is ConsumerGroupState.RECONCILING
    ctx.replay(current_assignment_record(GROUP, m.replace(
        member_epoch=11, assigned_partitions=a((foo, 0, 1)))))  # fmt: skip
    assert group.state is ConsumerGroupState.STABLE


def test_partition_assignor_exception_on_regular_heartbeat():
    ctx, assignor = consumer_context()
    topics(ctx, foo=6, bar=3)
    assignor.error = PartitionAssignorError("Assignment failed.")
    resp, records = join(ctx, "m")
    assert error(resp) == (
        ErrorCode.UNKNOWN_SERVER_ERROR,
        "Failed to compute a new target assignment for epoch 1: Assignment failed.",
    )
    assert records == [] and GROUP not in ctx.consumer.groups


def test_subscription_metadata_refreshed_after_group_is_loaded():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    m = member("m", member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
               subscribed_topic_names=["foo"], assigned_partitions=a((foo, 0, 1, 2)))  # fmt: skip
    # the group was written when foo had 3 partitions; it has 6 now
    build_group(ctx, GROUP, 10, [m], {"m": a((foo, 0, 1, 2))}, 10,
                metadata={"foo": TopicMetadata(foo, "foo", 3)})  # fmt: skip
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=10)
    assert resp == response("m", 11, assignment=[(foo, 0, 1, 2, 3, 4, 5)])
    assert records == [
        subscription_metadata_record(GROUP, metadata(ctx, "foo")),
        group_epoch_record(GROUP, 11),
        target_assignment_record(GROUP, "m", a((foo, 0, 1, 2, 3, 4, 5))),
        target_assignment_epoch_record(GROUP, 11),
        current_assignment_record(GROUP, m.replace(
            member_epoch=11, assigned_partitions=a((foo, 0, 1, 2, 3, 4, 5)))),
    ]  # fmt: skip


def test_subscription_metadata_refreshed_again_after_write_failure():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    m = member("m", member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
               subscribed_topic_names=["foo"], assigned_partitions=a((foo, 0, 1, 2)))  # fmt: skip
    build_group(ctx, GROUP, 10, [m], {"m": a((foo, 0, 1, 2))}, 10,
                metadata={"foo": TopicMetadata(foo, "foo", 3)})  # fmt: skip
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    resp, records = ctx.consumer_heartbeat(member_id="m", member_epoch=10)
    assert ErrorCode(resp.error_code) is ErrorCode.NOT_COORDINATOR
    # the group is back as it was: the next heartbeat refreshes the metadata again
    group = ctx.consumer.groups[GROUP]
    assert group.group_epoch == 10 and group.members["m"] == m
    assert group.subscription_metadata == {"foo": TopicMetadata(foo, "foo", 3)}
    ctx.fail_with = None
    resp, again = ctx.consumer_heartbeat(member_id="m", member_epoch=10)
    assert resp.member_epoch == 11 and again == records


# ---- timers ------------------------------------------------------------------------------------


def test_session_timeout_lifecycle():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    key = session_timeout_key(GROUP, "m")
    join(ctx, "m", subscribed_topic_names=["foo"], rebalance_timeout_ms=90_000)
    assert ctx.timer.deadline(key) == 45_000
    ctx.timer.advance(44_000)
    ctx.consumer_heartbeat(member_id="m", member_epoch=1)
    assert ctx.timer.deadline(key) == 44_000 + 45_000
    ctx.consumer_heartbeat(member_id="m", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert not ctx.timer.is_scheduled(key)


def test_session_timeout_expiration():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    resp, _ = join(ctx, "m", subscribed_topic_names=["foo"], rebalance_timeout_ms=90_000)
    assert resp.member_epoch == 1
    before = len(ctx.written)
    ctx.timer.advance(45_000 + 1)
    assert ctx.written[before:] == [[
        *member_tombstones(GROUP, "m"),
        subscription_metadata_record(GROUP, {}),
        group_epoch_record(GROUP, 2),
    ]]  # fmt: skip
    assert not ctx.timer.is_scheduled(session_timeout_key(GROUP, "m"))
    assert not ctx.timer.is_scheduled(rebalance_timeout_key(GROUP, "m"))
    assert ctx.consumer.groups[GROUP].state is ConsumerGroupState.EMPTY


def test_session_timeout_expiration_static_member():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    join(ctx, "m", instance_id="i", subscribed_topic_names=["foo"])
    ctx.consumer_heartbeat(member_id="m", instance_id="i", member_epoch=-2)
    # its instance id stays reserved until the session ends, then the member goes
    before = len(ctx.written)
    ctx.timer.advance(45_000 + 1)
    assert ctx.written[before:][0][:3] == member_tombstones(GROUP, "m")
    assert "i" not in ctx.consumer.groups[GROUP].static_members


def test_rebalance_timeout_lifecycle():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=3)
    assignor.prepare({"m1": a((foo, 0, 1, 2))})
    join(ctx, "m1", subscribed_topic_names=["foo"], rebalance_timeout_ms=180_000)
    # m2 joins: m1 must give up partition 2
    assignor.prepare({"m1": a((foo, 0, 1)), "m2": a((foo, 2))})
    join(ctx, "m2", subscribed_topic_names=["foo"], rebalance_timeout_ms=90_000)
    key = rebalance_timeout_key(GROUP, "m1")
    resp, _ = ctx.consumer_heartbeat(member_id="m1", member_epoch=1)
    assert resp == response("m1", 1, assignment=[(foo, 0, 1)])
    assert ctx.timer.deadline(key) == 180_000
    # it revokes: the timer goes
    resp, _ = ctx.consumer_heartbeat(member_id="m1", member_epoch=1,
                                     topic_partitions=owned((foo, 0, 1)))  # fmt: skip
    assert resp.member_epoch == 2
    assert not ctx.timer.is_scheduled(key)


def test_rebalance_timeout_expiration():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=3)
    assignor.prepare({"m1": a((foo, 0, 1, 2))})
    join(ctx, "m1", subscribed_topic_names=["foo"], rebalance_timeout_ms=12_000)
    assignor.prepare({"m1": a((foo, 0, 1)), "m2": a((foo, 2))})
    join(ctx, "m2", subscribed_topic_names=["foo"], rebalance_timeout_ms=90_000)
    ctx.consumer_heartbeat(member_id="m1", member_epoch=1)
    # m1 keeps heartbeating but never revokes partition 2: fenced after 12 s
    ctx.timer.advance(6000)
    ctx.consumer_heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned((foo, 0, 1, 2)))
    before = len(ctx.written)
    ctx.timer.advance(6001)
    assert ctx.written[before:] == [[*member_tombstones(GROUP, "m1"), group_epoch_record(GROUP, 3)]]
    resp, _ = ctx.consumer_heartbeat(member_id="m1", member_epoch=1)
    assert ErrorCode(resp.error_code) is ErrorCode.UNKNOWN_MEMBER_ID


def test_on_loaded():
    ctx, _ = consumer_context()
    foo, bar = topics(ctx, foo=6, bar=3)
    m1 = member("m1", member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
                subscribed_topic_names=FOO_BAR, assigned_partitions=a((foo, 0, 1, 2)),
                state=MemberState.UNREVOKED_PARTITIONS,
                partitions_pending_revocation=a((bar, 0)))  # fmt: skip
    m2 = member("m2", member_epoch=10, previous_member_epoch=9, subscribed_topic_names=FOO_BAR)
    build_group(ctx, GROUP, 11, [m1, m2], {"m1": a((foo, 0, 1, 2))}, 11)
    ctx.consumer.on_loaded()
    for member_id in ("m1", "m2"):
        assert ctx.timer.deadline(session_timeout_key(GROUP, member_id)) == 45_000
    assert ctx.timer.deadline(rebalance_timeout_key(GROUP, "m1")) == 5000
    assert not ctx.timer.is_scheduled(rebalance_timeout_key(GROUP, "m2"))


# ---- the rebalance sensor ----------------------------------------------------------------------


def test_consumer_group_rebalance_sensor():
    ctx, assignor = consumer_context()
    (foo,) = topics(ctx, foo=6)
    assignor.prepare({"m": a((foo, 0, 1, 2, 3, 4, 5))})
    join(ctx, "m", subscribed_topic_names=["foo"])
    assert ctx.consumer.meters.rebalances == 1
    ctx.consumer_heartbeat(member_id="m", member_epoch=1)
    assert ctx.consumer.meters.rebalances == 1


def test_a_flood_of_joins_with_new_member_ids_is_bounded(monkeypatch):
    from broker.coordinator.group.consumer import heartbeat

    monkeypatch.setattr(heartbeat, "MAX_UNCONFIRMED_MEMBERS", 3)
    ctx, _ = consumer_context()
    topics(ctx, foo=6)
    for i in range(3):
        resp, _ = join(ctx, f"m{i}", subscribed_topic_names=["foo"])
        assert resp.error_code == 0
    resp, records = join(ctx, "m3", subscribed_topic_names=["foo"])
    assert ErrorCode(resp.error_code) is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert "joined and have not heartbeated since" in resp.error_message and records == []
    # a member that heartbeats again is confirmed: room for one more
    resp, _ = ctx.consumer_heartbeat(member_id="m0", member_epoch=1)
    assert resp.error_code == 0
    resp, _ = join(ctx, "m3", subscribed_topic_names=["foo"])
    assert resp.error_code == 0
    # a member that leaves (or is fenced) frees its place too
    ctx.consumer_heartbeat(member_id="m1", member_epoch=-1)
    resp, _ = join(ctx, "m4", subscribed_topic_names=["foo"])
    assert resp.error_code == 0
    # a member rejoining with its id (epoch 0 again) is not new
    resp, _ = join(ctx, "m2", subscribed_topic_names=["foo"])
    assert resp.error_code == 0


def test_a_regex_subscription_follows_the_topics_that_match_it():
    from broker.coordinator.group.consumer.uniform import UniformAssignor

    ctx, _ = consumer_context()
    ctx.use_assignor(UniformAssignor())
    foo_id, _bar_id = topics(ctx, foo=2, bar=2)
    resp, _ = join(ctx, "m1", subscribed_topic_names=None, subscribed_topic_regex="f.*",
                   server_assignor=None)  # fmt: skip
    assert resp.error_code == 0
    assert {t.topic_id: sorted(t.partitions) for t in resp.assignment.topic_partitions} == {
        foo_id: [0, 1]
    }
    group = ctx.consumer.groups[GROUP]
    assert group.regex_topics == {"f.*": frozenset({"foo"})}
    assert group.subscribed_topic_names == {"foo": 1}
    # nothing changed: a plain heartbeat, no records
    resp, records = ctx.consumer_heartbeat(member_id="m1", member_epoch=1)
    assert (resp.error_code, resp.member_epoch, records) == (0, 1, [])
    # a new topic matching the regex (a whole name: "fo" would not match "foo")
    fizz_id = topics(ctx, fizz=1)[0]
    resp, _ = ctx.consumer_heartbeat(member_id="m1", member_epoch=1)
    assert resp.member_epoch == 2
    assert {t.topic_id: sorted(t.partitions) for t in resp.assignment.topic_partitions} == {
        foo_id: [0, 1],
        fizz_id: [0],
    }
    assert ctx.consumer.resolve_regex("fo") == frozenset()


def test_a_member_without_a_regex_is_written_with_a_null_one():
    from broker.group_records.messages import decode_record

    ctx, assignor = consumer_context()
    topics(ctx, foo=1)
    assignor.prepare({})
    _, records = join(ctx, "m1", subscribed_topic_names=["foo"])
    values = [
        decoded.value
        for decoded in (decode_record(key, value) for key, value in records)
        if decoded.record_type == 5
    ]
    assert len(values) == 1 and values[0]["SubscribedTopicRegex"] is None
