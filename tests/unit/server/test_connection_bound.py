"""connection.max.inflight.bytes with a fake transport: exactly what counts
against the bound (requests in flight, answers waiting behind an earlier one,
the transport's write buffer), and what makes the connection go on."""

from __future__ import annotations

import asyncio
import struct

from broker.delayed import DelayedReply
from broker.server.budget import ReceiveBudget
from broker.server.connection import Connection, ConnectionLimits
from tests.aio import run
from tests.unit.server.test_connection import EchoHandler, frame


class FakeTransport:
    """Takes every write into its buffer; nothing drains unless the test says so."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.size = 0
        self.reading = True
        self.closed = False
        self.limits: tuple[int, int] = (0, 0)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self.limits = (high, low)

    def get_write_buffer_size(self) -> int:
        return self.size

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))
        self.size += len(data)

    def writelines(self, data: list[bytes]) -> None:
        for piece in data:
            self.write(piece)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


class Answers(EchoHandler):
    """Answers each frame with ``answer`` bytes; frames starting with b'S' later."""

    def __init__(self, answer: int) -> None:
        super().__init__()
        self.answer = answer

    def handle_frame(self, frame_view, conn):
        data = bytes(frame_view)
        self.seen.append(data)
        if data.startswith(b"S"):
            return DelayedReply.of_awaitable(self._later())
        return [frame(b"a" * (self.answer - 4))]

    async def _later(self):
        await self.release.wait()
        return [frame(b"late")]


def connect(handler: EchoHandler, bound: int) -> tuple[Connection, FakeTransport]:
    conn = Connection(handler, ConnectionLimits(max_inflight_bytes=bound), ReceiveBudget(1 << 30))
    transport = FakeTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


def feed(conn: Connection, data: bytes) -> None:
    view = conn.get_buffer(-1)
    view[: len(data)] = data
    conn.buffer_updated(len(data))


def test_answers_in_the_write_buffer_stop_dispatch_and_reading() -> None:
    async def main() -> None:
        handler = Answers(600)
        conn, transport = connect(handler, 1000)
        assert transport.limits == (999, 499)  # pause_writing once it alone holds the bound
        feed(conn, b"".join(frame(b"r%d" % i) for i in range(5)))
        # two answers (1200 bytes) not taken: the third frame waits in the buffer
        assert handler.seen == [b"r0", b"r1"]
        assert conn.paused and not transport.reading
        transport.size = 1100  # the client took a little: still above
        conn.resume_writing()
        assert handler.seen == [b"r0", b"r1"]
        transport.size = 0  # it took everything
        conn.resume_writing()
        # dispatched from the buffer again, up to the bound, without a read
        assert handler.seen == [b"r0", b"r1", b"r2", b"r3"]
        assert not transport.reading
        transport.size = 0
        conn.resume_writing()
        assert handler.seen == [b"r0", b"r1", b"r2", b"r3", b"r4"]
        assert transport.reading and not conn.paused  # nothing left: reads again

    run(main())


def test_answers_waiting_behind_a_slow_one_count() -> None:
    async def main() -> None:
        handler = Answers(400)
        conn, transport = connect(handler, 1000)
        feed(conn, frame(b"S-slow") + b"".join(frame(b"f%d" % i) for i in range(4)))
        # the slow request (10 bytes) and two answers of 400 waiting behind it, then
        # a third pushes the count over: the last frame stays in the buffer
        assert handler.seen == [b"S-slow", b"f0", b"f1", b"f2"]
        assert transport.written == [] and conn.paused
        handler.release.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # an answer a task completes is written at the end of its turn
        assert transport.written[0] == frame(b"late")
        assert len(transport.written) == 4  # the slow answer, then the three behind it
        assert handler.seen[-1] == b"f2"  # 1210 bytes in the write buffer now
        transport.size = 0
        conn.resume_writing()
        assert handler.seen[-1] == b"f3"

    run(main())


def test_the_sweep_notices_a_write_buffer_drained_below_the_high_water_mark() -> None:
    """Answers below the high-water mark drain without a resume_writing: the
    sweep reads the write buffer, so a connection they helped stop goes on
    within a sweep instead of waiting for its next answer."""

    async def main() -> None:
        class TwoSlow(Answers):
            def __init__(self) -> None:
                super().__init__(300)
                self.events = {b"S1": asyncio.Event(), b"S2": asyncio.Event()}

            def handle_frame(self, frame_view, conn):
                data = bytes(frame_view)
                if data[:2] in self.events:
                    self.seen.append(data)
                    return DelayedReply.of_awaitable(self._until(self.events[data[:2]]))
                return super().handle_frame(frame_view, conn)

            async def _until(self, event):
                await event.wait()
                return [frame(b"late")]

        handler = TwoSlow()
        conn, transport = connect(handler, 1000)
        s2 = b"S2" + b"." * 598  # a slow request of 604 bytes
        feed(conn, frame(b"S1") + frame(b"r0") + frame(s2) + frame(b"r1") + frame(b"r2"))
        # 6 + 6 + 604 + 6 in flight, 300 + 300 waiting: r2 stays in the buffer
        assert handler.seen == [b"S1", b"r0", s2, b"r1"] and conn.paused
        handler.events[b"S1"].set()
        for _ in range(3):  # the task ends, then its answer goes at the end of that turn
            await asyncio.sleep(0)
        # S1's and r0's answers went out (308 < 999: no pause_writing); S2 still in
        # flight: 610 in flight + 300 waiting + 308 not taken is over the bound
        assert transport.size == 308 and conn.paused
        transport.size = 0  # the client takes them; nobody tells the connection
        assert conn.sweep(asyncio.get_running_loop().time(), -1, -1) is None
        assert handler.seen[-1] == b"r2"  # 610 + 300 + 0 is under the bound again
        assert conn.paused  # and r2's answer, waiting behind S2, brings it over again
        handler.events[b"S2"].set()
        for _ in range(3):
            await asyncio.sleep(0)
        assert transport.size == 8 + 300 + 300 and not conn.paused and transport.reading

    run(main())


def test_a_file_region_waiting_behind_a_slow_answer_counts_its_size() -> None:
    class Region:
        def __init__(self, size: int) -> None:
            self.size = size

    class Regions(Answers):
        def handle_frame(self, frame_view, conn):
            data = bytes(frame_view)
            if data.startswith(b"S"):
                return super().handle_frame(frame_view, conn)
            self.seen.append(data)
            return [struct.pack(">i", 700), Region(700)]

    def write_region(transport, region) -> None:
        transport.write(b"r" * region.size)

    async def main() -> None:
        handler = Regions(0)
        conn = Connection(
            handler,
            ConnectionLimits(max_inflight_bytes=1000),
            ReceiveBudget(1 << 30),
            write_segment=write_region,
        )
        transport = FakeTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        feed(conn, frame(b"S") + frame(b"f0") + frame(b"f1") + frame(b"f2"))
        # two answers of 704 bytes (a region of 700) wait behind S: f2 stays buffered
        assert handler.seen == [b"S", b"f0", b"f1"] and conn.paused
        handler.release.set()
        for _ in range(3):  # the task ends, then its answer goes at the end of that turn
            await asyncio.sleep(0)
        assert transport.written[1:] == [struct.pack(">i", 700), b"r" * 700] * 2

    run(main())
