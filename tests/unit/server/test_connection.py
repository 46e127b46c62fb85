"""Connection framing, ordering and backpressure with a fake dispatcher."""

from __future__ import annotations

import asyncio
import random
import struct

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
