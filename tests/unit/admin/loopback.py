"""An admin connection that hands each request to an in-process broker's real dispatcher.

``LoopbackConnection(broker, address)`` reports the broker's ApiVersions, so
the version choice, the requests and the tools' output are what a run
against a live broker gets, without sockets.
"""

from __future__ import annotations

from typing import Any

from broker.admin.client import AdminConnection
from tests.unit.handlers.conftest import InProcessBroker


class LoopbackConnection(AdminConnection):
    """An AdminConnection whose requests go through ``broker``'s dispatcher."""

    def __init__(self, broker: InProcessBroker, address: tuple[str, int]) -> None:
        self.broker = broker
        self.address = address
        registry = broker.context.registry
        assert registry is not None
        self.versions = {k: (lo, hi) for k, lo, hi in registry.versions()}
        self.calls: list[tuple[str, int]] = []
        self.closed = False

    def call(self, request: Any, version: int) -> Any:
        self.calls.append((type(request).__name__, version))
        return self.broker.call(request, version)

    def close(self) -> None:
        self.closed = True
