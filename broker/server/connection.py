"""One client connection: framing, pipelining in order, backpressure.

Wire framing (every Kafka request and response)::

    Size => Int32          length of what follows
    Payload => Size bytes  request: header + body; response: header + body

Receive path (``asyncio.BufferedProtocol``): the event loop reads straight
into our receive buffer (:meth:`get_buffer`); complete frames are cut out of
it *in place* as ``memoryview`` slices and handed to the dispatcher, so the
records of a produce request stay a view into the bytes the kernel wrote
until the log has written them. A buffer that still has live frame views is
never reused or resized: when it is full a fresh one is allocated and only
the partial frame at its tail is moved (at most one short copy per buffer).
When a frame's size prefix announces more than the free space, the next
buffer is sized for the whole frame (up to ``EAGER_FRAME_BYTES``, which
covers every produce request of a default client), so a large produce
request lands in one piece. Beyond that the buffer grows with the bytes that
actually arrived (``FRAME_GROWTH`` times them), so a peer that announces
100 MB and sends 4 bytes costs ``EAGER_FRAME_BYTES``, not 100 MB (Kafka
allocates the announced size at once; docs/deviations.md). Buffers grown for
large frames are pooled once no unanswered frame points into them (up to
``POOL_BUFFERS`` per connection), so a producer pipelining 1 MB requests
behind acks=all fsyncs reuses a few buffers instead of allocating and
zeroing a fresh one per request (0.31 against 0.05 ms of CPU per 1 MB).

Pipelining: every complete frame is dispatched at once, in arrival order, so
appends happen in the order the client sent them; a handler may finish
synchronously or hand back an awaitable (an fsync for acks=all, a long-poll
Fetch). Responses are written strictly in request order: a slow request
holds back the responses behind it, as Kafka's muted channel does.

Backpressure: bytes of requests that are received but not yet answered are
counted per connection and per broker (:class:`InflightBudget`). Above the
connection's limit, or the broker's, reading pauses (``pause_reading``) and
resumes when answers drain. Writes pause the same way when the transport's
write buffer is above its high-water mark (``pause_writing``), so a slow
reader cannot make us buffer without bound.

A frame whose size is negative or above ``socket.request.max.bytes`` closes
the connection without an answer, as Kafka's SocketServer does.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
#: never offer the loop less room than this for one read
_MIN_READ = 16 * 1024
#: frames up to this size get a buffer for the whole frame as soon as their size is known
EAGER_FRAME_BYTES = 2 * 1024 * 1024
#: larger frames: the buffer grows to this many times the frame bytes received so far
FRAME_GROWTH = 4
#: released receive buffers (grown for large frames, at most this size) a connection
#: keeps for its next large frames, and how many
POOL_BUFFER_BYTES = 2 * EAGER_FRAME_BYTES
POOL_BUFFERS = 4
#: after a graceful close, how long the peer gets to close its side before a reset
LINGER_SECONDS = 1.0

#: what a handler answers with: the segments of a whole response frame, size
#: prefix included (bytes-like objects, or file slices written by the
#: ``write_segment`` callback), or None for "no response" (acks=0)
Segments = Sequence[Any]
Outcome = Segments | None | Awaitable[Segments | None]


class ProtocolViolation(Exception):
    """Raised by a frame handler for a request it cannot answer: the
    connection is closed and the reason logged once, without a traceback."""


class FrameHandler(Protocol):
    """The dispatcher seen from a connection."""

    def handle_frame(self, frame: memoryview, conn: Connection) -> Outcome: ...


#: writes one non-bytes segment (e.g. a file region) to a transport
SegmentWriter = Callable[[asyncio.WriteTransport, object], None]


class InflightBudget:
    """Broker-wide count of request bytes received and not yet answered."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: list[Connection] = []

    def acquire(self, n: int) -> None:
        self.used += n

    def release(self, n: int) -> None:
        self.used -= n
        if self._waiting and self.used < self.limit:
            waiting, self._waiting = self._waiting, []
            for conn in waiting:
                conn._maybe_resume_reading()

    def exhausted(self) -> bool:
        return self.used >= self.limit

    def wait(self, conn: Connection) -> None:
        if conn not in self._waiting:
            self._waiting.append(conn)


@dataclass
class ConnectionLimits:
    max_frame_bytes: int = 104_857_600
    max_inflight_bytes: int = 64 * 1024 * 1024
    receive_buffer_bytes: int = 256 * 1024


@dataclass
class _Slot:
    size: int
    #: the receive buffer the request's frame (a view) lives in
    buf: bytearray
    done: bool = False
    segments: Segments | None = None


