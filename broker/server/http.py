"""The operator endpoint on ``metrics.listener``: /metrics, /healthz, /readyz.

A deliberately small HTTP/1.1 server on the broker's own event loop (no
thread, no framework): it reads one request head (bounded to 8 KiB),
answers ``GET``/``HEAD`` for three paths and closes the connection.

* ``/metrics``  Prometheus text exposition (``broker.metrics``).
* ``/healthz``  200 while the process runs its event loop (liveness).
* ``/readyz``   200 once the logs are loaded and the Kafka listener is bound,
                503 before that and while shutting down (readiness).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
READ_TIMEOUT_S = 10.0
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class OpsEndpoint:
    """Serves the three paths; ``ready`` is flipped by the app."""

    def __init__(self, render_metrics: Callable[[], bytes]) -> None:
        self._render_metrics = render_metrics
        self.ready = False
        self._server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD_BYTES)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            writer.close()
            return
        except ConnectionError:
            return
        try:
            status, ctype, body, head_only = self._route(head)
            writer.write(
                (
                    f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                ).encode("ascii")
            )
            if not head_only:
                writer.write(body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    def _route(self, head: bytes) -> tuple[str, str, bytes, bool]:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return "400 Bad Request", "text/plain", b"bad request\n", False
        method, target, _ = parts
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"method not allowed\n", False
        path = target.split("?", 1)[0]
        head_only = method == "HEAD"
        if path == "/metrics":
            return "200 OK", PROMETHEUS_CONTENT_TYPE, self._render_metrics(), head_only
        if path == "/healthz":
            return "200 OK", "text/plain", b"ok\n", head_only
        if path == "/readyz":
            if self.ready:
                return "200 OK", "text/plain", b"ready\n", head_only
            return "503 Service Unavailable", "text/plain", b"not ready\n", head_only
        return "404 Not Found", "text/plain", b"not found\n", head_only
