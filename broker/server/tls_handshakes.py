"""TLS handshakes that fail: counted, logged, never a crash or a hung connection.

The loop's TLS transport (asyncio's or uvloop's ``SSLProtocol``) runs the
handshake before our connection exists for it: a handshake that fails or
stalls never reaches ``Connection.connection_made``, and the loops only log
such failures in debug mode. Both loops make their ``ssl.SSLObject`` with
the listener context's ``wrap_bio``, which builds ``sslobject_class``, so
each listener gets a subclass of its own (:meth:`HandshakeWatch.sslobject_class`)
whose ``do_handshake`` reports to the watch:

    first call            the handshake began (the loop calls it at accept)
    returns               done: the connection is handed to the broker
    raises SSLError       failed: a client that does not speak TLS (garbage, a
                          plaintext Kafka request), an untrusted or missing client
                          certificate, a TLS version or cipher we refuse
    neither, in time      incomplete: the client stopped mid-handshake or closed;
                          the loop aborts it at ``ssl_handshake_timeout`` (the
                          listener's connection.frame.timeout.ms), the sweep counts it

Failures count in ``kafka_network_tls_handshake_failures_total{listener,
reason}`` and are logged (at most one line per listener and reason every 10
seconds, with the count). A handshake costs the loop what OpenSSL takes for
the bytes that arrived: a slow or hostile client holds a socket until the
timeout, never the loop.
"""

from __future__ import annotations

import logging
import ssl
import weakref
from typing import Any, Protocol

log = logging.getLogger(__name__)

CERTIFICATE = "certificate"
PROTOCOL = "protocol"
INCOMPLETE = "incomplete"
#: a TLS ClientHello arrived on a PLAINTEXT or SASL_PLAINTEXT listener
TLS_ON_PLAINTEXT = "tls_on_plaintext"
REASONS = (CERTIFICATE, PROTOCOL, INCOMPLETE, TLS_ON_PLAINTEXT)
LOG_EVERY_SECONDS = 10.0


class HandshakeRecorder(Protocol):
    def handshake_failed(self, listener: str, reason: str) -> None: ...


def reason_of(exc: ssl.SSLError) -> str:
    text = f"{exc.reason or ''} {exc}".upper()
    return CERTIFICATE if "CERTIFICATE" in text or "CERT_" in text else PROTOCOL


class HandshakeWatch:
    """The handshakes of one listener."""

    def __init__(
        self, listener: str, recorder: HandshakeRecorder, timeout_s: float, clock: Any
    ) -> None:
        self.listener = listener
        self.recorder = recorder
        self.timeout_s = timeout_s
        self._clock = clock
        #: id(SSLObject) -> (weak reference, when its handshake began)
        self._pending: dict[int, tuple[weakref.ref[ssl.SSLObject], float]] = {}
        self._last_log: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}
        self.completed = 0

    def sslobject_class(self) -> type[ssl.SSLObject]:
        watch = self

        class WatchedSSLObject(ssl.SSLObject):
            def do_handshake(self) -> None:
                if "_watched" not in self.__dict__:
                    self.__dict__["_watched"] = True
                    watch.began(self)
                try:
                    super().do_handshake()
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    raise
                except ssl.SSLError as exc:
                    watch.failed(self, reason_of(exc), str(exc.reason or exc))
                    raise
                watch.done(self)

        return WatchedSSLObject

    def began(self, obj: ssl.SSLObject) -> None:
        self._pending[id(obj)] = (weakref.ref(obj), self._clock())

    def done(self, obj: ssl.SSLObject) -> None:
        if self._pending.pop(id(obj), None) is not None:
            self.completed += 1

    def failed(self, obj: ssl.SSLObject | None, reason: str, detail: str) -> None:
        if obj is not None:
            self._pending.pop(id(obj), None)
        self.recorder.handshake_failed(self.listener, reason)
        self._log(reason, detail)

    def _log(self, reason: str, detail: str) -> None:
        now = self._clock()
        self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
        if now - self._last_log.get(reason, -LOG_EVERY_SECONDS) < LOG_EVERY_SECONDS:
            return
        self._last_log[reason] = now
        count = self._unlogged.pop(reason)
        log.warning(
            "TLS handshake failed on listener %s (%s: %s; %d such since the last message)",
            self.listener,
            reason,
            detail,
            count,
        )

    def sweep(self, now: float) -> int:
        """Count the handshakes that ended without finishing or ran out of time."""
        gone = 0
        for key, (ref, began) in list(self._pending.items()):
            obj = ref()
            if obj is None or now - began > self.timeout_s:
                del self._pending[key]
                gone += 1
                self.recorder.handshake_failed(self.listener, INCOMPLETE)
                self._log(INCOMPLETE, "the client closed or stalled before the handshake finished")
        return gone

    @property
    def pending(self) -> int:
        return len(self._pending)
