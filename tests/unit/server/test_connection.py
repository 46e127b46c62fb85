"""Connection framing, ordering and backpressure with a fake dispatcher."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import time

import pytest

from broker.delayed import DelayedReply
from broker.server import connection as connection_module
from broker.server.budget import ReceiveBudget
from broker.server.connection import Connection, ConnectionLimits
from broker.server.receive_buffer import INITIAL_BUFFER_BYTES
from tests.aio import run


class EchoHandler:
    """Answers each frame with its own bytes; frames starting with b'S' answer
    after a delay (async), b'D' when the test resolves their ``DelayedReply``
    (kept in ``delayed``), b'N' get no answer, b'X' raise."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.release = asyncio.Event()
        self.delayed: list[tuple[bytes, DelayedReply]] = []

    def handle_frame(self, frame_view, conn):
        data = bytes(frame_view)
        self.seen.append(data)
        if data.startswith(b"S"):
            return DelayedReply.of_awaitable(self._slow(data))
        if data.startswith(b"D"):
            reply = DelayedReply()
            self.delayed.append((data, reply))
            return reply
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
    limits = limits or ConnectionLimits()
    budget = budget or ReceiveBudget(1 << 30)
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
        payloads = [p if p[:1] not in (b"S", b"D", b"N", b"X") else b"a" + p for p in payloads]
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


async def _until(predicate):
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached")


