"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic groups (``GroupMetadataManager``).

Each operation answers through a ``DelayedReply`` (``broker/delayed.py``): at once, or when the join
phase ends (JoinGroup), when the leader's assignment is durable (SyncGroup).
What the operations write (group metadata records) goes through the
``write`` callback of :class:`RebalanceOps`; the group's state changes on
the event loop at once, the replies that depend on a write once it is done.

Member ids (KIP-394): from JoinGroup v4 a dynamic member without an id is
given one, remembered as pending for a session timeout, and answered
MEMBER_ID_REQUIRED; it joins with that id next. Static members (KIP-345,
``group.instance.id``) keep their place across restarts: one that rejoins
without a member id replaces its old id and, in a Stable group whose
protocol does not change, gets the current assignment without a rebalance.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.group.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    reset_assignments,
)
from broker.coordinator.group.consumer.records import group_tombstones as consumer_group_tombstones
from broker.coordinator.group.errors import GroupError, append_error_to_response_error
from broker.coordinator.group.member import EMPTY_ASSIGNMENT, ClassicGroupMember, Protocols
from broker.coordinator.group.rebalance import RebalanceOps, heartbeat_key
from broker.coordinator.group.records import (
    Record,
    empty_group_metadata_record,
    group_metadata_record,
)
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

#: members of one group given an id but not joined with it yet (KIP-394), at most;
#: Kafka keeps any number (docs/deviations.md)
MAX_PENDING_MEMBERS = 10_000
#: what a group record needs besides a member's protocol metadata (ids, client id and
#: host, timeouts, the group's fields, the batch header): a member whose metadata leaves
#: less than this under max.message.bytes cannot be stored even alone
RECORD_HEADROOM = 8 * 1024


@dataclass(frozen=True)
class Caller:
    """Who sent a request: ``RequestContext.clientId()`` / ``clientAddress()`` and the version."""

    client_id: str
    client_host: str
    api_version: int


class ConsumerGroupSide(Protocol):
    """The consumer groups' side of the classic protocol: a classic member of a consumer
    group is served from the consumer group's state (online migration)."""

    def classic_join(
        self, caller: Caller, request: JoinGroupRequest
    ) -> DelayedReply[JoinGroupResponse]: ...

    def classic_sync(self, request: SyncGroupRequest) -> DelayedReply[SyncGroupResponse]: ...

    def classic_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse: ...

    def classic_leave(self, request: LeaveGroupRequest) -> DelayedReply[LeaveGroupResponse]: ...


def requires_known_member_id(join_version: int) -> bool:
    """``JoinGroupRequest.requiresKnownMemberId``: KIP-394, from v4."""
    return join_version >= 4


def supports_skipping_assignment(join_version: int) -> bool:
    return join_version >= 9


def _protocols(request: JoinGroupRequest) -> Protocols:
    return tuple((p.name, bytes(p.metadata)) for p in request.protocols)


