"""Cases of Kafka 3.9's ``GroupMetadataManagerTest`` for classic groups, names kept.

Each test drives one shard with a manual clock and timer (``context.py``):
JoinGroup / SyncGroup / Heartbeat / LeaveGroup, the initial rebalance delay,
session and rebalance timeouts, KIP-394 member ids, static members
(KIP-345), group.max.size, and loading (replay of GroupMetadata records).
"""

from __future__ import annotations

from broker.coordinator.group.classic_group import GroupState
from broker.coordinator.group.records import group_metadata_record
from broker.errors import ErrorCode
from broker.group_records.messages import decode_record
from tests.unit.groups.context import GROUP, Context


def test_join_group_unknown_member_new_group():
    ctx = Context()
    reply = ctx.join("member-id")
    assert reply.value.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert GROUP not in ctx.groups


def test_member_id_generation():
    ctx = Context()
    reply = ctx.join(client_id="client")
    assert reply.value.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert reply.value.member_id.startswith("client-")
    assert ctx.group().is_pending_member(reply.value.member_id)
    # the new group is committed with an empty record
    record = decode_record(*ctx.written[0][0])
    assert record.value is not None and record.value["members"] == []


def test_join_group_with_empty_protocol_type():
    ctx = Context()
    assert ctx.join(protocol_type="").value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_group_protocol():
    ctx = Context()
    assert ctx.join(protocol_names=()).value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_inconsistent_group_protocol():
    ctx = Context()
    ctx.stable_group(1)
    reply = ctx.join(protocol_names=("roundrobin",))
    assert reply.value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_classic_group_join_inconsistent_protocol_type():
    ctx = Context()
    ctx.stable_group(1)
    assert ctx.join(protocol_type="connect").value.error_code == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )


def test_join_group_should_receive_error_if_group_over_max_size():
    ctx = Context(classic_group_max_size=2)
    # v3: members join without a known member id; the third is over the size
    replies = [ctx.join(version=3) for _ in range(3)]
    assert replies[2].value.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    ctx.timer.advance(0)
    assert [r.value.error_code for r in replies[:2]] == [ErrorCode.NONE, ErrorCode.NONE]
    assert ctx.group().num_members == 2


def test_dynamic_members_join_group_with_max_size_and_required_known_member():
    ctx = Context(classic_group_max_size=2)
    first = [ctx.join() for _ in range(3)]
    assert all(r.value.error_code == ErrorCode.MEMBER_ID_REQUIRED for r in first)
    second = [ctx.join(r.value.member_id) for r in first]
    assert second[2].value.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    ctx.timer.advance(0)
    assert [r.value.error_code for r in second[:2]] == [ErrorCode.NONE, ErrorCode.NONE]
    assert ctx.group().num_members == 2


def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group():
    ctx = Context(classic_group_initial_rebalance_delay_ms=50)
    reply = ctx.join_new(rebalance_ms=5000)
    ctx.timer.advance(49)
    assert not reply.done()
    ctx.timer.advance(1)
    assert reply.value.error_code == ErrorCode.NONE
    assert reply.value.generation_id == 1


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance():
    ctx = Context(classic_group_initial_rebalance_delay_ms=50)
    first = ctx.join_new(rebalance_ms=200)
    ctx.timer.advance(40)
    second = ctx.join_new(rebalance_ms=200)
    ctx.timer.advance(10)  # the first delay ends: extended because a member joined
    assert not first.done() and not second.done()
    ctx.timer.advance(50)
    assert first.value.error_code == second.value.error_code == ErrorCode.NONE
    assert first.value.generation_id == 1 and ctx.group().num_members == 2


def test_delay_rebalance_upto_rebalance_timeout():
    ctx = Context(classic_group_initial_rebalance_delay_ms=50)
    first = ctx.join_new(rebalance_ms=100)
    for _ in range(3):
        ctx.timer.advance(49)
        ctx.join_new(rebalance_ms=100)
    # members kept arriving, but the delay never passes the rebalance timeout
    ctx.timer.advance(100)
    assert first.value.error_code == ErrorCode.NONE
    assert ctx.clock.now <= 250


def test_heartbeat_expiration_should_remove_pending_member():
    ctx = Context()
    member_id = ctx.join(session_ms=1000).value.member_id
    assert ctx.group().is_pending_member(member_id)
    ctx.timer.advance(1000)
    assert not ctx.group().is_pending_member(member_id)


