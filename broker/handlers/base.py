"""The shape of a request handler.

A handler class declares its API key and version range once (class
attributes); the registry builds ApiVersions from those declarations, and
the dispatcher refuses versions outside them. ``handle`` returns the
response object (answered at once), an awaitable of it (answered when it
completes: acks=all, long-poll Fetch), or None (no response: acks=0).
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Iterable
from typing import ClassVar

from broker.handlers import authorization
from broker.handlers.context import BrokerContext, RequestContext
from broker.handlers.delayed import DelayedReply
from broker.protocol import API_KEYS, ApiKey
from broker.protocol.data import Data
from broker.security.acl import AclOperation, ResourceType

Reply = Data | None | DelayedReply[Data] | Awaitable[Data | None]


class RequestHandler(abc.ABC):
    """Base of every handler; subclasses set the three class attributes."""

    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    @classmethod
    def api(cls) -> ApiKey:
        return API_KEYS[cls.API_KEY]

    @classmethod
    def supports(cls, version: int) -> bool:
        return cls.MIN_VERSION <= version <= cls.MAX_VERSION

    @abc.abstractmethod
    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        """Answer one request (see the module docstring)."""

    def authorize(
        self,
        ctx: RequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        report_denial: bool = True,
    ) -> bool:
        """Whether the request's principal may do ``operation`` on the resource
        (always true without an authorizer); a denial is counted and logged
        unless ``report_denial`` is false (``handlers/authorization.py``)."""
        return authorization.authorize(
            self.broker, ctx, operation, resource_type, name, report_denial=report_denial
        )

    def filter_authorized(
        self,
        ctx: RequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        names: Iterable[str],
    ) -> set[str]:
        """The names the principal may do ``operation`` on (Kafka's ``filterByAuthorized``)."""
        return authorization.filter_by_authorized(self.broker, ctx, operation, resource_type, names)

    def authorize_cluster(
        self, ctx: RequestContext, operation: AclOperation, *, report_denial: bool = True
    ) -> bool:
        """``operation`` on the cluster resource (``kafka-cluster``)."""
        return authorization.authorize_cluster(
            self.broker, ctx, operation, report_denial=report_denial
        )
