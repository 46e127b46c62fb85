"""InitProducerId (key 22), versions 0-5.

Behaviour (``KafkaApis.handleInitProducerIdRequest``):
- Without a transactional id (idempotent producers): a new producer id,
  epoch 0, as Kafka's ``TransactionCoordinator.handleInitProducerId`` does
  for a null transactional id. Ids are allocated in blocks persisted in the
  log dir, so they are never reused across restarts. With an authorizer the
  principal needs IDEMPOTENT_WRITE on the cluster or WRITE on at least one
  topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED.
- With a transactional id: WRITE on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  a producer id without an epoch or the reverse (v3+) is INVALID_REQUEST;
  then the transaction coordinator answers
  (``broker/coordinator/transaction/coordinator.py``: a new or bumped
  epoch once ``__transaction_state`` holds it durably, or its error). A
  broker built without a coordinator (a node of ``cluster.nodes`` that is
  not the coordinator) answers NOT_COORDINATOR.

Version notes:
- v2+: flexible from v2. v3+: producer_id / producer_epoch in the request
  (KIP-360: the epoch bump of a transactional producer after an error;
  ignored without a transactional id). Before v4 PRODUCER_FENCED is answered
  as INVALID_PRODUCER_EPOCH (older clients do not know the code).
"""

from __future__ import annotations

from broker.coordinator.transaction.coordinator import InitProducerIdResult, ProducerIdAndEpoch
from broker.errors import ErrorCode
from broker.handlers.authorization import authorize_by_resource_type, report_denied
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def _error(ctx: RequestContext, code: ErrorCode) -> InitProducerIdResponse:
    ctx.count_error(code)
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


class InitProducerIdHandler(RequestHandler[InitProducerIdRequest]):
    API_KEY = 22
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: InitProducerIdRequest) -> Reply:
        transactional_id = request.transactional_id
        if transactional_id is not None:
            return self._transactional(ctx, request, transactional_id)
        if not self.authorize_cluster(
            ctx, AclOperation.IDEMPOTENT_WRITE, report_denial=False
        ) and not authorize_by_resource_type(
            self.broker, ctx, AclOperation.WRITE, ResourceType.TOPIC
        ):
            report_denied(
                self.broker, ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME
            )
            return _error(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        ctx.count_error(ErrorCode.NONE)
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE,
            producer_id=self.broker.producer_ids.next_producer_id(),
            producer_epoch=0,
        )

    def _transactional(
        self, ctx: RequestContext, request: InitProducerIdRequest, transactional_id: str
    ) -> Reply:
        if not self.authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return _error(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        pid, epoch = request.producer_id, request.producer_epoch
        expected: ProducerIdAndEpoch | None = None
        if pid == NO_PRODUCER_ID and epoch == NO_PRODUCER_EPOCH:
            expected = None
        elif pid == NO_PRODUCER_ID or epoch == NO_PRODUCER_EPOCH:
            return _error(ctx, ErrorCode.INVALID_REQUEST)
        else:
            expected = ProducerIdAndEpoch(pid, epoch)
        coordinator = self.broker.transactions
        if coordinator is None:
            return _error(ctx, ErrorCode.NOT_COORDINATOR)
        version = ctx.header.api_version
        reply = coordinator.handle_init_producer_id(
            transactional_id, request.transaction_timeout_ms, expected
        )

        def answer(result: InitProducerIdResult) -> InitProducerIdResponse:
            code = result.error
            if version < 4 and code is ErrorCode.PRODUCER_FENCED:
                code = ErrorCode.INVALID_PRODUCER_EPOCH
            ctx.count_error(code)
            return InitProducerIdResponse(
                error_code=code,
                producer_id=result.producer_id,
                producer_epoch=result.producer_epoch,
            )

        if reply.done():
            return answer(reply.value)
        return reply.then(answer)  # once the new epoch is durable in __transaction_state
