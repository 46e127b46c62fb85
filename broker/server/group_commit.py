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
the previous one, and an idle broker pays one fsync per request.

Each request also starts the write-out of its log's new pages when it asks
(``UnifiedLog.start_writeback``, ``sync_file_range``, no waiting): the
device writes them while the loop validates the next request and the
running round ends, so the round that covers them mostly waits for the
fast commit and the cache flush instead of writing the whole backlog
(``broker/log/writeback.py`` has the measurement).

The rounds run in one flusher thread of their own, which starts the next
round itself the moment one ends and only hands the finished waiters to
the event loop (``call_soon_threadsafe``). Chaining rounds through the
event loop instead would leave the disk idle for as long as the loop is
busy with whatever it is doing when the round ends (decoding and
validating a 1 MB request takes about half a millisecond), between every
two rounds. ``UnifiedLog.flush`` is safe in that thread while the event
loop thread keeps appending (see ``broker/log/local_log.py``). A log whose
recovery point already covers the offset needs no round.

A round that covers several logs fsyncs them in parallel
(``FLUSH_THREADS`` helper threads): the file system commits its journal
once for fsyncs that wait together and the device takes their cache
flushes together, where one fsync after another pays each in turn: in
parallel, eight partitions' fsyncs take less time and vary much less
(docs/performance.md).

The flusher and fsync threads run at nice 10 (``FLUSH_NICE``): an fsync
costs kernel CPU, charged to the thread that calls it, and on a broker
pinned to one core eight of them at normal priority took the core from the
event loop for the length of a round, so a round covered only the few
requests the loop had managed to read meanwhile. At nice 10 the loop reads
and validates whatever arrived first and the fsyncs run in what is left;
rounds cover several requests per partition, and 1 MB requests lose nothing
(the device works while the fsync waits). The figures are in
docs/performance.md.

With ``acks.all.sync.method=syncfs`` a round makes one syncfs call per
file system instead (``broker/log/syncfs.py``, ``local_log.flush_together``):
one syncfs costs a fraction of the kernel CPU of eight partitions' fsyncs,
and the fsync threads' GIL traffic goes away; ``python -m bench small`` (2)
measures the gain (docs/performance.md).
Not the default: syncfs also writes back other programs' data on the same
file system.

A waiter is a callback with a timer (``when_flushed``), not
``asyncio.wait_for`` (which wraps every wait in another future and
callbacks: at 10,000 acks=all requests a second that was a tenth of the
loop's time), nor a future awaited by a task: the produce handler answers
from the callback through a ``DelayedReply`` (``broker/delayed.py``),
which the dispatcher and the connection listen to, so an acks=all request
makes no task, no coroutine and no future, and its answer reaches the
connection within the round's callback.

State shared by the two threads (the wanted offsets, the waiters, the
closing flag) lives under one condition variable, held for microseconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.log.local_log import LocalLog, flush_together
from broker.log.syncfs import syncfs
from broker.log.unified_log import UnifiedLog

log = logging.getLogger(__name__)

#: what a waiter is told: True (durable), False (timed out first) or the round's error
FlushOutcome = bool | BaseException


class _Waiter:
    """One request waiting for a round: answered once, by its round or its timer."""

    __slots__ = ("answered", "loop", "on_done", "timer")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_done: Callable[[FlushOutcome], None],
        timeout_s: float,
    ) -> None:
        self.loop = loop
        self.on_done = on_done
        self.answered = False
        # the round goes on after a timeout; _settle skips the waiter, already answered
        self.timer = loop.call_later(timeout_s, self.answer, False)

    def answer(self, outcome: FlushOutcome) -> None:
        if self.answered:
            return  # timed out before its round ended, or the other way round
        self.answered = True
        try:
            self.on_done(outcome)
        except Exception:
            log.exception("an acks=all waiter failed while being answered")


#: threads that fsync the logs of one round in parallel
FLUSH_THREADS = 8
#: nice value of the flusher and fsync threads (module docstring)
FLUSH_NICE = 10


#: ``acks.all.sync.method`` values
SYNC_METHODS = ("fsync", "syncfs")


