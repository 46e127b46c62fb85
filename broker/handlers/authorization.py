"""Authorization for handlers: Kafka's ``AuthHelper``, for the connection's principal.

Every check a handler makes goes through here, usually as the handler's own
``self.authorize(ctx, operation, resource_type, name)`` (``handlers/base.py``)::

    if not self.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return error_response(ErrorCode.GROUP_AUTHORIZATION_FAILED)

* The principal and host are the connection's (``ctx.connection.principal``,
  ``peer_host``): ``User:ANONYMOUS`` on PLAINTEXT listeners, the
  authenticated user on SASL/TLS ones.
* Without an authorizer (``authorizer.class.name`` empty) every check passes
  and authorized operations are every operation the resource supports, as
  Kafka's ``AuthHelper`` answers with ``authorizer = None``.
* A denial the client asked about (``report_denial``, Kafka's
  ``logIfDenied``) counts in ``kafka_authorization_failures_total`` under the
  request's API and is written to the ``broker.authorizer`` log (rate-limited,
  ``security/audit.py``); a denial that only filters what the client sees
  (Metadata's topic list, authorized operations) is silent.
* ``AUTHORIZATION_ERRORS`` gives the error of each resource type
  (``AclEntry.authorizationError``).
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.errors import ErrorCode
from broker.handlers.context import BrokerContext, RequestContext
from broker.protocol import API_KEYS
from broker.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    operations_bit_field,
)

AUTHORIZATION_ERRORS = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
#: the answer for "authorized operations" a client did not ask for (KIP-430)
OPERATIONS_NOT_REQUESTED = -(2**31)


def authorize(
    broker: BrokerContext,
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
    *,
    report_denial: bool = True,
) -> bool:
    """Whether the request's principal may do ``operation`` on the resource."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    conn = ctx.connection
    if authorizer.authorize(conn.principal, conn.peer_host, operation, resource_type, name):
        return True
    if report_denial:
        report_denied(broker, ctx, operation, resource_type, name)
    return False


def filter_by_authorized(
    broker: BrokerContext,
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    names: Iterable[str],
) -> set[str]:
    """``AuthHelper.filterByAuthorized``: the names (each asked once) the principal may
    do ``operation`` on; every denial is reported, as Kafka's ``logIfDenied`` default."""
    if broker.authorizer is None:
        return set(names)
    return {
        name
        for name in dict.fromkeys(names)
        if authorize(broker, ctx, operation, resource_type, name)
    }


def authorize_cluster(
    broker: BrokerContext,
    ctx: RequestContext,
    operation: AclOperation,
    *,
    report_denial: bool = True,
) -> bool:
    """``operation`` on the cluster resource (``kafka-cluster``)."""
    return authorize(
        broker, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME, report_denial=report_denial
    )


def authorize_by_resource_type(
    broker: BrokerContext, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType
) -> bool:
    """Whether the principal may do ``operation`` on some resource of the type (KIP-679)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    conn = ctx.connection
    return authorizer.authorize_by_resource_type(
        conn.principal, conn.peer_host, operation, resource_type
    )


def authorized_operations(
    broker: BrokerContext, ctx: RequestContext, resource_type: ResourceType, name: str
) -> int:
    """KIP-430's bit field of what the principal may do on the resource."""
    authorizer = broker.authorizer
    if authorizer is None:
        return operations_bit_field(SUPPORTED_OPERATIONS[resource_type])
    conn = ctx.connection
    return authorizer.authorized_operations(conn.principal, conn.peer_host, resource_type, name)


def report_denied(
    broker: BrokerContext,
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
) -> None:
    """Count and (rate-limited) log one denial the client is told about."""
    authorizer = broker.authorizer
    api = API_KEYS[ctx.header.api_key].name
    broker.meters.authorization_failures(api, resource_type.pascal, operation.pascal).inc()
    if authorizer is not None:
        conn = ctx.connection
        authorizer.audit.denied(
            principal=conn.principal,
            host=conn.peer_host,
            operation=operation,
            resource_type=resource_type,
            name=name,
            request=api,
        )
