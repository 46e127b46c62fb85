"""Connection framing, ordering and backpressure with a fake dispatcher."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import time

import pytest

from broker.server import connection as connection_module
from broker.server.connection import Connection, ConnectionLimits, InflightBudget
from tests.aio import run


class EchoHandler:
    """Answers each frame with its own bytes; frames starting with b'S' answer
    after a delay (async), b'N' get no answer, b'X' raise."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.release = asyncio.Event()

    def handle_frame(self, frame_view, conn):
        data = bytes(frame_view)
        self.seen.append(data)
        if data.startswith(b"S"):
            return self._slow(data)
        if data.startswith(b"N"):
            return None
        if data.startswith(b"X"):
            raise RuntimeError("boom")
        return [frame(data)]

    async def _slow(self, data):
        await self.release.wait()
        return [struct.pack(">i", len(data) + 5), b"slow:", data]


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def read_frame(reader):
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def start(handler, limits=None, budget=None):
    loop = asyncio.get_running_loop()
    limits = limits or ConnectionLimits(receive_buffer_bytes=64)
    budget = budget or InflightBudget(1 << 30)
    server = await loop.create_server(lambda: Connection(handler, limits, budget), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, port


def test_frames_split_at_every_byte_boundary_are_reassembled():
    async def main():
        handler = EchoHandler()
        server, port = await start(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        rng = random.Random(7)
        payloads = [bytes([65 + i % 20]) * rng.randint(1, 300) for i in range(60)]
        payloads = [p if p[:1] not in (b"S", b"N", b"X") else b"a" + p for p in payloads]
        stream = b"".join(frame(p) for p in payloads)
        pos = 0
        while pos < len(stream):  # dribble the stream in random small pieces
            n = rng.randint(1, 9)
            writer.write(stream[pos : pos + n])
            await writer.drain()
            pos += n
        got = [await read_frame(reader) for _ in payloads]
        assert got == payloads
        writer.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_responses_keep_request_order_when_an_earlier_request_is_slow():
    async def main():
        handler = EchoHandler()
        server, port = await start(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"S1") + frame(b"fast2") + frame(b"Nnone") + frame(b"fast3"))
        await writer.drain()
        for _ in range(100):  # all four dispatched before the slow one finishes
            if len(handler.seen) == 4:
                break
            await asyncio.sleep(0.01)
        assert handler.seen == [b"S1", b"fast2", b"Nnone", b"fast3"]
        handler.release.set()
        assert await read_frame(reader) == b"slow:S1"
        assert await read_frame(reader) == b"fast2"
        assert await read_frame(reader) == b"fast3"  # acks=0-style request sent nothing
        writer.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_oversized_frame_closes_only_that_connection():
    async def main():
        handler = EchoHandler()
        server, port = await start(handler, ConnectionLimits(max_frame_bytes=100))
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w1.write(struct.pack(">i", 101) + b"x" * 10)
        await w1.drain()
        assert await r1.read() == b""  # closed without an answer
        w2.write(frame(b"still-here"))
        assert await read_frame(r2) == b"still-here"
        w1.close()
        w2.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_negative_frame_size_closes_connection():
    async def main():
        server, port = await start(EchoHandler())
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(struct.pack(">i", -5))
        assert await r.read() == b""
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_large_frame_received_in_one_buffer_without_copies_of_the_body():
    async def main():
        seen_objs = []

        class Keeper(EchoHandler):
            def handle_frame(self, frame_view, conn):
                seen_objs.append(frame_view.obj)
                return [frame(b"ok")]

        server, port = await start(Keeper(), ConnectionLimits(receive_buffer_bytes=1024))
        r, w = await asyncio.open_connection("127.0.0.1", port)
        big = b"z" * 1_000_000
        w.write(frame(big))
        await w.drain()
        assert await read_frame(r) == b"ok"
        # the frame is a view into a buffer sized for the whole frame
        assert len(seen_objs[0]) >= 1_000_004
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_reading_pauses_above_the_inflight_limit_and_resumes():
    async def main():
        handler = EchoHandler()
        budget = InflightBudget(1 << 30)
        limits = ConnectionLimits(receive_buffer_bytes=256, max_inflight_bytes=50)
        conns = []
        loop = asyncio.get_running_loop()

        def factory():
            c = Connection(handler, limits, budget)
            conns.append(c)
            return c

        server = await loop.create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(frame(b"S" + b"a" * 60))  # one slow request above the limit
        await w.drain()
        for _ in range(100):
            if conns and conns[0]._reading_paused:
                break
            await asyncio.sleep(0.01)
        assert conns[0]._reading_paused
        w.write(frame(b"after"))
        await w.drain()
        await asyncio.sleep(0.05)
        assert handler.seen == [b"S" + b"a" * 60]  # not read while paused
        handler.release.set()
        assert await read_frame(r) == b"slow:S" + b"a" * 60
        assert await read_frame(r) == b"after"
        assert budget.used == 0
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_broker_wide_budget_pauses_other_connections():
    async def main():
        handler = EchoHandler()
        budget = InflightBudget(40)
        limits = ConnectionLimits(receive_buffer_bytes=256, max_inflight_bytes=1 << 20)
        server, port = await start(handler, limits, budget)
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        w1.write(frame(b"S" + b"b" * 50))  # holds the whole broker budget
        await w1.drain()
        for _ in range(100):
            if handler.seen:
                break
            await asyncio.sleep(0.01)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w2.write(frame(b"x1") + frame(b"x2"))
        await w2.drain()
        handler.release.set()
        assert await read_frame(r1) == b"slow:S" + b"b" * 50
        assert await read_frame(r2) == b"x1"
        assert await read_frame(r2) == b"x2"
        w1.close()
        w2.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_close_stops_dispatching_and_closes_after_pending_responses():
    async def main():
        conns = []

        class Closer(EchoHandler):
            def handle_frame(self, frame_view, conn):
                data = bytes(frame_view)
                if data == b"close-me":
                    self.seen.append(data)
                    conn.close()  # like acks=0 after a failed append
                    return None
                return super().handle_frame(frame_view, conn)

        handler = Closer()
        loop = asyncio.get_running_loop()

        def factory():
            c = Connection(handler, ConnectionLimits(), InflightBudget(1 << 30))
            conns.append(c)
            return c

        server = await loop.create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(frame(b"S-slow") + frame(b"close-me") + frame(b"never"))
        await w.drain()
        for _ in range(100):
            if len(handler.seen) >= 2:
                break
            await asyncio.sleep(0.01)
        handler.release.set()
        assert await read_frame(r) == b"slow:S-slow"  # answered before closing
        assert await r.read() == b""  # then closed
        assert b"never" not in handler.seen
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


class _CloseOnRequest(EchoHandler):
    """Like acks=0 after a failed append: ``close-me`` closes the connection."""

    def handle_frame(self, frame_view, conn):
        if bytes(frame_view) == b"close-me":
            self.seen.append(b"close-me")
            conn.close()
            return None
        return super().handle_frame(frame_view, conn)


async def _closing_server(handler):
    conns: list[Connection] = []

    def factory():
        c = Connection(handler, ConnectionLimits(), InflightBudget(1 << 30))
        conns.append(c)
        return c

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], conns


