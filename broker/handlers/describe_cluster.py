"""DescribeCluster (key 60), versions 0-1.

Behaviour (``KafkaApis.handleDescribeCluster``, ``AuthHelper.computeDescribeClusterResponse``):
- One broker: this one, with the advertised address of the listener the
  request came in on (rack null); it is also
  the controller, so controller_id is its node id. cluster_id is the id kept
  in the log dirs' ``meta.properties``.
- endpoint_type (v1+): 1 (BROKER) is answered; 2 (CONTROLLER) ->
  MISMATCHED_ENDPOINT_TYPE (this broker listens as a broker; Kafka's brokers
  answer the same); any other value -> UNSUPPORTED_ENDPOINT_TYPE.
- include_cluster_authorized_operations: the KIP-430 bit field of the
  cluster operations the principal may do, when it may DESCRIBE the cluster
  (0 otherwise); without an authorizer every operation the cluster supports
  (``AclEntry.supportedOperations(CLUSTER)``), as Kafka gives. Not asked
  for: Kafka's "not requested" value (-2147483648). The answer itself needs
  no permission.

Version notes:
- v0-1 are flexible. v1: endpoint_type in request and response.
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.authorization import OPERATIONS_NOT_REQUESTED, authorized_operations
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import DescribeClusterRequest, DescribeClusterResponse
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType

BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


class DescribeClusterHandler(RequestHandler[DescribeClusterRequest]):
    API_KEY = 60
    MIN_VERSION = 0
    MAX_VERSION = 1

    def handle(self, ctx: RequestContext, request: DescribeClusterRequest) -> Reply:
        version = ctx.header.api_version
        wanted = request.endpoint_type
        if wanted != BROKER_ENDPOINT:
            if wanted in _ENDPOINT_NAMES:
                code = (
                    ErrorCode.INVALID_REQUEST
                    if version == 0
                    else ErrorCode.MISMATCHED_ENDPOINT_TYPE
                )
                message = (
                    "The request was sent to an endpoint of type BROKER, but we wanted an "
                    f"endpoint of type {_ENDPOINT_NAMES[wanted]}"
                )
            else:
                code = (
                    ErrorCode.INVALID_REQUEST
                    if version == 0
                    else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
                )
                message = f"Unsupported endpoint type {wanted}"
            ctx.count_error(code)
            return DescribeClusterResponse(error_code=code, error_message=message)
        broker = self.broker
        endpoint = broker.endpoint_for(ctx.connection.listener_name)
        operations = OPERATIONS_NOT_REQUESTED
        if request.include_cluster_authorized_operations:
            operations = (
                authorized_operations(broker, ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                if self.authorize_cluster(ctx, AclOperation.DESCRIBE)
                else 0
            )
        ctx.count_error(ErrorCode.NONE)
        return DescribeClusterResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            endpoint_type=BROKER_ENDPOINT,
            cluster_id=broker.cluster_id,
            controller_id=broker.node_id,
            brokers=[
                DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=broker.node_id, host=endpoint.host, port=endpoint.port, rack=None
                )
            ],
            cluster_authorized_operations=operations,
        )
