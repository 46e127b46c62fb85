"""OffsetDelete (key 47), version 0.

Behaviour (``OffsetMetadataManager.deleteOffsets``): the committed offsets
of the listed partitions go (tombstones), unless the group is subscribed to
the topic (GROUP_SUBSCRIBED_TO_TOPIC per partition). GROUP_ID_NOT_FOUND for
an unknown group, NON_EMPTY_GROUP for a non-empty group that does not use
the consumer protocol.
"""

from __future__ import annotations

from broker.coordinator.group.reply import Reply as GroupReply
from broker.errors import KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.data import Data
from broker.protocol.messages import OffsetDeleteResponse


def _count(ctx: RequestContext, response: Data) -> Data:
    ctx.count_error(response.error_code)
    for t in response.topics:
        for p in t.partitions:
            ctx.count_error(p.error_code)
    return response


class OffsetDeleteHandler(RequestHandler):
    API_KEY = 47
    MIN_VERSION = 0
    MAX_VERSION = 0

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        try:
            reply = coordinator(self.broker).delete_offsets(request)
        except KafkaError as exc:
            return _count(ctx, OffsetDeleteResponse(error_code=exc.code))
        if reply.done:
            return _count(ctx, reply.value)
        return self._parked(ctx, reply)

    @staticmethod
    async def _parked(ctx: RequestContext, reply: GroupReply[Data]) -> Data:
        return _count(ctx, await reply)