class ClassicGroupManager(RebalanceOps):
    #: set by the shard: serves classic members of consumer groups
    consumer_side: ConsumerGroupSide | None = None

    # ---- JoinGroup -----------------------------------------------------------------------------

    def join(self, caller: Caller, request: JoinGroupRequest) -> DelayedReply[JoinGroupResponse]:
        """``classicGroupJoinToClassicGroup``."""
        reply: DelayedReply[JoinGroupResponse] = DelayedReply()
        group_id, member_id = request.group_id, request.member_id
        unknown = member_id == UNKNOWN_MEMBER_ID
        largest = max((len(p.metadata) for p in request.protocols), default=0)
        limit = self.max_batch_bytes() - RECORD_HEADROOM
        if largest > limit:
            # its group record could never be written: Kafka would accept the member and
            # fail the SyncGroup with UNKNOWN_SERVER_ERROR (docs/deviations.md)
            log.warning(
                "[GroupId %s] Refused a JoinGroup from client %s: protocol metadata of %d bytes, "
                "a group record holds at most %d (max.message.bytes of __consumer_offsets).",
                group_id, caller.client_id, largest, limit,
            )  # fmt: skip
            reply.resolve(
                JoinGroupResponse(member_id=member_id, error_code=ErrorCode.MESSAGE_TOO_LARGE)
            )
            return reply
        records: list[Record] = []
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            if not consumer.is_empty and self.consumer_side is not None:
                # classicGroupJoinToConsumerGroup: served from the consumer group's state
                return self.consumer_side.classic_join(caller, request)
            # an empty consumer group gives way (Kafka's maybeDeleteEmptyConsumerGroup)
            records = consumer_group_tombstones(group_id, ())
            self.remove_consumer_group(group_id)
        is_new_group = group_id not in self.groups
        try:
            group = self.get_or_create_group(group_id, unknown)
        except KafkaError as exc:
            reply.resolve(JoinGroupResponse(member_id=member_id, error_code=exc.code))
            return reply
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            reply.resolve(
                JoinGroupResponse(
                    member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.GROUP_MAX_SIZE_REACHED
                )
            )
        elif unknown:
            self._join_new_member(caller, request, group, reply)
        else:
            self._join_existing_member(caller, request, group, reply)
        if is_new_group:
            # commit the new group itself (Kafka appends an empty group record here)
            def reverted(code: ErrorCode) -> None:
                if code is not ErrorCode.NONE:
                    log.warning("Failed to write empty metadata for group %s: %s", group_id, code)
                    reply.resolve(
                        JoinGroupResponse(error_code=append_error_to_response_error(code))
                    )
                    if self.groups.get(group_id) is group:
                        self.remove_group(group_id)  # the group was never committed

            self.write([*records, empty_group_metadata_record(group)], reverted)
        return reply

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        state = group.state
        max_size = self.config.classic_group_max_size
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if state is GroupState.PREPARING_REBALANCE:
            return (
                group.has_member(member_id) and group.member(member_id).is_awaiting_join
            ) or group.num_awaiting_join < max_size
        return group.has_member(member_id) or group.num_members < max_size

    def _join_new_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        group: ClassicGroup,
        reply: DelayedReply[JoinGroupResponse],
    ) -> None:
        if group.is_in_state(GroupState.DEAD):
            reply.resolve(
                JoinGroupResponse(
                    member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE
                )
            )
            return
        names = {p.name for p in request.protocols}
        if not group.supports_protocols(request.protocol_type, names):
            reply.resolve(
                JoinGroupResponse(
                    member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL
                )
            )
            return
        instance_id = request.group_instance_id
        new_member_id = group.generate_member_id(caller.client_id, instance_id)
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is not None:
                log.info(
                    "Static member with groupInstanceId=%s and unknown member id joins group %s "
                    "in %s state. Replacing previously mapped member %s with this "
                    "groupInstanceId.",
                    instance_id,
                    group.group_id,
                    group.state,
                    existing,
                )
                self._update_static_member(
                    caller,
                    request,
                    group,
                    instance_id=instance_id,
                    old_member_id=existing,
                    new_member_id=new_member_id,
                    reply=reply,
                )
            else:
                self._add_member(caller, request, group, new_member_id, reply)
        elif requires_known_member_id(caller.api_version):
            if len(group.pending_join_members) >= MAX_PENDING_MEMBERS:
                # a flood of joins without member ids would keep a timer each for a session
                reply.resolve(
                    JoinGroupResponse(
                        member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.GROUP_MAX_SIZE_REACHED
                    )
                )
                return
            group.add_pending_member(new_member_id)
            group_id = group.group_id
            self.timer.schedule(
                heartbeat_key(group_id, new_member_id),
                request.session_timeout_ms,
                lambda: self.expire_heartbeat(group_id, new_member_id),
            )
            reply.resolve(
                JoinGroupResponse(member_id=new_member_id, error_code=ErrorCode.MEMBER_ID_REQUIRED)
            )
        else:
            self._add_member(caller, request, group, new_member_id, reply)

    def _join_existing_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        group: ClassicGroup,
        reply: DelayedReply[JoinGroupResponse],
    ) -> None:
        member_id = request.member_id
        instance_id = request.group_instance_id
        if group.is_in_state(GroupState.DEAD):
            reply.resolve(
                JoinGroupResponse(
                    member_id=member_id, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE
                )
            )
            return
        names = {p.name for p in request.protocols}
        if not group.supports_protocols(request.protocol_type, names):
            reply.resolve(
                JoinGroupResponse(
                    member_id=member_id, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL
                )
            )
            return
        if group.is_pending_member(member_id):
            if instance_id is not None:
                # a pending member is always dynamic; a static one is a client's mistake
                reply.resolve(
                    JoinGroupResponse(member_id=member_id, error_code=ErrorCode.INVALID_REQUEST)
                )
                return
            self._add_member(caller, request, group, member_id, reply)
            return
        try:
            group.validate_member(member_id, instance_id, "join-group")
        except KafkaError as exc:
            reply.resolve(
                JoinGroupResponse(
                    member_id=member_id,
                    error_code=exc.code,
                    protocol_type=None,
                    protocol_name=None,
                )
            )
            return
        member = group.member(member_id)
        protocols = _protocols(request)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member(request, group, member, reply, "joining during rebalance")
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # the member missed its JoinGroup response: answer it again
                reply.resolve(self._current_generation(group, member_id, with_members=True))
            else:
                self._update_member(request, group, member, reply, "updating metadata")
        elif state is GroupState.STABLE:
            if group.is_leader(member_id):
                self._update_member(request, group, member, reply, "leader re-joining")
            elif not member.matches(protocols):
                self._update_member(request, group, member, reply, "updating metadata")
            else:
                reply.resolve(self._current_generation(group, member_id, with_members=False))
        else:
            log.warning(
                "Attempt to add rejoining member %s of group %s in unexpected group state %s",
                member_id,
                group.group_id,
                state,
            )
            reply.resolve(
                JoinGroupResponse(member_id=member_id, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
            )

    def _current_generation(
        self, group: ClassicGroup, member_id: str, *, with_members: bool
    ) -> JoinGroupResponse:
        return JoinGroupResponse(
            members=group.current_members_metadata()
            if with_members and group.is_leader(member_id)
            else [],
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_name=group.protocol_name,
            protocol_type=group.protocol_type,
            leader=group.leader,
            skip_assignment=False,
        )

    def _update_member(
        self,
        request: JoinGroupRequest,
        group: ClassicGroup,
        member: ClassicGroupMember,
        reply: DelayedReply[JoinGroupResponse],
        reason: str,
    ) -> None:
        group.update_member(
            member,
            _protocols(request),
            _rebalance_timeout(request),
            request.session_timeout_ms,
            reply,
        )
        self.maybe_prepare_rebalance_or_complete_join(
            group, f"Member {member.member_id} {reason}; client reason: {_reason(request)}"
        )

    def _add_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        group: ClassicGroup,
        member_id: str,
        reply: DelayedReply[JoinGroupResponse],
    ) -> None:
        member = ClassicGroupMember(
            member_id,
            group_instance_id=request.group_instance_id,
            client_id=caller.client_id,
            client_host=caller.client_host,
            rebalance_timeout_ms=_rebalance_timeout(request),
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            supported_protocols=_protocols(request),
        )
        member.is_new = True
        if group.is_in_state(GroupState.PREPARING_REBALANCE) and (
            group.previous_state is GroupState.EMPTY
        ):
            group.new_member_added = True
        group.add(member, reply)
        # a new member cannot heartbeat while its JoinGroup is parked; bound its wait
        self.reschedule_heartbeat(
            group, member, self.config.classic_group_new_member_join_timeout_ms
        )
        self.maybe_prepare_rebalance_or_complete_join(
            group,
            f"Adding new member {member_id} with group instance id "
            f"{request.group_instance_id}; client reason: {_reason(request)}",
        )

    def _update_static_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        group: ClassicGroup,
        *,
        instance_id: str,
        old_member_id: str,
        new_member_id: str,
        reply: DelayedReply[JoinGroupResponse],
    ) -> None:
        """``updateStaticMemberThenRebalanceOrCompleteJoin``."""
        current_leader = group.leader  # the static member being replaced is in the group
        new_member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.timer.cancel(heartbeat_key(group.group_id, old_member_id))
        self.reschedule_heartbeat(group, new_member)
        old_rebalance, old_session = new_member.rebalance_timeout_ms, new_member.session_timeout_ms
        old_protocols = new_member.supported_protocols
        group.update_member(
            new_member, _protocols(request), _rebalance_timeout(request),
            request.session_timeout_ms, reply,
        )  # fmt: skip
        if group.is_in_state(GroupState.STABLE):
            if (group.protocol_name or "") == group.select_protocol():
                # the selected protocol stays: persist the new member id, no rebalance
                assignment = group.group_assignment()
                group_id = group.group_id

                def written(code: ErrorCode) -> None:
                    if code is not ErrorCode.NONE:
                        log.warning(
                            "Failed to persist metadata for group %s static member %s with group "
                            "instance id %s due to %s. Reverting to old member id %s.",
                            group_id, new_member_id, instance_id, code.name, old_member_id,
                        )  # fmt: skip
                        group.update_member(
                            new_member, old_protocols, old_rebalance, old_session, None
                        )
                        old = group.replace_static_member(instance_id, new_member_id, old_member_id)
                        self.reschedule_heartbeat(group, old)
                        reply.resolve(
                            JoinGroupResponse(
                                member_id=UNKNOWN_MEMBER_ID,
                                generation_id=group.generation_id,
                                protocol_name=group.protocol_name,
                                protocol_type=group.protocol_type,
                                leader=current_leader,
                                error_code=append_error_to_response_error(code),
                            )
                        )
                        return
                    is_leader = group.is_leader(new_member_id)
                    skip = supports_skipping_assignment(caller.api_version)
                    group.complete_join(
                        new_member,
                        JoinGroupResponse(
                            members=group.current_members_metadata() if skip and is_leader else [],
                            member_id=new_member_id,
                            generation_id=group.generation_id,
                            protocol_name=group.protocol_name,
                            protocol_type=group.protocol_type,
                            leader=group.leader if skip else current_leader,
                            skip_assignment=skip and is_leader,
                        ),
                    )

                self.write([group_metadata_record(group, assignment)], written)
            else:
                self.maybe_prepare_rebalance_or_complete_join(
                    group,
                    f"Group's selectedProtocol will change because static member {new_member_id} "
                    f"with instance id {instance_id} joined with change of protocol",
                )
        elif group.is_in_state(GroupState.COMPLETING_REBALANCE):
            # the leader may already assign to the old member id: rebalance again
            self.prepare_rebalance(
                group, f"Updating metadata for static member {new_member_id} ({instance_id})"
            )
        else:
            self.maybe_complete_join_phase(group)

    # ---- SyncGroup -----------------------------------------------------------------------------

    def sync(self, caller: Caller, request: SyncGroupRequest) -> DelayedReply[SyncGroupResponse]:
        """``classicGroupSync``."""
        reply: DelayedReply[SyncGroupResponse] = DelayedReply()
        group = self.groups.get(request.group_id)
        consumer = self.consumer_groups.get(request.group_id)
        if (
            group is None
            and consumer is not None
            and not consumer.is_empty
            and self.consumer_side is not None
        ):
            return self.consumer_side.classic_sync(request)
        if group is None or group.is_empty:
            reply.resolve(SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
            return reply
        member_id = request.member_id
        error = self._validate_sync(group, request)
        if error is not None:
            reply.resolve(SyncGroupResponse(error_code=error))
        elif group.is_in_state(GroupState.PREPARING_REBALANCE):
            reply.resolve(SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_in_state(GroupState.COMPLETING_REBALANCE):
            member = group.member(member_id)
            if member.awaiting_sync is not None:
                # a second SyncGroup before the first was answered (as for JoinGroup)
                member.awaiting_sync.resolve(
                    SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
                )
            member.awaiting_sync = reply
            self.remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_leader_assignment(group, request, member_id)
        elif group.is_in_state(GroupState.STABLE):
            self.remove_pending_sync_member(group, member_id)
            reply.resolve(
                SyncGroupResponse(
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=group.member(member_id).assignment,
                )
            )
        return reply

    def _validate_sync(self, group: ClassicGroup, request: SyncGroupRequest) -> ErrorCode | None:
        if group.is_in_state(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(request.member_id, request.group_instance_id, "sync-group")
        except KafkaError as exc:
            return exc.code
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
            request.protocol_name, group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _store_leader_assignment(
        self, group: ClassicGroup, request: SyncGroupRequest, leader: str
    ) -> None:
        log.info(
            "Assignment received from leader %s for group %s for generation %d. The group has "
            "%d members, %d of which are static.",
            leader,
            group.group_id,
            group.generation_id,
            group.num_members,
            len(group.static_members),
        )
        assignment = {a.member_id: bytes(a.assignment) for a in request.assignments}
        for member_id in group.members:
            assignment.setdefault(member_id, EMPTY_ASSIGNMENT)
        generation = request.generation_id

        def written(code: ErrorCode) -> None:
            # another member may have joined meanwhile: act only on the same generation
            if not (
                group.is_in_state(GroupState.COMPLETING_REBALANCE)
                and generation == group.generation_id
            ):
                return
            if code is not ErrorCode.NONE:
                error = append_error_to_response_error(code)
                reset_assignments(group)
                self.propagate_assignment(group, error)
                self.maybe_prepare_rebalance_or_complete_join(
                    group, f"Error {error.name} when storing group assignment during SyncGroup"
                )
            else:
                self.set_and_propagate_assignment(group, assignment)
                self.mark_stable(group)

        self.write([group_metadata_record(group, assignment)], written)

    # ---- Heartbeat -----------------------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """``classicGroupHeartbeatToClassicGroup`` (``...ToConsumerGroup`` for a consumer
        group)."""
        group = self.groups.get(request.group_id)
        in_consumer_group = request.group_id in self.consumer_groups
        if group is None and in_consumer_group and self.consumer_side is not None:
            return self.consumer_side.classic_heartbeat(request)
        if group is None:
            return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in_state(GroupState.DEAD):
            return HeartbeatResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        try:
            group.validate_member(request.member_id, request.group_instance_id, "heartbeat")
        except KafkaError as exc:
            return HeartbeatResponse(error_code=exc.code)
        if request.generation_id != group.generation_id:
            return HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION)
        if group.is_in_state(GroupState.EMPTY):
            return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
        self.reschedule_heartbeat(group, group.member(request.member_id))
        if group.is_in_state(GroupState.PREPARING_REBALANCE):
            return HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(error_code=ErrorCode.NONE)

    # ---- LeaveGroup ----------------------------------------------------------------------------

    def leave(self, request: LeaveGroupRequest) -> DelayedReply[LeaveGroupResponse]:
        """``classicGroupLeaveToClassicGroup`` (``request.members`` normalized for v0-2;
        ``...ToConsumerGroup`` for a consumer group, answered once its write is durable)."""
        group = self.groups.get(request.group_id)
        in_consumer_group = request.group_id in self.consumer_groups
        if group is None and in_consumer_group and self.consumer_side is not None:
            return self.consumer_side.classic_leave(request)
        if group is None:
            return DelayedReply.of(
                LeaveGroupResponse(
                    members=[
                        LeaveGroupResponse.MemberResponse(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            error_code=ErrorCode.UNKNOWN_MEMBER_ID,
                        )
                        for m in request.members
                    ]
                )
            )
        if group.is_in_state(GroupState.DEAD):
            return DelayedReply.of(
                LeaveGroupResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
            )
        responses = []
        left = []
        for m in request.members:
            code = ErrorCode.NONE
            if m.member_id == UNKNOWN_MEMBER_ID:
                static_id = (
                    group.static_member_id(m.group_instance_id)
                    if m.group_instance_id is not None
                    else None
                )
                if static_id is not None:
                    self._remove_current_member(group, static_id, m.reason)
                else:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.is_pending_member(m.member_id):
                group.remove(m.member_id)
                self.timer.cancel(heartbeat_key(group.group_id, m.member_id))
            else:
                try:
                    group.validate_member(m.member_id, m.group_instance_id, "leave-group")
                except KafkaError as exc:
                    code = exc.code
                else:
                    self._remove_current_member(group, m.member_id, m.reason)
            if code is ErrorCode.NONE:
                left.append(m.member_id)
            responses.append(
                LeaveGroupResponse.MemberResponse(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=code
                )
            )
        if left:
            reason = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
            if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.maybe_prepare_rebalance_or_complete_join(group, reason)
            elif group.is_in_state(GroupState.PREPARING_REBALANCE):
                self.maybe_complete_join_phase(group)
        return DelayedReply.of(LeaveGroupResponse(members=responses))

    def _remove_current_member(
        self, group: ClassicGroup, member_id: str, reason: str | None
    ) -> None:
        member = group.member(member_id)
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        log.info(
            "[Group %s] Member %s has left group through explicit `LeaveGroup` request; "
            "client reason: %s",
            group.group_id,
            member_id,
            reason or "not provided",
        )
        group.complete_join(
            member,
            JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.UNKNOWN_MEMBER_ID),
        )
        group.remove(member_id)

    # ---- loading -------------------------------------------------------------------------------

    def replay_group_metadata(self, group_id: str, value: dict[str, object] | None) -> None:
        """``replay(GroupMetadataKey, GroupMetadataValue)``: last record wins."""
        if value is None:
            self.remove_group(group_id)
            return
        members_data = value["members"]
        assert isinstance(members_data, list)
        protocol = value["protocol"]
        protocol_type = value["protocolType"]
        timestamp = value.get("currentStateTimestamp", -1)
        previous = self.groups.pop(group_id, None)
        if previous is not None:
            self._drop_timers(previous)
        group = ClassicGroup(
            group_id,
            GroupState.STABLE if members_data else GroupState.EMPTY,
            self.time_ms,
            generation_id=int(value["generation"]),  # type: ignore[call-overload]
            protocol_type=str(protocol_type) if protocol_type else None,
            protocol_name=None if protocol is None else str(protocol),
            leader_id=None if value["leader"] is None else str(value["leader"]),
            current_state_timestamp=None if timestamp == -1 else int(timestamp),  # type: ignore[call-overload]
        )
        for m in members_data:
            rebalance = m["rebalanceTimeout"] if m.get("rebalanceTimeout", -1) != -1 else None
            member = ClassicGroupMember(
                m["memberId"],
                group_instance_id=m.get("groupInstanceId"),
                client_id=m["clientId"],
                client_host=m["clientHost"],
                rebalance_timeout_ms=m["sessionTimeout"] if rebalance is None else rebalance,
                session_timeout_ms=m["sessionTimeout"],
                protocol_type=str(protocol_type),
                supported_protocols=((str(protocol), bytes(m["subscription"])),),
                assignment=bytes(m["assignment"]),
            )
            group.add(member)
        group.subscribed_topics = group.compute_subscribed_topics()
        self.groups[group_id] = group

    def _drop_timers(self, group: ClassicGroup) -> None:
        for member_id in group.members:
            self.timer.cancel(heartbeat_key(group.group_id, member_id))

    def on_loaded(self) -> None:
        """``onLoaded``: every loaded member must heartbeat within its session timeout."""
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                self.reschedule_heartbeat(group, member)
            if group.num_members > self.config.classic_group_max_size:
                self.prepare_rebalance(
                    group,
                    f"Freshly-loaded group {group.group_id} (size {group.num_members}) is over "
                    f"capacity {self.config.classic_group_max_size}",
                )


def _rebalance_timeout(request: JoinGroupRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: the session timeout stands in for it."""
    value: int = request.rebalance_timeout_ms
    return request.session_timeout_ms if value == -1 else value


def _reason(request: JoinGroupRequest) -> str:
    return request.reason or "not provided"


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


__all__ = ["Caller", "ClassicGroupManager", "GroupError"]
