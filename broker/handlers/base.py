"""The shape of a request handler.

A handler class declares its API key and version range once (class
attributes); the registry builds ApiVersions from those declarations, and
the dispatcher refuses versions outside them. ``handle`` returns the
response object (answered at once), None (no response: acks=0), or the
response later: a ``DelayedReply`` of it (``broker/delayed.py``: acks=all, a
parked JoinGroup, a commit) or an awaitable (an ``async def`` step: a
long-poll Fetch, an ACL write), which the dispatcher makes a
``DelayedReply`` of. A later answer that fails is answered with the API's
error response, or closes the connection (``server/dispatch.py``).
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Iterable
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from broker.delayed import DelayedReply
from broker.handlers import authorization
from broker.handlers.context import BrokerContext, RequestContext
from broker.protocol import API_KEYS, ApiKey
from broker.protocol.data import Data
from broker.security.acl import AclOperation, ResourceType

Reply = Data | None | DelayedReply[Data] | Awaitable[Data | None]

#: the request class a handler answers (``ProduceRequest`` for ``ProduceHandler``)
RequestT = TypeVar("RequestT")


class RequestHandler(abc.ABC, Generic[RequestT]):
    """Base of every handler; subclasses set the three class attributes and
    name their request class: ``class HeartbeatHandler(RequestHandler[HeartbeatRequest])``.

    The dispatcher decodes a request with the codec of ``API_KEY`` and hands
    it to the handler registered for ``API_KEY``, so the object ``handle``
    gets is of that class (``tests/unit/handlers/test_registry.py`` checks
    each handler's declared class against its key's).
    """

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
    def handle(self, ctx: RequestContext, request: RequestT) -> Reply:
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


#: a handler in the registry, of whichever request class its API key decodes to
#: (the key picks both the decoder and the handler, so the pair always matches;
#: the type system cannot follow a run-time key, hence ``Any``)
AnyHandler: TypeAlias = RequestHandler[Any]
