"""An in-process broker for handler tests: real logs in a tmp dir, no sockets.

``InProcessBroker.call(request, version)`` encodes a request frame with the
protocol package, runs it through the real :class:`Dispatcher` (header,
registry, version check, decode, handler, encode) and decodes the response
frame, so the tests exercise exactly what a client's bytes go through.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.handlers.context import BrokerContext, Endpoint
from broker.handlers.file_region import FileRegion
from broker.handlers.registry import HandlerRegistry
from broker.log.manager import LogManager
from broker.metrics import BrokerMetrics
from broker.partition.producer_ids import ProducerIdManager
from broker.partition.replica_manager import ReplicaManager
from broker.protocol import decode_response, encode_request
from broker.security.acl_control import open_acl_control
from broker.server.dispatch import Dispatcher
from broker.server.group_commit import GroupCommit
from tests.aio import run


class FakeConnection:
    peer = "test"

    def __init__(self) -> None:
        self.principal = "User:ANONYMOUS"
        self.peer_host = "127.0.0.1"
        self.listener_name = "PLAINTEXT"
        self.sasl = None  # not a SASL listener (server/sasl_gate.py)
        self.client_software_name: str | None = None
        self.client_software_version: str | None = None
        self.closed = False

    def close(self) -> None:
        self.closed = True


def frame_bytes(segments: list[Any]) -> bytes:
    out = bytearray()
    for seg in segments:
        out += seg.read() if isinstance(seg, FileRegion) else bytes(seg)
    return bytes(out)


class InProcessBroker:
    def __init__(self, data_dir: Path, **overrides: str) -> None:
        props = {
            "log.dirs": str(data_dir),
            **{k.replace("_", "."): v for k, v in overrides.items()},
        }
        self.config = BrokerConfig.from_properties(props)
        self.metrics = BrokerMetrics(records_implementation="test", event_loop="test", version="0")
        self.log_manager = LogManager(self.config.log_dirs, self.config)
        self.log_manager.startup()
        # wired as the app wires it: costly validations on a worker pool
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(self.config.get("produce.offload.threads"))
        )

        def offload(fn: Callable[[], Any]) -> Awaitable[Any]:
            return asyncio.get_running_loop().run_in_executor(self.pool, fn)

        self.replica_manager = ReplicaManager(
            self.log_manager,
            recorder=self.metrics.validator_recorder,
            time_ms=lambda: self.now_ms,
            offload=offload,
            inline_budget=int(self.config.get("produce.inline.max.cost")),
        )
        self.now_ms = 1_700_000_000_000
        self.group_commit = GroupCommit()
        self.acl_control = open_acl_control(self.config, self.config.log_dirs[0])
        self.groups = GroupCoordinator(
            GroupConfig.from_broker(self.config),
            self.replica_manager,
            self.group_commit,
            lambda: self.now_ms,
        )
        self.context = BrokerContext(
            config=self.config,
            node_id=0,
            cluster_id="test-cluster",
            advertised=Endpoint("127.0.0.1", 9092),
            log_manager=self.log_manager,
            replica_manager=self.replica_manager,
            meters=self.metrics,
            durability=self.group_commit,
            producer_ids=ProducerIdManager(self.config.log_dirs[0]),
            acl_control=self.acl_control,
            groups=self.groups,
        )
        self.dispatcher = Dispatcher(HandlerRegistry(self.context), self.metrics)
        self.conn = FakeConnection()
        self.correlation = 0

    def send(self, request: Any, version: int) -> Any:
        """Dispatch one request; returns the outcome (segments, None or an awaitable)."""
        self.correlation += 1
        raw = bytearray(
            encode_request(version, self.correlation, "test-client", request).to_bytes()
        )
        return self.dispatcher.handle_frame(memoryview(raw)[4:], self.conn)  # type: ignore[arg-type]

    def decode(
        self, api_key: int, version: int, segments: list[Any] | None, correlation: int
    ) -> Any:
        assert segments is not None
        data = frame_bytes(segments)
        got, body = decode_response(api_key, version, data[4:])
        assert got == correlation
        return body

    def call(self, request: Any, version: int) -> Any:
        """Send and wait for the response body (async outcomes run to completion).

        The frame is handled inside a running event loop, as the server does:
        the acks=all path registers its fsync round from there. Called from
        inside a running loop, the outcome must be immediate."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run(self.call_async(request, version))
        outcome = self.send(request, version)
        assert not inspect.isawaitable(outcome), "await call_async() inside a loop"
        return self.decode(_api_key_of(type(request)), version, outcome, self.correlation)

    async def call_async(self, request: Any, version: int) -> Any:
        outcome = self.send(request, version)
        correlation = self.correlation
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return self.decode(_api_key_of(type(request)), version, outcome, correlation)

    def close(self) -> None:
        cancel_all = getattr(self.groups.timer, "cancel_all", None)
        if cancel_all is not None:
            cancel_all()
        self.group_commit.close()
        if self.acl_control is not None:
            self.acl_control.close()
        self.pool.shutdown(wait=True)
        self.log_manager.shutdown()


def _api_key_of(cls: type) -> int:
    from broker.protocol.messages import codec_for

    return int(codec_for(cls()).spec.api_key)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data")
    yield b
    b.close()


@pytest.fixture
def make_broker(tmp_path: Path) -> Iterator[Any]:
    made: list[InProcessBroker] = []

    def make(**overrides: str) -> InProcessBroker:
        b = InProcessBroker(tmp_path / f"data{len(made)}", **overrides)
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()


__all__ = ["InProcessBroker", "_api_key_of", "asyncio"]