def test_delayed_replies_are_written_in_request_order_when_resolved():
    """acks=all answers come from a callback (a ``DelayedReply``), in any
    order; the client still reads them in the order it asked."""

    async def main():
        handler = EchoHandler()
        server, port = await start(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"D1") + frame(b"fast2") + frame(b"D3") + frame(b"fast4"))
        await _until(lambda: len(handler.seen) == 4)
        (_, first), (data3, third) = handler.delayed
        third.resolve([frame(b"late:" + data3)])
        await asyncio.sleep(0.02)
        first.resolve([frame(b"late:D1")])
        got = [await read_frame(reader) for _ in range(4)]
        assert got == [b"late:D1", b"fast2", b"late:D3", b"fast4"]
        writer.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_a_delayed_reply_answered_after_its_connection_closed_goes_nowhere():
    """The client went away while its acks=all request waited for the round:
    the round's answer, or its error, is dropped quietly and the server goes on."""

    async def main():
        loop = asyncio.get_running_loop()
        unhandled = []
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
        handler = EchoHandler()
        server, port = await start(handler)
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"D1") + frame(b"D2"))
        await _until(lambda: len(handler.delayed) == 2)
        writer.close()
        await asyncio.sleep(0.05)  # the server sees the close
        handler.delayed[0][1].resolve([frame(b"late")])
        handler.delayed[1][1].fail(RuntimeError("a bug in the round"))
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", port)
        writer2.write(frame(b"still here"))
        assert await read_frame(reader2) == b"still here"
        assert unhandled == []
        writer2.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_a_delayed_reply_that_fails_closes_only_its_connection():
    async def main():
        handler = EchoHandler()
        server, port = await start(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"D1"))
        await _until(lambda: len(handler.delayed) == 1)
        handler.delayed[0][1].fail(RuntimeError("boom"))
        assert await reader.read() == b""  # closed, nothing answered
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", port)
        writer2.write(frame(b"other"))
        assert await read_frame(reader2) == b"other"
        writer.close()
        writer2.close()
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

        server, port = await start(Keeper(), ConnectionLimits())
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
        budget = ReceiveBudget(1 << 30)
        limits = ConnectionLimits(max_inflight_bytes=50)
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
        # nothing in flight; what the budget still counts is the buffer the connection reads into
        assert budget.used == conns[0].receive_buffer_bytes <= 16 * 1024
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_broker_wide_budget_pauses_other_connections():
    async def main():
        handler = EchoHandler()
        budget = ReceiveBudget(40)
        limits = ConnectionLimits(max_inflight_bytes=1 << 20)
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
            c = Connection(handler, ConnectionLimits(), ReceiveBudget(1 << 30))
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
        c = Connection(handler, ConnectionLimits(), ReceiveBudget(1 << 30))
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
    size: the buffer starts small and grows to twice what arrived of the frame."""

    async def main():
        conns = []
        got = []

        class Keeper(EchoHandler):
            def handle_frame(self, frame_view, conn):
                got.append(bytes(frame_view))
                return [frame(b"ok")]

        loop = asyncio.get_running_loop()
        limits = ConnectionLimits(max_frame_bytes=64 << 20)
        budget = ReceiveBudget(1 << 30)

        def factory():
            conns.append(Connection(Keeper(), limits, budget))
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
            assert len(conn._buf) == INITIAL_BUFFER_BYTES
            # the rest in pieces: the buffer grows geometrically, the frame arrives whole
            capacities = {len(conn._buf)}
            for pos in range(100, size, 1 << 20):
                w.write(body[pos : pos + (1 << 20)])
                await w.drain()
                capacities.add(len(conn._buf))
                received = min(pos + (1 << 20), size) + 4
                assert len(conn._buf) <= max(INITIAL_BUFFER_BYTES, 2 * received)
                assert budget.used == conn.receive_buffer_bytes
            assert await read_frame(r) == b"ok"
            assert got == [body]
            # 16 KiB doubling to 40 MiB: a dozen buffers, not one per read
            assert len(capacities) <= 13, sorted(capacities)
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
    from broker.server.receive_buffer import POOL_BUFFERS

    async def main():
        buffers = []  # strong references: ids stay unique per buffer object

        class Later(EchoHandler):
            def handle_frame(self, frame_view, conn):
                buffers.append(frame_view.obj)
                return (
                    [frame(b"ok")]
                    if answer == "at once"
                    else DelayedReply.of_awaitable(self._later())
                )

            async def _later(self):
                await asyncio.sleep(0.002)
                return [frame(b"ok")]

        server, port = await start(Later(), ConnectionLimits())
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


class BigAnswers(EchoHandler):
    """Answers every frame with ``answer`` bytes (a small request, a large answer)."""

    def __init__(self, answer: int) -> None:
        super().__init__()
        self.answer = answer

    def handle_frame(self, frame_view, conn):
        self.seen.append(bytes(frame_view))
        return [frame(bytes(frame_view)[:8].ljust(self.answer, b"."))]


def test_a_client_that_never_reads_stops_being_read_and_dispatched():
    """Small pipelined requests with large answers the client never reads: the
    connection stops at connection.max.inflight.bytes, frames already in its
    buffer wait there undispatched, and it goes on from its buffer when the
    client reads."""

    async def main():
        answer, bound, requests = 256 * 1024, 1 << 20, 400
        handler = BigAnswers(answer)
        conns = []

        def factory():
            conns.append(Connection(handler, ConnectionLimits(max_inflight_bytes=bound), budget))
            return conns[-1]

        budget = ReceiveBudget(1 << 30)
        server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel takes little
        sock.connect(("127.0.0.1", port))
        sock.setblocking(False)
        r, w = await asyncio.open_connection(sock=sock)
        try:
            w.write(b"".join(frame(b"req%05d" % i) for i in range(requests)))  # 6 KB in all
            await w.drain()
            await _until(lambda: conns and conns[0].paused)
            (conn,) = conns
            await asyncio.sleep(0.1)
            handled = len(handler.seen)
            # what the kernel's socket buffers took, then the bound and one answer
            assert handled < 60, handled
            assert conn.paused and conn._end - conn._start > 0  # the rest waits, buffered
            held = conn._waiting_bytes + conn.transport.get_write_buffer_size()
            assert held <= bound + answer
            await asyncio.sleep(0.1)
            assert len(handler.seen) == handled  # nothing more while nobody reads
            for i in range(requests):  # now the client reads: everything, in order
                assert (await read_frame(r))[:8] == b"req%05d" % i
            assert len(handler.seen) == requests
        finally:
            w.close()
            server.close()
            await server.wait_closed()

    run(main())


def test_an_answer_larger_than_the_bound_still_goes_out():
    async def main():
        handler = BigAnswers(3 << 20)
        server, port = await start(handler, ConnectionLimits(max_inflight_bytes=64 * 1024))
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(frame(b"first---") + frame(b"second--"))
        assert (await read_frame(r))[:8] == b"first---"
        assert (await read_frame(r))[:8] == b"second--"
        w.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_partial_frames_count_against_the_receive_budget():
    """Half-received frames on many connections: the budget stops their buffers
    growing (receive memory stays near queued.max.request.bytes), yet every frame
    completes: one connection at a time may finish its frame beyond the limit."""

    async def main():
        limit, frame_size, clients = 1 << 20, 1 << 20, 6
        got = []

        class Keeper(EchoHandler):
            def handle_frame(self, frame_view, conn):
                got.append(len(frame_view))
                return [frame(b"ok")]

        budget = ReceiveBudget(limit)
        conns = []

        def factory():
            conns.append(Connection(Keeper(), ConnectionLimits(max_frame_bytes=8 << 20), budget))
            return conns[-1]

        server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(clients)]
        body = b"b" * frame_size
        try:
            for _, w in streams:  # 600 KB of a 1 MB frame each: 3.6 MB announced
                w.write(struct.pack(">i", frame_size) + body[: 600 * 1024])
            await asyncio.sleep(0.3)
            # at most the limit, the overdraft (one frame) and a first buffer each
            assert budget.used <= limit + frame_size + 4 + clients * INITIAL_BUFFER_BYTES
            assert sum(c.receive_buffer_bytes for c in conns) == budget.used
            assert any(c.paused for c in conns) and budget.waiting
            for _, w in streams:
                w.write(body[600 * 1024 :])
            for r, _ in streams:
                assert await asyncio.wait_for(read_frame(r), 10) == b"ok"
            assert got == [frame_size] * clients
            # and a new client with small requests is served all along
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(frame(b"small"))
            assert await read_frame(r) == b"ok"
            w.close()
        finally:
            for _, w in streams:
                w.close()
            server.close()
            await server.wait_closed()

    run(main())


async def _until(predicate, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_a_connection_waiting_for_the_budget_resumes_when_its_own_answers_free_its_buffer():
    """The receive budget is full and a slow request pins the connection's only
    buffer, which has no room left: the connection waits for the budget. When the
    slow request is answered its buffer is free again, and it reads on without
    any bytes coming back to the budget."""

    async def main():
        handler = EchoHandler()
        budget = ReceiveBudget(1)  # every byte beyond a first buffer is refused
        conns = []

        def factory():
            conns.append(Connection(handler, ConnectionLimits(), budget))
            return conns[-1]

        server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            slow = b"S" + b"s" * (INITIAL_BUFFER_BYTES - 100 - 5)  # leaves 100 bytes of room
            w.write(frame(slow))
            await _until(lambda: conns and conns[0].paused)
            (conn,) = conns
            assert budget.waiting == 1 and conn.receive_buffer_bytes == INITIAL_BUFFER_BYTES
            w.write(frame(b"after"))
            await asyncio.sleep(0.05)
            assert handler.seen == [slow]
            handler.release.set()
            assert await read_frame(r) == b"slow:" + slow
            assert await read_frame(r) == b"after"
            assert budget.waiting == 0 and budget.used == INITIAL_BUFFER_BYTES
        finally:
            w.close()
            server.close()
            await server.wait_closed()

    run(main())
