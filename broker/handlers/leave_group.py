"""LeaveGroup (key 13), versions 0-5.

Behaviour (``KafkaApis.handleLeaveGroupRequest``,
``GroupMetadataManager.classicGroupLeave``): READ on the group, else
GROUP_AUTHORIZATION_FAILED (top level, no members); then each listed member
leaves (by member id, or by group_instance_id alone for an admin removing a
static member); the group rebalances. An unknown group answers every member
UNKNOWN_MEMBER_ID.

Version notes: v0-2 name one member (``member_id``) and get its error as the
top-level error (``LeaveGroupRequest.normalizedData`` / ``LeaveGroupResponse``);
v3+ batch members; v4+ flexible; v5+ reason.
"""

from __future__ import annotations

import functools

from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import LeaveGroupRequest, LeaveGroupResponse
from broker.security.acl import AclOperation, ResourceType


class LeaveGroupHandler(RequestHandler[LeaveGroupRequest]):
    API_KEY = 13
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: LeaveGroupRequest) -> Reply:
        version = ctx.header.api_version
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            ctx.count_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if version < 3:
            request.members = [LeaveGroupRequest.MemberIdentity(member_id=request.member_id)]
        try:
            reply = coordinator(self.broker).leave_group(request)
        except KafkaError as exc:
            reply = DelayedReply.of(LeaveGroupResponse(error_code=exc.code))
        if reply.done():
            return _answered(ctx, version, reply.value)
        # a classic member of a consumer group: answered once its tombstones are durable
        return reply.then(functools.partial(_answered, ctx, version))


def _answered(
    ctx: RequestContext, version: int, response: LeaveGroupResponse
) -> LeaveGroupResponse:
    """v0-2 carry the one member's error at the top level."""
    if version < 3 and response.error_code == ErrorCode.NONE and len(response.members) == 1:
        response = LeaveGroupResponse(error_code=response.members[0].error_code)
    ctx.count_error(response.error_code)
    return response