class Connection(asyncio.BufferedProtocol):
    """asyncio protocol for one client; see the module docstring."""

    def __init__(
        self,
        handler: FrameHandler,
        limits: ConnectionLimits,
        budget: InflightBudget,
        write_segment: SegmentWriter | None = None,
        on_close: Callable[[Connection], None] | None = None,
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.budget = budget
        self._write_segment = write_segment
        self._on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.peer: str = "?"
        #: who the client is, for the authorizer (Kafka's KafkaPrincipal string);
        #: PLAINTEXT listeners authenticate nobody: User:ANONYMOUS
        self.principal: str = "User:ANONYMOUS"
        self.peer_host: str = ""  # the client's IP address, matched against ACL hosts
        self.listener_name: str = "PLAINTEXT"
        #: set by the ApiVersions handler (v3+): the client's software, for metrics
        self.client_software_name: str | None = None
        self.client_software_version: str | None = None
        self._buf = bytearray(limits.receive_buffer_bytes)
        self._view = memoryview(self._buf)
        self._start = 0  # first byte of the frame being received
        self._end = 0  # bytes written by the loop so far
        self._slots: collections.deque[_Slot] = collections.deque()
        #: id(receive buffer) -> frames in it not answered yet
        self._live: dict[int, int] = {}
        #: released large buffers, reused instead of allocating (and zeroing) new ones
        self._pool: list[bytearray] = []
        self._inflight = 0
        self._reading_paused = False
        self._writing_paused = False
        self._write_resumed: asyncio.Event | None = None
        self._closed = False
        #: no further frames are dispatched; the transport closes once the
        #: responses of those already dispatched are written
        self._closing = False
        #: closing, write side shut: incoming bytes are read and dropped
        self._draining = False
        self._drain_view = memoryview(b"")
        self._tasks: set[asyncio.Future[Segments | None]] = set()

    # ---- asyncio.Protocol ----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"
            self.peer_host = str(peer[0])

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        released = sum(s.size for s in self._slots)
        self._slots.clear()
        self._live.clear()
        self._pool.clear()
        if released:
            self._inflight -= released
            self.budget.release(released)
        if self._write_resumed is not None:
            self._write_resumed.set()
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._maybe_resume_reading()

    # ---- receive --------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._draining:
            return self._drain_view
        if len(self._buf) - self._end < _MIN_READ:
            needed = self._needed_capacity()
            partial = self._end - self._start
            if not self._has_live_views() and len(self._buf) >= needed and self._start > 0:
                # nothing points into the buffer: slide the partial frame down
                self._buf[:partial] = self._view[self._start : self._end]
                self._start, self._end = 0, partial
            if len(self._buf) - self._end < _MIN_READ:
                self._new_buffer(needed)
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._draining:
            return  # closing: what the peer still sends is read and dropped
        self._end += nbytes
        self._cut_frames()

    def eof_received(self) -> bool | None:
        return None  # close the transport once everything is written

    def _needed_capacity(self) -> int:
        partial = self._end - self._start
        if partial >= 4:
            size: int = _SIZE.unpack_from(self._buf, self._start)[0]
            return self._frame_capacity(size, partial)
        return self.limits.receive_buffer_bytes

    def _frame_capacity(self, size: int, received: int) -> int:
        """Buffer room for a frame of ``size`` bytes (plus its prefix) of which
        ``received`` bytes are here: all of it when the frame is small, else
        room that grows with what arrived (see the module docstring)."""
        whole = size + 4
        if whole > EAGER_FRAME_BYTES:
            whole = min(whole, max(EAGER_FRAME_BYTES, FRAME_GROWTH * received))
        return max(self.limits.receive_buffer_bytes, whole)

    def _new_buffer(self, capacity: int) -> None:
        """Move the partial frame at the tail into another buffer (a pooled one
        if one is big enough, else a fresh one); the old buffer stays alive as
        long as frame views into it do, and is pooled once none is left."""
        partial = self._end - self._start
        size = max(capacity, partial + _MIN_READ)
        buf = next((b for b in self._pool if len(b) >= size), None)
        if buf is None:
            buf = bytearray(size)
        else:
            self._pool.remove(buf)
        buf[:partial] = self._view[self._start : self._end]
        old = self._buf
        self._buf = buf
        if id(old) not in self._live:
            self._maybe_pool(old)
        self._view = memoryview(buf)
        self._start = 0
        self._end = partial

    def _cut_frames(self) -> None:
        buf = self._buf
        while not self._closed and not self._closing:
            avail = self._end - self._start
            if avail < 4:
                break
            (size,) = _SIZE.unpack_from(buf, self._start)
            if size < 0 or size > self.limits.max_frame_bytes:
                log.warning(
                    "closing connection from %s: frame of %d bytes (limit %d)",
                    self.peer,
                    size,
                    self.limits.max_frame_bytes,
                )
                self.abort()
                return
            if avail < 4 + size:
                room = min(4 + size, self._frame_capacity(size, avail))
                if self._start + room > len(buf):
                    # not enough room for (the next part of) this frame: size the
                    # next buffer for it now, so it is received in one piece
                    self._new_buffer(self._frame_capacity(size, avail))
                break
            frame = self._view[self._start + 4 : self._start + 4 + size]
            self._start += 4 + size
            self._dispatch(frame, size + 4)
        if self._start == self._end and not self._has_live_views():
            # everything consumed and nothing references the buffer: reuse it
            self._start = self._end = 0
        self._maybe_pause_reading()

    def _has_live_views(self) -> bool:
        # frames of requests still in flight may point into the current buffer
        return id(self._buf) in self._live

    def _maybe_pool(self, buf: bytearray) -> None:
        if (
            self.limits.receive_buffer_bytes < len(buf) <= POOL_BUFFER_BYTES
            and len(self._pool) < POOL_BUFFERS
        ):
            self._pool.append(buf)

    def _frame_answered(self, buf: bytearray) -> None:
        key = id(buf)
        left = self._live[key] - 1
        if left:
            self._live[key] = left
            return
        del self._live[key]
        if buf is not self._buf:
            self._maybe_pool(buf)

    # ---- dispatch and ordered responses --------------------------------

    def _dispatch(self, frame: memoryview, size: int) -> None:
        slot = _Slot(size, self._buf)
        key = id(self._buf)
        self._live[key] = self._live.get(key, 0) + 1
        self._slots.append(slot)
        self._inflight += size
        self.budget.acquire(size)
        try:
            outcome = self.handler.handle_frame(frame, self)
        except ProtocolViolation as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.abort()
            return
        except Exception:
            # a bug of ours: never take the broker down, drop only this peer
            log.exception("closing connection from %s: request handling failed", self.peer)
            self.abort()
            return
        if outcome is None or isinstance(outcome, (list, tuple)):
            self._complete(slot, outcome)
        else:
            task: asyncio.Future[Segments | None] = asyncio.ensure_future(
                cast(Awaitable[Segments | None], outcome)
            )
            self._tasks.add(task)
            task.add_done_callback(functools.partial(self._task_done, slot=slot))

    def _task_done(self, task: asyncio.Future[Segments | None], slot: _Slot) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("closing connection from %s: handler failed", self.peer, exc_info=exc)
            self.abort()
            return
        self._complete(slot, task.result())

    def _complete(self, slot: _Slot, segments: Segments | None) -> None:
        slot.done = True
        slot.segments = segments
        self._flush_ready()

    def _flush_ready(self) -> None:
        transport = self.transport
        while self._slots and self._slots[0].done:
            slot = self._slots.popleft()
            if slot.segments and transport is not None and not self._closed:
                self._write(transport, slot.segments)
            self._frame_answered(slot.buf)
            self._inflight -= slot.size
            self.budget.release(slot.size)
        if not self._slots:
            if self._closing:
                self._finish_close()
                return
            if self._start == self._end:
                self._start = self._end = 0
        self._maybe_resume_reading()

    def _write(self, transport: asyncio.Transport, segments: Segments) -> None:
        for seg in segments:
            if isinstance(seg, (bytes, bytearray, memoryview)):
                if len(seg):
                    transport.write(seg)
            elif self._write_segment is not None:
                self._write_segment(transport, seg)
            else:
                raise TypeError(f"cannot write segment of type {type(seg).__name__}")

    # ---- flow control ---------------------------------------------------

    def _over_limit(self) -> bool:
        return (
            self._inflight >= self.limits.max_inflight_bytes
            or self.budget.exhausted()
            or self._writing_paused
        )

    def _maybe_pause_reading(self) -> None:
        if self._reading_paused or self.transport is None or self._closed:
            return
        if self._over_limit():
            self._reading_paused = True
            self.transport.pause_reading()
            if self.budget.exhausted():
                self.budget.wait(self)

    def _maybe_resume_reading(self) -> None:
        if not self._reading_paused or self.transport is None or self._closed or self._closing:
            return
        if self._over_limit():
            if self.budget.exhausted():
                self.budget.wait(self)
            return
        self._reading_paused = False
        self.transport.resume_reading()

    # ---- control ----------------------------------------------------------

    def abort(self) -> None:
        if self.transport is not None and not self._closed:
            self._closed = True
            self.transport.abort()

    def close(self) -> None:
        """Stop dispatching frames; close once the responses of the requests
        already dispatched are written (Kafka closes an acks=0 connection
        after a failed append without reading what the client sent next)."""
        if self.transport is None or self._closed or self._closing:
            return
        self._closing = True
        if not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        if not self._slots:
            self._finish_close()

    def _finish_close(self) -> None:
        """Every dispatched request is answered: half-close, then drain.

        A plain close() while requests the client pipelined behind the
        answered ones are still unread in the kernel makes the kernel send a
        RST instead of a FIN (RFC 1122 4.2.2.13), and a RST makes the peer
        drop the responses it has received but not read yet: the client would
        never learn that requests the broker appended succeeded. So the write
        side is shut after the responses (FIN behind them) and whatever the
        peer still sends is read and dropped until it closes its side, for at
        most ``LINGER_SECONDS``."""
        transport = self.transport
        if transport is None or self._closed or self._draining:
            return
        if not transport.can_write_eof():
            transport.close()
            return
        self._draining = True
        self._drain_view = memoryview(bytearray(_MIN_READ))
        transport.write_eof()
        self._reading_paused = False
        transport.resume_reading()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, self.abort)

    @property
    def idle(self) -> bool:
        return not self._slots

    @property
    def inflight_bytes(self) -> int:
        return self._inflight
