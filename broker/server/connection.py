"""One client connection: framing, pipelining in order, and what it may hold.

Wire framing (every Kafka request and response)::

    Size => Int32          length of what follows
    Payload => Size bytes  request: header + body; response: header + body

Receive path (``asyncio.BufferedProtocol``): the event loop reads straight
into our receive buffer (:meth:`get_buffer`); complete frames are cut out of
it *in place* as ``memoryview`` slices and handed to the dispatcher, so the
records of a produce request stay a view into the bytes the kernel wrote
until the log has written them. How the buffers grow with the bytes that
arrived (never with the size a prefix announces), are pooled and are given
back is ``server/receive_buffer.py``'s (:class:`ReceiveBuffers`, a base of
:class:`Connection`).

Bounds, each counted where the bytes are held:

* Broker-wide, ``queued.max.request.bytes`` (:class:`ReceiveBudget`): every
  byte of receive buffer, partial frames included. A buffer grows only
  with the budget's consent; a refused connection stops reading until bytes
  come back or its own answers free its buffer (one connection at a time may
  finish the frame it has begun beyond the limit, so a full budget never
  stops every frame; ``server/budget.py``).
* Per connection, ``connection.max.inflight.bytes``: bytes of requests
  dispatched and not answered, plus bytes of answers the client has not
  taken yet (answers done but waiting behind an earlier one, and the
  transport's write buffer). At the bound the connection stops reading *and*
  stops dispatching the frames already in its buffer; both resume, from the
  buffer first, when answers drain. The bound is a pause threshold: the
  request that reaches it is handled and one answer larger than the bound
  (a big Fetch) still goes out. The transport's high-water mark is set just
  below the bound, so a transport holding more than the bound always
  reports when it drains. What a connection holds is at most this bound,
  overshot by the last request dispatched and by the answers of requests
  already in flight (an answer can be larger than its request), plus its
  receive buffers: frames read but not yet dispatched, the frame being
  received (its buffer at most twice what arrived of it, never more than the
  frame), and its pool.

Pipelining: every complete frame is dispatched at once (below the bound), in
arrival order, so appends happen in the order the client sent them; a
handler may finish synchronously or hand back a ``DelayedReply`` (an fsync for
acks=all, a long-poll Fetch). Responses are written strictly in request
order: a slow request holds back the responses behind it, as Kafka's muted
channel does (Kafka reads one request per connection at a time).

A frame whose size is negative or above ``socket.request.max.bytes`` closes
the connection without an answer, as Kafka's SocketServer does. Time limits
(``connections.max.idle.ms``, ``connection.frame.timeout.ms``) and the
connection quotas are the registry's (``server/registry.py``); it asks
each connection through :meth:`Connection.sweep`.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from broker.delayed import DelayedReply
from broker.server.budget import ReceiveBudget
from broker.server.receive_buffer import EMPTY, MIN_READ, ReceiveBuffers

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
#: after a graceful close, how long the peer gets to close its side before a reset
LINGER_SECONDS = 1.0

#: what a handler answers with: the segments of a whole response frame, size
#: prefix included (bytes-like objects, or file slices written by the
#: ``write_segment`` callback), or None for "no response" (acks=0); or either
#: later, from a ``DelayedReply`` (``broker/delayed.py``: acks=all, a parked
#: JoinGroup, a long-poll Fetch), which fails to close the connection
Segments = Sequence[Any]
Outcome = Segments | None | DelayedReply[Segments | None]


class ProtocolViolation(Exception):
    """Raised by a frame handler for a request it cannot answer: the
    connection is closed and the reason logged once, without a traceback."""


class FrameHandler(Protocol):
    """The dispatcher seen from a connection."""

    def handle_frame(self, frame: memoryview, conn: Connection) -> Outcome: ...


class ConnectionOwner(Protocol):
    """Who admits and tracks connections (``server/registry.py``)."""

    def opened(self, conn: Connection) -> bool:
        """A new connection (``conn.host`` is set); False refuses it."""
        ...

    def closed(self, conn: Connection) -> None: ...


#: writes one non-bytes segment (e.g. a file region) to a transport
SegmentWriter = Callable[[asyncio.WriteTransport, object], None]


@dataclass
class ConnectionLimits:
    max_frame_bytes: int = 104_857_600
    max_inflight_bytes: int = 64 * 1024 * 1024


class _Slot:
    """One dispatched request, until its answer is handed to the transport."""

    __slots__ = ("buf", "done", "reply", "segments", "size", "waiting")

    def __init__(self, size: int, buf: bytearray) -> None:
        self.size = size
        #: the receive buffer the request's frame (a view) lives in
        self.buf = buf
        self.done = False
        self.segments: Segments | None = None
        #: bytes of the answer while it waits behind an earlier one
        self.waiting = 0
        #: a later answer (its work, if it has any, stops if the connection goes away)
        self.reply: DelayedReply[Segments | None] | None = None


def segments_size(segments: Segments) -> int:
    """Bytes of an answer (file regions by their ``size``)."""
    total = 0
    for seg in segments:
        total += len(seg) if isinstance(seg, (bytes, bytearray, memoryview)) else seg.size
    return total


class Connection(ReceiveBuffers, asyncio.BufferedProtocol):
    """asyncio protocol for one client; see the module docstring."""

    __slots__ = (
        "_active",
        "_closed",
        "_closing",
        "_cutting",
        "_drain_view",
        "_draining",
        "_flush_scheduled",
        "_frames",
        "_inflight",
        "_muted",
        "_owner",
        "_partial_mark",
        "_partial_since",
        "_quiet_since",
        "_reading_paused",
        "_refused",
        "_slots",
        "_sweep_tx",
        "_tx",
        "_waiting_bytes",
        "_write_segment",
        "client_software_name",
        "client_software_version",
        "handler",
        "host",
        "limits",
        "listener_name",
        "peer",
        "peer_host",
        "principal",
        "sasl",
        "security",
        "transport",
    )

    def __init__(
        self,
        handler: FrameHandler,
        limits: ConnectionLimits,
        budget: ReceiveBudget,
        write_segment: SegmentWriter | None = None,
        owner: ConnectionOwner | None = None,
    ) -> None:
        super().__init__(budget)
        self.handler = handler
        self.limits = limits
        self._write_segment = write_segment
        self._owner = owner
        self.transport: asyncio.Transport | None = None
        self.peer: str = "?"
        #: the peer's IP address
        self.host: str = ""
        #: who the client is, for the authorizer (Kafka's KafkaPrincipal string);
        #: PLAINTEXT listeners authenticate nobody: User:ANONYMOUS
        self.principal: str = "User:ANONYMOUS"
        self.peer_host: str = ""  # the client's IP address, matched against ACL hosts
        self.listener_name: str = "PLAINTEXT"
        #: the listener's security (``server/listener_security.py``): principal from
        #: TLS, the SASL exchange; None for a bare connection (tests, benchmarks)
        self.security: Any = None
        #: the SASL state of a SASL listener's connection (``server/sasl_gate.py``)
        self.sasl: Any = None
        #: set by the ApiVersions handler (v3+): the client's software, for metrics
        self.client_software_name: str | None = None
        self.client_software_version: str | None = None
        self._slots: collections.deque[_Slot] = collections.deque()
        #: request bytes dispatched and not answered; answer bytes waiting behind an
        #: earlier answer; the transport's write buffer when last looked at
        self._inflight = 0
        self._waiting_bytes = 0
        self._tx = 0
        self._frames = 0  # frames dispatched so far
        self._reading_paused = False
        #: at connection.max.inflight.bytes: neither reading nor dispatching
        self._muted = False
        self._cutting = False
        self._flush_scheduled = False
        self._refused = False
        self._closed = False
        #: no further frames are dispatched; the transport closes once the
        #: responses of those already dispatched are written
        self._closing = False
        #: closing, write side shut: incoming bytes are read and dropped
        self._draining = False
        self._drain_view = memoryview(EMPTY)
        # the registry's sweep: bytes arrived since the last one; when the connection
        # was last active; the write buffer it saw; the partial frame it timed
        self._active = False
        self._quiet_since = 0.0
        self._sweep_tx = 0
        self._partial_mark = -1
        self._partial_since = 0.0

    # ---- asyncio.Protocol ----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"
            self.host = self.peer_host = str(peer[0])
        self._quiet_since = asyncio.get_running_loop().time()
        if self._owner is not None and not self._owner.opened(self):
            self._refused = True
            self._closed = True
            self.transport.close()
            return
        if self.security is not None and not self.security.connection_made(self):
            self.abort()
            return
        # pause_writing fires once the transport alone holds the bound, so a connection
        # stopped by answers nobody reads always hears when they drain
        bound = self.limits.max_inflight_bytes
        self.transport.set_write_buffer_limits(high=bound - 1, low=(bound - 1) // 2)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._refused:
            return
        for slot in self._slots:
            if slot.reply is not None:
                slot.reply.cancel()
        self._slots.clear()
        self._inflight = self._waiting_bytes = self._tx = 0
        self._release_all()
        if self._owner is not None:
            self._owner.closed(self)

    def pause_writing(self) -> None:
        if self.transport is not None:
            self._tx = self.transport.get_write_buffer_size()

    def resume_writing(self) -> None:
        if self.transport is not None:
            self._tx = self.transport.get_write_buffer_size()
        self._maybe_resume()

    # ---- receive --------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._draining:
            return self._drain_view
        if len(self._buf) - self._end < MIN_READ:
            # the room was made after the last read unless this is the first one;
            # the loop must get room now whatever the budget says
            self._make_room(ask=False)
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._draining:
            return  # closing: what the peer still sends is read and dropped
        self._end += nbytes
        self._active = True
        self._cut_frames()

    def eof_received(self) -> bool | None:
        return None  # close the transport once everything is written

    def _cut_frames(self) -> None:
        """Dispatch every complete frame in the buffer while below the bound."""
        if self._cutting:
            return
        self._cutting = True
        try:
            buf, view = self._buf, self._view
            max_frame = self._max_frame()
            bound = self.limits.max_inflight_bytes
            while not self._closed and not self._closing:
                start = self._start
                avail = self._end - start
                if avail < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, start)
                if size < 0 or size > max_frame:
                    if self.security is not None:
                        self.security.oversized_frame(self, bytes(buf[start : start + 4]))
                    log.warning(
                        "closing connection from %s: frame of %d bytes (limit %d)",
                        self.peer,
                        size,
                        max_frame,
                    )
                    self.abort()
                    return
                if avail < 4 + size:
                    break
                if self._inflight + self._waiting_bytes + self._tx >= bound:
                    # answers held back for one write may be what filled it
                    if not (self._slots and self._slots[0].done):
                        break  # the frame waits in the buffer until answers drain
                    self._write_ready()
                    if self._inflight + self._waiting_bytes + self._tx >= bound:
                        break
                self._start = start + 4 + size
                self._dispatch(view[start + 4 : start + 4 + size], size + 4)
                if self.sasl is not None:
                    max_frame = self._max_frame()
        finally:
            self._cutting = False
        if self._slots and self._slots[0].done:
            # the answers of the frames just cut go in one write at the end of the
            # loop iteration, with those of the other reads it makes (see _complete)
            self._schedule_flush()
        self._after_input()

    def _max_frame(self) -> int:
        """socket.request.max.bytes; sasl.server.max.receive.size until authenticated."""
        sasl = self.sasl
        if sasl is not None and not sasl.authenticated:
            return int(sasl.max_receive)
        return self.limits.max_frame_bytes

    def _receiving(self) -> bool:
        return not (self._closed or self._closing)

    def _after_input(self) -> None:
        """After frames were cut: stop at the bound, else make room for the next
        read (which may have to wait for the receive budget)."""
        if self._closed or self._closing:
            return
        if self._inflight + self._waiting_bytes + self._tx >= self.limits.max_inflight_bytes:
            self._muted = True
            self._pause_reading()
            return
        self._muted = False
        if self._start == self._end and id(self._buf) not in self._live:
            self._rewind()
        if self._ensure_room():
            self._maybe_resume_reading()
        else:
            self._pause_reading()

    # ---- dispatch and ordered responses --------------------------------

    def _dispatch(self, frame: memoryview, size: int) -> None:
        slot = _Slot(size, self._buf)
        key = id(self._buf)
        self._live[key] = self._live.get(key, 0) + 1
        self._slots.append(slot)
        self._inflight += size
        self._frames += 1
        if self._overdraft_pending:
            self._overdraft_pending = False
            self._overdraft_slot = slot
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
        if not isinstance(outcome, DelayedReply):
            self._complete(slot, outcome)
            return
        slot.reply = outcome  # cancelled if the connection goes away first
        outcome.listen(functools.partial(self._delayed_done, slot))

    def _delayed_done(
        self, slot: _Slot, segments: Segments | None, exc: BaseException | None
    ) -> None:
        """A later answer: written in order, or, if it failed (the dispatcher
        found no error response for it), the connection closed."""
        if self._closed:
            return  # gone meanwhile: its slots went with it
        if exc is not None:
            log.error("closing connection from %s: handler failed", self.peer, exc_info=exc)
            self.abort()
            return
        self._complete(slot, segments, later=True)

    def _complete(self, slot: _Slot, segments: Segments | None, *, later: bool = False) -> None:
        """Mark ``slot`` answered and write what can go.

        Answers are written together: those of the frames one read brought
        are written once :meth:`_cut_frames` has dispatched them all, and
        answers completed by other callbacks (``later``: an fsync round ends
        many acks=all requests at once) at the end of the loop iteration, so
        a pipelining client gets one send for many answers instead of one
        each (one send per answer was the largest single cost of small
        requests; docs/performance.md)."""
        slot.done = True
        slot.segments = segments
        first = slot is self._slots[0]
        if segments and (not first or self._cutting or later):
            # held until it is written: counts against connection.max.inflight.bytes
            slot.waiting = segments_size(segments)
            self._waiting_bytes += slot.waiting
        if self._cutting or not first:
            return
        if later:
            self._schedule_flush()
            return
        self._flush_ready()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self._flush_ready()

    def _flush_ready(self) -> None:
        self._write_ready()
        if not self._slots and self._closing:
            self._finish_close()
            return
        if not self._cutting:
            self._maybe_resume()

    def _write_ready(self) -> None:
        """Write the answers that can go (in request order), in one write."""
        transport = self.transport
        slots = self._slots
        wrote = False
        out: list[Any] = []
        while slots and slots[0].done:
            slot = slots.popleft()
            if slot.segments and transport is not None and not self._closed:
                self._write(transport, slot.segments, out)
                wrote = True
            if slot.waiting:
                self._waiting_bytes -= slot.waiting
            self._frame_answered(slot.buf)
            self._inflight -= slot.size
            if slot is self._overdraft_slot:
                self._overdraft_slot = None
                self.budget.end_overdraft(self)
        if out and transport is not None:
            transport.writelines(out)
        if wrote and transport is not None:
            self._tx = transport.get_write_buffer_size()

    def _write(self, transport: asyncio.Transport, segments: Segments, out: list[Any]) -> None:
        """Add the bytes of ``segments`` to ``out`` (written with one
        ``writelines``); other segments (file regions) are written by their
        writer in order, after what ``out`` holds so far."""
        for seg in segments:
            if isinstance(seg, (bytes, bytearray, memoryview)):
                if len(seg):
                    out.append(seg)
            elif self._write_segment is not None:
                if out:
                    transport.writelines(out)
                    out.clear()
                self._write_segment(transport, seg)
            else:
                raise TypeError(f"cannot write segment of type {type(seg).__name__}")

    # ---- flow control ---------------------------------------------------

    def _maybe_resume(self) -> None:
        """Answers drained: dispatch what the buffer holds, then read again."""
        if self._closed or self._closing:
            return
        if self._muted:
            if self._inflight + self._waiting_bytes + self._tx < self.limits.max_inflight_bytes:
                self._muted = False
                self._cut_frames()
            return
        if self._start == self._end and self._end and id(self._buf) not in self._live:
            self._start = self._end = 0  # nothing left in the buffer: read from its start
        if self._budget_waiting and self._ensure_room():
            self._maybe_resume_reading()

    def _pause_reading(self) -> None:
        if not self._reading_paused and self.transport is not None and not self._closed:
            self._reading_paused = True
            self.transport.pause_reading()

    def _maybe_resume_reading(self) -> None:
        if (
            self._reading_paused
            and not self._muted
            and not self._budget_waiting
            and not self._closed
            and not self._closing
            and self.transport is not None
        ):
            self._reading_paused = False
            self.transport.resume_reading()

    # ---- the registry's sweep ------------------------------------------

    def sweep(self, now: float, idle_s: float, frame_s: float) -> str | None:
        """Called every sweep interval: drops the buffers of a quiet connection,
        and names the limit a connection broke (``"idle"``: nothing received,
        no answer taken and no request in flight for ``idle_s``;
        ``"frame_timeout"``: a frame begun ``frame_s`` ago is still incomplete
        while we read), or None. Negative times are no limit."""
        transport = self.transport
        if self._closed or self._closing or transport is None:
            return None
        active, self._active = self._active, False
        tx = transport.get_write_buffer_size()
        if tx != self._sweep_tx:
            active = True  # the client takes its answers
            self._sweep_tx = tx
        if self._muted and tx < self._tx:
            # drained below the high-water mark without telling (no resume_writing)
            self._tx = tx
            self._maybe_resume()
        if active:
            self._quiet_since = now
        if self._end > self._start and not self._reading_paused:
            if self._partial_mark != self._frames:
                self._partial_mark = self._frames  # a frame begun since the last sweep
                self._partial_since = now
            elif 0 <= frame_s <= now - self._partial_since:
                return "frame_timeout"
        else:
            self._partial_mark = -1
        if self._slots:
            return None
        if 0 <= idle_s <= now - self._quiet_since:
            return "idle"
        if not active and self._end == self._start and not self._live:
            self.release_buffers()
        return None

    def expire(self) -> None:
        """Close for a broken limit: gracefully when nothing is left to write."""
        if self.transport is None or self._closed:
            return
        if self.transport.get_write_buffer_size():
            self.abort()  # answers the client does not take would keep a close waiting
        else:
            self._closed = True
            self.transport.close()

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
        self._pause_reading()
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
        self._drain_view = memoryview(bytearray(MIN_READ))
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

    @property
    def paused(self) -> bool:
        """Not reading: at its bound or waiting for the receive budget."""
        return self._muted or self._budget_waiting
