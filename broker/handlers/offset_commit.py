"""OffsetCommit (key 8), versions 0-9.

Behaviour (``KafkaApis.handleOffsetCommitRequest``, ``OffsetMetadataManager.commitOffset``):
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED on every
  partition (``getErrorResponse``); then READ on each topic, else
  TOPIC_AUTHORIZATION_FAILED on its partitions.
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

import functools

from broker.coordinator.group.offsets import commit_error_response
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from broker.security.acl import AclOperation, ResourceType


class OffsetCommitHandler(RequestHandler[OffsetCommitRequest]):
    API_KEY = 8
    MIN_VERSION = 0
    MAX_VERSION = 9

    def handle(self, ctx: RequestContext, request: OffsetCommitRequest) -> Reply:
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            refused = commit_error_response(request.topics, ErrorCode.GROUP_AUTHORIZATION_FAILED)
            for t in refused.topics:
                for p in t.partitions:
                    ctx.count_error(p.error_code)
            return refused
        readable = self.filter_authorized(
            ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
        )
        rm = self.broker.replica_manager
        valid = []
        refused_topics: dict[str, tuple[ErrorCode, list[int]]] = {}
        for topic in request.topics:
            if topic.name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                refused_topics[topic.name] = (code, [p.partition_index for p in topic.partitions])
                continue
            count = rm.partition_count(topic.name)
            known = [
                p for p in topic.partitions if count is not None and 0 <= p.partition_index < count
            ]
            missing = [p.partition_index for p in topic.partitions if p not in known]
            if missing:
                refused_topics[topic.name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, missing)
            if known:
                valid.append(
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=topic.name, partitions=known)
                )
        if not valid:
            return self._answer(ctx, request, None, refused=refused_topics)
        try:
            groups = coordinator(self.broker)
        except KafkaError as exc:
            return self._answer(
                ctx, request, commit_error_response(valid, exc.code), refused=refused_topics
            )
        reply = groups.commit_offsets(request, ctx.header.api_version, valid)
        answer = functools.partial(self._answer, ctx, request, refused=refused_topics)
        if reply.done():
            return answer(reply.value)
        return reply.then(answer)  # once the commit's record is durable

    @staticmethod
    def _answer(
        ctx: RequestContext,
        request: OffsetCommitRequest,
        committed: OffsetCommitResponse | None,
        *,
        refused: dict[str, tuple[ErrorCode, list[int]]],
    ) -> OffsetCommitResponse:
        """The response in the request's topic order: refused partitions (unauthorized
        topics, unknown partitions) first, as ``OffsetCommitResponse.Builder`` adds them
        before merging the coordinator's."""
        codes: dict[tuple[str, int], int] = {}
        for answered in committed.topics if committed is not None else []:
            for done in answered.partitions:
                codes[(answered.name, done.partition_index)] = done.error_code
        topics = []
        for topic in request.topics:
            refused_code, missing = refused.get(topic.name, (ErrorCode.NONE, []))
            partitions = [
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=i, error_code=refused_code
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
            for result in partitions:
                ctx.count_error(result.error_code)
            topics.append(
                OffsetCommitResponse.OffsetCommitResponseTopic(
                    name=topic.name, partitions=partitions
                )
            )
        return OffsetCommitResponse(topics=topics)
