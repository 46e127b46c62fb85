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

from broker.coordinator.group.classic_group import ClassicGroup
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer.assignor import ConsumerGroupPartitionAssignor
from broker.coordinator.group.consumer.group import ConsumerGroup, TopicMetadata
from broker.coordinator.group.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
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
    group_epoch_record,
    member_tombstones,
    member_with_subscription,
    subscription_metadata_from,
    subscription_metadata_record,
)
from broker.coordinator.group.consumer.uniform import UniformAssignor
from broker.coordinator.group.errors import (
    GroupError,
    append_error_to_response_error,
    group_id_not_found,
)
from broker.coordinator.group.rebalance import Writer
from broker.coordinator.group.records import Record
from broker.coordinator.group.reply import Reply
from broker.coordinator.group.timer import CoordinatorTimer
from broker.errors import ErrorCode
from broker.group_records.messages import CoordinatorRecord, decode_record
from broker.protocol.data import Data
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
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


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


def _assignors(names: Iterable[str]) -> dict[str, ConsumerGroupPartitionAssignor]:
    made: dict[str, ConsumerGroupPartitionAssignor] = {}
    for name in names:
        made[name] = UniformAssignor() if name == "uniform" else RangeAssignor()
    return made


class ConsumerGroups:
    def __init__(  # noqa: PLR0917 (the shard's collaborators, as the classic manager's)
        self,
        config: GroupConfig,
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
            if name not in INTERNAL_TOPICS and pattern.fullmatch(name)
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
    ) -> Reply[T]:
        """Apply ``records`` now, write them, answer ``response`` once durable (else
        ``on_error(code)`` with Kafka's mapping of the write error)."""
        reply: Reply[T] = Reply()
        if not records:
            reply.complete(response)
            return reply
        existing = self.groups.get(group_id)
        snapshot = None if existing is None else existing.copy()
        self.apply(records)
        applied = self.groups.get(group_id)
        token = object()
        if applied is not None:
            applied.write_token = token

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.NONE:
                reply.complete(response)
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
            reply.complete(on_error(error))

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

    def schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(
            session_timeout_key(group_id, member_id),
            self.config.consumer_group_session_timeout_ms,
            lambda: self.fence_member_operation(group_id, member_id, "the member session expired."),
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
    ) -> Reply[T]:
        """``consumerGroupFenceMember`` (never a downgrade to classic: the migration policy
        is "disabled" here): the member's tombstones, the subscription metadata without it,
        and the group epoch bumped."""
        group_id = group.group_id
        records = member_tombstones(group_id, member.member_id)
        metadata = self.compute_subscription_metadata(
            group.compute_subscribed_topic_names(member, None)
        )
        if metadata != group.subscription_metadata:
            records.append(subscription_metadata_record(group_id, metadata))
        records.append(group_epoch_record(group_id, group.group_epoch + 1))
        self.meters.rebalances += 1
        self.cancel_timers(group_id, member.member_id)
        return self.write_then(group_id, records, response, lambda code: _or_error(response, code))

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

    def describe(self, group_id: str) -> Data:
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

    def _described(self, assignment: Assignment) -> Data:
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


def error_response(code: ErrorCode, message: str | None = None) -> Data:
    """``ConsumerGroupHeartbeatRequest.getErrorResponse``."""
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
