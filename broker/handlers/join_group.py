"""JoinGroup (key 11), versions 0-9.

Behaviour (``KafkaApis.handleJoinGroupRequest``, ``GroupCoordinatorService.joinGroup``,
``GroupMetadataManager.classicGroupJoin``; ``broker/coordinator/group/classic.py``):
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (checked
  first, as ``handleJoinGroupRequest``; the answer is ``getErrorResponse``'s:
  no member id, generation -1).
- An empty group id -> INVALID_GROUP_ID; a session timeout outside
  group.min/max.session.timeout.ms -> INVALID_SESSION_TIMEOUT; a shard still
  loading -> COORDINATOR_LOAD_IN_PROGRESS.
- The response waits (the request is parked) until the join phase ends:
  every member rejoined, the rebalance timeout passed, or for an empty
  group group.initial.rebalance.delay.ms.

Version notes:
- v0: no rebalance timeout (the session timeout is used). v4+: a new dynamic
  member gets MEMBER_ID_REQUIRED and a member id to rejoin with (KIP-394).
  v5+: group_instance_id (static membership). v6+: flexible. v7+:
  protocol_type in the response, protocol_name nullable (before v7 a null
  name is sent as "", from v7 an empty one as null: ``JoinGroupResponse``).
  v8+: reason. v9: skip_assignment for a static leader rejoining.
"""

from __future__ import annotations

import functools

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import caller, coordinator
from broker.protocol.messages import JoinGroupRequest, JoinGroupResponse
from broker.security.acl import AclOperation, ResourceType


def for_version(response: JoinGroupResponse, version: int) -> JoinGroupResponse:
    """``new JoinGroupResponse(data, version)``: protocol_name per version."""
    if version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    elif version >= 7 and response.protocol_name == "":
        response.protocol_name = None
    if version < 7:
        response.protocol_type = None
    return response


class JoinGroupHandler(RequestHandler[JoinGroupRequest]):
    API_KEY = 11
    MIN_VERSION = 0
    MAX_VERSION = 9

    def handle(self, ctx: RequestContext, request: JoinGroupRequest) -> Reply:
        version = ctx.header.api_version
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            ctx.count_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return for_version(
                JoinGroupResponse(member_id="", error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED),
                version,
            )
        try:
            groups = coordinator(self.broker)
        except KafkaError as exc:
            ctx.count_error(exc.code)
            return for_version(
                JoinGroupResponse(member_id=request.member_id, error_code=exc.code), version
            )
        reply = groups.join_group(caller(ctx), request)
        answered = functools.partial(_answered, ctx, version)
        if reply.done():
            return answered(reply.value)
        return reply.then(answered)  # parked until the join phase ends


def _answered(ctx: RequestContext, version: int, response: JoinGroupResponse) -> JoinGroupResponse:
    ctx.count_error(response.error_code)
    return for_version(response, version)
