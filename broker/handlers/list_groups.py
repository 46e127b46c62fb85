"""ListGroups (key 16), versions 0-5.

Behaviour (``GroupCoordinatorService.listGroups``): every group of every
loaded shard, filtered by state (v4+, case-insensitive) and type (v5+;
every group here is "classic"). COORDINATOR_LOAD_IN_PROGRESS while a shard
loads.

Authorization (``KafkaApis.handleListGroupsRequest``): DESCRIBE on the
cluster lists every group; otherwise only the groups the principal may
DESCRIBE are listed (no error, nothing counted or logged: Kafka asks both
with ``logIfDenied = false``).

Version notes: v1+ throttle_time_ms; v3+ flexible; v4+ states filter and
group_state; v5+ types filter and group_type.
"""

from __future__ import annotations

from broker.errors import KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import ListGroupsRequest, ListGroupsResponse
from broker.security.acl import AclOperation, ResourceType


class ListGroupsHandler(RequestHandler[ListGroupsRequest]):
    API_KEY = 16
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: ListGroupsRequest) -> Reply:
        every_group = self.authorize_cluster(ctx, AclOperation.DESCRIBE, report_denial=False)
        try:
            response = coordinator(self.broker).list_groups(
                request.states_filter, request.types_filter
            )
        except KafkaError as exc:
            response = ListGroupsResponse(error_code=exc.code)
        if not every_group:
            response.groups = [
                g
                for g in response.groups
                if self.authorize(
                    ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id, report_denial=False
                )
            ]
        ctx.count_error(response.error_code)
        return response
