"""InitProducerId (key 22), versions 0-5.

Behaviour:
- Without a transactional id (idempotent producers): a new producer id,
  epoch 0, as Kafka's ``TransactionCoordinator.handleInitProducerId`` does
  for a null transactional id. Ids are allocated in blocks persisted in the
  log dir, so they are never reused across restarts.
- With a transactional id: this broker has no transaction coordinator, so
  the request is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a
  non-retriable error that stops the client at once with a clear message
  instead of letting it retry until its timeout (docs/deviations.md).

Version notes:
- v2+: flexible from v2. v3+: producer_id / producer_epoch in the request
  (epoch bump for transactional producers; ignored without a transactional id).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.data import Data
from broker.protocol.messages import InitProducerIdResponse


class InitProducerIdHandler(RequestHandler):
    API_KEY = 22
    MIN_VERSION = 0
    MAX_VERSION = 5

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        if request.transactional_id is not None:
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            ctx.count_error(code)
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        ctx.count_error(ErrorCode.NONE)
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE,
            producer_id=self.broker.producer_ids.next_producer_id(),
            producer_epoch=0,
        )
