"""GroupCoordinator: what the handlers call (``GroupCoordinatorService`` for one broker).

It routes a group to the shard of its ``__consumer_offsets`` partition
(:func:`partition_for`), answers COORDINATOR_LOAD_IN_PROGRESS while that
shard loads, makes the checks Kafka makes before a shard sees a request
(non-empty group ids, session timeout bounds), and runs the operations that
span shards (ListGroups, DescribeGroups, DeleteGroups, expiration).

``__consumer_offsets`` is created the first time a group needs it (Kafka
creates it on the first FindCoordinator for a group) with
``offsets.topic.num.partitions`` partitions and Kafka's topic configs; a
topic that exists keeps its partition count. At start every partition of an
existing topic is loaded in slices, one after another, while the broker
serves everything else.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence

from broker.coordinator.group.classic import Caller
from broker.coordinator.group.classic_group import GroupState
from broker.coordinator.group.config import GROUP_METADATA_TOPIC_NAME, GroupConfig
from broker.coordinator.group.consumer.group import CONSUMER_GROUP_TYPE
from broker.coordinator.group.consumer.groups import ConsumerGroupMeters, TopicFilter
from broker.coordinator.group.consumer.heartbeat import validate_heartbeat
from broker.coordinator.group.errors import GroupError
from broker.coordinator.group.loader import load_partition
from broker.coordinator.group.offsets import CommitTopic, FetchTopic, commit_error_response
from broker.coordinator.group.partitioner import partition_for
from broker.coordinator.group.rebalance import GroupMeters
from broker.coordinator.group.shard import Shard, ShardState
from broker.coordinator.group.timer import CoordinatorTimer, LoopTimer
from broker.coordinator.group.writer import Durability, group_record_writer
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.partition.replica_manager import ReplicaManager
from broker.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

EXPIRATION_KEY = "expire-group-metadata"
CLASSIC_GROUP_TYPE = "classic"


class BrokerTopics:
    """The broker's topics as the consumer groups see them (Kafka's ``TopicsImage``)."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self._rm = replica_manager
        self._names: dict[uuid.UUID, str] = {}
        self._names_version = -1

    @property
    def version(self) -> int:
        return self._rm.topics_version

    def topic_id(self, name: str) -> uuid.UUID | None:
        raw = self._rm.log_manager.topic_id(name)
        return None if raw is None else uuid.UUID(bytes=raw)

    def partition_count(self, name: str) -> int | None:
        return self._rm.partition_count(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        if self._names_version != self._rm.topics_version:
            self._names = {}
            for name in self._rm.topics():
                found = self.topic_id(name)
                if found is not None:
                    self._names[found] = name
            self._names_version = self._rm.topics_version
        return self._names.get(topic_id)

    def topic_names(self) -> Iterable[str]:
        return self._rm.topics().keys()


class GroupCoordinator:
    def __init__(
        self,
        config: GroupConfig,
        replica_manager: ReplicaManager,
        durability: Durability,
        time_ms: Callable[[], int],
        timer: CoordinatorTimer | None = None,
    ) -> None:
        self.config = config
        self.replica_manager = replica_manager
        self.time_ms = time_ms
        self.timer: CoordinatorTimer = timer if timer is not None else LoopTimer()
        self.writer = group_record_writer(replica_manager, durability, config, time_ms)
        self.meters = GroupMeters()
        self.consumer_meters = ConsumerGroupMeters()
        self.topics = BrokerTopics(replica_manager)
        self.shards: dict[int, Shard] = {}
        self.num_partitions = config.offsets_topic_num_partitions
        self._load_task: asyncio.Task[None] | None = None

    # ---- start and stop ----------------------------------------------------------------------

    def _new_shard(self, index: int) -> Shard:
        return Shard(
            index,
            self.config,
            timer=self.timer,
            time_ms=self.time_ms,
            writer=self.writer.write,
            meters=self.meters,
            topics=self.topics,
            consumer_meters=self.consumer_meters,
            max_batch_bytes=lambda: self.writer.max_batch_bytes(index),
        )

    def startup(self) -> None:
        """Load an existing ``__consumer_offsets`` in the background (on the running loop)."""
        self._maybe_load_existing()
        self._schedule_expiration()

    def _maybe_load_existing(self) -> bool:
        """Shards for a ``__consumer_offsets`` that exists and has none yet, loading."""
        count = self.replica_manager.partition_count(GROUP_METADATA_TOPIC_NAME)
        if count is None or self.shards:
            return False
        self.num_partitions = count
        for index in range(count):
            self.shards[index] = self._new_shard(index)
        self._load_task = asyncio.ensure_future(self._load_all())
        return True

    async def _load_all(self) -> None:
        for index, shard in sorted(self.shards.items()):
            partition = self.replica_manager.get_partition(GROUP_METADATA_TOPIC_NAME, index)
            if partition is None:
                shard.on_loaded()
                continue
            started = self.time_ms()
            try:
                count = await load_partition(
                    partition.log, shard.replay, self.config.offsets_load_buffer_size
                )
            except KafkaError as exc:
                log.error("loading %s-%d failed: %s", GROUP_METADATA_TOPIC_NAME, index, exc)
                shard.state = ShardState.FAILED
                continue
            shard.on_loaded()
            if count:
                log.info(
                    "Finished loading offsets and group metadata from %s-%d in %d ms: %d records",
                    GROUP_METADATA_TOPIC_NAME,
                    index,
                    self.time_ms() - started,
                    count,
                )

    async def wait_loaded(self) -> None:
        if self._load_task is not None:
            await self._load_task

    async def shutdown(self) -> None:
        if self._load_task is not None and not self._load_task.done():
            self._load_task.cancel()
        self.timer.cancel(EXPIRATION_KEY)
        for shard in self.shards.values():
            for group_id in list(shard.classic.groups):
                group = shard.classic.groups[group_id]
                group.complete_all_joins(ErrorCode.NOT_COORDINATOR)
                group.complete_all_syncs(ErrorCode.NOT_COORDINATOR)
        await self.writer.drain()
        cancel_all = getattr(self.timer, "cancel_all", None)
        if cancel_all is not None:
            cancel_all()

    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` if it does not exist yet (its shards start empty)."""
        rm = self.replica_manager
        if rm.partition_count(GROUP_METADATA_TOPIC_NAME) is not None:
            # created before this coordinator knew it (a start without startup(), an
            # admin's CreateTopics): loaded now, COORDINATOR_LOAD_IN_PROGRESS meanwhile
            self._maybe_load_existing()
            return
        rm.create_topic(
            GROUP_METADATA_TOPIC_NAME,
            self.config.offsets_topic_num_partitions,
            self.config.topic_configs(),
        )
        self.num_partitions = self.config.offsets_topic_num_partitions
        for index in range(self.num_partitions):
            shard = self._new_shard(index)
            shard.on_loaded()
            self.shards[index] = shard
        log.info("Created %s with %d partitions", GROUP_METADATA_TOPIC_NAME, self.num_partitions)

    # ---- routing ------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def shard_of(self, group_id: str) -> Shard:
        """The active shard of ``group_id``: COORDINATOR_LOAD_IN_PROGRESS while it loads."""
        self.ensure_topic()
        shard = self.shards[self.partition_for(group_id)]
        if shard.state is ShardState.LOADING:
            raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if shard.state is ShardState.FAILED:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return shard

    def active_shards(self) -> Iterator[Shard]:
        return (s for _, s in sorted(self.shards.items()) if s.active)

    def loading(self) -> bool:
        return any(s.state is ShardState.LOADING for s in self.shards.values())

    # ---- the classic protocol -----------------------------------------------------------------

    def join_group(
        self, caller: Caller, request: JoinGroupRequest
    ) -> DelayedReply[JoinGroupResponse]:
        if not request.group_id:
            return DelayedReply.of(
                JoinGroupResponse(
                    member_id=request.member_id, error_code=ErrorCode.INVALID_GROUP_ID
                )
            )
        timeout = request.session_timeout_ms
        if not (
            self.config.classic_group_min_session_timeout_ms
            <= timeout
            <= self.config.classic_group_max_session_timeout_ms
        ):
            return DelayedReply.of(
                JoinGroupResponse(
                    member_id=request.member_id, error_code=ErrorCode.INVALID_SESSION_TIMEOUT
                )
            )
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(
                JoinGroupResponse(member_id=request.member_id, error_code=exc.code)
            )
        return shard.classic.join(caller, request)

    def sync_group(
        self, caller: Caller, request: SyncGroupRequest
    ) -> DelayedReply[SyncGroupResponse]:
        if not request.group_id:
            return DelayedReply.of(SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID))
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(SyncGroupResponse(error_code=exc.code))
        return shard.classic.sync(caller, request)

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        if not request.group_id:
            return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            if exc.code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                # GroupCoordinatorService.heartbeat: "still loading, so blindly respond"
                return HeartbeatResponse(error_code=ErrorCode.NONE)
            return HeartbeatResponse(error_code=exc.code)
        return shard.classic.heartbeat(request)

    def leave_group(self, request: LeaveGroupRequest) -> DelayedReply[LeaveGroupResponse]:
        """``request.members`` must be set (v0-2 normalized by the handler)."""
        if not request.group_id:
            return DelayedReply.of(LeaveGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID))
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(LeaveGroupResponse(error_code=exc.code))
        return shard.classic.leave(request)

    # ---- the consumer protocol (KIP-848) -------------------------------------------------------

    def consumer_group_heartbeat(
        self,
        caller: Caller,
        request: ConsumerGroupHeartbeatRequest,
        authorized_topics: TopicFilter | None = None,
    ) -> DelayedReply[ConsumerGroupHeartbeatResponse]:
        """``GroupCoordinatorService.consumerGroupHeartbeat``: the request's checks, then
        the group's shard (``authorized_topics``: the caller's topic ACLs, for regexes)."""
        try:
            validate_heartbeat(request, caller.api_version, self.config.consumer_group_assignors)
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(
                ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=str(exc) or None)
            )
        return shard.consumer.heartbeat(
            caller.client_id, caller.client_host, request, authorized_topics
        )

    def consumer_group_describe(
        self, group_id: str
    ) -> ConsumerGroupDescribeResponse.DescribedGroup:
        """One group of ConsumerGroupDescribe; GROUP_ID_NOT_FOUND unless a consumer group."""
        if not group_id:
            return ConsumerGroupDescribeResponse.DescribedGroup(
                group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID
            )
        try:
            shard = self.shard_of(group_id)
        except KafkaError as exc:
            return ConsumerGroupDescribeResponse.DescribedGroup(
                group_id=group_id, error_code=exc.code
            )
        return shard.consumer.describe(group_id)

    # ---- offsets ------------------------------------------------------------------------------

    def commit_offsets(
        self, request: OffsetCommitRequest, api_version: int, topics: list[CommitTopic]
    ) -> DelayedReply[OffsetCommitResponse]:
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(commit_error_response(topics, exc.code))
        return shard.offsets.commit(request, api_version, topics)

    def fetch_offsets(
        self,
        group_id: str,
        topics: Sequence[FetchTopic] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse.OffsetFetchResponseGroup:
        """One group of OffsetFetch (``topics`` None: every committed offset); a member of
        a consumer group is checked by its epoch (v9+)."""
        try:
            shard = self.shard_of(group_id)
        except KafkaError as exc:
            return OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=group_id, error_code=exc.code
            )
        if topics is None:
            return shard.offsets.fetch_all(group_id, member_id, member_epoch)
        return shard.offsets.fetch(group_id, topics, member_id, member_epoch)

    def delete_offsets(self, request: OffsetDeleteRequest) -> DelayedReply[OffsetDeleteResponse]:
        if not request.group_id:
            return DelayedReply.of(OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID))
        try:
            shard = self.shard_of(request.group_id)
        except KafkaError as exc:
            return DelayedReply.of(OffsetDeleteResponse(error_code=exc.code))
        return shard.offsets.delete(request)

    # ---- administration -----------------------------------------------------------------------

    def list_groups(self, states: list[str], types: list[str]) -> ListGroupsResponse:
        """``listGroups``: COORDINATOR_LOAD_IN_PROGRESS while any shard loads (Kafka
        fails the whole request when one shard does)."""
        if self.loading():
            return ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        wanted_states = {s.lower().strip() for s in states}
        wanted_types = {t.lower().strip() for t in types}
        groups = []
        for shard in self.active_shards():
            listed = [
                (g.group_id, g.protocol_type or "", str(g.state), CLASSIC_GROUP_TYPE)
                for g in shard.classic.groups.values()
            ] + [
                (g.group_id, g.protocol_type, str(g.state), CONSUMER_GROUP_TYPE)
                for g in shard.consumer.groups.values()
            ]
            for group_id, protocol_type, state, kind in listed:
                # an unknown state or type matches nothing (Kafka's listGroups)
                if wanted_states and state.lower() not in wanted_states:
                    continue
                if wanted_types and kind not in wanted_types:
                    continue
                groups.append(
                    ListGroupsResponse.ListedGroup(
                        group_id=group_id,
                        protocol_type=protocol_type,
                        group_state=state,
                        group_type=kind,
                    )
                )
        return ListGroupsResponse(groups=groups)

    def describe_group(self, group_id: str) -> DescribeGroupsResponse.DescribedGroup:
        """``describeGroups`` for one group; an unknown one is described as Dead."""
        try:
            shard = self.shard_of(group_id)
        except KafkaError as exc:
            return DescribeGroupsResponse.DescribedGroup(group_id=group_id, error_code=exc.code)
        group = shard.classic.groups.get(group_id)
        if group is None:
            return DescribeGroupsResponse.DescribedGroup(
                group_id=group_id, group_state=str(GroupState.DEAD)
            )
        stable = group.is_in_state(GroupState.STABLE)
        members = [
            DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment,
            )
            for m in group.members.values()
        ]
        return DescribeGroupsResponse.DescribedGroup(
            group_id=group_id,
            group_state=str(group.state),
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members,
        )

    def delete_group(self, group_id: str) -> DelayedReply[ErrorCode]:
        try:
            shard = self.shard_of(group_id)
        except KafkaError as exc:
            return DelayedReply.of(exc.code)
        return shard.offsets.delete_group(group_id)

    # ---- expiration ---------------------------------------------------------------------------

    def _schedule_expiration(self) -> None:
        self.timer.schedule(
            EXPIRATION_KEY, self.config.offsets_retention_check_interval_ms, self._cleanup_tick
        )

    def _cleanup_tick(self) -> None:
        self.cleanup()

    def cleanup(self) -> int:
        """Remove expired offsets and empty groups on every shard; reschedules itself."""
        try:
            return sum(shard.offsets.cleanup_expired() for shard in self.active_shards())
        finally:
            self._schedule_expiration()

    def on_topic_deleted(self, topic: str) -> None:
        """Committed offsets of a deleted topic go (``onPartitionsDeleted``)."""
        for shard in self.active_shards():
            shard.offsets.remove_topic(topic)

    # ---- numbers for the metrics --------------------------------------------------------------

    def groups_by_state(self) -> dict[tuple[str, str], int]:
        """(group type, state) -> groups, every state of both types present."""
        counts = {(CLASSIC_GROUP_TYPE, str(s)): 0 for s in GroupState if s is not GroupState.DEAD}
        for shard in self.shards.values():
            for group in shard.classic.groups.values():
                key = (CLASSIC_GROUP_TYPE, str(group.state))
                if key in counts:
                    counts[key] += 1
        consumer_states = [shard.consumer.states() for shard in self.shards.values()]
        for state in ("Empty", "Assigning", "Reconciling", "Stable"):
            counts[(CONSUMER_GROUP_TYPE, state)] = sum(c.get(state, 0) for c in consumer_states)
        return counts

    def num_members(self) -> dict[str, int]:
        """Group type -> members."""
        shards = self.shards.values()
        return {
            CLASSIC_GROUP_TYPE: sum(
                g.num_members for s in shards for g in s.classic.groups.values()
            ),
            CONSUMER_GROUP_TYPE: sum(
                g.num_members for s in shards for g in s.consumer.groups.values()
            ),
        }

    def rebalances(self) -> dict[str, int]:
        """Group type -> rebalances (classic: completed; consumer: group epoch bumps)."""
        return {
            CLASSIC_GROUP_TYPE: self.meters.completed_rebalances,
            CONSUMER_GROUP_TYPE: self.consumer_meters.rebalances,
        }

    def committed_offsets(self) -> Iterator[tuple[str, str, int, int]]:
        """(group, topic, partition, committed offset) of every committed offset."""
        for shard in self.shards.values():
            for group_id, topics in shard.offsets.offsets.items():
                for topic, partitions in topics.items():
                    for partition, om in partitions.items():
                        yield group_id, topic, partition, om.committed_offset

    def offset_commits(self) -> int:
        return sum(s.offsets.commits for s in self.shards.values())
