"""ConsumerGroupMember: one member of a consumer group (Kafka 4.0's ``ConsumerGroupMember``).

A member is an immutable value: every change builds a new one
(:func:`dataclasses.replace`, Kafka's ``Builder``), so the heartbeat can
compare the member before and after a request and write a record only for
what changed. Its fields are those of two records::

    ConsumerGroupMemberMetadataValue      instance_id rack_id client_id client_host
                                          subscribed_topic_names subscribed_topic_regex
                                          rebalance_timeout_ms server_assignor_name
                                          classic_member_metadata (tag 0)
    ConsumerGroupCurrentMemberAssignment  member_epoch previous_member_epoch state
                                          assigned_partitions partitions_pending_revocation

An assignment maps a topic id to the partitions of that topic
(``Map<Uuid, Set<Integer>>``); here a dict of frozensets, never mutated.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

#: topic id -> partitions
Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY_ASSIGNMENT: Assignment = {}

#: ``ConsumerGroupHeartbeatRequest``'s epochs
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """``MemberState``: where a member is in reconciling towards its target assignment."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: a member using the
    classic protocol inside a consumer group (Kafka's online migration): its session
    timeout and its JoinGroup protocols (name, subscription), in preference order."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""
    server_assignor_name: str | None = None
    assigned_partitions: Assignment = dataclasses.field(default_factory=dict)
    partitions_pending_revocation: Assignment = dataclasses.field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def with_epoch(self, member_epoch: int, **changes: object) -> ConsumerGroupMember:
        """``Builder.updateMemberEpoch``: the new epoch, the current one becoming the previous."""
        return dataclasses.replace(
            self,
            member_epoch=member_epoch,
            previous_member_epoch=self.member_epoch,
            **changes,  # type: ignore[arg-type]
        )

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def has_assigned_partitions_changed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    return old.assigned_partitions != new.assigned_partitions


def freeze(assignment: Mapping[uuid.UUID, object]) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment with frozenset values and no empty topic."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in assignment.items():
        frozen = frozenset(partitions)  # type: ignore[call-overload]
        if frozen:
            out[topic_id] = frozen
    return out


def assignment_to_string(assignment: Assignment) -> str:
    """``Utils.assignmentToString`` for the logs: ``topicId-p1, topicId-p2``."""
    return ", ".join(
        f"{topic_id}-{p}" for topic_id, parts in assignment.items() for p in sorted(parts)
    )
