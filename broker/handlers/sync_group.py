"""SyncGroup (key 14), versions 0-5.

Behaviour (``KafkaApis.handleSyncGroupRequest``, ``GroupMetadataManager.classicGroupSync``):
- v5+ must carry protocol_type and protocol_name, else
  INCONSISTENT_GROUP_PROTOCOL (``areMandatoryProtocolTypeAndNamePresent``).
- Then READ on the group, else GROUP_AUTHORIZATION_FAILED
  (``handleSyncGroupRequest`` checks in that order).
- Followers wait (parked) for the leader's assignment; the leader's
  assignment is written as the group's metadata record and every waiting
  member is answered once it is durable (offsets.commit.required.acks).

Version notes: v1+ throttle_time_ms; v3+ group_instance_id; v4+ flexible;
v5+ protocol_type / protocol_name in request and response.
"""

from __future__ import annotations

import functools

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import caller, coordinator
from broker.protocol.messages import SyncGroupRequest, SyncGroupResponse
from broker.security.acl import AclOperation, ResourceType


class SyncGroupHandler(RequestHandler[SyncGroupRequest]):
    API_KEY = 14
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: SyncGroupRequest) -> Reply:
        if ctx.header.api_version >= 5 and (
            request.protocol_type is None or request.protocol_name is None
        ):
            ctx.count_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            ctx.count_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        try:
            groups = coordinator(self.broker)
        except KafkaError as exc:
            ctx.count_error(exc.code)
            return SyncGroupResponse(error_code=exc.code)
        reply = groups.sync_group(caller(ctx), request)
        answered = functools.partial(_answered, ctx)
        if reply.done():
            return answered(reply.value)
        return reply.then(answered)  # parked until the leader's assignment is durable


def _answered(ctx: RequestContext, response: SyncGroupResponse) -> SyncGroupResponse:
    ctx.count_error(response.error_code)
    return response