def test_answers_reach_the_client_when_it_pipelined_requests_behind_a_close():
    """Requests the client sent after the broker stopped reading sit unread in
    the broker's kernel buffer; a plain close() would answer them with a RST,
    and the RST makes the client's kernel drop the answers it holds but has
    not read yet. The client here reads only after the broker has closed."""

    async def main():
        handler = _CloseOnRequest()
        server, port, conns = await _closing_server(handler)
        loop = asyncio.get_running_loop()

        def client() -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(frame(b"S-slow") + frame(b"close-me"))
                time.sleep(0.1)  # the broker has paused reading
                s.sendall(frame(b"never" * 2000) * 8)  # 80 KB the broker never reads
                loop.call_soon_threadsafe(handler.release.set)
                time.sleep(0.3)  # the answer is written and the broker closed its side
                received = b""
                while chunk := s.recv(65536):  # ConnectionResetError after a RST
                    received += chunk
                return received

        received = await loop.run_in_executor(None, client)
        assert received == frame(b"slow:S-slow")
        for _ in range(200):
            if conns[0].transport is not None and conns[0].transport.is_closing():
                break
            await asyncio.sleep(0.01)
        assert conns[0]._closed or conns[0].transport.is_closing()
        assert not any(seen.startswith(b"never") for seen in handler.seen)
        server.close()
        await server.wait_closed()

    run(main())


