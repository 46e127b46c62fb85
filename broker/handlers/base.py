"""The shape of a request handler.

A handler class declares its API key and version range once (class
attributes); the registry builds ApiVersions from those declarations, and
the dispatcher refuses versions outside them. ``handle`` returns the
response object (answered at once), an awaitable of it (answered when it
completes: acks=all, long-poll Fetch), or None (no response: acks=0).
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable
from typing import ClassVar

from broker.handlers.context import BrokerContext, RequestContext
from broker.protocol import API_KEYS, ApiKey
from broker.protocol.data import Data

Reply = Data | None | Awaitable[Data | None]


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
