"""What the group handlers share: the coordinator or its absence, the caller, errors.

A broker built without a group coordinator (``BrokerContext.groups`` None:
tools and tests that need none) answers every group request
COORDINATOR_NOT_AVAILABLE, as a Kafka broker whose coordinator is not
active does (``GroupCoordinatorService.isActive``).
"""

from __future__ import annotations

from broker.coordinator.group.classic import Caller
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.errors import GroupError
from broker.errors import ErrorCode
from broker.handlers.context import BrokerContext, RequestContext


def coordinator(broker: BrokerContext) -> GroupCoordinator:
    """The group coordinator, or GroupError(COORDINATOR_NOT_AVAILABLE)."""
    groups = broker.groups
    if groups is None:
        raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "This broker serves no groups")
    return groups


def caller(ctx: RequestContext) -> Caller:
    """``RequestContext.clientId()`` and ``clientAddress().toString()`` ("/host")."""
    host = ctx.connection.peer.rpartition(":")[0] or ctx.connection.peer
    return Caller(ctx.header.client_id, f"/{host}", ctx.header.api_version)
