"""OffsetCommit (key 8), versions 0-9.

Behaviour (``KafkaApis.handleOffsetCommitRequest``, ``OffsetMetadataManager.commitOffset``):
- Partitions of topics or partitions that do not exist get
  UNKNOWN_TOPIC_OR_PARTITION; the others go to the group's coordinator shard.
- A commit from a member is checked against the group (UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while the
  group completes a rebalance); a commit with generation -1 and no member is
  a simple commit (``assign()`` consumers), accepted while the group is empty.
- Metadata longer than offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE.
- The answer comes once the records are appended and, with
  offsets.commit.required.acks=-1, durable (as an acks=all produce);
  a write that fails maps as Kafka maps it (COORDINATOR_NOT_AVAILABLE,
  NOT_COORDINATOR, UNKNOWN_SERVER_ERROR).

Version notes: v0 (Kafka stores it in ZooKeeper, and a KRaft broker refuses
it) is stored like v1 here (docs/deviations.md). v1: per-partition
commit_timestamp. v2-4: retention_time_ms (the offset expires that long
after the commit). v3+ throttle_time_ms. v6+ committed_leader_epoch.
v7+ group_instance_id. v8+ flexible. v9: an unknown group with a
generation is GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION.
"""

from __future__ import annotations

from broker.coordinator.group.offsets import commit_error_response
from broker.coordinator.group.reply import Reply as GroupReply
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.data import Data
from broker.protocol.messages import OffsetCommitRequest, OffsetCommitResponse


class OffsetCommitHandler(RequestHandler):
    API_KEY = 8
    MIN_VERSION = 0
    MAX_VERSION = 9

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        rm = self.broker.replica_manager
        valid = []
        unknown: dict[str, list[int]] = {}
        for topic in request.topics:
            count = rm.partition_count(topic.name)
            known = [
                p for p in topic.partitions if count is not None and 0 <= p.partition_index < count
            ]
            missing = [p.partition_index for p in topic.partitions if p not in known]
            if missing:
                unknown[topic.name] = missing
            if known:
                valid.append(
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=topic.name, partitions=known)
                )
        if not valid:
            return self._answer(ctx, request, None, unknown)
        try:
            groups = coordinator(self.broker)
        except KafkaError as exc:
            return self._answer(ctx, request, commit_error_response(valid, exc.code), unknown)
        reply = groups.commit_offsets(request, ctx.header.api_version, valid)
        if reply.done:
            return self._answer(ctx, request, reply.value, unknown)
        return self._parked(ctx, request, reply, unknown)

    async def _parked(
        self,
        ctx: RequestContext,
        request: Data,
        reply: GroupReply[Data],
        unknown: dict[str, list[int]],
    ) -> Data:
        return self._answer(ctx, request, await reply, unknown)

    @staticmethod
    def _answer(
        ctx: RequestContext, request: Data, committed: Data | None, unknown: dict[str, list[int]]
    ) -> Data:
        """The response in the request's topic order: unknown partitions first, as
        ``OffsetCommitResponse.Builder`` adds them before merging the coordinator's."""
        codes: dict[tuple[str, int], int] = {}
        for topic in committed.topics if committed is not None else []:
            for p in topic.partitions:
                codes[(topic.name, p.partition_index)] = p.error_code
        topics = []
        for topic in request.topics:
            missing = unknown.get(topic.name, [])
            partitions = [
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for i in missing
            ]
            for p in topic.partitions:
                code = codes.get((topic.name, p.partition_index))
                if code is not None and p.partition_index not in missing:
                    partitions.append(
                        OffsetCommitResponse.OffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=code
                        )
                    )
            for p in partitions:
                ctx.count_error(p.error_code)
            topics.append(
                OffsetCommitResponse.OffsetCommitResponseTopic(
                    name=topic.name, partitions=partitions
                )
            )
        return OffsetCommitResponse(topics=topics)
