"""OffsetDelete (key 47), version 0.

Behaviour (``KafkaApis.handleOffsetDeleteRequest``,
``OffsetMetadataManager.deleteOffsets``):
- Authorization: DELETE on the group, else GROUP_AUTHORIZATION_FAILED (top
  level); then READ on each topic, else TOPIC_AUTHORIZATION_FAILED on its
  partitions.
- Partitions of topics or partitions that do not exist get
  UNKNOWN_TOPIC_OR_PARTITION; the others go to the group's shard, which
  deletes their committed offsets (tombstones) unless the group is
  subscribed to the topic (GROUP_SUBSCRIBED_TO_TOPIC per partition).
  GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP for a non-empty
  group that does not use the consumer protocol: a top-level error replaces
  the per-partition answers (``OffsetDeleteResponse.Builder.merge``).
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse
from broker.security.acl import AclOperation, ResourceType

#: (topic, [(partition, error)]) answered by the handler, in request order
Refused = list[tuple[str, list[tuple[int, ErrorCode]]]]


def _count(ctx: RequestContext, response: OffsetDeleteResponse) -> OffsetDeleteResponse:
    ctx.count_error(response.error_code)
    for t in response.topics:
        for p in t.partitions:
            ctx.count_error(p.error_code)
    return response


def merge(refused: Refused, deleted: OffsetDeleteResponse) -> OffsetDeleteResponse:
    """``OffsetDeleteResponse.Builder``: the handler's partitions, then the shard's."""
    if deleted.error_code != ErrorCode.NONE or not refused:
        return deleted
    topics: dict[str, OffsetDeleteResponse.OffsetDeleteResponseTopic] = {}
    for name, partitions in refused:
        topic = topics.setdefault(name, OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name))
        topic.partitions.extend(
            OffsetDeleteResponse.OffsetDeleteResponsePartition(partition_index=i, error_code=c)
            for i, c in partitions
        )
    for new in deleted.topics:
        existing = topics.get(new.name)
        if existing is None:
            topics[new.name] = new
        else:
            existing.partitions.extend(new.partitions)
    return OffsetDeleteResponse(topics=list(topics.values()))


class OffsetDeleteHandler(RequestHandler[OffsetDeleteRequest]):
    API_KEY = 47
    MIN_VERSION = 0
    MAX_VERSION = 0

    def handle(self, ctx: RequestContext, request: OffsetDeleteRequest) -> Reply:
        if not self.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
            return _count(
                ctx, OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
            )
        readable = self.filter_authorized(
            ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
        )
        rm = self.broker.replica_manager
        refused: Refused = []
        valid = []
        for topic in request.topics:
            indexes = [p.partition_index for p in topic.partitions]
            count = rm.partition_count(topic.name)
            if topic.name not in readable:
                refused.append(
                    (topic.name, [(i, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i in indexes])
                )
            elif count is None:
                refused.append(
                    (topic.name, [(i, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for i in indexes])
                )
            else:
                missing = [i for i in indexes if not 0 <= i < count]
                if missing:
                    refused.append(
                        (topic.name, [(i, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for i in missing])
                    )
                known = [p for p in topic.partitions if 0 <= p.partition_index < count]
                if known:
                    valid.append(
                        OffsetDeleteRequest.OffsetDeleteRequestTopic(
                            name=topic.name, partitions=known
                        )
                    )
        try:
            reply = coordinator(self.broker).delete_offsets(
                OffsetDeleteRequest(group_id=request.group_id, topics=valid)
            )
        except KafkaError as exc:
            return _count(ctx, OffsetDeleteResponse(error_code=exc.code))
        if reply.done():
            return _count(ctx, merge(refused, reply.value))
        return reply.then(lambda deleted: _count(ctx, merge(refused, deleted)))
