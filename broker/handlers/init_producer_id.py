"""InitProducerId (key 22), versions 0-5.

Behaviour:
- Without a transactional id (idempotent producers): a new producer id,
  epoch 0, as Kafka's ``TransactionCoordinator.handleInitProducerId`` does
  for a null transactional id. Ids are allocated in blocks persisted in the
  log dir, so they are never reused across restarts. With an authorizer the
  principal needs IDEMPOTENT_WRITE on the cluster or WRITE on at least one
  topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED
  (``KafkaApis.handleInitProducerIdRequest``).
- With a transactional id: this broker has no transaction coordinator, so
  the request is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a
  non-retriable error that stops the client at once with a clear message
  instead of letting it retry until its timeout (docs/deviations.md); Kafka
  answers the same when the principal lacks WRITE on the transactional id.

Version notes:
- v2+: flexible from v2. v3+: producer_id / producer_epoch in the request
  (epoch bump for transactional producers; ignored without a transactional id).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.authorization import authorize_by_resource_type, report_denied
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType


class InitProducerIdHandler(RequestHandler[InitProducerIdRequest]):
    API_KEY = 22
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: InitProducerIdRequest) -> Reply:
        if request.transactional_id is not None:
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            ctx.count_error(code)
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        if not self.authorize_cluster(
            ctx, AclOperation.IDEMPOTENT_WRITE, report_denial=False
        ) and not authorize_by_resource_type(
            self.broker, ctx, AclOperation.WRITE, ResourceType.TOPIC
        ):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            ctx.count_error(code)
            report_denied(
                self.broker, ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME
            )
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        ctx.count_error(ErrorCode.NONE)
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE,
            producer_id=self.broker.producer_ids.next_producer_id(),
            producer_epoch=0,
        )
