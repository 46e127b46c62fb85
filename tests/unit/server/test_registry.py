"""The connection registry: admission by the quotas, and the sweep's time limits
(connections.max.idle.ms, connection.frame.timeout.ms) and buffer release."""

from __future__ import annotations

import asyncio
import socket
import struct

from broker.server.budget import ReceiveBudget
from broker.server.connection import Connection, ConnectionLimits
from broker.server.quotas import ConnectionQuotas
from broker.server.registry import ConnectionRegistry, TimeLimits
from tests.aio import run
from tests.unit.server.test_connection import EchoHandler, frame, read_frame


class Events:
    """A ConnectionRecorder that keeps what it is told."""

    def __init__(self) -> None:
        self.open = 0
        self.created = 0
        self.refusals: list[str] = []
        self.expiries: list[str] = []

    def opened(self) -> None:
        self.open += 1
        self.created += 1

    def closed(self) -> None:
        self.open -= 1

    def refused(self, reason: str) -> None:
        self.refusals.append(reason)

    def expired(self, reason: str) -> None:
        self.expiries.append(reason)


class Server:
    def __init__(self, registry: ConnectionRegistry, handler=None, limits=None, budget=None):
        self.registry = registry
        self.handler = handler or EchoHandler()
        self.limits = limits or ConnectionLimits()
        self.budget = budget or ReceiveBudget(1 << 30)
        self.conns: list[Connection] = []

    async def __aenter__(self) -> Server:
        def factory() -> Connection:
            conn = Connection(self.handler, self.limits, self.budget, owner=self.registry)
            self.conns.append(conn)
            return conn

        self.server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for conn in self.conns:
            conn.abort()
        self.server.close()
        await self.server.wait_closed()

    async def connect(self, source: str = "127.0.0.1"):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        return await asyncio.open_connection(sock=sock)


async def closed_by_peer(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), 2) == b""
    except ConnectionResetError:
        return True


def registry(events: Events, **quota_args: object) -> ConnectionRegistry:
    return ConnectionRegistry(ConnectionQuotas(**quota_args), TimeLimits(1000, 500), events)


async def settle(predicate, what: str) -> None:
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


def test_connections_above_max_connections_are_closed_at_accept_and_counted() -> None:
    async def main() -> None:
        events = Events()
        async with Server(registry(events, max_connections=2)) as srv:
            (r1, w1), (_r2, w2) = await srv.connect(), await srv.connect()
            r3, w3 = await srv.connect()
            assert await closed_by_peer(r3)
            assert events.refusals == ["max_connections"]
            assert events.open == 2 and len(srv.registry) == 2
            # the two admitted ones work
            w1.write(frame(b"one"))
            assert await read_frame(r1) == b"one"
            w2.close()
            await settle(lambda: events.open == 1, "the close is counted")
            r4, w4 = await srv.connect()  # a slot is free again
            w4.write(frame(b"four"))
            assert await read_frame(r4) == b"four"
            assert events.created == 3
            for w in (w1, w3, w4):
                w.close()

    run(main())


def test_per_ip_limits_and_overrides() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events, per_ip=1, overrides={"127.0.0.2": 2})
        async with Server(reg) as srv:
            (r1, w1) = await srv.connect("127.0.0.1")
            (r2, w2) = await srv.connect("127.0.0.1")
            assert await closed_by_peer(r2)
            (r3, w3), (r4, w4) = await srv.connect("127.0.0.2"), await srv.connect("127.0.0.2")
            (r5, w5) = await srv.connect("127.0.0.2")
            assert await closed_by_peer(r5)
            assert events.refusals == ["max_connections_per_ip"] * 2
            for r, w in ((r1, w1), (r3, w3), (r4, w4)):
                w.write(frame(b"ok"))
                assert await read_frame(r) == b"ok"
            assert reg.quotas.count("127.0.0.2") == 2
            for w in (w1, w2, w3, w4, w5):
                w.close()

    run(main())


def test_an_idle_connection_is_closed_after_connections_max_idle_ms() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        async with Server(reg) as srv:
            r, w = await srv.connect()
            w.write(frame(b"ping"))
            assert await read_frame(r) == b"ping"
            now = asyncio.get_running_loop().time()
            assert reg.sweep(now) == 0  # active since the last sweep
            assert reg.sweep(now + 0.9) == 0
            assert reg.sweep(now + 1.0) == 1
            assert events.expiries == ["idle"]
            assert await asyncio.wait_for(r.read(), 2) == b""  # a clean close
            await settle(lambda: events.open == 0, "closed")
            w.close()

    run(main())


