"""FindCoordinator (key 10), versions 0-6.

This broker has no group coordinator and no transaction coordinator: it
keeps no consumer groups, no committed offsets and no transactions. Every
key is answered COORDINATOR_NOT_AVAILABLE with a message saying so
(v1+), node id -1, host "" and port -1 (``Node.noNode``), which is what a
Kafka broker answers while a coordinator is not available. Clients that
need a coordinator (``group.id`` with subscribe or committed offsets,
transactional producers) retry and eventually time out with that message;
consumers that assign partitions themselves and keep their own positions
work without one. See docs/operations.md "What this broker does not do".

Serving it matters even without coordinators: librdkafka enables LZ4 only
when the broker advertises FindCoordinator v0 (its ``rdkafka_feature.c``
ties the LZ4 feature to it, "GroupCoordinator was released in 0.8.2"); a
broker without it gets uncompressed batches from every librdkafka producer
asked for lz4 (``tests/integration/test_produce_matrix.py`` checks the codec
librdkafka sends).

Behaviour (``KafkaApis.getCoordinator``):
- Authorization (with an authorizer), per key: a group key needs DESCRIBE on
  the group (GROUP_AUTHORIZATION_FAILED), a transactional id DESCRIBE on it
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a share group key (v6+)
  CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).
- key_type 0 (group) and 1 (transaction): COORDINATOR_NOT_AVAILABLE.
- key_type 2 (share group, v6+): COORDINATOR_NOT_AVAILABLE, as Kafka 3.9;
  before v6 -> INVALID_REQUEST. Any other key type -> INVALID_REQUEST
  ("Unknown coordinator type received").

Version notes:
- v0: one group key. v1+: key_type, error_message, throttle_time_ms. v3+:
  flexible. v4+: a batch of keys answered one coordinator each. v5: may
  answer TRANSACTION_ABORTABLE (never here). v6: share groups (KIP-932).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.data import Data
from broker.protocol.messages import FindCoordinatorResponse
from broker.security.acl import AclOperation, ResourceType

GROUP = 0
TRANSACTION = 1
SHARE = 2
_NO_COORDINATOR = {
    GROUP: (
        "This broker has no group coordinator: consumer groups and committed offsets are not "
        "supported. Assign partitions to the consumer yourself (no group.id / manual assign)."
    ),
    TRANSACTION: (
        "This broker has no transaction coordinator: transactions are not supported. Produce "
        "without a transactional.id."
    ),
    SHARE: "This broker has no share coordinator: share groups are not supported.",
}


def coordinator_error(key_type: int, version: int) -> tuple[ErrorCode, str]:
    if key_type == SHARE and version < 6:
        return ErrorCode.INVALID_REQUEST, "Share group coordinators need FindCoordinator v6+"
    message = _NO_COORDINATOR.get(key_type)
    if message is None:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type received: {key_type}"
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, message


class FindCoordinatorHandler(RequestHandler):
    API_KEY = 10
    MIN_VERSION = 0
    MAX_VERSION = 6

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        version = ctx.header.api_version
        key_type = request.key_type if version >= 1 else GROUP
        if version < 4:
            code, message = self._check(ctx, key_type, request.key, version)
            ctx.count_error(code)
            return FindCoordinatorResponse(
                error_code=code, error_message=message, node_id=-1, host="", port=-1
            )
        coordinators = []
        for key in request.coordinator_keys:
            code, message = self._check(ctx, key_type, key, version)
            ctx.count_error(code)
            coordinators.append(
                FindCoordinatorResponse.Coordinator(
                    key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message
                )
            )
        return FindCoordinatorResponse(coordinators=coordinators)

    def _check(
        self, ctx: RequestContext, key_type: int, key: str, version: int
    ) -> tuple[ErrorCode, str]:
        """The authorization checks of ``getCoordinator``, then the coordinator's answer."""
        if key_type == GROUP and not self.authorize(
            ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key
        ):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
        if key_type == TRANSACTION and not self.authorize(
            ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
        ):
            return (
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "Transactional Id authorization failed.",
            )
        if (
            key_type == SHARE
            and version >= 6
            and not self.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)
        ):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        return coordinator_error(key_type, version)
