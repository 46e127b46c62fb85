"""ConsumerGroupHeartbeat (key 68), versions 0-1: the consumer group protocol (KIP-848).

Behaviour (``KafkaApis.handleConsumerGroupHeartbeat``,
``GroupMetadataManager.consumerGroupHeartbeat``; ``coordinator/group/consumer/``):
- READ on the group, else GROUP_AUTHORIZATION_FAILED; then DESCRIBE on each
  subscribed topic name, else TOPIC_AUTHORIZATION_FAILED for the request
  (Kafka 4.0, KAFKA-18813). A regex's topics are those of its matches the
  member whose heartbeat resolves it may describe (the others are left out,
  silently).
- The request's checks (INVALID_REQUEST with Kafka's message: a blank group,
  member, instance or rack id, a join without a rebalance timeout or with
  owned partitions or without a subscription, an epoch below -2;
  UNSUPPORTED_ASSIGNOR for an assignor group.consumer.assignors does not
  name), then the group's shard (COORDINATOR_LOAD_IN_PROGRESS while it loads).
- Epoch 0 joins, -1 leaves, -2 leaves for a while (static members); any other
  epoch heartbeats. The answer carries the member epoch, the heartbeat
  interval (group.consumer.heartbeat.interval.ms) and, when it changed or the
  request was a full one, the member's assignment (topic ids and partitions).
  It comes once the records the heartbeat wrote are durable.
- A classic group with members refuses the protocol: GROUP_ID_NOT_FOUND
  ("Group g is not a consumer group").

Version notes: v1 adds SubscribedTopicRegex (INVALID_REGULAR_EXPRESSION for
one that does not compile) and requires the client to generate its member
id (KIP-1082); v0 lets the coordinator generate it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from broker.coordinator.group.consumer.groups import TopicFilter
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.group_support import caller, coordinator
from broker.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from broker.security.acl import AclOperation, ResourceType


class ConsumerGroupHeartbeatHandler(RequestHandler[ConsumerGroupHeartbeatRequest]):
    API_KEY = 68
    MIN_VERSION = 0
    MAX_VERSION = 1

    def handle(self, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> Reply:
        if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            ctx.count_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        names = request.subscribed_topic_names
        if names:
            # (distinct names: Kafka compares the authorized set with the list's length)
            allowed = self.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
            if len(allowed) < len(set(names)):
                ctx.count_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                return ConsumerGroupHeartbeatResponse(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="Not authorized to access topics: "
                    f"[{', '.join(n for n in dict.fromkeys(names) if n not in allowed)}]",
                )
        try:
            groups = coordinator(self.broker)
        except KafkaError as exc:
            ctx.count_error(exc.code)
            return ConsumerGroupHeartbeatResponse(error_code=exc.code)
        reply = groups.consumer_group_heartbeat(caller(ctx), request, self._topic_filter(ctx))
        answered = functools.partial(_answered, ctx)
        if reply.done():
            return answered(reply.value)
        return reply.then(answered)  # once the heartbeat's records are durable

    def _topic_filter(self, ctx: RequestContext) -> TopicFilter | None:
        """What a regex may resolve to for this member: the topics it may describe (a
        denial not reported, as the coordinator's own check in Kafka)."""
        if self.broker.authorizer is None:
            return None

        def describable(names: Iterable[str]) -> list[str]:
            return [
                name
                for name in names
                if self.authorize(
                    ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name, report_denial=False
                )
            ]

        return describable


def _answered(
    ctx: RequestContext, response: ConsumerGroupHeartbeatResponse
) -> ConsumerGroupHeartbeatResponse:
    ctx.count_error(response.error_code)
    return response
