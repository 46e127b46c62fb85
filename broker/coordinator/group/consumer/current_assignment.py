"""Reconciling a member towards its target assignment (Kafka 4.0's ``CurrentAssignmentBuilder``).

The member moves one step per heartbeat::

    STABLE                 at the target epoch: nothing to do; else compute the next step
    UNREVOKED_PARTITIONS   waits until the member no longer reports the partitions it must
                           revoke, then moves to epoch + 1 and computes the next step
    UNRELEASED_PARTITIONS  waits until the partitions it should get are released by their
                           previous owners (their current partition epoch is -1)
    UNKNOWN                a state this version does not know: fenced unless the member
                           owns nothing, then reconciled from scratch

The next step for each topic (``computeNextAssignment``)::

    assigned  = current ∩ target
    revoking  = current - assigned
    pending   = target - assigned - (partitions still owned by another member)

Revocation first (the member keeps its epoch and must give ``revoking`` up),
then assignment (the member jumps to the target epoch with ``assigned +
pending``, UNRELEASED_PARTITIONS while some target partition is still held
elsewhere).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from broker.coordinator.group.consumer.member import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
)
from broker.coordinator.group.errors import GroupError
from broker.errors import ErrorCode
from broker.protocol.messages import ConsumerGroupHeartbeatRequest

#: (topic id, partition) -> the epoch of its current owner, -1 when free
PartitionEpoch = Callable[[uuid.UUID, int], int]


def build_current_assignment(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    current_partition_epoch: PartitionEpoch,
    owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
) -> ConsumerGroupMember:
    """The member's next assignment state; ``owned`` is the heartbeat's ``topic_partitions``
    (None when the member did not report them)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member_epoch=member.member_epoch, target_epoch=target_epoch,
                         target=target, current_partition_epoch=current_partition_epoch,
                         owned=owned)  # fmt: skip
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member_epoch=member.member_epoch + 1, target_epoch=target_epoch,
                     target=target, current_partition_epoch=current_partition_epoch,
                     owned=owned)  # fmt: skip
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member_epoch=member.member_epoch, target_epoch=target_epoch,
                     target=target, current_partition_epoch=current_partition_epoch,
                     owned=owned)  # fmt: skip
    if owned is None or len(owned) != 0:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            "The consumer group member is in a unknown state. The member must abandon all its "
            "partitions and rejoin.",
        )
    return _next(
        member,
        member_epoch=target_epoch,
        target_epoch=target_epoch,
        target=target,
        current_partition_epoch=current_partition_epoch,
        owned=owned,
    )


def owns_any(
    owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None, assignment: Assignment
) -> bool:
    """``ownsRevokedPartitions``: unknown ownership (None) counts as owning."""
    if owned is None:
        return True
    for topic in owned:
        revoking = assignment.get(topic.topic_id)
        if revoking and any(p in revoking for p in topic.partitions):
            return True
    return False


def _next(
    member: ConsumerGroupMember,
    *,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    current_partition_epoch: PartitionEpoch,
    owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
) -> ConsumerGroupMember:
    has_unreleased = False
    new_assigned: dict[uuid.UUID, frozenset[int]] = {}
    new_revoking: dict[uuid.UUID, frozenset[int]] = {}
    new_pending: dict[uuid.UUID, frozenset[int]] = {}
    current = member.assigned_partitions
    for topic_id in set(target) | set(current):
        wanted = target.get(topic_id, frozenset())
        held = current.get(topic_id, frozenset())
        assigned = held & wanted
        revoking = held - assigned
        pending = wanted - assigned
        free = frozenset(p for p in pending if current_partition_epoch(topic_id, p) == -1)
        if len(free) != len(pending):
            has_unreleased = True
        if assigned:
            new_assigned[topic_id] = assigned
        if revoking:
            new_revoking[topic_id] = revoking
        if free:
            new_pending[topic_id] = free
    if new_revoking and owns_any(owned, new_revoking):
        # the member keeps its epoch and revokes first
        return member.with_epoch(
            member_epoch,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=new_assigned,
            partitions_pending_revocation=new_revoking,
        )
    if new_pending:
        for topic_id, partitions in new_pending.items():
            new_assigned[topic_id] = new_assigned.get(topic_id, frozenset()) | partitions
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
    elif has_unreleased:
        state = MemberState.UNRELEASED_PARTITIONS
    else:
        state = MemberState.STABLE
    return member.with_epoch(
        target_epoch,
        state=state,
        assigned_partitions=new_assigned,
        partitions_pending_revocation={},
    )
