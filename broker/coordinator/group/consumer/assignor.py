"""What a server-side assignor sees and returns (``GroupSpec``, ``ConsumerGroupPartitionAssignor``).

::

    assign(GroupSpec, partitions per topic id) -> {member id: {topic id: frozenset(partitions)}}

    GroupSpec.members           member id -> rack, instance id, subscribed topic ids, and its
                                current target assignment (what the assignor may keep)
    GroupSpec.subscription_type HOMOGENEOUS when every member subscribes to the same topics
    GroupSpec.inverted          topic id -> partition -> member id of the current target

An assignor raises :class:`PartitionAssignorError` when it cannot assign
(Kafka's ``PartitionAssignorException``; the heartbeat then answers
UNKNOWN_SERVER_ERROR, as Kafka does).

The assignors are named by ``group.consumer.assignors``, with Kafka's short
names or class names; the first is the default, a member may pick another
with ``ServerAssignor`` (librdkafka's ``group.remote.assignor``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.group.consumer.group import SubscriptionType
from broker.coordinator.group.consumer.member import Assignment

UNIFORM_ASSIGNOR_NAME = "uniform"
RANGE_ASSIGNOR_NAME = "range"
#: ``group.consumer.assignors`` may name an assignor by its class, as Kafka's config does
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": UNIFORM_ASSIGNOR_NAME,
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": RANGE_ASSIGNOR_NAME,
}


class PartitionAssignorError(Exception):
    """``PartitionAssignorException``."""


@dataclass(frozen=True)
class MemberSpec:
    """``MemberSubscriptionAndAssignmentImpl``."""

    rack_id: str | None
    instance_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment


@dataclass(frozen=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType
    inverted: Mapping[uuid.UUID, Mapping[int, str]]

    def is_partition_assigned(self, topic_id: uuid.UUID, partition: int) -> bool:
        return partition in self.inverted.get(topic_id, {})


#: member id -> its new target assignment
GroupAssignment = dict[str, Assignment]


class ConsumerGroupPartitionAssignor(Protocol):
    name: str

    def assign(self, spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
        """``partitions``: the number of partitions of every subscribed topic id."""


def num_partitions(partitions: Mapping[uuid.UUID, int], topic_id: uuid.UUID) -> int:
    count = partitions.get(topic_id, -1)
    if count == -1:
        raise PartitionAssignorError(
            f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
        )
    return count
