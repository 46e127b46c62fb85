"""OffsetFetch (key 9), versions 0-9.

Behaviour (``KafkaApis.handleOffsetFetchRequestFromCoordinator``,
``OffsetMetadataManager.fetchOffsets`` / ``fetchAllOffsets``):
- Authorization (``handleOffsetFetchRequestFromCoordinator``), per group:
  DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED for the group;
  then DESCRIBE on each topic: an asked-for topic the principal may not
  describe gets TOPIC_AUTHORIZATION_FAILED on its partitions (after the
  others), and the "every committed offset" form leaves such topics out.
- Per group: the committed offset, leader epoch and metadata of each listed
  partition (-1, -1, "" where none is committed), or with no topic list
  (null, v2+) every committed offset of the group. An unknown group has no
  offsets (no error). A shard still loading -> COORDINATOR_LOAD_IN_PROGRESS
  for the group.

Version notes: v0-7 ask for one group (``group_id``, ``topics``) and get
``topics`` and, from v2, a top-level error_code; before v2 a group error is
put on every listed partition (Kafka puts it on the partitions it answers,
none for an error; we list the requested ones so a v0/v1 client sees the
error: docs/deviations.md). v0 (ZooKeeper-stored in Kafka) reads the same
offsets as v1 here. v3+ throttle_time_ms. v5+ committed_leader_epoch.
v6+ flexible. v7+ require_stable (no transactions here: always stable).
v8+ batches groups. v9+ member_id / member_epoch (KIP-848): for a consumer
group a member must be known (UNKNOWN_MEMBER_ID) at its current epoch
(STALE_MEMBER_EPOCH); not checked for classic groups, as Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.coordinator.group.offsets import FetchTopic
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from broker.security.acl import AclOperation, ResourceType


class OffsetFetchHandler(RequestHandler[OffsetFetchRequest]):
    API_KEY = 9
    MIN_VERSION = 0
    MAX_VERSION = 9

    def _group(
        self,
        ctx: RequestContext,
        group_id: str,
        topics: Sequence[FetchTopic] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResponse.OffsetFetchResponseGroup:
        if not self.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            return OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
            )
        describable = self.filter_authorized(
            ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in topics or [])
        )
        asked = None if topics is None else [t for t in topics if t.name in describable]
        try:
            group = coordinator(self.broker).fetch_offsets(group_id, asked, member_id, member_epoch)
        except KafkaError as exc:
            return OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=group_id, error_code=exc.code
            )
        if group.error_code != ErrorCode.NONE:
            return group
        if topics is None:
            # clients may not see the offsets of topics they may not describe
            visible = self.filter_authorized(
                ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in group.topics)
            )
            group.topics = [t for t in group.topics if t.name in visible]
            return group
        for topic in topics:
            if topic.name not in describable:
                group.topics.append(
                    OffsetFetchResponse.OffsetFetchResponseTopics(
                        name=topic.name,
                        partitions=[
                            OffsetFetchResponse.OffsetFetchResponsePartitions(
                                partition_index=i,
                                committed_offset=-1,
                                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            )
                            for i in topic.partition_indexes
                        ],
                    )
                )
        return group

    def handle(self, ctx: RequestContext, request: OffsetFetchRequest) -> Reply:
        version = ctx.header.api_version
        if version >= 8:
            groups = [
                self._group(ctx, g.group_id, g.topics, g.member_id, g.member_epoch)
                for g in request.groups
            ]
            for g in groups:
                ctx.count_error(g.error_code)
            return OffsetFetchResponse(groups=groups)
        group = self._group(ctx, request.group_id, request.topics)
        ctx.count_error(group.error_code)
        code = group.error_code
        if version < 2 and code != ErrorCode.NONE:
            topics = [
                OffsetFetchResponse.OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=[
                        OffsetFetchResponse.OffsetFetchResponsePartition(
                            partition_index=i, committed_offset=-1, metadata="", error_code=code
                        )
                        for i in t.partition_indexes
                    ],
                )
                for t in request.topics or []
            ]
            return OffsetFetchResponse(topics=topics)
        return OffsetFetchResponse(
            error_code=code,
            topics=[
                OffsetFetchResponse.OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=[
                        OffsetFetchResponse.OffsetFetchResponsePartition(
                            partition_index=p.partition_index,
                            committed_offset=p.committed_offset,
                            committed_leader_epoch=p.committed_leader_epoch,
                            metadata=p.metadata,
                            error_code=p.error_code,
                        )
                        for p in t.partitions
                    ],
                )
                for t in group.topics
            ],
        )
