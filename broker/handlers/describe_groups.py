"""DescribeGroups (key 15), versions 0-5.

Behaviour (``GroupMetadataManager.describeGroups``): state, protocol type,
the selected protocol and the members (with their subscription metadata
only when Stable, and their assignment) of each group; an unknown group is
described as "Dead" with no error, as Kafka does.

Authorization (``KafkaApis.handleDescribeGroupsRequest``): DESCRIBE on each
group, else GROUP_AUTHORIZATION_FAILED for it; the refused groups come first
in the answer, then the described ones. With include_authorized_operations
(v3+) a described group carries KIP-430's bit field of what the principal
may do on it (READ, DESCRIBE, DELETE: ``AclEntry.supportedOperations``),
else Kafka's "omitted" value.

Version notes: v1+ throttle_time_ms; v3+ include_authorized_operations;
v4+ group_instance_id; v5+ flexible.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.handlers.authorization import authorized_operations
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse
from broker.security.acl import AclOperation, ResourceType


class DescribeGroupsHandler(RequestHandler[DescribeGroupsRequest]):
    API_KEY = 15
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: DescribeGroupsRequest) -> Reply:
        with_operations = ctx.header.api_version >= 3 and request.include_authorized_operations
        refused = []
        described = []
        for group_id in request.groups:
            if not self.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                refused.append(
                    DescribeGroupsResponse.DescribedGroup(
                        group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
                    )
                )
                continue
            try:
                group = coordinator(self.broker).describe_group(group_id)
            except KafkaError as exc:
                group = DescribeGroupsResponse.DescribedGroup(
                    group_id=group_id, error_code=exc.code
                )
            if with_operations and group.error_code == ErrorCode.NONE:
                group.authorized_operations = authorized_operations(
                    self.broker, ctx, ResourceType.GROUP, group_id
                )
            described.append(group)
        groups = refused + described
        for g in groups:
            ctx.count_error(g.error_code)
        return DescribeGroupsResponse(groups=groups)