def test_a_peer_that_never_closes_its_side_is_reset_after_the_linger(monkeypatch):
    monkeypatch.setattr(connection_module, "LINGER_SECONDS", 0.1)

    async def main():
        handler = _CloseOnRequest()
        server, port, conns = await _closing_server(handler)
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(frame(b"ping") + frame(b"close-me"))
        assert await read_frame(r) == b"ping"
        assert await r.read() == b""  # the broker's FIN; we keep our side open
        for _ in range(100):
            if conns[0]._closed:
                break
            await asyncio.sleep(0.01)
        assert conns[0]._closed  # aborted at the linger's end
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_an_announced_huge_frame_costs_only_what_was_sent():
    """A size prefix alone does not make the connection allocate the announced
    size: beyond EAGER_FRAME_BYTES the buffer grows with the bytes received."""
    from broker.server.connection import EAGER_FRAME_BYTES, FRAME_GROWTH

    async def main():
        conns = []
        got = []

        class Keeper(EchoHandler):
            def handle_frame(self, frame_view, conn):
                got.append(bytes(frame_view))
                return [frame(b"ok")]

        loop = asyncio.get_running_loop()
        limits = ConnectionLimits(receive_buffer_bytes=4096, max_frame_bytes=64 << 20)

        def factory():
            conns.append(Connection(Keeper(), limits, InflightBudget(1 << 30)))
            return conns[-1]

        server = await loop.create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            size = 40 << 20
            body = bytes(random.Random(3).randbytes(size))
            w.write(struct.pack(">i", size) + body[:100])
            await w.drain()
            await asyncio.sleep(0.05)
            (conn,) = conns
            assert len(conn._buf) <= EAGER_FRAME_BYTES
            # the rest in pieces: the buffer grows geometrically, the frame arrives whole
            capacities = {len(conn._buf)}
            for pos in range(100, size, 1 << 20):
                w.write(body[pos : pos + (1 << 20)])
                await w.drain()
                capacities.add(len(conn._buf))
                received = min(pos + (1 << 20), size) + 4
                assert len(conn._buf) <= max(EAGER_FRAME_BYTES, FRAME_GROWTH * received + (1 << 20))
            assert await read_frame(r) == b"ok"
            assert got == [body]
            assert len(capacities) <= 8  # a handful of reallocations, not one per read
        finally:
            w.close()
            for conn in conns:
                conn.abort()
            server.close()
            await server.wait_closed()

    run(main())


@pytest.mark.parametrize("answer", ["at once", "later"])
def test_large_pipelined_frames_reuse_released_buffers(answer):
    """Large frames land in reused buffers, not in a fresh (zeroed) allocation
    each: frames answered at once (acks=1) leave their buffer free at once;
    frames answered later (acks=all waits for an fsync) keep it alive until
    answered, then it is pooled for the next large frame."""
    from broker.server.connection import POOL_BUFFERS

    async def main():
        buffers = []  # strong references: ids stay unique per buffer object

        class Later(EchoHandler):
            def handle_frame(self, frame_view, conn):
                buffers.append(frame_view.obj)
                return [frame(b"ok")] if answer == "at once" else self._later()

            async def _later(self):
                await asyncio.sleep(0.002)
                return [frame(b"ok")]

        server, port = await start(Later(), ConnectionLimits(receive_buffer_bytes=64 * 1024))
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            body = b"p" * 1_000_000
            sent = answered = 0
            while answered < 24:  # four requests in flight, as a pipelining producer
                while sent < 24 and sent - answered < 4:
                    w.write(frame(body))
                    sent += 1
                await w.drain()
                assert await read_frame(r) == b"ok"
                answered += 1
            assert len(buffers) == 24
            assert len({id(b) for b in buffers}) <= POOL_BUFFERS + 2
        finally:
            w.close()
            server.close()
            await server.wait_closed()

    run(main())
