"""ConsumerGroup: a group of the consumer protocol (Kafka 4.0's ``ModernGroup``, ``ConsumerGroup``).

The group's state is derived, never set (``maybeUpdateGroupState``)::

    Empty        no member
    Assigning    group epoch > target assignment epoch (a new target is due)
    Reconciling  some member is not yet at the target assignment epoch, or not STABLE
    Stable       every member reconciled to the target assignment
    Dead         removed (only ever seen by the metrics)

It keeps what the heartbeat needs at hand: the members (and the static ones
by instance id), how many members subscribe to each topic (for the
subscription metadata and the subscription type), the target assignment
per member and its inverse (partition -> member), the epoch each owned
partition is held at (``currentPartitionEpoch``: a partition cannot be
given to a new owner until its previous owner released it), and the
counts of server assignors the members asked for.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from broker.coordinator.group.consumer.member import (
    EMPTY_ASSIGNMENT,
    Assignment,
    ConsumerGroupMember,
    MemberState,
)
from broker.coordinator.group.errors import GroupError, unknown_member
from broker.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"
CONSUMER_GROUP_TYPE = "consumer"


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class SubscriptionType(enum.Enum):
    """Every member subscribed to the same topics (HOMOGENEOUS) or not."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


class TopicMetadata(NamedTuple):
    """``TopicMetadata``: a subscribed topic as the group last saw it."""

    id: uuid.UUID
    name: str
    num_partitions: int


def subscription_type(
    subscribed_topic_names: Mapping[str, int], num_members: int
) -> SubscriptionType:
    """``ModernGroup.subscriptionType``."""
    if any(count != num_members for count in subscribed_topic_names.values()):
        return SubscriptionType.HETEROGENEOUS
    return SubscriptionType.HOMOGENEOUS


