"""DescribeGroups (key 15), versions 0-5.

Behaviour (``GroupMetadataManager.describeGroups``): state, protocol type,
the selected protocol and the members (with their subscription metadata
only when Stable, and their assignment) of each group; an unknown group is
described as "Dead" with no error, as Kafka does. Authorized operations are
not computed (no ACLs): Kafka's "omitted" value.

Version notes: v1+ throttle_time_ms; v3+ include_authorized_operations;
v4+ group_instance_id; v5+ flexible.
"""

from __future__ import annotations

from broker.errors import KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.data import Data
from broker.protocol.messages import DescribeGroupsResponse


class DescribeGroupsHandler(RequestHandler):
    API_KEY = 15
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        groups = []
        for group_id in request.groups:
            try:
                described = coordinator(self.broker).describe_group(group_id)
            except KafkaError as exc:
                described = DescribeGroupsResponse.DescribedGroup(
                    group_id=group_id, error_code=exc.code
                )
            ctx.count_error(described.error_code)
            groups.append(described)
        return DescribeGroupsResponse(groups=groups)