def test_a_request_in_flight_keeps_a_connection_from_being_idle() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        async with Server(reg) as srv:
            r, w = await srv.connect()
            w.write(frame(b"S-long-poll"))
            await settle(lambda: srv.handler.seen, "dispatched")
            now = asyncio.get_running_loop().time()
            assert reg.sweep(now + 60) == 0
            srv.handler.release.set()
            assert await read_frame(r) == b"slow:S-long-poll"
            assert events.expiries == []
            w.close()

    run(main())


def test_a_frame_trickled_slower_than_the_frame_timeout_closes_the_connection() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        async with Server(reg) as srv:
            r, w = await srv.connect()
            w.write(frame(b"whole") + struct.pack(">i", 1000) + b"begun")
            assert await read_frame(r) == b"whole"
            now = asyncio.get_running_loop().time()
            assert reg.sweep(now) == 0  # the partial frame's clock starts
            w.write(b"more bytes keep the connection active, not the frame")
            await w.drain()
            await asyncio.sleep(0.05)
            assert reg.sweep(now + 0.4) == 0
            assert reg.sweep(now + 0.5) == 1
            assert events.expiries == ["frame_timeout"]
            assert await closed_by_peer(r)
            w.close()

    run(main())


def test_frames_completed_in_time_reset_the_frame_clock() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        async with Server(reg) as srv:
            r, w = await srv.connect()
            start = asyncio.get_running_loop().time()
            for i in range(4):  # each frame begun at one sweep and finished before the next
                w.write(struct.pack(">i", 3) + b"a")
                await w.drain()
                await asyncio.sleep(0.02)
                assert reg.sweep(start + 0.3 * i) == 0
                w.write(b"bc")
                assert await read_frame(r) == b"abc"
            assert events.expiries == []
            w.close()

    run(main())


def test_the_frame_clock_stops_while_the_broker_holds_the_connection() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        limits = ConnectionLimits(max_inflight_bytes=10)
        async with Server(reg, limits=limits) as srv:
            r, w = await srv.connect()
            # a slow request above the bound, then the start of another frame
            w.write(frame(b"S-slow-request") + struct.pack(">i", 100) + b"x")
            await settle(lambda: srv.conns and srv.conns[0].paused, "stopped at the bound")
            now = asyncio.get_running_loop().time()
            assert reg.sweep(now) == 0
            assert reg.sweep(now + 10) == 0  # not the client's fault
            srv.handler.release.set()
            assert await read_frame(r) == b"slow:S-slow-request"
            w.close()

    run(main())


def test_a_quiet_connection_gives_its_buffers_back_and_still_works() -> None:
    async def main() -> None:
        events = Events()
        reg = registry(events)
        budget = ReceiveBudget(1 << 30)
        async with Server(reg, budget=budget) as srv:
            r, w = await srv.connect()
            _idle_r, idle_w = await srv.connect()  # never sends: never gets a buffer
            w.write(frame(b"x" * 100_000))
            assert await read_frame(r) == b"x" * 100_000
            conn, idle = srv.conns
            assert conn.receive_buffer_bytes >= 100_004
            assert idle.receive_buffer_bytes == 0
            now = asyncio.get_running_loop().time()
            reg.sweep(now)  # bytes arrived since the last sweep: kept
            assert conn.receive_buffer_bytes
            reg.sweep(now + 0.01)  # quiet for a sweep: given back
            assert conn.receive_buffer_bytes == 0 and budget.used == 0
            w.write(frame(b"again"))
            assert await read_frame(r) == b"again"
            assert budget.used == conn.receive_buffer_bytes > 0
            for writer in (w, idle_w):
                writer.close()

    run(main())


def test_sweep_interval_follows_the_shortest_limit() -> None:
    assert TimeLimits(600_000, 30_000).sweep_seconds == 1.0
    assert TimeLimits(200, 30_000).sweep_seconds == 0.05
    assert TimeLimits(-1, -1).sweep_seconds == 1.0
    assert TimeLimits(1, 1).sweep_seconds == 0.01