class GroupCommit:
    """Implements the handlers' ``Durability`` protocol.

    ``method`` is how a round makes its logs durable (``acks.all.sync.method``):
    ``fsync`` fsyncs each log's files (in parallel, like Kafka's per-log
    flush); ``syncfs`` makes one syncfs call per file system for all the logs
    of the round (``broker/log/syncfs.py``)."""

    def __init__(self, method: str = "fsync") -> None:
        if method not in SYNC_METHODS:
            raise ValueError(f"unknown sync method {method!r}; expected one of {SYNC_METHODS}")
        self._method = method
        #: per file system (st_dev), a descriptor syncfs is called on; kept
        #: open so the kernel reports to it every write-back error since
        self._device_fds: dict[int, int] = {}
        self._cond = threading.Condition()
        self._wanted: dict[UnifiedLog, int] = {}
        self._waiters: list[_Waiter] = []
        self._closing = False
        #: the flusher thread waits on ``_cond`` for work: only then is a
        #: notify needed (a notify per request was a measurable cost of the loop's;
        #: docs/performance.md)
        self._idle = False
        self._thread: threading.Thread | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: rounds started so far (read by tests and benchmarks)
        self.rounds = 0

    def when_flushed(
        self,
        targets: Sequence[tuple[UnifiedLog, int]],
        timeout_s: float,
        on_done: Callable[[FlushOutcome], None],
    ) -> bool:
        """Ask for a round now: ``on_done`` is called once, on this event
        loop's thread, with True once every ``(log, offset)`` is durable below
        ``offset``, False when ``timeout_s`` passes first, or the round's error
        (an OSError of an fsync). Returns False, and never calls ``on_done``,
        when every target is durable already.

        A plain function on purpose, not a coroutine function: the request is
        registered when this is called, in the handler's synchronous part, not
        when a task first runs. The connection starts tasks only after it has
        cut and handled every frame of the data it just read, so four 1 MB
        requests read together would all wait for the last one's validation
        before the first round could start."""
        pending = [(lg, off) for lg, off in targets if lg.recovery_point < off]
        if not pending:
            return False
        loop = asyncio.get_running_loop()
        for lg, _ in pending:
            # the device starts on this request's pages now, not when its round begins
            lg.start_writeback()
        waiter = _Waiter(loop, on_done, timeout_s)
        with self._cond:
            if self._closing:
                waiter.timer.cancel()
                raise RuntimeError("group commit is closed")
            for lg, off in pending:
                if off > self._wanted.get(lg, 0):
                    self._wanted[lg] = off
            self._waiters.append(waiter)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
                self._thread.start()
            elif self._idle:
                self._cond.notify()
        return True

    def _run(self) -> None:
        """The flusher thread: one round after another while anything waits."""
        _lower_thread_priority()
        while True:
            with self._cond:
                while not self._waiters and not self._closing:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                if not self._waiters:
                    return  # closing, nothing left to flush
                wanted, self._wanted = self._wanted, {}
                waiters, self._waiters = self._waiters, []
                self.rounds += 1
            _hand_back(waiters, self._flush(wanted))

    def _flush(self, wanted: dict[UnifiedLog, int]) -> BaseException | None:
        """Flush every log of a round (in parallel when there are several);
        the first error, handed to every waiter of the round, or None."""
        try:
            if self._method == "syncfs":
                return self._sync_file_systems(wanted)
            if len(wanted) == 1:
                ((lg, offset),) = wanted.items()
                lg.flush(offset)
                return None
            pool = self._fsync_pool()
            return _first_error([pool.submit(lg.flush, offset) for lg, offset in wanted.items()])
        except Exception as exc:
            return exc

    def _sync_file_systems(self, wanted: dict[UnifiedLog, int]) -> BaseException | None:
        """One syncfs per file system the round's logs live on (in parallel
        when there are several)."""
        by_device: dict[int, list[tuple[LocalLog, int]]] = {}
        for lg, offset in wanted.items():
            local = lg.local_log
            by_device.setdefault(local.device, []).append((local, offset))
        jobs = [
            (logs, functools.partial(syncfs, self._device_fd(device, logs[0][0].directory)))
            for device, logs in by_device.items()
        ]
        if len(jobs) == 1:
            flush_together(*jobs[0])
            return None
        pool = self._fsync_pool()
        return _first_error([pool.submit(flush_together, *job) for job in jobs])

    def _device_fd(self, device: int, directory: Path) -> int:
        """The flusher thread's descriptor for syncfs on ``device``."""
        fd = self._device_fds.get(device)
        if fd is None:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            self._device_fds[device] = fd
        return fd

    def _fsync_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=FLUSH_THREADS,
                thread_name_prefix="group-commit-fsync",
                initializer=_lower_thread_priority,
            )
        return self._pool

    def close(self) -> None:
        """Finish the rounds asked for so far, then stop the flusher thread."""
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify()
        if thread is not None:
            thread.join()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for fd in self._device_fds.values():
            os.close(fd)
        self._device_fds.clear()


def _first_error(futures: Sequence[concurrent.futures.Future[object]]) -> BaseException | None:
    """Wait for every future (each flush ends before the round does); the first error."""
    error: BaseException | None = None
    for future in futures:
        exc = future.exception()
        if exc is not None and error is None:
            error = exc
    return error


def _lower_thread_priority() -> None:
    """Nice the calling thread (Linux schedules threads: it is this one's alone)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FLUSH_NICE)
    except OSError as exc:  # not permitted in some sandboxes: run at normal priority
        log.warning("cannot lower the priority of the group commit thread: %s", exc)


def _hand_back(waiters: list[_Waiter], error: BaseException | None) -> None:
    """Complete each waiter on its own event loop's thread."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
    for waiter in waiters:
        by_loop.setdefault(waiter.loop, []).append(waiter)
    for loop, mine in by_loop.items():
        # a closed loop raises RuntimeError: nobody is waiting any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, mine, error)


def _settle(waiters: list[_Waiter], error: BaseException | None) -> None:
    outcome: FlushOutcome = True if error is None else error
    for waiter in waiters:
        waiter.timer.cancel()
        waiter.answer(outcome)  # skipped if it timed out already