def _count(counts: dict[str, int], names: Iterable[str], delta: int) -> None:
    for name in names:
        value = counts.get(name, 0) + delta
        if value > 0:
            counts[name] = value
        else:
            counts.pop(name, None)


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.state = ConsumerGroupState.EMPTY
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        #: topic name -> number of members subscribed to it (names and resolved regexes)
        self.subscribed_topic_names: dict[str, int] = {}
        self.subscription_type = SubscriptionType.HOMOGENEOUS
        #: topic name -> metadata, as last written in a ConsumerGroupPartitionMetadata record
        self.subscription_metadata: dict[str, TopicMetadata] = {}
        self.target_assignment: dict[str, Assignment] = {}
        #: topic id -> partition -> member id of the target assignment
        self.inverted_target_assignment: dict[uuid.UUID, dict[int, str]] = {}
        #: topic id -> partition -> the epoch its current owner holds it at
        self.current_partition_epoch: dict[uuid.UUID, dict[int, int]] = {}
        self.server_assignors: dict[str, int] = {}
        #: when the subscription metadata was last computed (``metadataRefreshDeadline``):
        #: the topics version then (-1: never) and the group epoch it led to
        self.metadata_version = -1
        self.metadata_epoch = 0
        #: regex -> the topics it resolved to at the last refresh, those the member that
        #: triggered the refresh may describe (``resolvedRegularExpressions``; soft state,
        #: replaced whole and never changed in place)
        self.regex_topics: dict[str, frozenset[str]] = {}
        #: set by each write applied to the group (a failed write restores a copy only if
        #: nothing was applied after it)
        self.write_token: object = None
        #: members that joined (epoch 0) and have not heartbeated since (soft state, bounded)
        self.unconfirmed: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup({self.group_id!r}, {self.state}, epoch {self.group_epoch}, "
            f"assignment epoch {self.assignment_epoch}, {len(self.members)} members)"
        )

    # ---- identity --------------------------------------------------------------------------

    @property
    def protocol_type(self) -> str:
        return CONSUMER_PROTOCOL_TYPE

    @property
    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    @property
    def num_members(self) -> int:
        return len(self.members)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    # ---- members using the classic protocol (online migration) -----------------------------

    @property
    def num_classic_protocol_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        """``allMembersUseClassicProtocolExcept``: UNKNOWN_MEMBER_ID for an unknown member."""
        member = self.member_or_new(member_id, False)
        return (
            not member.uses_classic_protocol
            and self.num_classic_protocol_members == len(self.members) - 1
        )

    def supports_classic_protocols(self, protocol_type: str | None, names: set[str]) -> bool:
        """``supportsClassicProtocols``: a classic member of protocol type "consumer" whose
        protocols include one every classic member of the group supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if self.is_empty:
            return bool(names)
        classic = [m.classic_member_metadata for m in self.members.values()]
        supported = [{name for name, _ in c.supported_protocols} for c in classic if c is not None]
        return any(all(name in s for s in supported) for name in names)

    # ---- epochs and state ------------------------------------------------------------------

    def set_group_epoch(self, epoch: int) -> None:
        self.group_epoch = epoch
        self.maybe_update_group_state()

    def set_assignment_epoch(self, epoch: int) -> None:
        self.assignment_epoch = epoch
        self.maybe_update_group_state()

    def maybe_update_group_state(self) -> None:
        if not self.members:
            new = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            new = ConsumerGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            new = ConsumerGroupState.RECONCILING
        else:
            new = ConsumerGroupState.STABLE
        self.state = new

    def mark_dead(self) -> None:
        """The group is gone (its tombstones were written or replayed)."""
        self.state = ConsumerGroupState.DEAD

    def copy(self) -> ConsumerGroup:
        """A copy to restore if a write fails (members and assignments are immutable values,
        so copying the containers is enough)."""
        other = ConsumerGroup.__new__(ConsumerGroup)
        other.__dict__.update(self.__dict__)
        for name in (
            "members",
            "static_members",
            "subscribed_topic_names",
            "subscription_metadata",
            "target_assignment",
            "server_assignors",
        ):
            setattr(other, name, dict(getattr(self, name)))
        other.inverted_target_assignment = {
            t: dict(p) for t, p in self.inverted_target_assignment.items()
        }
        other.current_partition_epoch = {
            t: dict(p) for t, p in self.current_partition_epoch.items()
        }
        return other  # fmt: skip

    def has_metadata_expired(self, topics_version: int) -> bool:
        """``hasMetadataExpired``: the topics changed since, or the epoch the refresh led to
        was rolled back (its write failed)."""
        return topics_version != self.metadata_version or self.group_epoch < self.metadata_epoch

    def set_metadata_refreshed(self, topics_version: int, group_epoch: int) -> None:
        self.metadata_version = topics_version
        self.metadata_epoch = group_epoch

    # ---- members ---------------------------------------------------------------------------

    def member_or_new(self, member_id: str, create_if_missing: bool) -> ConsumerGroupMember:
        """``getOrMaybeCreateMember``: UNKNOWN_MEMBER_ID when absent and not created."""
        member = self.members.get(member_id)
        if member is not None:
            return member
        if not create_if_missing:
            raise unknown_member(f"Member {member_id} is not a member of group {self.group_id}.")
        return ConsumerGroupMember(member_id)

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_member_id(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self.members[new.member_id] = new
        self._update_subscriptions(old, new)
        self._update_server_assignors(self.server_assignors, old, new)
        if old is not None:
            self._remove_partition_epochs(old)
        self._add_partition_epochs(new.assigned_partitions, new.member_epoch)
        self._add_partition_epochs(new.partitions_pending_revocation, new.member_epoch)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self.maybe_update_group_state()

    def remove_member(self, member_id: str) -> None:
        self.unconfirmed.discard(member_id)
        old = self.members.pop(member_id, None)
        self._update_subscriptions(old, None)
        self._update_server_assignors(self.server_assignors, old, None)
        if old is not None:
            self._remove_partition_epochs(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == (
                member_id
            ):
                del self.static_members[old.instance_id]
        self.maybe_update_group_state()

    def set_regex_topics(self, resolved: dict[str, frozenset[str]]) -> None:
        """New resolutions of the group's regexes, and the subscriptions recounted."""
        self.regex_topics = resolved
        self.refresh_subscriptions()

    def _member_topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        """A member's subscribed topics: its names and what its regex resolved to."""
        regex = member.subscribed_topic_regex
        if not regex:
            return member.subscribed_topic_names
        return member.subscribed_topic_names | self.regex_topics.get(regex, frozenset())

    def refresh_subscriptions(self) -> None:
        """Recount the subscribed topics (a regex resolved to other topics)."""
        self.subscribed_topic_names = {}
        for member in self.members.values():
            _count(self.subscribed_topic_names, self._member_topics(member), 1)
        self.subscription_type = subscription_type(self.subscribed_topic_names, len(self.members))

    def member_topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        return self._member_topics(member)

    def _update_subscriptions(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> None:
        if old is not None:
            _count(self.subscribed_topic_names, self._member_topics(old), -1)
        if new is not None:
            _count(self.subscribed_topic_names, self._member_topics(new), 1)
        self.subscription_type = subscription_type(self.subscribed_topic_names, len(self.members))

    def compute_subscribed_topic_names(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> dict[str, int]:
        """The counts as they would be with ``old`` replaced by ``new`` (either may be None)."""
        counts = dict(self.subscribed_topic_names)
        if old is not None:
            _count(counts, self._member_topics(old), -1)
        if new is not None:
            _count(counts, self._member_topics(new), 1)
        return counts

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names

    # ---- server assignors ------------------------------------------------------------------

    @staticmethod
    def _update_server_assignors(
        counts: dict[str, int], old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> None:
        if old is not None and old.server_assignor_name is not None:
            _count(counts, (old.server_assignor_name,), -1)
        if new is not None and new.server_assignor_name is not None:
            _count(counts, (new.server_assignor_name,), 1)

    def compute_preferred_server_assignor(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> str | None:
        """The assignor most members ask for, with ``old`` replaced by ``new``."""
        counts = dict(self.server_assignors)
        self._update_server_assignors(counts, old, new)
        return max(counts.items(), key=lambda kv: kv[1])[0] if counts else None

    def preferred_server_assignor(self) -> str | None:
        if not self.server_assignors:
            return None
        return max(self.server_assignors.items(), key=lambda kv: kv[1])[0]

    # ---- target assignment -----------------------------------------------------------------

    def target_assignment_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """``targetAssignment(memberId, instanceId)``: a static member that rejoins with a
        new member id inherits its instance's assignment."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is None:
                return EMPTY_ASSIGNMENT
            return self.target_assignment.get(previous, EMPTY_ASSIGNMENT)
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)

    def update_target_assignment(self, member_id: str, assignment: Assignment) -> None:
        old = self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
        self._update_inverted(member_id, old, assignment)
        self.target_assignment[member_id] = assignment

    def remove_target_assignment(self, member_id: str) -> None:
        old = self.target_assignment.pop(member_id, EMPTY_ASSIGNMENT)
        self._update_inverted(member_id, old, EMPTY_ASSIGNMENT)

    def _update_inverted(self, member_id: str, old: Assignment, new: Assignment) -> None:
        """``updateInvertedTargetAssignment``: a partition moved to another member first
        keeps that member (the old owner's update must not undo it)."""
        for topic_id in set(old) | set(new):
            old_parts = old.get(topic_id, frozenset())
            new_parts = new.get(topic_id, frozenset())
            owners = self.inverted_target_assignment.setdefault(topic_id, {})
            for partition in old_parts - new_parts:
                if owners.get(partition) == member_id:
                    del owners[partition]
            for partition in new_parts - old_parts:
                owners[partition] = member_id
            if not owners:
                del self.inverted_target_assignment[topic_id]

    # ---- partition epochs ------------------------------------------------------------------

    def current_partition_epoch_of(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch the partition is held at by its current owner, -1 when free."""
        return self.current_partition_epoch.get(topic_id, {}).get(partition, -1)

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic_id, partitions in assignment.items():
            epochs = self.current_partition_epoch.setdefault(topic_id, {})
            for partition in partitions:
                held = epochs.get(partition)
                if held is not None:
                    raise RuntimeError(
                        f"Cannot set the epoch of {topic_id}-{partition} to {epoch} because the "
                        f"partition is still owned at epoch {held}"
                    )
                epochs[partition] = epoch

    def _remove_partition_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in assignment.items():
                epochs = self.current_partition_epoch.get(topic_id)
                if epochs is None:
                    raise RuntimeError(
                        f"Cannot remove the epoch {member.member_epoch} from {topic_id} because "
                        "it does not have any epoch"
                    )
                for partition in partitions:
                    held = epochs.pop(partition, None)
                    if held != member.member_epoch:
                        raise RuntimeError(
                            f"Cannot remove the epoch {member.member_epoch} from "
                            f"{topic_id}-{partition} because the partition is still owned at a "
                            f"different epoch {held}"
                        )
                if not epochs:
                    del self.current_partition_epoch[topic_id]

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """A member in UNRELEASED_PARTITIONS whose target holds a partition still owned."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        target = self.target_assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        for topic_id, partitions in target.items():
            assigned = member.assigned_partitions.get(topic_id, frozenset())
            for partition in partitions:
                if (
                    partition not in assigned
                    and self.current_partition_epoch_of(topic_id, partition) != -1
                ):
                    return True
        return False

    # ---- offsets and administration --------------------------------------------------------

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, member_epoch: int, api_version: int
    ) -> None:
        """``ConsumerGroup.validateOffsetCommit`` (non-transactional)."""
        if member_epoch < 0 and not self.members:
            return  # an admin client or an assign() consumer, while the group is empty
        member = self.member_or_new(member_id, False)
        if not member.uses_classic_protocol and api_version < 9:
            raise GroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        self._validate_member_epoch(member_epoch, member)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise unknown_member(f"Member {member_id} is not a member of group {self.group_id}.")
        self._validate_member_epoch(member_epoch, member)

    @staticmethod
    def _validate_member_epoch(received: int, member: ConsumerGroupMember) -> None:
        if received != member.member_epoch:
            if member.uses_classic_protocol:
                raise GroupError(
                    ErrorCode.ILLEGAL_GENERATION,
                    f"The received generation id {received} does not match the expected member "
                    f"epoch {member.member_epoch}.",
                )
            raise GroupError(
                ErrorCode.STALE_MEMBER_EPOCH,
                f"The received member epoch {received} does not match the expected member "
                f"epoch {member.member_epoch}.",
            )

    def validate_offset_delete(self) -> None:
        return None  # subscribed topics are refused per partition

    def validate_delete_group(self) -> None:
        if self.state is not ConsumerGroupState.EMPTY:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def offset_expiration_base(self) -> Callable[[int], int] | None:
        """Offsets of topics the group does not subscribe to expire from their commit."""
        return lambda commit_ts: commit_ts
