"""The broker-wide receive budget: ``queued.max.request.bytes`` of receive buffers.

Every byte of receive buffer a connection holds counts: the buffer it reads
into (partial frames included), older buffers that frames still in flight
point into, and the buffers it keeps pooled for its next large frames. A
buffer is charged when it is allocated and credited when it is dropped, so
``used`` is the receive memory of all connections together, not an estimate
from frame sizes.

A connection asks before it grows (:meth:`ReceiveBudget.try_acquire`). A
refused connection stops reading and waits in line (:meth:`wait`); when
bytes come back, the first in line retries, then the next, until one is
refused again (no thundering herd over thousands of waiters).

Buffers grow with the bytes that arrived (``server/connection.py``), so a
full budget can be held by frames that are all half received, each waiting
for room the others hold. To keep that from stopping every frame for good,
one connection at a time may finish the frame it has begun beyond the limit
(the *overdraft*): the first connection refused while no overdraft is out
gets it, for that frame only, and the overdraft is out until that frame is
answered or its connection closes. Kafka has no such case: its
``SimpleMemoryPool`` (non-strict, ``SocketServer``) hands a receive the whole
announced size at once, which costs the memory a size prefix announces
instead of what arrived (docs/deviations.md).

Receive memory is therefore at most ``limit`` + one frame (the overdraft,
at most ``socket.request.max.bytes`` + 4) + the first small buffer of each
connection that starts reading while the budget is full
(``Connection.get_buffer`` must always offer room).
"""

from __future__ import annotations

import collections
import contextlib
from typing import Protocol


class BudgetWaiter(Protocol):
    """A connection seen from the budget."""

    def budget_available(self) -> bool:
        """Retry what was refused, out of the line; True when it got it (or needs
        nothing now), False to be put back at the head of the line."""
        ...


class ReceiveBudget:
    """Receive buffer bytes held by all connections, against ``limit``."""

    __slots__ = ("_overdraft", "_waiting", "_waking", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: collections.deque[BudgetWaiter] = collections.deque()
        #: the connection finishing a frame beyond the limit, if any
        self._overdraft: BudgetWaiter | None = None
        self._waking = False

    def try_acquire(self, waiter: BudgetWaiter, n: int, *, overdraft: bool) -> bool:
        """Charge ``n`` bytes if they fit, or as the overdraft when ``overdraft``
        (the caller is growing a frame it has begun) and none is out, or it is
        the caller's own."""
        if self.used + n <= self.limit:
            self.used += n
            return True
        if overdraft and (self._overdraft is None or self._overdraft is waiter):
            self._overdraft = waiter
            self.used += n
            return True
        return False

    def charge(self, n: int) -> None:
        """Charge without asking (a connection's first small buffer)."""
        self.used += n

    def release(self, n: int) -> None:
        self.used -= n
        if self._waiting:
            self._wake()

    def holds_overdraft(self, waiter: BudgetWaiter) -> bool:
        return self._overdraft is waiter

    def end_overdraft(self, waiter: BudgetWaiter) -> None:
        """The overdraft frame was answered (or its connection closed)."""
        if self._overdraft is waiter:
            self._overdraft = None
            if self._waiting:
                self._wake()

    def tight(self) -> bool:
        """More than half used, or someone waiting: pooled buffers are not kept."""
        return bool(self._waiting) or 2 * self.used > self.limit

    def wait(self, waiter: BudgetWaiter) -> None:
        """Join the line (once: the waiter keeps track of whether it is in it)."""
        self._waiting.append(waiter)

    def leave(self, waiter: BudgetWaiter) -> None:
        """A waiting connection closed, or found room by itself."""
        with contextlib.suppress(ValueError):
            self._waiting.remove(waiter)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _wake(self) -> None:
        if self._waking:
            return  # a waiter released bytes while retrying: the loop below goes on
        self._waking = True
        try:
            while self._waiting and (self.used < self.limit or self._overdraft is None):
                waiter = self._waiting.popleft()
                if not waiter.budget_available():
                    self._waiting.appendleft(waiter)  # refused again: it keeps its place
                    break
        finally:
            self._waking = False
