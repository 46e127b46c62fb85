"""The ``range`` server assignor (Kafka's ``RangeAssignor``): contiguous ranges per topic.

Members are ordered by instance id (static members first, by instance id),
then by member id. For each topic, its subscribers in that order take
consecutive ranges: ``partitions // subscribers`` each, the first
``partitions % subscribers`` one more. With the same members, every topic
of the same size is split the same way (co-partitioned topics stay
together), which is what the range assignor is for; it is not sticky.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from broker.coordinator.group.consumer.assignor import (
    RANGE_ASSIGNOR_NAME,
    GroupAssignment,
    GroupSpec,
    num_partitions,
)


class RangeAssignor:
    name = RANGE_ASSIGNOR_NAME

    def assign(self, spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
        if not spec.members:
            return {}
        member_ids = sorted(spec.members, key=lambda m: _order(spec, m))
        subscribers: dict[uuid.UUID, int] = {}
        for member_id in member_ids:
            for topic_id in spec.members[member_id].subscribed_topic_ids:
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
        # per topic: next partition, minimum quota, extra partitions left to hand out
        ranges: dict[uuid.UUID, list[int]] = {}
        for topic_id, count in subscribers.items():
            total = num_partitions(partitions, topic_id)
            quota, extra = divmod(total, count)
            ranges[topic_id] = [0, quota, extra, total]
        out: GroupAssignment = {}
        for member_id in member_ids:
            assignment = {}
            for topic_id in sorted(spec.members[member_id].subscribed_topic_ids):
                state = ranges[topic_id]
                start, quota, extra, total = state
                if extra > 0:
                    quota += 1
                    state[2] -= 1
                end = min(start + quota, total)
                state[0] = end
                if start < end:
                    assignment[topic_id] = frozenset(range(start, end))
            out[member_id] = assignment
        return out


def _order(spec: GroupSpec, member_id: str) -> tuple[int, str, str]:
    instance_id = spec.members[member_id].instance_id
    return (0, instance_id, member_id) if instance_id is not None else (1, "", member_id)
