"""ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848).

Behaviour (``KafkaApis.handleConsumerGroupDescribe``,
``GroupMetadataManager.consumerGroupDescribe``): per group, DESCRIBE on it
(else GROUP_AUTHORIZATION_FAILED, the refused groups answered first), then
its state, group and assignment epochs, the assignor, and every member with
its epoch, subscription, current and target assignment (topic ids with their
names). A group that is not a consumer group (unknown, or classic) is
GROUP_ID_NOT_FOUND. A group whose members' current or target assignments
hold a topic the principal may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED without its members (Kafka 4.0, KAFKA-18813).
With include_authorized_operations the KIP-430 bit field of what the
principal may do on the group.

Version notes: v1 adds member_type (1: a consumer member; 0: a classic one).
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.handlers.authorization import authorized_operations
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import coordinator
from broker.protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from broker.security.acl import AclOperation, ResourceType


class ConsumerGroupDescribeHandler(RequestHandler[ConsumerGroupDescribeRequest]):
    API_KEY = 69
    MIN_VERSION = 0
    MAX_VERSION = 1

    def handle(self, ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> Reply:
        refused = []
        described = []
        for group_id in request.group_ids:
            if not self.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                refused.append(
                    ConsumerGroupDescribeResponse.DescribedGroup(
                        group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
                    )
                )
                continue
            try:
                group = coordinator(self.broker).consumer_group_describe(group_id)
            except KafkaError as exc:
                group = ConsumerGroupDescribeResponse.DescribedGroup(
                    group_id=group_id, error_code=exc.code
                )
            if group.error_code == ErrorCode.NONE and not self._may_see_topics(ctx, group):
                group = ConsumerGroupDescribeResponse.DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="The described group uses topics that the client is not "
                    "authorized to describe.",
                )
            if request.include_authorized_operations and group.error_code == ErrorCode.NONE:
                group.authorized_operations = authorized_operations(
                    self.broker, ctx, ResourceType.GROUP, group_id
                )
            described.append(group)
        groups = refused + described
        for g in groups:
            ctx.count_error(g.error_code)
        return ConsumerGroupDescribeResponse(groups=groups)

    def _may_see_topics(
        self, ctx: RequestContext, group: ConsumerGroupDescribeResponse.DescribedGroup
    ) -> bool:
        """DESCRIBE on every topic of the members' current and target assignments."""
        if self.broker.authorizer is None:
            return True
        names = {
            tp.topic_name
            for member in group.members
            for assignment in (member.assignment, member.target_assignment)
            if assignment is not None  # always set by the coordinator (groups.py)
            for tp in assignment.topic_partitions
        }
        allowed = self.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        return len(allowed) == len(names)
