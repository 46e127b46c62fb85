"""A connection's receive buffers: how they grow, are pooled, and are counted.

The event loop reads into the current buffer (``_buf``, at ``_end``); the
connection cuts complete frames out of it in place, from ``_start``, and
hands them on as ``memoryview`` slices, so a buffer that frames still in
flight point into (``_live``: buffer id -> frames) is never reused or resized:
when more room is needed a fresh one is taken and only the partial frame at
the tail is moved::

    _buf   [ frames in flight ... | partial frame | free room ]
                                  ^_start         ^_end

Buffers grow with the bytes that arrived, never with the size a prefix
announces: a connection gets its first buffer (``INITIAL_BUFFER_BYTES``)
when its first bytes arrive (an idle connection holds none), and a frame
that outgrows its buffer moves to one twice the size of what arrived of it
(at most the frame's own size), so a peer announcing 100 MB and sending 12
bytes costs 16 KiB; frames that fill their buffer while still in flight
(pipelining) get one twice as large next, up to ``STREAM_BUFFER_BYTES``
(fewer buffers to replace, and one read brings several frames).
Buffers grown for large frames are pooled once no frame in flight points
into them (``POOL_BUFFERS`` of at most
``POOL_BUFFER_BYTES``, while the broker's receive budget is at most half
used) and a frame that does not fit where it starts goes straight into a
pooled buffer that holds it whole, so a warm producer of 1 MB requests pays
one short copy per request, not a growth chain (its first large frames pay
the doubling: each byte copied about once). The registry's sweep drops the
buffers of a quiet connection, and while other connections wait for the
receive budget an emptied large buffer goes back at once.

Every byte of these buffers (current, pinned by frames in flight, pooled)
counts against the broker's :class:`~broker.server.budget.ReceiveBudget`
(``queued.max.request.bytes``): new memory is taken only with its consent,
except a connection's first buffer; a refused connection stops reading and
waits in the budget's line, and goes on when bytes come back or its own
answers free its buffer.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod

from broker.server.budget import ReceiveBudget

_SIZE = struct.Struct(">i")
#: a connection's first receive buffer, allocated when its first bytes arrive
INITIAL_BUFFER_BYTES = 16 * 1024
#: never offer the loop less room than this for one read (unless the frame in
#: progress fits in what is left)
MIN_READ = 4 * 1024
#: small frames that fill their buffer while in flight (pipelining) get a buffer
#: twice the size of the one they filled, up to this
STREAM_BUFFER_BYTES = 256 * 1024
#: released receive buffers (grown for large frames, at most this size) a connection
#: keeps for its next large frames, and how many
POOL_BUFFER_BYTES = 4 * 1024 * 1024
POOL_BUFFERS = 4
#: the receive buffer of a connection that holds none
EMPTY = bytearray()


class ReceiveBuffers(ABC):
    """The receive buffers of one connection (a base of ``Connection``, so the
    hot path reads its own attributes)."""

    __slots__ = (
        "_budget_waiting",
        "_buf",
        "_end",
        "_live",
        "_overdraft_pending",
        "_overdraft_slot",
        "_pool",
        "_rx_held",
        "_start",
        "_view",
        "budget",
    )

    def __init__(self, budget: ReceiveBudget) -> None:
        self.budget = budget
        self._buf = EMPTY
        self._view = memoryview(EMPTY)
        self._start = 0  # first byte of the frame being received
        self._end = 0  # bytes written by the loop so far
        #: capacity of every receive buffer held (current, pinned by frames, pooled)
        self._rx_held = 0
        #: id(receive buffer) -> frames in it not answered yet
        self._live: dict[int, int] = {}
        #: released large buffers, reused instead of allocating (and zeroing) new ones
        self._pool: list[bytearray] = []
        #: refused by the receive budget: not reading until it has room
        self._budget_waiting = False
        #: the budget's overdraft is ours for the frame being received / the slot of
        #: that frame once dispatched (the connection ends it when it is answered)
        self._overdraft_pending = False
        self._overdraft_slot: object | None = None

    # ---- the connection's part ----------------------------------------------------

    @abstractmethod
    def _receiving(self) -> bool:
        """False once the connection is closed or closing."""

    @abstractmethod
    def _maybe_resume_reading(self) -> None:
        """Read again unless something else holds the connection."""

    # ---- room for the next read ---------------------------------------------------

    def _ensure_room(self) -> bool:
        """:meth:`_make_room` with the budget's consent; refused, the connection
        joins the budget's line (once) and is called back when bytes come back."""
        if self._make_room(ask=True):
            if self._budget_waiting:  # room came from our own answers draining
                self._budget_waiting = False
                self.budget.leave(self)
            return True
        if not self._budget_waiting:
            self._budget_waiting = True
            self.budget.wait(self)
        return False

    def _make_room(self, *, ask: bool) -> bool:
        """Room for the next read: the frame in progress fits where it is, or
        ``MIN_READ`` is free; else slide it down, or move it to a pooled or a
        new buffer. New memory needs the budget's consent when ``ask`` (else
        it is charged regardless); False when refused."""
        buf = self._buf
        cap = len(buf)
        start, end = self._start, self._end
        partial = end - start
        pinned = id(buf) in self._live
        if partial >= 4:
            whole: int = _SIZE.unpack_from(buf, start)[0] + 4
            if start + whole <= cap:
                return True  # the frame fits where it is
            pooled = self._take_pooled(whole)
            if pooled is not None:
                self._move_partial(pooled)  # lands whole: one short copy
                return True
            if not pinned and cap >= whole:
                self._slide_partial()
                return True
            if cap - end >= MIN_READ:
                return True  # read more first: the move copies what arrived
            want = min(whole, max(INITIAL_BUFFER_BYTES, 2 * partial))
            if pinned and whole <= STREAM_BUFFER_BYTES:
                # frames in flight filled this buffer (pipelining): room for this frame
                # and the ones behind it, so one read brings several and their answers
                # go in one write; still at most twice the bytes that arrived in it
                want = max(want, min(2 * cap, STREAM_BUFFER_BYTES))
            # a buffer outgrown by a frame is no use for the next frames of that size
            keep_old = cap >= whole
        else:
            if cap - end >= MIN_READ:
                return True
            if cap and not pinned:
                self._slide_partial()  # at most 3 bytes
                return True
            # frames in flight filled the buffer: small frames pipelined get one twice
            # as large (up to STREAM_BUFFER_BYTES); after a buffer grown for a large
            # frame the next frame's size is unknown: a first buffer's worth
            want = (
                max(INITIAL_BUFFER_BYTES, min(2 * cap, STREAM_BUFFER_BYTES))
                if cap <= STREAM_BUFFER_BYTES
                else INITIAL_BUFFER_BYTES
            )
            keep_old = True
        pooled = self._take_pooled(want)
        if pooled is not None:
            self._move_partial(pooled, keep_old=keep_old)
            return True
        if not cap:
            self.budget.charge(want)  # a connection's first buffer is never refused
        elif not self._acquire(want):
            if ask:
                return False
            self.budget.charge(want)
        self._rx_held += want
        self._move_partial(bytearray(want), keep_old=keep_old)
        return True

    def _acquire(self, n: int) -> bool:
        budget = self.budget
        # the overdraft is for finishing a frame begun, once per grant
        may_overdraft = self._overdraft_slot is None and self._end > self._start
        if not budget.try_acquire(self, n, overdraft=may_overdraft):
            if not self._pool:
                return False
            self._drop_pool()  # our own cache goes first
            if not budget.try_acquire(self, n, overdraft=may_overdraft):
                return False
        if may_overdraft and not self._overdraft_pending and budget.holds_overdraft(self):
            self._overdraft_pending = True  # the next frame dispatched is the overdraft's
        return True

    def budget_available(self) -> bool:
        """The receive budget has room again (``BudgetWaiter``): it took us out of
        its line, and puts us back at its head when we are refused again."""
        self._budget_waiting = False
        if not self._receiving():
            return True
        if not self._make_room(ask=True):
            self._budget_waiting = True
            return False
        self._maybe_resume_reading()
        return True

    def _set_buffer(self, buf: bytearray, end: int) -> None:
        self._buf = buf
        self._view = memoryview(buf)
        self._start = 0
        self._end = end

    def _move_partial(self, new: bytearray, *, keep_old: bool = True) -> None:
        """Move the partial frame at the tail into ``new``; the old buffer stays
        alive as long as frame views into it do, then is pooled (if ``keep_old``)."""
        partial = self._end - self._start
        new[:partial] = self._view[self._start : self._end]
        old = self._buf
        self._set_buffer(new, partial)
        if old is not EMPTY and id(old) not in self._live:
            self._drop(old, pool=keep_old)

    def _slide_partial(self) -> None:
        partial = self._end - self._start
        if self._start:
            self._buf[:partial] = self._view[self._start : self._end]
        self._start, self._end = 0, partial

    def _take_pooled(self, n: int) -> bytearray | None:
        best = None
        for buf in self._pool:
            if len(buf) >= n and (best is None or len(buf) < len(best)):
                best = buf
        if best is not None:
            self._pool.remove(best)
        return best

    def _drop(self, buf: bytearray, *, pool: bool) -> None:
        """A buffer nothing points into any more: pooled, or given back."""
        size = len(buf)
        if pool and INITIAL_BUFFER_BYTES < size <= POOL_BUFFER_BYTES and not self.budget.tight():
            if len(self._pool) < POOL_BUFFERS:
                self._pool.append(buf)
                return
            smallest = min(self._pool, key=len)
            if len(smallest) < size:
                self._pool.remove(smallest)
                self._pool.append(buf)
                buf = smallest
                size = len(buf)
        self._rx_held -= size
        self.budget.release(size)

    def _drop_pool(self) -> None:
        pooled = sum(len(b) for b in self._pool)
        self._pool.clear()
        if pooled:
            self._rx_held -= pooled
            self.budget.release(pooled)

    def _frame_answered(self, buf: bytearray) -> None:
        key = id(buf)
        left = self._live[key] - 1
        if left:
            self._live[key] = left
            return
        del self._live[key]
        if buf is not self._buf:
            self._drop(buf, pool=True)

    # ---- giving buffers back ---------------------------------------------------------

    def _rewind(self) -> None:
        """Everything in the buffer was cut and no frame points into it: read
        from its start again; while others wait for the budget, a large one
        goes back at once (the next read gets a first buffer)."""
        self._start = self._end = 0
        if len(self._buf) > INITIAL_BUFFER_BYTES and self.budget.waiting:
            self._drop(self._buf, pool=False)
            self._set_buffer(EMPTY, 0)

    def release_buffers(self) -> None:
        """Give back every receive buffer (nothing partial, nothing in flight)."""
        if self._end != self._start or self._live:
            return
        self._drop_pool()
        if self._buf is not EMPTY:
            self._drop(self._buf, pool=False)
            self._set_buffer(EMPTY, 0)

    def _release_all(self) -> None:
        """The connection is gone: every buffer goes back, and its place in line."""
        self._live.clear()
        self._pool.clear()
        self._set_buffer(EMPTY, 0)
        self._overdraft_slot = None
        held, self._rx_held = self._rx_held, 0
        if self._budget_waiting:
            self._budget_waiting = False
            self.budget.leave(self)
        self.budget.end_overdraft(self)
        if held:
            self.budget.release(held)

    @property
    def receive_buffer_bytes(self) -> int:
        """Capacity of the receive buffers this connection holds."""
        return self._rx_held
