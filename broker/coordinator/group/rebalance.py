"""The join phase of classic groups, its timers, and the hand-out of assignments.

The rebalance half of Kafka's ``GroupMetadataManager`` (classic groups)::

    prepare_rebalance      -> PreparingRebalance; join timer: the initial delay for an
                              empty group (extended while members keep arriving, up to
                              the rebalance timeout), else the rebalance timeout
    complete_join          <- every member rejoined, or the join timer fired: members that
                              did not rejoin leave (dynamic ones), the next generation
                              starts (CompletingRebalance, or Empty with no member), each
                              parked JoinGroup is answered (the leader gets the members),
                              and a sync timer waits for every SyncGroup
    expire_heartbeat       <- a member's session timer fired: it leaves and the group
                              rebalances
    propagate_assignment   -> every parked SyncGroup is answered

Timer keys (``GroupMetadataManager``): ``heartbeat-<group>-<member>``,
``join-<group>``, ``sync-<group>``: at most one per member and two per group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from broker.coordinator.group.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    reset_assignments,
)
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.errors import append_error_to_response_error, unknown_member
from broker.coordinator.group.member import EMPTY_ASSIGNMENT, ClassicGroupMember
from broker.coordinator.group.records import Record, group_metadata_record
from broker.coordinator.group.timer import CoordinatorTimer
from broker.errors import ErrorCode
from broker.protocol.messages import JoinGroupResponse, SyncGroupResponse

log = logging.getLogger(__name__)

#: appends records, then calls back with NONE or the error of the write
OnWritten = Callable[[ErrorCode], None]
Writer = Callable[[list[Record], OnWritten | None], None]


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


class OtherGroup(Protocol):
    """A consumer group, as the classic protocol sees one with its id."""

    @property
    def is_empty(self) -> bool: ...


class GroupMeters:
    """Counts the coordinator keeps for the metrics (read when scraped)."""

    __slots__ = ("completed_rebalances", "rebalance_ms_total", "rebalances_started")

    def __init__(self) -> None:
        self.rebalances_started = 0
        self.completed_rebalances = 0
        self.rebalance_ms_total = 0


class RebalanceOps:
    """State and the rebalance mechanics shared by the classic operations."""

    def __init__(
        self,
        config: GroupConfig,
        timer: CoordinatorTimer,
        time_ms: Callable[[], int],
        write: Writer,
        meters: GroupMeters | None = None,
    ) -> None:
        self.config = config
        self.timer = timer
        self.time_ms = time_ms
        self.write = write
        self.meters = meters or GroupMeters()
        self.groups: dict[str, ClassicGroup] = {}
        #: the shard's consumer groups: one id namespace, a group is of one type
        self.consumer_groups: Mapping[str, OtherGroup] = {}
        self.remove_consumer_group: Callable[[str], None] = lambda _group_id: None
        #: the largest record batch the shard's partition takes (max.message.bytes)
        self.max_batch_bytes: Callable[[], int] = lambda: 2**31 - 1
        #: when each group's current rebalance started (for the rebalance time)
        self._rebalance_started: dict[str, int] = {}

    # ---- groups ------------------------------------------------------------------------------

    def new_group(self, group_id: str, state: GroupState = GroupState.EMPTY) -> ClassicGroup:
        group = ClassicGroup(group_id, state, self.time_ms)
        self.groups[group_id] = group
        return group

    def get_or_create_group(self, group_id: str, create_if_missing: bool) -> ClassicGroup:
        """``getOrMaybeCreateClassicGroup``: UNKNOWN_MEMBER_ID when absent and not created."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if not create_if_missing:
            raise unknown_member(f"Classic group {group_id} not found.")
        return self.new_group(group_id)

    def remove_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        for member_id in list(group.members):
            self.timer.cancel(heartbeat_key(group_id, member_id))
        for member_id in list(group.pending_join_members):
            self.timer.cancel(heartbeat_key(group_id, member_id))
        self.timer.cancel(join_key(group_id))
        self.timer.cancel(sync_key(group_id))
        group.complete_all_joins(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        group.complete_all_syncs(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.state is not GroupState.DEAD:
            group.transition_to(GroupState.DEAD)

    # ---- heartbeats --------------------------------------------------------------------------

    def reschedule_heartbeat(
        self, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int | None = None
    ) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(
            heartbeat_key(group_id, member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self.expire_heartbeat(group_id, member_id),
        )

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return
        if group.is_pending_member(member_id):
            log.info(
                "Pending member %s in group %s has been removed after session timeout expiration.",
                member_id,
                group_id,
            )
            group.remove(member_id)
            if group.is_in_state(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self.complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info(
            "Member %s in group %s has failed, removing it from the group.", member_id, group_id
        )
        self.remove_member_and_update_group(
            group, member, f"removing member {member_id} on heartbeat expiration."
        )

    def remove_member_and_update_group(
        self, group: ClassicGroup, member: ClassicGroupMember, reason: str
    ) -> None:
        # a new member may still wait for its JoinGroup: answer it first
        group.complete_join(
            member,
            JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.UNKNOWN_MEMBER_ID),
        )
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in_state(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join(group)

    # ---- the join phase ------------------------------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)
        else:
            self.maybe_complete_join_phase(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (
            group.is_in_state(GroupState.PREPARING_REBALANCE)
            and group.has_all_members_joined()
            and group.previous_state is not GroupState.EMPTY
        ):
            self.complete_join(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in_state(GroupState.COMPLETING_REBALANCE):
            # members awaiting sync are answered REBALANCE_IN_PROGRESS and rejoin
            reset_assignments(group)
            self.propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        initial = group.is_in_state(GroupState.EMPTY)
        group_id = group.group_id
        if initial:
            delay = self.config.classic_group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(
                join_key(group_id),
                delay,
                lambda: self.try_complete_initial_rebalance(group_id, delay, remaining),
            )
        group.transition_to(GroupState.PREPARING_REBALANCE)
        self.meters.rebalances_started += 1
        self._rebalance_started.setdefault(group_id, self.time_ms())
        log.info(
            "Preparing to rebalance group %s in state %s with old generation %d (reason: %s).",
            group_id,
            group.state,
            group.generation_id,
            reason,
        )
        if not initial:
            self.maybe_complete_join_else_schedule(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self.complete_join(group)
        else:
            group_id = group.group_id
            self.timer.schedule(
                join_key(group_id),
                group.rebalance_timeout_ms(),
                lambda: self.complete_join_by_id(group_id),
            )

    def try_complete_initial_rebalance(self, group_id: str, delay: int, remaining: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.classic_group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.timer.schedule(
                join_key(group_id),
                new_delay,
                lambda: self.try_complete_initial_rebalance(group_id, new_delay, new_remaining),
            )
        else:
            self.complete_join(group)

    def complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        """``completeClassicGroupJoin``."""
        group_id = group.group_id
        self.timer.cancel(join_key(group_id))
        for failed in [m for m in group.not_yet_rejoined_members() if not m.is_static]:
            group.remove(failed.member_id)
            self.timer.cancel(heartbeat_key(group_id, failed.member_id))
        if group.is_in_state(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait another rebalance timeout for the sessions to expire
            log.error(
                "Group %s could not complete rebalance because no members rejoined.", group_id
            )
            self.timer.schedule(
                join_key(group_id),
                group.rebalance_timeout_ms(),
                lambda: self.complete_join_by_id(group_id),
            )
            return
        group.init_next_generation()
        if group.is_in_state(GroupState.EMPTY):
            log.info("Group %s with generation %d is now empty.", group_id, group.generation_id)
            self._rebalance_finished(group_id)

            def logged(code: ErrorCode) -> None:
                if code is not ErrorCode.NONE:
                    log.warning(
                        "Failed to write empty metadata for group %s: %s",
                        group_id,
                        append_error_to_response_error(code).name,
                    )

            self.write([group_metadata_record(group, {})], logged)
            return
        log.info(
            "Stabilized group %s generation %d with %d members.",
            group_id,
            group.generation_id,
            group.num_members,
        )
        for member in list(group.members.values()):
            members = group.current_members_metadata() if group.is_leader(member.member_id) else []
            group.complete_join(
                member,
                JoinGroupResponse(
                    members=members,
                    member_id=member.member_id,
                    generation_id=group.generation_id,
                    protocol_name=group.protocol_name,
                    protocol_type=group.protocol_type,
                    leader=group.leader,
                    skip_assignment=False,
                    error_code=ErrorCode.NONE,
                ),
            )
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        self.schedule_pending_sync(group)

    def _rebalance_finished(self, group_id: str) -> None:
        started = self._rebalance_started.pop(group_id, None)
        if started is not None:
            self.meters.completed_rebalances += 1
            self.meters.rebalance_ms_total += max(self.time_ms() - started, 0)

    # ---- the sync phase ------------------------------------------------------------------------

    def schedule_pending_sync(self, group: ClassicGroup) -> None:
        group_id, generation = group.group_id, group.generation_id
        self.timer.schedule(
            sync_key(group_id),
            group.rebalance_timeout_ms(),
            lambda: self.expire_pending_sync(group_id, generation),
        )

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))

    def expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self.groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.has_received_sync_from_all_members():
            return
        pending = set(group.pending_sync_members)
        for member_id in pending:
            group.remove(member_id)
            self.timer.cancel(heartbeat_key(group_id, member_id))
        self.prepare_rebalance(
            group, f"Removing {sorted(pending)} on pending sync request expiration"
        )

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        if (
            group.state in (GroupState.DEAD, GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
            or group.has_received_sync_from_all_members()
        ):
            self.timer.cancel(sync_key(group.group_id))

    def set_and_propagate_assignment(
        self, group: ClassicGroup, assignment: dict[str, bytes]
    ) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        self.propagate_assignment(group, ErrorCode.NONE)

    def propagate_assignment(self, group: ClassicGroup, code: ErrorCode) -> None:
        ok = code is ErrorCode.NONE
        for member in list(group.members.values()):
            answered = group.complete_sync(
                member,
                SyncGroupResponse(
                    protocol_name=group.protocol_name if ok else None,
                    protocol_type=group.protocol_type if ok else None,
                    assignment=member.assignment,
                    error_code=code,
                ),
            )
            if answered:
                # a session that expired while the sync was parked must not be lost
                self.reschedule_heartbeat(group, member)

    def mark_stable(self, group: ClassicGroup) -> None:
        group.transition_to(GroupState.STABLE)
        self._rebalance_finished(group.group_id)
