"""Computing a group's new target assignment (Kafka 4.0's ``TargetAssignmentBuilder``).

The assignor gets every member (with the one being added or updated in its
new form, a replaced static member's assignment carried to its new member
id, removed members gone), each with its subscribed topic ids and its
current target assignment, and the partition count of every subscribed
topic. The result is written as the delta Kafka writes::

    ConsumerGroupTargetAssignmentMember  for each member whose target changed
    ConsumerGroupTargetAssignmentMetadata  the new assignment epoch (always)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from broker.coordinator.group.consumer.assignor import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    MemberSpec,
)
from broker.coordinator.group.consumer.group import ConsumerGroup, SubscriptionType, TopicMetadata
from broker.coordinator.group.consumer.member import EMPTY_ASSIGNMENT, ConsumerGroupMember
from broker.coordinator.group.consumer.records import (
    target_assignment_epoch_record,
    target_assignment_record,
)
from broker.coordinator.group.records import Record


@dataclass(frozen=True)
class TargetAssignmentResult:
    records: list[Record]
    assignment: GroupAssignment


def build_target_assignment(
    group: ConsumerGroup,
    group_epoch: int,
    *,
    assignor: ConsumerGroupPartitionAssignor,
    subscription_metadata: Mapping[str, TopicMetadata],
    subscription_type: SubscriptionType,
    updated: Mapping[str, ConsumerGroupMember | None],
) -> TargetAssignmentResult:
    """``updated``: member id -> its new form, or None when it is removed."""
    topic_ids = {name: meta.id for name, meta in subscription_metadata.items()}

    def spec(member: ConsumerGroupMember, member_id: str) -> MemberSpec:
        assignment = group.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
        if member.instance_id is not None:
            previous = group.static_members.get(member.instance_id)
            if previous is not None and previous != member_id:
                assignment = group.target_assignment.get(previous, EMPTY_ASSIGNMENT)
        subscribed = frozenset(
            topic_ids[name] for name in group.member_topics(member) if name in topic_ids
        )
        return MemberSpec(member.rack_id, member.instance_id, subscribed, assignment)

    specs = {member_id: spec(member, member_id) for member_id, member in group.members.items()}
    for member_id, new in updated.items():
        if new is None:
            specs.pop(member_id, None)
        else:
            specs[member_id] = spec(new, member_id)
    partitions: dict[uuid.UUID, int] = {
        meta.id: meta.num_partitions for meta in subscription_metadata.values()
    }
    assignment = assignor.assign(
        GroupSpec(specs, subscription_type, group.inverted_target_assignment), partitions
    )
    records = []
    for member_id in specs:
        new_assignment = assignment.get(member_id, EMPTY_ASSIGNMENT)
        old = group.target_assignment.get(member_id)
        if old is None or dict(new_assignment) != dict(old):
            records.append(target_assignment_record(group.group_id, member_id, new_assignment))
    records.append(target_assignment_epoch_record(group.group_id, group_epoch))
    return TargetAssignmentResult(records, assignment)
