"""Committed offsets: commit, fetch, delete and expiration (``OffsetMetadataManager``).

Offsets live per group, topic and partition. A commit is validated against
the group (a classic one: generation, member, static instance; a consumer
group: member and member epoch, STALE_MEMBER_EPOCH), written as OffsetCommit
records, and becomes visible (and is answered) once the write is done:
appended, and durable when ``offsets.commit.required.acks`` is -1. A
commit with no generation (-1) and no member is a *simple* commit (an
``assign()`` consumer or an admin tool): it creates an empty group with no
protocol type when there is none, and is accepted while the group is empty.

Expiration (``cleanupExpiredOffsets``): an offset of a topic the group is not
subscribed to expires ``offsets.retention.minutes`` after its base time: the
moment the group became empty, or for a simple consumer's group and a Stable
consumer group the commit time; an offset committed with an explicit
retention (OffsetCommit v2-v4) expires at its own expire timestamp. A group
whose offsets all expired and that is empty is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

from broker.coordinator.group.classic import ClassicGroupManager
from broker.coordinator.group.classic_group import ClassicGroup, GroupState
from broker.coordinator.group.consumer.group import ConsumerGroup
from broker.coordinator.group.consumer.heartbeat import ConsumerGroupManager
from broker.coordinator.group.consumer.records import group_tombstones
from broker.coordinator.group.errors import (
    GroupError,
    append_error_to_response_error,
    group_id_not_found,
)
from broker.coordinator.group.rebalance import Writer
from broker.coordinator.group.records import (
    Record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)

log = logging.getLogger(__name__)

#: the topics of an OffsetCommit request
CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
#: the topics of an OffsetFetch request: v0-7 at the top, v8+ per group (same fields)
FetchTopic = (
    OffsetFetchRequest.OffsetFetchRequestTopic | OffsetFetchRequest.OffsetFetchRequestTopics
)

INVALID_OFFSET = -1
NO_LEADER_EPOCH = -1


class OffsetAndMetadata(NamedTuple):
    committed_offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    #: -1: none (the retention of the group applies)
    expire_timestamp_ms: int = -1
    #: offset of the record in __consumer_offsets (-1 before it is known)
    record_offset: int = -1


Offsets = dict[str, dict[str, dict[int, OffsetAndMetadata]]]
#: a group of either protocol (one id namespace)
Group = ClassicGroup | ConsumerGroup


class OffsetManager:
    def __init__(
        self,
        groups: ClassicGroupManager,
        consumer: ConsumerGroupManager,
        *,
        write: Writer,
        time_ms: Callable[[], int],
        offset_metadata_max_size: int,
        offsets_retention_ms: int,
    ) -> None:
        self.groups = groups
        self.consumer = consumer
        self.write = write
        self.time_ms = time_ms
        self.offset_metadata_max_size = offset_metadata_max_size
        self.offsets_retention_ms = offsets_retention_ms
        self.offsets: Offsets = {}
        #: commits written so far (a metric)
        self.commits = 0
        self.expired = 0

    # ---- lookups ------------------------------------------------------------------------------

    def group(self, group_id: str) -> Group | None:
        """The group of either protocol with that id."""
        found: Group | None = self.groups.groups.get(group_id)
        return found if found is not None else self.consumer.groups.get(group_id)

    def _remove_group(self, group_id: str) -> None:
        if group_id in self.consumer.groups:
            self.consumer.remove_group(group_id)
        else:
            self.groups.remove_group(group_id)

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self.offsets.get(group_id, {}).get(topic, {}).get(partition)

    def num_offsets(self) -> int:
        return sum(len(p) for topics in self.offsets.values() for p in topics.values())

    def _put(self, group_id: str, topic: str, partition: int, value: OffsetAndMetadata) -> None:
        self.offsets.setdefault(group_id, {}).setdefault(topic, {})[partition] = value

    def _remove(self, group_id: str, topic: str, partition: int) -> None:
        topics = self.offsets.get(group_id)
        if topics is None:
            return
        partitions = topics.get(topic)
        if partitions is None:
            return
        partitions.pop(partition, None)
        if not partitions:
            del topics[topic]
        if not topics:
            del self.offsets[group_id]

    # ---- OffsetCommit -------------------------------------------------------------------------

    def _validate_commit(self, request: OffsetCommitRequest, api_version: int) -> Group:
        """``OffsetMetadataManager.validateOffsetCommit``."""
        epoch = request.generation_id_or_member_epoch
        group = self.group(request.group_id)
        if group is None:
            if epoch < 0:
                return self.groups.new_group(request.group_id)  # a simple group
            if api_version >= 9:
                raise group_id_not_found(request.group_id)
            raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        if isinstance(group, ConsumerGroup):
            try:
                group.validate_offset_commit(
                    request.member_id, request.group_instance_id, epoch, api_version
                )
            except GroupError as exc:
                # STALE_MEMBER_EPOCH is the new protocol's, which commits with v9+
                if exc.code is ErrorCode.STALE_MEMBER_EPOCH and api_version < 9:
                    raise GroupError(ErrorCode.UNSUPPORTED_VERSION) from exc
                raise
            return group
        group.validate_offset_commit(request.member_id, request.group_instance_id, epoch)
        return group

    def commit(
        self, request: OffsetCommitRequest, api_version: int, topics: list[CommitTopic]
    ) -> DelayedReply[OffsetCommitResponse]:
        """``commitOffset`` for the partitions in ``topics`` (the existing ones of the
        request; the handler answers the unknown ones)."""
        reply: DelayedReply[OffsetCommitResponse] = DelayedReply()
        try:
            group = self._validate_commit(request, api_version)
        except KafkaError as exc:
            reply.resolve(commit_error_response(topics, exc.code))
            return reply
        if isinstance(group, ClassicGroup) and group.state in (
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
        ):
            member = group.members.get(request.member_id)
            if member is not None:
                self.groups.reschedule_heartbeat(group, member)
        now = self.time_ms()
        retention = getattr(request, "retention_time_ms", -1)
        expire = -1 if retention == -1 else now + retention
        responses = []
        records: list[Record] = []
        pending: list[tuple[str, int, OffsetAndMetadata]] = []
        group_id = request.group_id
        for topic in topics:
            partitions = []
            for p in topic.partitions:
                metadata = p.committed_metadata
                if metadata is not None and len(metadata) > self.offset_metadata_max_size:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                else:
                    code = ErrorCode.NONE
                    commit_ts = p.commit_timestamp if p.commit_timestamp != -1 else now
                    value = OffsetAndMetadata(
                        p.committed_offset,
                        p.committed_leader_epoch,
                        metadata or "",
                        commit_ts,
                        expire,
                    )
                    records.append(
                        offset_commit_record(
                            group_id,
                            topic.name,
                            p.partition_index,
                            offset=value.committed_offset,
                            leader_epoch=value.leader_epoch,
                            metadata=value.metadata,
                            commit_timestamp=commit_ts,
                            expire_timestamp=expire,
                        )
                    )
                    pending.append((topic.name, p.partition_index, value))
                partitions.append(
                    OffsetCommitResponse.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            responses.append(
                OffsetCommitResponse.OffsetCommitResponseTopic(
                    name=topic.name, partitions=partitions
                )
            )
        response = OffsetCommitResponse(topics=responses)
        if not records:
            reply.resolve(response)
            return reply

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.NONE:
                reply.resolve(commit_error_response(topics, append_error_to_response_error(code)))
                return
            for topic_name, partition, value in pending:
                self._put(group_id, topic_name, partition, value)
            self.commits += len(pending)
            reply.resolve(response)

        self.write(records, written)
        return reply

    # ---- OffsetFetch --------------------------------------------------------------------------

    def _fetchable(self, group_id: str, member_id: str | None, member_epoch: int) -> bool:
        """``validateOffsetFetch``: False for an unknown group (its partitions answer -1);
        a consumer group checks the member and its epoch (GroupError)."""
        group = self.group(group_id)
        if group is None:
            return False
        if isinstance(group, ConsumerGroup):
            group.validate_offset_fetch(member_id, member_epoch)
            return True
        return group.state is not GroupState.DEAD

    def fetch(
        self,
        group_id: str,
        topics: Sequence[FetchTopic],
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse.OffsetFetchResponseGroup:
        """``fetchOffsets`` for the listed partitions: -1 where nothing is committed."""
        try:
            fetchable = self._fetchable(group_id, member_id, member_epoch)
        except KafkaError as exc:
            return OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=group_id, error_code=exc.code
            )
        known = self.offsets.get(group_id, {}) if fetchable else {}
        out = []
        for topic in topics:
            committed = known.get(topic.name, {})
            partitions = []
            for index in topic.partition_indexes:
                om = committed.get(index)
                partitions.append(_fetched(index, om))
            out.append(
                OffsetFetchResponse.OffsetFetchResponseTopics(
                    name=topic.name, partitions=partitions
                )
            )
        return OffsetFetchResponse.OffsetFetchResponseGroup(group_id=group_id, topics=out)

    def fetch_all(
        self, group_id: str, member_id: str | None = None, member_epoch: int = -1
    ) -> OffsetFetchResponse.OffsetFetchResponseGroup:
        """``fetchAllOffsets``: every committed offset of the group."""
        out = []
        try:
            fetchable = self._fetchable(group_id, member_id, member_epoch)
        except KafkaError as exc:
            return OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=group_id, error_code=exc.code
            )
        if fetchable:
            for topic, partitions in self.offsets.get(group_id, {}).items():
                out.append(
                    OffsetFetchResponse.OffsetFetchResponseTopics(
                        name=topic,
                        partitions=[_fetched(p, om) for p, om in partitions.items()],
                    )
                )
        return OffsetFetchResponse.OffsetFetchResponseGroup(group_id=group_id, topics=out)

    # ---- OffsetDelete / DeleteGroups ----------------------------------------------------------

    def delete(self, request: OffsetDeleteRequest) -> DelayedReply[OffsetDeleteResponse]:
        """``deleteOffsets``: tombstones for the committed offsets of unsubscribed topics."""
        reply: DelayedReply[OffsetDeleteResponse] = DelayedReply()
        group = self.group(request.group_id)
        try:
            if group is None:
                raise group_id_not_found(request.group_id)
            group.validate_offset_delete()
        except KafkaError as exc:
            reply.resolve(OffsetDeleteResponse(error_code=exc.code))
            return reply
        group_id = request.group_id
        records: list[Record] = []
        removed: list[tuple[str, int]] = []
        topics = []
        for topic in request.topics:
            subscribed = group.is_subscribed_to_topic(topic.name)
            partitions = []
            for p in topic.partitions:
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else ErrorCode.NONE
                if not subscribed and self.get(group_id, topic.name, p.partition_index):
                    records.append(offset_tombstone(group_id, topic.name, p.partition_index))
                    removed.append((topic.name, p.partition_index))
                partitions.append(
                    OffsetDeleteResponse.OffsetDeleteResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            topics.append(
                OffsetDeleteResponse.OffsetDeleteResponseTopic(
                    name=topic.name, partitions=partitions
                )
            )
        response = OffsetDeleteResponse(topics=topics)
        if not records:
            reply.resolve(response)
            return reply

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.NONE:
                reply.resolve(OffsetDeleteResponse(error_code=append_error_to_response_error(code)))
                return
            for topic_name, partition in removed:
                self._remove(group_id, topic_name, partition)
            reply.resolve(response)

        self.write(records, written)
        return reply

    def delete_group(self, group_id: str) -> DelayedReply[ErrorCode]:
        """One group of DeleteGroups: its offsets' tombstones and the group's."""
        reply: DelayedReply[ErrorCode] = DelayedReply()
        group = self.group(group_id)
        try:
            if group is None:
                raise group_id_not_found(group_id)
            group.validate_delete_group()
        except KafkaError as exc:
            reply.resolve(exc.code)
            return reply
        records = [
            offset_tombstone(group_id, topic, partition)
            for topic, partitions in self.offsets.get(group_id, {}).items()
            for partition in partitions
        ]
        records += _group_tombstones(group)

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.NONE:
                reply.resolve(append_error_to_response_error(code))
                return
            self.offsets.pop(group_id, None)
            self._remove_group(group_id)
            reply.resolve(ErrorCode.NONE)

        self.write(records, written)
        return reply

    # ---- expiration ---------------------------------------------------------------------------

    def cleanup_expired(self) -> int:
        """``cleanupGroupMetadata``: expired offsets and then empty groups; returns the
        number of tombstones written."""
        now = self.time_ms()
        records: list[Record] = []
        expired: list[tuple[str, str, int]] = []
        deleted_groups: list[str] = []
        groups: list[tuple[str, Group]] = [
            *self.groups.groups.items(),
            *self.consumer.groups.items(),
        ]
        for group_id, group in groups:
            all_expired = self._expired_offsets(group_id, group, now, records, expired)
            if all_expired and group.is_empty:
                records += _group_tombstones(group)
                deleted_groups.append(group_id)
        if not records:
            return 0

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.NONE:
                log.warning("could not write %d expiration tombstones: %s", len(records), code.name)
                return
            for group_id, topic, partition in expired:
                self._remove(group_id, topic, partition)
            self.expired += len(expired)
            for group_id in deleted_groups:
                group = self.group(group_id)
                if group is not None and group.is_empty and group_id not in self.offsets:
                    self._remove_group(group_id)

        self.write(records, written)
        return len(records)

    def _expired_offsets(
        self,
        group_id: str,
        group: Group,
        now: int,
        records: list[Record],
        expired: list[tuple[str, str, int]],
    ) -> bool:
        topics = self.offsets.get(group_id)
        if not topics:
            return True
        base = group.offset_expiration_base()
        if base is None:
            return False
        all_expired = True
        for topic, partitions in topics.items():
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for partition, om in partitions.items():
                if om.expire_timestamp_ms != -1:
                    gone = now >= om.expire_timestamp_ms
                else:
                    gone = now - base(om.commit_timestamp_ms) >= self.offsets_retention_ms
                if gone:
                    records.append(offset_tombstone(group_id, topic, partition))
                    expired.append((group_id, topic, partition))
                else:
                    all_expired = False
        return all_expired

    def remove_topic(self, topic: str) -> int:
        """``onPartitionsDeleted`` for a deleted topic: tombstones for its offsets."""
        records = [
            offset_tombstone(group_id, topic, partition)
            for group_id, topics in self.offsets.items()
            for partition in topics.get(topic, {})
        ]
        if not records:
            return 0
        owners = [g for g, topics in self.offsets.items() if topic in topics]

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.NONE:
                for group_id in owners:
                    for partition in list(self.offsets.get(group_id, {}).get(topic, {})):
                        self._remove(group_id, topic, partition)

        self.write(records, written)
        return len(records)

    # ---- loading ------------------------------------------------------------------------------

    def replay(
        self, record_offset: int, group_id: str, topic: str, partition: int,
        value: dict[str, object] | None,
    ) -> None:  # fmt: skip
        """``replay(OffsetCommitKey, OffsetCommitValue)``: last record wins, None deletes."""
        if value is None:
            self._remove(group_id, topic, partition)
            return
        if self.group(group_id) is None:
            self.groups.new_group(group_id)  # a simple group, until its own records come
        self._put(
            group_id,
            topic,
            partition,
            OffsetAndMetadata(
                int(value["offset"]),  # type: ignore[call-overload]
                int(value.get("leaderEpoch", -1)),  # type: ignore[call-overload]
                str(value["metadata"]),
                int(value["commitTimestamp"]),  # type: ignore[call-overload]
                int(value.get("expireTimestamp", -1)),  # type: ignore[call-overload]
                record_offset,
            ),
        )


def _group_tombstones(group: Group) -> list[Record]:
    """``Group.createGroupTombstoneRecords``."""
    if isinstance(group, ConsumerGroup):
        return group_tombstones(group.group_id, group.members)
    return [group_tombstone(group.group_id)]


def _fetched(
    index: int, om: OffsetAndMetadata | None
) -> OffsetFetchResponse.OffsetFetchResponsePartitions:
    if om is None:
        return OffsetFetchResponse.OffsetFetchResponsePartitions(
            partition_index=index,
            committed_offset=INVALID_OFFSET,
            committed_leader_epoch=NO_LEADER_EPOCH,
            metadata="",
        )
    return OffsetFetchResponse.OffsetFetchResponsePartitions(
        partition_index=index,
        committed_offset=om.committed_offset,
        committed_leader_epoch=om.leader_epoch,
        metadata=om.metadata,
    )


def commit_error_response(topics: list[CommitTopic], code: ErrorCode) -> OffsetCommitResponse:
    """``OffsetCommitRequest.getErrorResponse``: every partition gets ``code``."""
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponse.OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponse.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in topics
        ]
    )
