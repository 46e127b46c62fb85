"""FindCoordinator (key 10), versions 0-6.

Group keys and transactional ids are answered with this broker (the leader
of every partition of ``__consumer_offsets`` and ``__transaction_state``,
each created on its first lookup as Kafka's ``KafkaApis.getCoordinator``
has them created). A broker built without the coordinators (a node of
``cluster.nodes`` other than the coordinator's: it names that node) or a
topic that cannot be created answers COORDINATOR_NOT_AVAILABLE with a
message saying so (v1+), node id -1, host "" and port -1 (``Node.noNode``),
which is what a Kafka broker answers while a coordinator is not available.

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
- key_type 0 (group): this broker.
- key_type 1 (transaction): this broker.
- key_type 2 (share group, v6+): COORDINATOR_NOT_AVAILABLE, as Kafka 3.9;
  before v6 -> INVALID_REQUEST. Any other key type -> INVALID_REQUEST
  ("Unknown coordinator type received").

Version notes:
- v0: one group key. v1+: key_type, error_message, throttle_time_ms. v3+:
  flexible. v4+: a batch of keys answered one coordinator each. v5: may
  answer TRANSACTION_ABORTABLE (never here). v6: share groups (KIP-932).
"""

from __future__ import annotations

from typing import Protocol

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from broker.security.acl import AclOperation, ResourceType

GROUP = 0
TRANSACTION = 1
SHARE = 2
_NO_COORDINATOR = {
    GROUP: "This broker serves no consumer groups (it was started without a group coordinator).",
    TRANSACTION: (
        "This broker serves no transactional ids (it was started without a transaction "
        "coordinator)."
    ),
    SHARE: "This broker has no share coordinator: share groups are not supported.",
}


def coordinator_error(key_type: int, version: int) -> tuple[ErrorCode, str]:
    """The error of a key this broker does not coordinate."""
    if key_type == SHARE and version < 6:
        return ErrorCode.INVALID_REQUEST, "Share group coordinators need FindCoordinator v6+"
    message = _NO_COORDINATOR.get(key_type)
    if message is None:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type received: {key_type}"
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, message


class _Coordinator(Protocol):
    def ensure_topic(self) -> None: ...


class FindCoordinatorHandler(RequestHandler[FindCoordinatorRequest]):
    API_KEY = 10
    MIN_VERSION = 0
    MAX_VERSION = 6

    def _lookup(self, key_type: int, version: int) -> tuple[ErrorCode, str | None]:
        layout = self.broker.replica_manager.layout
        if (
            key_type in (GROUP, TRANSACTION)
            and layout is not None
            and layout.coordinator.node_id != (self.broker.node_id)
        ):
            return ErrorCode.NONE, None  # another node of the machine (prototype)
        coordinator: _Coordinator | None = None
        if key_type == GROUP:
            coordinator = self.broker.groups
        elif key_type == TRANSACTION and self.broker.transactions is not None:
            coordinator = self.broker.transactions.txn_manager
        if coordinator is not None:
            try:
                coordinator.ensure_topic()
            except KafkaError as exc:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)
            return ErrorCode.NONE, None
        return coordinator_error(key_type, version)

    def handle(self, ctx: RequestContext, request: FindCoordinatorRequest) -> Reply:
        version = ctx.header.api_version
        key_type = request.key_type if version >= 1 else GROUP
        if version < 4:
            code, message = self._check(ctx, key_type, request.key, version)
            ctx.count_error(code)
            node = self._node(ctx, code)
            return FindCoordinatorResponse(
                error_code=code,
                error_message=message,
                node_id=node[0],
                host=node[1],
                port=node[2],
            )
        coordinators = []
        for key in request.coordinator_keys:
            code, message = self._check(ctx, key_type, key, version)
            ctx.count_error(code)
            node = self._node(ctx, code)
            coordinators.append(
                FindCoordinatorResponse.Coordinator(
                    key=key,
                    node_id=node[0],
                    host=node[1],
                    port=node[2],
                    error_code=code,
                    error_message=message,
                )
            )
        return FindCoordinatorResponse(coordinators=coordinators)

    def _node(self, ctx: RequestContext, code: ErrorCode) -> tuple[int, str, int]:
        """This broker when it coordinates the key, else ``Node.noNode``; its address
        on the request's own listener (KafkaApis.getCoordinator:
        ``getAliveBrokerNode(coordinatorId, request.context.listenerName)``)."""
        if code != ErrorCode.NONE:
            return -1, "", -1
        layout = self.broker.replica_manager.layout
        if layout is not None:
            node = layout.coordinator
            return node.node_id, node.host, node.port
        endpoint = self.broker.endpoint_for(ctx.connection.listener_name)
        return self.broker.node_id, endpoint.host, endpoint.port

    def _check(
        self, ctx: RequestContext, key_type: int, key: str, version: int
    ) -> tuple[ErrorCode, str | None]:
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
        return self._lookup(key_type, version)
