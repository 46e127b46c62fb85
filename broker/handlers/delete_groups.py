"""DeleteGroups (key 42), versions 0-2.

Behaviour (``GroupCoordinatorShard.deleteGroups``): an empty group is
deleted with its committed offsets (tombstones); NON_EMPTY_GROUP for a group
with members, GROUP_ID_NOT_FOUND for an unknown one. Duplicate names are
answered once (``KafkaApis.handleDeleteGroupsRequest``: ``distinct``).

Authorization: DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it;
the refused groups are answered after the others, as Kafka appends them.
"""

from __future__ import annotations

import asyncio

from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse
from broker.security.acl import AclOperation, ResourceType


class DeleteGroupsHandler(RequestHandler[DeleteGroupsRequest]):
    API_KEY = 42
    MIN_VERSION = 0
    MAX_VERSION = 2

    def handle(self, ctx: RequestContext, request: DeleteGroupsRequest) -> Reply:
        replies: list[tuple[str, DelayedReply[ErrorCode]]] = []
        names = list(dict.fromkeys(request.groups_names))
        deletable = self.filter_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
        refused = [
            (g, DelayedReply.of(ErrorCode.GROUP_AUTHORIZATION_FAILED))
            for g in names
            if g not in deletable
        ]
        for group_id in (g for g in names if g in deletable):
            try:
                reply = coordinator(self.broker).delete_group(group_id)
            except KafkaError as exc:
                reply = DelayedReply.of(exc.code)
            replies.append((group_id, reply))
        replies += refused
        if all(r.done() for _, r in replies):
            return self._answer(ctx, [(g, r.value) for g, r in replies])
        return self._parked(ctx, replies)

    async def _parked(
        self, ctx: RequestContext, replies: list[tuple[str, DelayedReply[ErrorCode]]]
    ) -> DeleteGroupsResponse:
        codes = await asyncio.gather(*(self._value(r) for _, r in replies))
        return self._answer(ctx, [(g, c) for (g, _), c in zip(replies, codes, strict=True)])

    @staticmethod
    async def _value(reply: DelayedReply[ErrorCode]) -> ErrorCode:
        return await reply

    @staticmethod
    def _answer(ctx: RequestContext, results: list[tuple[str, ErrorCode]]) -> DeleteGroupsResponse:
        for _, code in results:
            ctx.count_error(code)
        return DeleteGroupsResponse(
            results=[
                DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=c)
                for g, c in results
            ]
        )
