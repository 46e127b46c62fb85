"""The consumer groups of one shard: state, writes, replay, timers, loading, describing.

The base of :class:`~broker.coordinator.group.consumer.heartbeat.ConsumerGroupManager`
(Kafka 4.0's ``GroupMetadataManager``, its consumer group half).

Writes (``write_then``): an operation builds Kafka's records, applies them
to the in-memory groups at once by replaying them (so the live path and
loading share one code path, as Kafka's runtime replays what an operation
generates), and answers once they are durable. When the write fails the
group goes back to the copy taken before (Kafka reverts to its last
committed snapshot), unless another write was applied to it meanwhile.

Timers (keys as Kafka's)::

    session-timeout-<group>-<member>     fences a member that stops heartbeating
    rebalance-timeout-<group>-<member>   fences a member that keeps partitions it must
                                         revoke past its rebalance timeout
    join-<group>-<member>                fences a classic member asked to rejoin that does
                                         not within its rebalance timeout
    sync-<group>-<member>                fences a classic member that joined and does not
                                         sync within its rebalance timeout

Online migration (``group.consumer.migration.policy``): the conversions of
a group between the protocols (``convertToConsumerGroup`` when a consumer
protocol member joins a classic group, ``convertToClassicGroup`` when the
last one leaves a group of classic members) are here, with the rules that
allow them.

Topics come from a :class:`TopicsImage` (the broker's topics: names, ids,
partition counts, and a version that changes with any of them): the
subscription metadata of a group is recomputed when the version moved
since the group last computed it, which stands in for Kafka's metadata
image updates.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TypeVar

from broker.coordinator.group.classic_group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, GroupState
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer.assignor import ConsumerGroupPartitionAssignor
from broker.coordinator.group.consumer.group import (
    ConsumerGroup,
    ConsumerGroupState,
    TopicMetadata,
)
from broker.coordinator.group.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    freeze,
)
from broker.coordinator.group.consumer.range_assignor import RangeAssignor
from broker.coordinator.group.consumer.records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE,
    CONSUMER_GROUP_MEMBER_METADATA_TYPE,
    CONSUMER_GROUP_METADATA_TYPE,
    CONSUMER_GROUP_PARTITION_METADATA_TYPE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE,
    assignment_from,
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_subscription_record,
    member_tombstones,
    member_with_subscription,
    subscription_metadata_from,
    subscription_metadata_record,
    target_assignment_epoch_record,
    target_assignment_record,
)
from broker.coordinator.group.consumer.uniform import UniformAssignor
from broker.coordinator.group.consumer_protocol import (
    ConsumerProtocolError,
    deserialize_version,
    encode_assignment,
    parse_assignment,
    parse_subscription,
)
from broker.coordinator.group.errors import (
    GroupError,
    append_error_to_response_error,
    group_id_not_found,
)
from broker.coordinator.group.member import ClassicGroupMember
from broker.coordinator.group.rebalance import RebalanceOps, Writer
from broker.coordinator.group.records import Record, group_metadata_record, group_tombstone
from broker.coordinator.group.timer import CoordinatorTimer
from broker.delayed import DelayedReply
from broker.errors import ErrorCode
from broker.group_records.messages import CoordinatorRecord, decode_record
from broker.partition.internal_topics import is_internal_topic
from broker.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
#: the topics (of those given) the principal of a request may describe (its ACLs)
TopicFilter = Callable[[Iterable[str]], Iterable[str]]

#: ``ConsumerGroupDescribeResponse.Member.member_type`` (KIP-1099)
CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1


class TopicsImage(Protocol):
    """The broker's topics as the coordinator sees them (Kafka's ``TopicsImage``)."""

    @property
    def version(self) -> int: ...

    def topic_id(self, name: str) -> uuid.UUID | None: ...

    def partition_count(self, name: str) -> int | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def topic_names(self) -> Iterable[str]: ...


class ConsumerGroupMeters:
    """Counts for the metrics: rebalances (group epoch bumps), as Kafka's
    ``consumer-group-rebalance-rate`` sensor counts them."""

    __slots__ = ("rebalances",)

    def __init__(self) -> None:
        self.rebalances = 0


def session_timeout_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def rebalance_timeout_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


def join_timeout_key(group_id: str, member_id: str) -> str:
    """``consumerGroupJoinKey``: a classic member of a consumer group must rejoin in time."""
    return f"join-{group_id}-{member_id}"


def sync_timeout_key(group_id: str, member_id: str) -> str:
    """``consumerGroupSyncKey``: a classic member of a consumer group must sync in time."""
    return f"sync-{group_id}-{member_id}"


def _assignors(names: Iterable[str]) -> dict[str, ConsumerGroupPartitionAssignor]:
    made: dict[str, ConsumerGroupPartitionAssignor] = {}
    for name in names:
        made[name] = UniformAssignor() if name == "uniform" else RangeAssignor()
    return made


class ConsumerGroups:
    def __init__(
        self,
        config: GroupConfig,
        *,
        timer: CoordinatorTimer,
        time_ms: Callable[[], int],
        write: Writer,
        topics: TopicsImage,
        meters: ConsumerGroupMeters | None = None,
    ) -> None:
        self.config = config
        self.timer = timer
        self.time_ms = time_ms
        self.write = write
        self.topics = topics
        self.meters = meters or ConsumerGroupMeters()
        self.groups: dict[str, ConsumerGroup] = {}
        self.assignors = _assignors(config.consumer_group_assignors)
        self.default_assignor = next(iter(self.assignors))
        #: applies records to the shard's state (the shard routes classic ones too)
        self.apply: Callable[[list[Record]], None] = self.apply_own
        #: the shard's classic groups: one id namespace, a group is of one type
        self.classic_groups: Mapping[str, ClassicGroup] = {}
        self.remove_classic_group: Callable[[str], None] = lambda _group_id: None
        #: the shard's classic manager (a downgrade hands it the converted group)
        self.classic: RebalanceOps | None = None
        #: regex -> (topics version, the topics it matches)
        self._regexes: dict[str, tuple[int, frozenset[str]]] = {}

    # ---- groups ----------------------------------------------------------------------------

    def new_group(self, group_id: str) -> ConsumerGroup:
        """A group not yet in the map: replaying its records registers it."""
        return ConsumerGroup(group_id)

    def group(self, group_id: str) -> ConsumerGroup:
        """``consumerGroup(groupId)``: GROUP_ID_NOT_FOUND when absent."""
        group = self.groups.get(group_id)
        if group is None:
            raise group_id_not_found(group_id)
        return group

    def remove_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member_id in group.members:
                self.cancel_timers(group_id, member_id)
            group.mark_dead()

    # ---- subscriptions -----------------------------------------------------------------------

    def refresh_regexes(
        self, group: ConsumerGroup, regex: str | None, authorized: TopicFilter | None
    ) -> None:
        """Resolve the group's regexes (and ``regex``, a member's new one) again, keeping of
        each the topics ``authorized`` lets through (the ACLs of the member whose heartbeat
        refreshes: Kafka 4.0's KAFKA-18813), and recount the group's subscriptions."""
        regexes: set[str | None] = {m.subscribed_topic_regex for m in group.members.values()}
        regexes.add(regex)
        resolved = {}
        for r in sorted(filter(None, regexes)):
            found = self.resolve_regex(r)
            if authorized is not None and found:
                found = frozenset(authorized(sorted(found)))
            resolved[r] = found
        group.set_regex_topics(resolved)

    def resolve_regex(self, regex: str) -> frozenset[str]:
        """The topics ``regex`` matches as a whole (Java's ``Matcher.matches``), internal
        topics excepted; cached per topics version."""
        version = self.topics.version
        cached = self._regexes.get(regex)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            pattern = re.compile(regex)
        except re.error:
            return frozenset()
        found = frozenset(
            name
            for name in self.topics.topic_names()
            if not is_internal_topic(name) and pattern.fullmatch(name)
        )
        if len(self._regexes) > 10_000:
            self._regexes.clear()  # bounded: regexes of groups long gone
        self._regexes[regex] = (version, found)
        return found

    def compute_subscription_metadata(self, counts: Iterable[str]) -> dict[str, TopicMetadata]:
        """``computeSubscriptionMetadata``: the subscribed topics that exist."""
        out = {}
        for name in counts:
            topic_id = self.topics.topic_id(name)
            count = self.topics.partition_count(name)
            if topic_id is not None and count is not None:
                out[name] = TopicMetadata(topic_id, name, count)
        return out

    # ---- writes ------------------------------------------------------------------------------

    def write_then(
        self,
        group_id: str,
        records: list[Record],
        response: T,
        on_error: Callable[[ErrorCode], T],
        *,
        apply: Callable[[], None] | None = None,
        on_revert: Callable[[], None] | None = None,
    ) -> DelayedReply[T]:
        """Apply ``records`` now (or run ``apply`` instead: a downgrade installs its classic
        group itself, as Kafka does without replaying), write them, answer ``response``
        once durable (else ``on_error(code)`` with Kafka's mapping of the write error, after
        restoring the group and running ``on_revert``)."""
        reply: DelayedReply[T] = DelayedReply()
        if not records:
            reply.resolve(response)
            return reply
        existing = self.groups.get(group_id)
        snapshot = None if existing is None else existing.copy()
        if apply is None:
            self.apply(records)
        else:
            apply()
        applied = self.groups.get(group_id)
        token = object()
        if applied is not None:
            applied.write_token = token

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.NONE:
                reply.resolve(response)
                return
            error = append_error_to_response_error(code)
            log.warning("[GroupId %s] Failed to write %d records: %s", group_id, len(records),
                        error.name)  # fmt: skip
            current = self.groups.get(group_id)
            if current is not None and current.write_token is token:
                if snapshot is None:
                    self.remove_group(group_id)
                else:
                    self.groups[group_id] = snapshot
            if on_revert is not None:
                on_revert()
            reply.resolve(on_error(error))

        self.write(records, written)
        return reply

    def apply_own(self, records: list[Record]) -> None:
        for key, value in records:
            self.replay(decode_record(key, value))

    # ---- replay ------------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        """``GroupMetadataManager.replay`` of the consumer group records (types 3-8)."""
        key, value = record.key, record.value
        group_id = str(key["GroupId"])
        record_type = record.record_type
        if record_type == CONSUMER_GROUP_METADATA_TYPE:
            self._replay_group_epoch(group_id, value)
            return
        group = self.persisted_group(group_id, value is not None)
        if group is None:
            return  # a tombstone of a group that is gone
        if record_type == CONSUMER_GROUP_PARTITION_METADATA_TYPE:
            group.subscription_metadata = {} if value is None else subscription_metadata_from(value)
        elif record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE:
            if value is None:
                if group.target_assignment:
                    raise GroupError(
                        ErrorCode.UNKNOWN_SERVER_ERROR,
                        f"Received a tombstone record to delete target assignment of {group_id} "
                        f"but the assignment still has {len(group.target_assignment)} members.",
                    )
                group.set_assignment_epoch(-1)
            else:
                group.set_assignment_epoch(int(value["AssignmentEpoch"]))
        elif record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE:
            member_id = str(key["MemberId"])
            if value is None:
                group.remove_target_assignment(member_id)
            else:
                group.update_target_assignment(member_id, assignment_from(value["TopicPartitions"]))
        elif record_type == CONSUMER_GROUP_MEMBER_METADATA_TYPE:
            self._replay_member_metadata(group, str(key["MemberId"]), value)
        elif record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE:
            self._replay_current_assignment(group, str(key["MemberId"]), value)

    def persisted_group(self, group_id: str, create: bool) -> ConsumerGroup | None:
        """``getOrMaybeCreatePersistedConsumerGroup``: None for a tombstone of an unknown group;
        a simple classic group (offsets only) gives way to the consumer group."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if not create:
            return None
        classic = self.classic_groups.get(group_id)
        if classic is not None:
            if not classic.is_empty:
                raise GroupError(
                    ErrorCode.UNKNOWN_SERVER_ERROR, f"Group {group_id} is not a consumer group"
                )
            # an empty classic group (offsets replayed before the group's records) gives way
            self.remove_classic_group(group_id)
        group = self.new_group(group_id)
        self.groups[group_id] = group
        return group

    def _replay_group_epoch(self, group_id: str, value: dict[str, object] | None) -> None:
        if value is not None:
            group = self.persisted_group(group_id, True)
            assert group is not None
            group.set_group_epoch(int(value["Epoch"]))  # type: ignore[call-overload]
            return
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.members or group.target_assignment or group.assignment_epoch != -1:
            raise GroupError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Received a tombstone record to delete group {group_id} but the group still has "
                f"{len(group.members)} members, {len(group.target_assignment)} target "
                f"assignments, assignment epoch {group.assignment_epoch}.",
            )
        self.remove_group(group_id)

    def _replay_member_metadata(
        self, group: ConsumerGroup, member_id: str, value: dict[str, object] | None
    ) -> None:
        if value is not None:
            old = group.member_or_new(member_id, True)
            group.update_member(member_with_subscription(old, value))
            return
        old_member = group.members.get(member_id)
        if old_member is None:
            return
        if old_member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise GroupError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Received a tombstone record to delete member {member_id} but did not receive "
                "ConsumerGroupCurrentMemberAssignmentValue tombstone.",
            )
        if member_id in group.target_assignment:
            raise GroupError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Received a tombstone record to delete member {member_id} but did not receive "
                "ConsumerGroupTargetAssignmentMetadataValue tombstone.",
            )
        group.remove_member(member_id)

    @staticmethod
    def _replay_current_assignment(
        group: ConsumerGroup, member_id: str, value: dict[str, object] | None
    ) -> None:
        if value is not None:
            old = group.member_or_new(member_id, True)
            group.update_member(
                old.replace(
                    member_epoch=value["MemberEpoch"],
                    previous_member_epoch=value["PreviousMemberEpoch"],
                    state=MemberState.from_value(int(value["State"])),  # type: ignore[call-overload]
                    assigned_partitions=assignment_from(value["AssignedPartitions"]),  # type: ignore[arg-type]
                    partitions_pending_revocation=assignment_from(
                        value["PartitionsPendingRevocation"]  # type: ignore[arg-type]
                    ),
                )
            )
            return
        old_member = group.members.get(member_id)
        if old_member is None:
            return
        group.update_member(
            old_member.replace(
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned_partitions={},
                partitions_pending_revocation={},
            )
        )

    # ---- timers and fencing ------------------------------------------------------------------

    def schedule_session_timeout(
        self, group_id: str, member_id: str, timeout_ms: int | None = None
    ) -> None:
        """The session of a member (a classic member's own session timeout when given)."""
        self.timer.schedule(
            session_timeout_key(group_id, member_id),
            self.config.consumer_group_session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self.fence_member_operation(group_id, member_id, "the member session expired."),
        )

    def schedule_join_timeout_if_absent(
        self, group_id: str, member_id: str, rebalance_timeout_ms: int
    ) -> None:
        """``scheduleConsumerGroupJoinTimeoutIfAbsent``: a classic member asked to rejoin
        must do so within its rebalance timeout."""
        key = join_timeout_key(group_id, member_id)
        if self.timer.is_scheduled(key):
            return
        self.timer.schedule(
            key,
            max(rebalance_timeout_ms, 0),
            lambda: self.fence_member_operation(
                group_id,
                member_id,
                "the classic member failed to join within the rebalance timeout.",
            ),
        )

    def schedule_sync_timeout(
        self, group_id: str, member_id: str, rebalance_timeout_ms: int
    ) -> None:
        """``scheduleConsumerGroupSyncTimeout``: a classic member that joined must sync."""
        self.timer.schedule(
            sync_timeout_key(group_id, member_id),
            max(rebalance_timeout_ms, 0),
            lambda: self.fence_member_operation(
                group_id, member_id, "the member failed to sync within timeout."
            ),
        )

    def schedule_rebalance_timeout(
        self, group_id: str, member_id: str, member_epoch: int, rebalance_timeout_ms: int
    ) -> None:
        def expired() -> None:
            group = self.groups.get(group_id)
            member = None if group is None else group.members.get(member_id)
            if group is None or member is None:
                return
            if member.member_epoch == member_epoch:
                log.info(
                    "[GroupId %s] Member %s fenced from the group because it failed to "
                    "transition from epoch %d within %dms.",
                    group_id, member_id, member_epoch, rebalance_timeout_ms,
                )  # fmt: skip
                self.fence_member(group, member, None)

        self.timer.schedule(
            rebalance_timeout_key(group_id, member_id), max(rebalance_timeout_ms, 0), expired
        )

    def cancel_rebalance_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(rebalance_timeout_key(group_id, member_id))

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(session_timeout_key(group_id, member_id))
        self.timer.cancel(rebalance_timeout_key(group_id, member_id))
        self.timer.cancel(join_timeout_key(group_id, member_id))
        self.timer.cancel(sync_timeout_key(group_id, member_id))

    def fence_member_operation(self, group_id: str, member_id: str, reason: str) -> None:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return
        log.info("[GroupId %s] Member %s fenced from the group because %s", group_id, member_id,
                 reason)  # fmt: skip
        self.fence_member(group, member, None)

    def fence_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, response: T
    ) -> DelayedReply[T]:
        """``consumerGroupFenceMember``: the group goes back to classic when the member is
        its last consumer protocol member and the policy allows it; else the member's
        tombstones, the subscription metadata without it, and the group epoch bumped."""
        group_id = group.group_id
        on_error: Callable[[ErrorCode], T] = lambda code: _or_error(response, code)  # noqa: E731
        if self.validate_online_downgrade_with_fenced_member(group, member.member_id):
            records: list[Record] = []
            classic = self.convert_to_classic_group(group, member.member_id, None, records)
            return self.write_classic_conversion(group, classic, records, response, on_error)
        records = member_tombstones(group_id, member.member_id)
        metadata = self.compute_subscription_metadata(
            group.compute_subscribed_topic_names(member, None)
        )
        if metadata != group.subscription_metadata:
            records.append(subscription_metadata_record(group_id, metadata))
        records.append(group_epoch_record(group_id, group.group_epoch + 1))
        self.meters.rebalances += 1
        self.cancel_timers(group_id, member.member_id)
        return self.write_then(group_id, records, response, on_error)

    # ---- online migration (group.consumer.migration.policy) ----------------------------------

    def validate_online_upgrade(self, classic: ClassicGroup) -> bool:
        """``validateOnlineUpgrade``."""
        group_id = classic.group_id
        if not self.config.upgrade_enabled:
            log.info("Cannot upgrade classic group %s to consumer group because the online "
                     "upgrade is disabled.", group_id)  # fmt: skip
            return False
        if not classic.uses_consumer_protocol():
            log.info("Cannot upgrade classic group %s to consumer group because the group does "
                     "not use the consumer embedded protocol.", group_id)  # fmt: skip
            return False
        if classic.num_members > self.config.consumer_group_max_size:
            log.info("Cannot upgrade classic group %s to consumer group because the group size "
                     "exceeds the consumer group maximum size.", group_id)  # fmt: skip
            return False
        return True

    def convert_to_consumer_group(
        self, classic: ClassicGroup, records: list[Record]
    ) -> ConsumerGroup:
        """``convertToConsumerGroup``: the classic group's tombstone, then the records of a
        consumer group holding its members (with their classic metadata) at its generation,
        each keeping its last assignment. The group is not registered: replaying the records
        does it. Parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS."""
        group_id = classic.group_id
        classic.complete_all_joins(ErrorCode.REBALANCE_IN_PROGRESS)
        classic.complete_all_syncs(ErrorCode.REBALANCE_IN_PROGRESS)
        records.append(group_tombstone(group_id))
        try:
            group = self._consumer_group_from(classic)
        except (ConsumerProtocolError, ValueError) as exc:
            log.warning("Cannot upgrade the classic group %s to consumer group because the "
                        "embedded consumer protocol is malformed: %s.", group_id, exc)  # fmt: skip
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade the classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed.",
            ) from exc
        members = list(group.members.values())
        records.extend(member_subscription_record(group_id, m) for m in members)
        records.append(group_epoch_record(group_id, group.group_epoch))
        records.extend(
            target_assignment_record(group_id, m.member_id, group.target_assignment_of(m.member_id))
            for m in members
        )
        records.append(target_assignment_epoch_record(group_id, group.group_epoch))
        records.extend(current_assignment_record(group_id, m) for m in members)
        # if the write fails the group stays classic: these timers then find no member
        for m in members:
            assert m.classic_member_metadata is not None
            self.schedule_session_timeout(
                group_id, m.member_id, m.classic_member_metadata.session_timeout_ms
            )
        log.info("[GroupId %s] Converting the classic group to a consumer group with %d "
                 "members.", group_id, len(members))  # fmt: skip
        return group

    def _consumer_group_from(self, classic: ClassicGroup) -> ConsumerGroup:
        """``ConsumerGroup.fromClassicGroup``: every member STABLE at the generation, its
        target assignment and current assignment its last classic assignment."""
        generation = classic.generation_id
        group = ConsumerGroup(classic.group_id)
        group.set_group_epoch(generation)
        group.set_assignment_epoch(generation)
        for cm in classic.members.values():
            # a member that never synced has no assignment yet: it owns nothing
            assigned = self.to_assignment(parse_assignment(cm.assignment)) if cm.assignment else {}
            if classic.protocol_name is not None:
                metadata = cm.metadata(classic.protocol_name)
            else:
                metadata = cm.supported_protocols[0][1]
            subscription = parse_subscription(metadata)
            member = ConsumerGroupMember(
                cm.member_id,
                member_epoch=generation,
                previous_member_epoch=generation,
                state=MemberState.STABLE,
                instance_id=cm.group_instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=cm.rebalance_timeout_ms,
                client_id=cm.client_id,
                client_host=cm.client_host,
                subscribed_topic_names=frozenset(subscription.topics),
                assigned_partitions=assigned,
                classic_member_metadata=ClassicMemberMetadata(
                    cm.session_timeout_ms, tuple(cm.supported_protocols)
                ),
            )
            group.update_target_assignment(member.member_id, assigned)
            group.update_member(member)
        return group

    def to_assignment(self, partitions: Iterable[tuple[str, Iterable[int]]]) -> Assignment:
        """Topic names to ids (``toTopicPartitionMap``): topics unknown here are dropped."""
        out: dict[uuid.UUID, set[int]] = {}
        for name, parts in partitions:
            topic_id = self.topics.topic_id(name)
            if topic_id is not None:
                out.setdefault(topic_id, set()).update(parts)
        return freeze(out)

    def to_topic_partitions(self, assignment: Assignment) -> list[tuple[str, list[int]]]:
        """Topic ids to names (``toConsumerProtocolAssignment``), by name; unknown ids go."""
        out = []
        for topic_id, parts in assignment.items():
            name = self.topics.topic_name(topic_id)
            if name is not None:
                out.append((name, sorted(parts)))
        return sorted(out)

    def validate_online_downgrade_with_fenced_member(
        self, group: ConsumerGroup, fenced_member_id: str
    ) -> bool:
        """``validateOnlineDowngradeWithFencedMember``."""
        group_id = group.group_id
        if not group.all_members_use_classic_protocol_except(fenced_member_id):
            return False
        if group.num_members <= 1:
            log.debug("Skip downgrading the consumer group %s to classic group because it's "
                      "empty.", group_id)  # fmt: skip
            return False
        if not self.config.downgrade_enabled:
            log.info("Cannot downgrade consumer group %s to classic group because the online "
                     "downgrade is disabled.", group_id)  # fmt: skip
            return False
        if group.num_members - 1 > self.config.classic_group_max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group "
                     "size is greater than classic group max size.", group_id)  # fmt: skip
            return False
        return True

    def validate_online_downgrade_with_replaced_member(
        self, group: ConsumerGroup, replaced_member_id: str
    ) -> bool:
        """``validateOnlineDowngradeWithReplacedMemberId``."""
        group_id = group.group_id
        if not group.all_members_use_classic_protocol_except(replaced_member_id):
            return False
        if not self.config.downgrade_enabled:
            log.info("Cannot downgrade consumer group %s to classic group because the online "
                     "downgrade is disabled.", group_id)  # fmt: skip
            return False
        if group.num_members > self.config.classic_group_max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group "
                     "size is greater than classic group max size.", group_id)  # fmt: skip
            return False
        return True

    def convert_to_classic_group(
        self,
        group: ConsumerGroup,
        leaving_member_id: str,
        joining: ConsumerGroupMember | None,
        records: list[Record],
    ) -> ClassicGroup:
        """``convertToClassicGroup``: the consumer group's tombstones (the joining member's id
        in place of the member it replaces), then the classic group's GroupMetadata record;
        returns the classic group, installed by :meth:`write_classic_conversion`."""
        group_id = group.group_id
        if joining is None:
            records.extend(group_tombstones(group_id, group.members))
        else:
            records.extend(
                group_tombstones(
                    group_id,
                    [joining.member_id if m == leaving_member_id else m for m in group.members],
                )
            )
        try:
            classic = self._classic_group_from(group, leaving_member_id, joining)
        except (ConsumerProtocolError, ValueError) as exc:
            log.warning("Cannot downgrade the consumer group %s: fail to parse the Consumer "
                        "Protocol consumer: %s", group_id, exc)  # fmt: skip
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot downgrade the classic group {group_id}: {exc}.",
            ) from exc
        assignments = {m.member_id: m.assignment for m in classic.members.values()}
        records.append(group_metadata_record(classic, assignments))
        return classic

    def _classic_group_from(
        self, group: ConsumerGroup, leaving_member_id: str, joining: ConsumerGroupMember | None
    ) -> ClassicGroup:
        """``ClassicGroup.fromConsumerGroup``: Stable at the group epoch, each member's
        assignment its target assignment in the consumer protocol version it speaks."""
        now = self.time_ms()
        classic = ClassicGroup(
            group.group_id,
            GroupState.STABLE,
            self.time_ms,
            generation_id=group.group_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            current_state_timestamp=now,
        )
        members = [m for m in group.members.values() if m.member_id != leaving_member_id]
        if joining is not None:
            members.append(joining)
        for m in members:
            classic_metadata = m.classic_member_metadata
            assert classic_metadata is not None
            classic.add(
                ClassicGroupMember(
                    m.member_id,
                    group_instance_id=m.instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=classic_metadata.session_timeout_ms,
                    protocol_type=CONSUMER_PROTOCOL_TYPE,
                    supported_protocols=classic_metadata.supported_protocols,
                )
            )
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for cm in classic.members.values():
            source = cm.member_id
            if joining is not None and source == joining.member_id:
                source = leaving_member_id  # the joining static member takes its place
            version = deserialize_version(cm.metadata(classic.protocol_name))
            cm.assignment = encode_assignment(
                self.to_topic_partitions(group.target_assignment_of(source)), version
            )
        return classic

    def write_classic_conversion(
        self,
        group: ConsumerGroup,
        classic: ClassicGroup,
        records: list[Record],
        response: T,
        on_error: Callable[[ErrorCode], T],
        *,
        rebalance: bool = True,
    ) -> DelayedReply[T]:
        """Write a downgrade: the classic group replaces the consumer group at once (its
        members' sessions running, a rebalance prepared unless a static member replaced
        another); a failed write brings the consumer group back."""
        group_id = group.group_id
        snapshot = group.copy()
        ops = self.classic
        assert ops is not None

        def install() -> None:
            self.remove_group(group_id)
            ops.groups[group_id] = classic
            for cm in list(classic.members.values()):
                ops.reschedule_heartbeat(classic, cm)
            if rebalance:
                ops.prepare_rebalance(
                    classic, f"Downgrade group {group_id} from consumer to classic."
                )
            log.info("[GroupId %s] Converted the consumer group to a classic group with %d "
                     "members.", group_id, classic.num_members)  # fmt: skip

        def revert() -> None:
            if ops.groups.get(group_id) is classic:
                ops.remove_group(group_id)
            if group_id not in self.groups:
                self.groups[group_id] = snapshot
                snapshot.state = ConsumerGroupState.EMPTY  # derived again below
                snapshot.maybe_update_group_state()
                for m in snapshot.members.values():
                    meta = m.classic_member_metadata
                    timeout = None if meta is None else meta.session_timeout_ms
                    self.schedule_session_timeout(group_id, m.member_id, timeout)

        return self.write_then(
            group_id, records, response, on_error, apply=install, on_revert=revert
        )

    def restore_classic_group(
        self, classic: ClassicGroup, state: tuple[GroupState, GroupState]
    ) -> None:
        """An upgrade whose write failed: the classic group comes back as it was."""
        ops = self.classic
        group_id = classic.group_id
        if ops is None or group_id in self.groups or group_id in ops.groups:
            return
        classic.state, classic.previous_state = state
        ops.groups[group_id] = classic
        for cm in list(classic.members.values()):
            ops.reschedule_heartbeat(classic, cm)

    # ---- loading -----------------------------------------------------------------------------

    def on_loaded(self) -> None:
        """``onLoaded``: every member must heartbeat within its session timeout; one that
        was revoking must finish within its rebalance timeout."""
        for group_id, group in self.groups.items():
            log.info("Loaded consumer group %s with %d members.", group_id, group.num_members)
            # no request's ACLs here: the next refresh resolves them for its member
            self.refresh_regexes(group, None, None)
            for member_id, member in group.members.items():
                self.schedule_session_timeout(group_id, member_id)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self.schedule_rebalance_timeout(
                        group_id, member_id, member.member_epoch, member.rebalance_timeout_ms
                    )

    # ---- describing --------------------------------------------------------------------------

    def describe(self, group_id: str) -> ConsumerGroupDescribeResponse.DescribedGroup:
        """``ConsumerGroup.asDescribedGroup``; GROUP_ID_NOT_FOUND for another group."""
        group = self.groups.get(group_id)
        if group is None:
            return ConsumerGroupDescribeResponse.DescribedGroup(
                group_id=group_id,
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} not found.",
            )
        return ConsumerGroupDescribeResponse.DescribedGroup(
            group_id=group_id,
            group_state=str(group.state),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.preferred_server_assignor() or self.default_assignor,
            members=[
                ConsumerGroupDescribeResponse.Member(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=sorted(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex or None,
                    assignment=self._described(m.assigned_partitions),
                    target_assignment=self._described(group.target_assignment_of(m.member_id)),
                    member_type=CLASSIC_MEMBER_TYPE
                    if m.uses_classic_protocol
                    else CONSUMER_MEMBER_TYPE,
                )
                for m in group.members.values()
            ],
        )

    def _described(self, assignment: Assignment) -> ConsumerGroupDescribeResponse.Assignment:
        topics = []
        for topic_id, partitions in assignment.items():
            name = self.topics.topic_name(topic_id)
            if name is not None:
                topics.append(
                    ConsumerGroupDescribeResponse.TopicPartitions(
                        topic_id=topic_id, topic_name=name, partitions=sorted(partitions)
                    )
                )
        return ConsumerGroupDescribeResponse.Assignment(topic_partitions=topics)


def _or_error(response: T, code: ErrorCode) -> T:
    """A fencing answers the member's leave with the write's error; a timer's has none."""
    return response if response is None else error_response(code)  # type: ignore[return-value]


def error_response(code: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    """``ConsumerGroupHeartbeatRequest.getErrorResponse``."""
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
