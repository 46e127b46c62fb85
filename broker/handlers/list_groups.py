"""ListGroups (key 16), versions 0-5.

Behaviour (``GroupCoordinatorService.listGroups``): every group of every
loaded shard, filtered by state (v4+, case-insensitive) and type (v5+;
every group here is "classic"). COORDINATOR_LOAD_IN_PROGRESS while a shard
loads.

Version notes: v1+ throttle_time_ms; v3+ flexible; v4+ states filter and
group_state; v5+ types filter and group_type.
"""

from __future__ import annotations

from broker.errors import KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.data import Data
from broker.protocol.messages import ListGroupsResponse


class ListGroupsHandler(RequestHandler):
    API_KEY = 16
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        try:
            response = coordinator(self.broker).list_groups(
                request.states_filter, request.types_filter
            )
        except KafkaError as exc:
            response = ListGroupsResponse(error_code=exc.code)
        ctx.count_error(response.error_code)
        return response
