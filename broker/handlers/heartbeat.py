"""Heartbeat (key 12), versions 0-4.

Behaviour (``KafkaApis.handleHeartbeatRequest``,
``GroupMetadataManager.classicGroupHeartbeat``): READ on the group, else
GROUP_AUTHORIZATION_FAILED; then a member of the
current generation keeps its session; REBALANCE_IN_PROGRESS tells it to
rejoin; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID as
Kafka. While the group's shard loads the answer is NONE
(``GroupCoordinatorService.heartbeat`` "blindly responds").

Version notes: v1+ throttle_time_ms; v3+ group_instance_id; v4+ flexible.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import HeartbeatRequest, HeartbeatResponse
from broker.security.acl import AclOperation, ResourceType


class HeartbeatHandler(RequestHandler[HeartbeatRequest]):
    API_KEY = 12
    MIN_VERSION = 0
    MAX_VERSION = 4

    def handle(self, ctx: RequestContext, request: HeartbeatRequest) -> Reply:
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            ctx.count_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        try:
            response = coordinator(self.broker).heartbeat(request)
        except KafkaError as exc:
            response = HeartbeatResponse(error_code=exc.code)
        ctx.count_error(response.error_code)
        return response
