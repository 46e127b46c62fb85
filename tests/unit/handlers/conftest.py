"""An in-process broker for handler tests: real logs in a tmp dir, no sockets.

``InProcessBroker.call(request, version)`` encodes a request frame with the
protocol package, runs it through the real :class:`Dispatcher` (header,
registry, version check, decode, handler, encode) and decodes the response
frame, so the tests exercise exactly what a client's bytes go through. The
request path is the app's own (``broker.wiring.build_core``, after
``check_configuration``); this adds a clock the tests move (``now_ms``), a
fake connection and the encode/decode helpers.
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
from broker.handlers.context import Endpoint
from broker.handlers.file_region import FileRegion
from broker.metrics import BrokerMetrics
from broker.partition.partition import Offload, OffloadResult
from broker.protocol import decode_response, encode_request
from broker.startup import check_configuration
from broker.wiring import BrokerCore, build_core, open_log_manager, request_meters
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


def app_core(
    config: BrokerConfig,
    metrics: BrokerMetrics,
    *,
    time_ms: Callable[[], int],
    offload: Offload[OffloadResult],
) -> BrokerCore:
    """The app's request path (``BrokerApp.start``) over the logs of ``config``, loaded."""
    plan = check_configuration(config, metrics)
    meters = request_meters(config, metrics)
    log_manager = open_log_manager(config, meters=meters, metrics=metrics)
    log_manager.startup()
    return build_core(config, plan, log_manager, meters=meters, time_ms=time_ms, offload=offload)


class InProcessBroker:
    def __init__(self, data_dir: Path, **overrides: str) -> None:
        props = {
            "log.dirs": str(data_dir),
            **{k.replace("_", "."): v for k, v in overrides.items()},
        }
        self.config = BrokerConfig.from_properties(props)
        self.metrics = BrokerMetrics(records_implementation="test", event_loop="test", version="0")
        # costly validations on a worker pool, as the app runs them
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(self.config.get("produce.offload.threads"))
        )

        def offload(fn: Callable[[], Any]) -> Awaitable[Any]:
            return asyncio.get_running_loop().run_in_executor(self.pool, fn)

        self.now_ms = 1_700_000_000_000
        core = app_core(self.config, self.metrics, time_ms=lambda: self.now_ms, offload=offload)
        self.core = core
        self.log_manager = core.log_manager
        self.replica_manager = core.replica_manager
        self.group_commit = core.group_commit
        self.acl_control = core.acl_control
        assert core.groups is not None
        self.groups = core.groups
        self.context = core.context
        # where the app puts the address its listener bound
        self.context.advertised = Endpoint("127.0.0.1", 9092)
        self.dispatcher = core.dispatcher
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
