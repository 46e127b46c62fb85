"""The ``uniform`` server assignor (Kafka's ``UniformAssignor``, the default): balanced and sticky.

Homogeneous subscriptions (``UniformHomogeneousAssignmentBuilder``)::

    quota        total partitions // members, the first (total % members) members one more
    keep         each member keeps what it had of the subscribed topics, up to its quota;
                 partitions past it, and those of topics it no longer subscribes to, go
    unassigned   partitions no current target holds, then the ones given up
    fill         members under quota take unassigned partitions in order

Heterogeneous subscriptions (members subscribe to different topics): each
member keeps the partitions it had of topics it still subscribes to; the
others go, topic by topic (fewest subscribers first), to the subscribed
member holding the fewest partitions; then a partition moves from a member
to another subscriber of its topic while that evens their counts
(difference of two or more). This is our own balancing (Kafka's
heterogeneous builder is a longer heuristic with the same goals: every
partition to a subscriber, counts as even as the subscriptions allow,
partitions staying where they are), bounded by the partition count.

Members are visited in member id order and partitions in topic id then
partition order, so an assignment does not depend on dict order.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Mapping

from broker.coordinator.group.consumer.assignor import (
    UNIFORM_ASSIGNOR_NAME,
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    num_partitions,
)
from broker.coordinator.group.consumer.group import SubscriptionType
from broker.coordinator.group.consumer.member import freeze

TopicPartition = tuple[uuid.UUID, int]


class UniformAssignor:
    name = UNIFORM_ASSIGNOR_NAME

    def assign(self, spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
        if not spec.members:
            return {}
        if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return _homogeneous(spec, partitions)
        return _heterogeneous(spec, partitions)


def _homogeneous(spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
    member_ids = sorted(spec.members)
    topics = sorted(spec.members[member_ids[0]].subscribed_topic_ids)
    if not topics:
        return {}
    unassigned: list[TopicPartition] = []
    total = 0
    for topic_id in topics:
        count = num_partitions(partitions, topic_id)
        unassigned.extend(
            (topic_id, p) for p in range(count) if not spec.is_partition_assigned(topic_id, p)
        )
        total += count
    subscribed = set(topics)
    minimum, extra = divmod(total, len(member_ids))
    result: dict[str, dict[uuid.UUID, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for member_id in member_ids:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[uuid.UUID, set[int]] = {}
        for topic_id, held in sorted(spec.members[member_id].assignment.items()):
            if topic_id not in subscribed:
                continue
            for partition in sorted(held):
                if quota > 0:
                    kept.setdefault(topic_id, set()).add(partition)
                    quota -= 1
                else:
                    unassigned.append((topic_id, partition))
        if quota > 0:
            unfilled.append((member_id, quota))
        result[member_id] = kept
    index = 0
    for member_id, quota in unfilled:
        for _ in range(quota):
            if index >= len(unassigned):
                break
            topic_id, partition = unassigned[index]
            index += 1
            result[member_id].setdefault(topic_id, set()).add(partition)
    if index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {m: freeze(a) for m, a in result.items()}


def _heterogeneous(spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
    subscribers: dict[uuid.UUID, list[str]] = {}
    for member_id in sorted(spec.members):
        for topic_id in spec.members[member_id].subscribed_topic_ids:
            subscribers.setdefault(topic_id, []).append(member_id)
    owner: dict[TopicPartition, str] = {}
    load = dict.fromkeys(spec.members, 0)
    # keep what each member had of topics it still subscribes to
    for member_id in sorted(spec.members):
        member = spec.members[member_id]
        for topic_id, held in member.assignment.items():
            if topic_id not in member.subscribed_topic_ids:
                continue
            count = num_partitions(partitions, topic_id)
            for partition in held:
                if partition < count and (topic_id, partition) not in owner:
                    owner[(topic_id, partition)] = member_id
                    load[member_id] += 1
    # give the rest to the least loaded subscriber, scarce topics first
    for topic_id in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        heap = [(load[m], m) for m in subscribers[topic_id]]
        heapq.heapify(heap)
        for partition in range(num_partitions(partitions, topic_id)):
            if (topic_id, partition) in owner:
                continue
            count, member_id = heapq.heappop(heap)
            while count != load[member_id]:  # stale entry: its load grew since
                heapq.heappush(heap, (load[member_id], member_id))
                count, member_id = heapq.heappop(heap)
            owner[(topic_id, partition)] = member_id
            load[member_id] += 1
            heapq.heappush(heap, (load[member_id], member_id))
    _balance(owner, load, subscribers)
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in spec.members}
    for (topic_id, partition), member_id in owner.items():
        result[member_id].setdefault(topic_id, set()).add(partition)
    return {m: freeze(a) for m, a in result.items()}


def _balance(
    owner: dict[TopicPartition, str], load: dict[str, int], subscribers: dict[uuid.UUID, list[str]]
) -> None:
    """Move partitions from a member to a subscriber with two or more fewer, while any can
    move; each move lowers the sum of squared loads, so the loop ends (bounded besides)."""
    for _ in range(len(owner) + 1):
        moved = False
        for tp in sorted(owner):
            current = owner[tp]
            target = min(subscribers[tp[0]], key=lambda m: (load[m], m))
            if load[target] + 1 < load[current]:
                owner[tp] = target
                load[current] -= 1
                load[target] += 1
                moved = True
        if not moved:
            return
