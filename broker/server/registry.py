"""The open client connections: admission at accept, and one periodic sweep.

Admission (:meth:`ConnectionRegistry.opened`, called from
``Connection.connection_made``): the connection quotas
(``server/quotas.py``) decide; a refused connection is closed at once,
counted by reason, and never counted as open.

The sweep: one task for all connections (not a timer each), every
:attr:`ConnectionRegistry.interval` seconds (1 s, or a quarter of the
shortest time limit when that is shorter). It asks each connection
(``Connection.sweep``, a few attribute reads, cheap for thousands of
connections; docs/performance.md) whether it broke a time limit, and lets quiet ones drop their
receive buffers:

    connections.max.idle.ms       no request in flight, nothing received and
                                  no answer taken by the client for that long
                                  (Kafka's Selector idle expiry, whose clock
                                  also runs on any read or write); closed
    connection.frame.timeout.ms   a frame begun (a byte of it received) and
                                  not complete that long while the connection
                                  reads (ours: Kafka has no such limit); closed

A limit is seen at the first sweep after it passed, and a frame's clock
starts at the first sweep that sees it, so a close comes up to two intervals
late. The clock of a frame stops while the broker itself holds the
connection (at its bound, or waiting for the receive budget).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker.server.connection import Connection
from broker.server.quotas import MAX_CONNECTIONS, ConnectionQuotas, normalize

log = logging.getLogger(__name__)

IDLE = "idle"
FRAME_TIMEOUT = "frame_timeout"
#: expiry reasons, as the metrics label them
EXPIRY_REASONS = (IDLE, FRAME_TIMEOUT)
#: the sweep's period, unless a time limit is shorter than four of them
SWEEP_SECONDS = 1.0
MIN_SWEEP_SECONDS = 0.01
#: refusals and frame timeouts are logged at most once per this many seconds (per reason)
LOG_EVERY_SECONDS = 10.0


class ConnectionRecorder(Protocol):
    """Connection metrics (``broker.metrics.ConnectionMeters``)."""

    def opened(self) -> None: ...

    def closed(self) -> None: ...

    def refused(self, reason: str) -> None: ...

    def expired(self, reason: str) -> None: ...


class ListenerRecorder(Protocol):
    """Open connections by listener (``broker.metrics.BrokerMetrics``)."""

    def listener_opened(self, listener: str) -> None: ...

    def listener_closed(self, listener: str) -> None: ...


@dataclass(frozen=True)
class TimeLimits:
    """``connections.max.idle.ms`` and ``connection.frame.timeout.ms``; negative = none."""

    idle_ms: int = 600_000
    frame_ms: int = 30_000

    @property
    def sweep_seconds(self) -> float:
        limits = [ms / 1000 / 4 for ms in (self.idle_ms, self.frame_ms) if ms >= 0]
        return max(MIN_SWEEP_SECONDS, min([SWEEP_SECONDS, *limits]))


class _Throttled:
    """Logs one line per reason at most every ``LOG_EVERY_SECONDS``, with a count."""

    def __init__(self, level: int) -> None:
        self.level = level
        self._last: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def log(self, now: float, reason: str, message: str, *args: object) -> None:
        self._count[reason] = self._count.get(reason, 0) + 1
        if now - self._last.get(reason, -LOG_EVERY_SECONDS) < LOG_EVERY_SECONDS:
            return
        count = self._count.pop(reason)
        self._last[reason] = now
        log.log(self.level, message + " (%d since the last such message)", *args, count)


class ConnectionRegistry:
    """Implements ``ConnectionOwner`` for every connection of the listener."""

    def __init__(
        self,
        quotas: ConnectionQuotas,
        time_limits: TimeLimits,
        recorder: ConnectionRecorder,
        listener_recorder: ListenerRecorder | None = None,
    ) -> None:
        self.quotas = quotas
        self.time_limits = time_limits
        self.recorder = recorder
        self.listener_recorder = listener_recorder
        #: sweeps of the listeners' TLS handshakes and SASL sessions (called with ``now``)
        self.extra_sweeps: list[Callable[[float], object]] = []
        #: open connection -> the address it counts against
        self._open: dict[Connection, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._refusals = _Throttled(logging.WARNING)
        self._timeouts = _Throttled(logging.WARNING)

    @property
    def connections(self) -> list[Connection]:
        return list(self._open)

    def __len__(self) -> int:
        return len(self._open)

    @property
    def interval(self) -> float:
        return self.time_limits.sweep_seconds

    # ---- ConnectionOwner ---------------------------------------------------------

    def opened(self, conn: Connection) -> bool:
        address = normalize(conn.host)
        reason = self.quotas.admit(address)
        if reason is not None:
            self.recorder.refused(reason)
            limit = (
                self.quotas.max_connections
                if reason == MAX_CONNECTIONS
                else self.quotas.limit_for(address)
            )
            self._refusals.log(
                asyncio.get_running_loop().time(),
                reason,
                "refused a connection from %s: %s (%d) reached",
                conn.peer,
                reason.replace("_", "."),
                limit,
            )
            return False
        self._open[conn] = address
        self.recorder.opened()
        if self.listener_recorder is not None:
            self.listener_recorder.listener_opened(conn.listener_name)
        return True

    def closed(self, conn: Connection) -> None:
        address = self._open.pop(conn, None)
        if address is None:
            return
        self.quotas.release(address)
        self.recorder.closed()
        if self.listener_recorder is not None:
            self.listener_recorder.listener_closed(conn.listener_name)

    # ---- the sweep ----------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="connection-sweep")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            try:
                now = loop.time()
                self.sweep(now)
                for extra in self.extra_sweeps:
                    extra(now)
            except Exception:
                log.exception("connection sweep failed")

    def sweep(self, now: float) -> int:
        """One pass over every connection; returns how many were closed."""
        idle_s = self.time_limits.idle_ms / 1000
        frame_s = self.time_limits.frame_ms / 1000
        expired = 0
        for conn in list(self._open):
            reason = conn.sweep(now, idle_s, frame_s)
            if reason is None:
                continue
            expired += 1
            self.recorder.expired(reason)
            if reason == FRAME_TIMEOUT:
                self._timeouts.log(
                    now,
                    reason,
                    "closing connection from %s: a frame took longer than"
                    " connection.frame.timeout.ms (%d) to arrive",
                    conn.peer,
                    self.time_limits.frame_ms,
                )
            else:
                log.debug("closing idle connection from %s", conn.peer)
            conn.expire()
        return expired

    def paused(self) -> int:
        """Connections not reading: at their bound or waiting for the receive budget."""
        return sum(1 for conn in self._open if conn.paused)