def test_heartbeat_expiration_should_remove_member():
    ctx = Context()
    (member_id,) = ctx.stable_group(1, session_ms=1000)
    ctx.timer.advance(999)
    assert ctx.group().has_member(member_id)
    ctx.timer.advance(1)
    assert not ctx.group().has_member(member_id)
    assert ctx.group().state is GroupState.EMPTY


def test_classic_group_member_heartbeat_maintains_session():
    ctx = Context()
    (member_id,) = ctx.stable_group(1, session_ms=1000)
    for _ in range(5):
        ctx.timer.advance(600)
        assert ctx.heartbeat(member_id, 1) == ErrorCode.NONE
    assert ctx.group().has_member(member_id)


def test_join_group_as_existing_leader_triggers_rebalance_in_stable_state():
    ctx = Context()
    leader, follower = ctx.stable_group(2)
    reply = ctx.join(leader)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert not reply.done()
    assert ctx.heartbeat(follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state():
    ctx = Context()
    _leader, follower = ctx.stable_group(2)
    reply = ctx.join(follower)
    assert ctx.group().state is GroupState.STABLE
    assert reply.value.generation_id == 1 and reply.value.members == []


def test_join_group_existing_member_updated_metadata_triggers_rebalance():
    ctx = Context()
    _leader, follower = ctx.stable_group(2)
    ctx.join(follower, topics=("foo", "bar"))
    assert ctx.group().state is GroupState.PREPARING_REBALANCE


def test_complete_join_remove_not_yet_rejoined_dynamic_members():
    ctx = Context()
    leader, follower = ctx.stable_group(2, rebalance_ms=1000)
    reply = ctx.join(leader, rebalance_ms=1000)
    ctx.timer.advance(1000)
    assert reply.value.error_code == ErrorCode.NONE
    assert reply.value.generation_id == 2
    assert not ctx.group().has_member(follower)


def test_generation_id_increments_on_rebalance():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    reply = ctx.join(member_id)
    assert reply.value.generation_id == 2


def test_sync_group_from_unknown_group():
    ctx = Context()
    assert ctx.sync("member", 1).value.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_group_from_unknown_member():
    ctx = Context()
    ctx.stable_group(1)
    assert ctx.sync("unknown", 1).value.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_group_from_illegal_generation():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    assert ctx.sync(member_id, 2).value.error_code == ErrorCode.ILLEGAL_GENERATION


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    reply = ctx.sync(member_id, 1, protocol_type="connect")
    assert reply.value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    reply = ctx.sync(member_id, 1, protocol_name="roundrobin")
    assert reply.value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_sync_group_follower_after_leader():
    ctx = Context()
    first = ctx.join_new()
    second = ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    follower = next(m for m in ctx.group().members if m != leader)
    assert first.value.leader == leader and second.done()
    assignments = {leader: b"L", follower: b"F"}
    assert ctx.sync(leader, 1, assignments).value.assignment == b"L"
    assert ctx.sync(follower, 1).value.assignment == b"F"


def test_sync_group_leader_after_follower():
    ctx = Context()
    ctx.join_new()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    follower = next(m for m in ctx.group().members if m != leader)
    parked = ctx.sync(follower, 1)
    assert not parked.done()
    ctx.sync(leader, 1, {leader: b"L", follower: b"F"})
    assert parked.value.assignment == b"F"
    assert ctx.group().state is GroupState.STABLE


def test_sync_group_as_leader_append_failure_transforms_error():
    ctx = Context()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    ctx.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    reply = ctx.sync(leader, 1, {leader: b"L"})
    assert reply.value.error_code == ErrorCode.NOT_COORDINATOR
    assert ctx.group().state is GroupState.PREPARING_REBALANCE


def test_sync_group_answers_once_the_assignment_is_written():
    ctx = Context()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    ctx.hold = True
    reply = ctx.sync(leader, 1, {leader: b"L"})
    assert not reply.done() and ctx.group().state is GroupState.COMPLETING_REBALANCE
    ctx.release()
    assert reply.value.assignment == b"L" and ctx.group().state is GroupState.STABLE


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers():
    ctx = Context()
    ctx.join_new(rebalance_ms=1000)
    ctx.join_new(rebalance_ms=1000)
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    follower = next(m for m in ctx.group().members if m != leader)
    ctx.sync(leader, 1, {leader: b"L", follower: b"F"})
    ctx.timer.advance(1000)
    assert not ctx.group().has_member(follower)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE


def test_heartbeat_unknown_group():
    ctx = Context()
    assert ctx.heartbeat("member", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_unknown_member_existing_group():
    ctx = Context()
    ctx.stable_group(1)
    assert ctx.heartbeat("unknown", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeat_illegal_generation():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    assert ctx.heartbeat(member_id, 2) == ErrorCode.ILLEGAL_GENERATION


def test_heartbeat_during_completing_rebalance():
    ctx = Context()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.heartbeat(leader, 1) == ErrorCode.NONE


def test_valid_heartbeat():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    assert ctx.heartbeat(member_id, 1) == ErrorCode.NONE


def test_static_member_join_as_first_member():
    ctx = Context()
    reply = ctx.join(instance_id="instance-1")
    ctx.timer.advance(0)
    assert reply.value.error_code == ErrorCode.NONE
    assert reply.value.member_id.startswith("instance-1-")


def test_replace_static_member_in_stable_state_no_error():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    old_id = reply.value.member_id
    ctx.sync(old_id, 1, {old_id: b"A"})
    rejoin = ctx.join(instance_id="a")
    # same generation, no rebalance, the old assignment kept for the new member id
    assert rejoin.value.error_code == ErrorCode.NONE
    assert rejoin.value.generation_id == 1
    assert rejoin.value.member_id != old_id
    assert ctx.group().state is GroupState.STABLE
    assert ctx.sync(rejoin.value.member_id, 1).value.assignment == b"A"
    assert ctx.heartbeat(old_id, 1, instance_id="a") == ErrorCode.FENCED_INSTANCE_ID


def test_replace_static_member_in_stable_state_errors():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    old_id = reply.value.member_id
    ctx.sync(old_id, 1, {old_id: b"A"})
    ctx.fail_with = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    rejoin = ctx.join(instance_id="a")
    assert rejoin.value.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    # reverted to the old member id
    assert ctx.group().static_member_id("a") == old_id
    # a record too large: MESSAGE_TOO_LARGE (Kafka: UNKNOWN_SERVER_ERROR; docs/deviations.md)
    ctx.fail_with = ErrorCode.MESSAGE_TOO_LARGE
    rejoin = ctx.join(instance_id="a")
    assert rejoin.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    # reverted to the old member id
    assert ctx.group().static_member_id("a") == old_id


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance():
    ctx = Context()
    reply = ctx.join(instance_id="a", protocol_names=("range", "roundrobin"))
    ctx.timer.advance(0)
    ctx.sync(reply.value.member_id, 1, {})
    rejoin = ctx.join(instance_id="a", protocol_names=("roundrobin",))
    # the only member rejoined at once: the rebalance completes into generation 2
    assert rejoin.value.generation_id == 2
    assert rejoin.value.protocol_name == "roundrobin"
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_static_member_rejoin_as_follower_with_mismatched_instance_id():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    member_id = reply.value.member_id
    ctx.sync(member_id, 1, {})
    assert ctx.join(member_id, instance_id="b").value.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_should_throw_fenced_instance_id_exception_when_static_member_with_different_member_id_leaves():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    response = ctx.leave(("other-member", "a"))
    assert response.members[0].error_code == ErrorCode.FENCED_INSTANCE_ID
    assert ctx.group().has_member(reply.value.member_id)


def test_leave_group_unknown_group():
    ctx = Context()
    response = ctx.leave(("member", None))
    assert [m.error_code for m in response.members] == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_leave_group_unknown_member_id_existing_group():
    ctx = Context()
    ctx.stable_group(1)
    response = ctx.leave(("unknown", None))
    assert [m.error_code for m in response.members] == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_valid_leave_group():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    response = ctx.leave((member_id, None))
    assert [m.error_code for m in response.members] == [ErrorCode.NONE]
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.group().generation_id == 2


def test_leave_group_static_member_with_unknown_member_id():
    ctx = Context()
    reply = ctx.join(instance_id="a")
    ctx.timer.advance(0)
    response = ctx.leave(("", "a"))
    assert [m.error_code for m in response.members] == [ErrorCode.NONE]
    assert not ctx.group().has_member(reply.value.member_id)


def test_pending_members_leave_group():
    ctx = Context()
    pending = ctx.join().value.member_id
    response = ctx.leave((pending, None))
    assert [m.error_code for m in response.members] == [ErrorCode.NONE]
    assert not ctx.group().is_pending_member(pending)


def test_join_group_completion_when_pending_member_times_out():
    ctx = Context()
    leader, _follower = ctx.stable_group(2, session_ms=1000)
    pending = ctx.join(session_ms=1000).value.member_id
    reply = ctx.join(leader, session_ms=1000)
    assert not reply.done()
    ctx.timer.advance(1000)
    assert not ctx.group().is_pending_member(pending)
    assert reply.done()


def test_new_member_join_expiration():
    ctx = Context(classic_group_new_member_join_timeout_ms=2000)
    (leader,) = ctx.stable_group(1, rebalance_ms=10_000, session_ms=60_000)
    newcomer = ctx.join_new(rebalance_ms=10_000, session_ms=60_000)
    assert not newcomer.done()
    ctx.timer.advance(2000)
    # the new member's JoinGroup ended (UNKNOWN_MEMBER_ID) before the rebalance did
    assert newcomer.value.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.group().has_member(leader)


def test_replay_group_metadata_records():
    ctx = Context()
    leader, follower = ctx.stable_group(2)
    record = group_metadata_record(ctx.group(), ctx.group().group_assignment())
    other = Context()
    other.shard.replay(0, *record)
    loaded = other.group()
    assert loaded.state is GroupState.STABLE
    assert set(loaded.members) == {leader, follower}
    assert loaded.generation_id == 1 and loaded.leader_id == leader
    assert loaded.member(follower).assignment == b"assignment-" + follower.encode()
    assert loaded.subscribed_topics == {"foo"}
    other.shard.replay(1, record[0], None)
    assert GROUP not in other.groups


def test_on_loaded_schedules_classic_group_member_heartbeats():
    ctx = Context()
    ids = ctx.stable_group(2, session_ms=3000)
    record = group_metadata_record(ctx.group(), ctx.group().group_assignment())
    other = Context()
    other.shard.replay(0, *record)
    other.shard.on_loaded()
    for member_id in ids:
        assert other.timer.is_scheduled(f"heartbeat-{GROUP}-{member_id}")
    other.timer.advance(3000)
    assert other.group().state is GroupState.PREPARING_REBALANCE or not other.group().members


def test_on_loaded_exceed_group_max_size_triggers_rebalance():
    ctx = Context()
    ctx.stable_group(2)
    record = group_metadata_record(ctx.group(), ctx.group().group_assignment())
    other = Context(classic_group_max_size=1)
    other.shard.replay(0, *record)
    other.shard.on_loaded()
    assert other.group().state is GroupState.PREPARING_REBALANCE


def test_list_and_describe_after_leave_make_the_group_empty():
    ctx = Context()
    (member_id,) = ctx.stable_group(1)
    ctx.leave((member_id, None))
    group = ctx.group()
    group.validate_delete_group()  # an empty group may be deleted
    assert group.protocol_type == "consumer"


def test_a_flood_of_joins_without_member_ids_is_bounded():
    import broker.coordinator.group.classic as classic

    ctx = Context()
    for _ in range(classic.MAX_PENDING_MEMBERS):
        assert ctx.join(session_ms=6000).value.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert ctx.join().value.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert len(ctx.timer.tasks) == classic.MAX_PENDING_MEMBERS
    # their sessions end: the pending members and their timers go
    ctx.timer.advance(6000)
    assert not ctx.group().pending_join_members and not ctx.timer.tasks
    assert ctx.join().value.error_code == ErrorCode.MEMBER_ID_REQUIRED


# ---- a member's second JoinGroup or SyncGroup before its first was answered -------------------
# (ours: Kafka mutes a connection per request and leaves the first one unanswered; this broker
# pipelines, and a reply never completed would hold every later answer of that connection)


def test_a_second_join_answers_the_parked_one_with_rebalance_in_progress():
    ctx = Context()
    first_id, second_id = ctx.stable_group(2)
    parked = ctx.join(first_id)  # a rebalance: parked until the other member rejoins
    assert not parked.done()
    again = ctx.join(first_id)
    assert parked.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert parked.value.member_id == first_id
    assert not again.done() and ctx.group().num_awaiting_join == 1
    ctx.join(second_id)
    assert again.value.error_code == ErrorCode.NONE and again.value.generation_id == 2


def test_a_second_sync_answers_the_parked_one_with_rebalance_in_progress():
    ctx = Context()
    ctx.join_new()
    ctx.join_new()
    ctx.timer.advance(0)
    leader = ctx.group().leader_id
    follower = next(m for m in ctx.group().members if m != leader)
    parked = ctx.sync(follower, 1)
    again = ctx.sync(follower, 1)
    assert parked.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert not again.done()
    ctx.sync(leader, 1, {leader: b"L", follower: b"F"})
    assert again.value.assignment == b"F"
