"""acks=all durability: one fsync round shared by every request waiting for it.

An acks=all produce request appends on the event loop thread and then
waits here until an fsync covers its batches. Requests arriving while a
round of fsyncs runs wait for the next round, which starts as soon as the
running one ends and covers everything asked for in the meantime::

    t0  A appends to p0, asks for p0@10  -> round 1 starts: flush p0 to 10
    t1  B appends to p0, asks for p0@12  -> waits (round 1 running)
    t2  C appends to p1, asks for p1@5   -> waits
    t3  round 1 ends: A answered         -> round 2: flush p0 to 12, p1 to 5
    t4  round 2 ends: B and C answered

So under load each fsync is shared by every request that arrived during
the previous one, and an idle broker pays one fsync per request. The
fsyncs run in one worker thread; ``UnifiedLog.flush`` is safe there while
the event loop thread keeps appending (see ``broker/log/local_log.py``).
A log whose recovery point already covers the offset needs no round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from broker.log.unified_log import UnifiedLog

log = logging.getLogger(__name__)


class GroupCommit:
    """Implements the handlers' ``Durability`` protocol."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-commit")
        self._wanted: dict[UnifiedLog, int] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._running = False
        self.rounds = 0

    async def wait_flushed(
        self, targets: Sequence[tuple[UnifiedLog, int]], timeout_s: float
    ) -> bool:
        """True once every ``(log, offset)`` is durable below ``offset``; False
        when ``timeout_s`` passes first. An fsync failure raises OSError."""
        pending = [(lg, off) for lg, off in targets if lg.recovery_point < off]
        if not pending:
            return True
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        # consume the outcome even if the waiter timed out and left
        fut.add_done_callback(_retrieve)
        for lg, off in pending:
            if off > self._wanted.get(lg, 0):
                self._wanted[lg] = off
        self._waiters.append(fut)
        self._maybe_start_round(loop)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except TimeoutError:
            return False
        return True

    def _maybe_start_round(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._running or not self._waiters:
            return
        self._running = True
        wanted, self._wanted = self._wanted, {}
        waiters, self._waiters = self._waiters, []
        self.rounds += 1
        done = loop.run_in_executor(self._executor, _flush_all, wanted)
        done.add_done_callback(lambda f: self._round_done(loop, f, waiters))

    def _round_done(
        self,
        loop: asyncio.AbstractEventLoop,
        done: asyncio.Future[None],
        waiters: list[asyncio.Future[None]],
    ) -> None:
        self._running = False
        exc = None if done.cancelled() else done.exception()
        for fut in waiters:
            if fut.done():
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(None)
        self._maybe_start_round(loop)

    def close(self) -> None:
        self._executor.shutdown(wait=True)


def _flush_all(wanted: dict[UnifiedLog, int]) -> None:
    for lg, offset in wanted.items():
        lg.flush(offset)


def _retrieve(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled():
        fut.exception()
