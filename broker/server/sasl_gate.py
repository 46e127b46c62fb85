"""The SASL exchange of a SASL_PLAINTEXT / SASL_SSL connection (Kafka's SaslServerAuthenticator).

A connection's state, on the frames the connection cuts (``Dispatcher``
hands every frame here until the connection is authenticated)::

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake v1--> AUTHENTICATE
            |                                  |                              |
            +----------SaslHandshake v0--------+----------> AUTHENTICATE_V0   |
                                                            (raw tokens,      |
                                                             size-prefixed)   |
    AUTHENTICATE: SaslAuthenticate requests until the mechanism completes -> COMPLETE

    before AUTHENTICATE, any request but these two: closed at once, without an answer
        (Kafka's InvalidRequestException "Unexpected Kafka request ... during SASL handshake")
    in AUTHENTICATE, any other request: that API's error response with
        ILLEGAL_SASL_STATE "Unexpected Kafka request of type <API> during SASL
        authentication." after the failure delay, then closed (Kafka's
        ``getErrorResponse``; APIs whose error response lists the request's
        topics or partitions get no answer before the close, see
        docs/deviations.md); an unknown API, a version we do not serve or an
        unreadable body closes at once, as Kafka's ``parseRequest`` failing
    an unknown mechanism: UNSUPPORTED_SASL_MECHANISM, then closed
    a refused token: SASL_AUTHENTICATION_FAILED with a message that does not say
        whether the user exists; the answer goes out after
        connection.failed.authentication.delay.ms (a timer, never a blocked loop),
        then the connection closes; nothing behind it is dispatched
    frames before COMPLETE may be at most sasl.server.max.receive.size bytes

Sessions (KIP-368): with ``connections.max.reauth.ms`` (per mechanism with
its listener prefix) or a credential that expires (an OAUTHBEARER token),
SaslAuthenticate v1+ tells the client the session's lifetime; past it any
request but SaslHandshake closes the connection, and a SaslHandshake begins
re-authentication on the open connection (same mechanism, same principal),
served here while other requests keep flowing. A SaslHandshake less than a
second after the last re-authentication began is not one: it goes the
ordinary way (ILLEGAL_SASL_STATE from the handler, or the close of an
expired session), as in Kafka's ``KafkaChannel.maybeBeginServerReauthentication``
and ``SocketServer.Processor.processCompletedReceives``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from broker.delayed import DelayedReply
from broker.errors import ErrorCode
from broker.protocol import API_KEYS, DecodeError, decode_request, encode_response
from broker.protocol.api_keys import ApiKey
from broker.protocol.data import Data
from broker.protocol.header import RequestHeader
from broker.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from broker.security.sasl_mechanisms import AuthenticationFailed, SaslExchange, generic_failure
from broker.server.connection import Outcome, ProtocolViolation, Segments
from broker.server.error_response import error_response

if TYPE_CHECKING:
    from broker.server.connection import Connection

log = logging.getLogger(__name__)
_RequestT = TypeVar("_RequestT", bound=Data)

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

HANDSHAKE_OR_VERSIONS = "handshake_or_versions"
HANDSHAKE = "handshake"
AUTHENTICATE = "authenticate"
AUTHENTICATE_V0 = "authenticate_v0"
COMPLETE = "complete"
FAILED = "failed"
MIN_REAUTH_INTERVAL_NS = 1_000_000_000


class SaslRecorder(Protocol):
    def authenticated(self, listener: str, mechanism: str, success: bool) -> None: ...

    def session_expired(self, listener: str) -> None: ...


@dataclass
class SaslListener:
    """A SASL listener's settings, shared by its connections."""

    listener: str
    mechanisms: tuple[str, ...]
    #: mechanism -> a new exchange
    exchanges: dict[str, Callable[[], SaslExchange]]
    #: mechanism -> connections.max.reauth.ms (0: none)
    reauth_ms: dict[str, int]
    max_receive: int
    failed_delay_s: float
    recorder: SaslRecorder
    tls: bool = False
    #: the loop's clock for the failure delay; tests may replace it
    sleep: Callable[[float], Any] = field(default=asyncio.sleep)

    def begin(self, conn: Connection) -> None:
        conn.sasl = SaslSession(self)


class SaslSession:
    """One connection's SASL state."""

    __slots__ = (
        "authenticated",
        "exchange",
        "expiry_ns",
        "last_reauth_ns",
        "listener",
        "max_receive",
        "mechanism",
        "reauthenticating",
        "state",
    )

    def __init__(self, listener: SaslListener) -> None:
        self.listener = listener
        self.state = HANDSHAKE_OR_VERSIONS
        self.authenticated = False
        self.reauthenticating = False
        self.exchange: SaslExchange | None = None
        self.mechanism = ""
        self.max_receive = listener.max_receive
        #: monotonic ns when the session ends (KIP-368), 0 for never
        self.expiry_ns = 0
        self.last_reauth_ns = 0

    # ---- called by the dispatcher ---------------------------------------------------------------

    def needs_gate(self, api_key: int) -> bool:
        """After authentication: does this request belong to the SASL layer?"""
        if self.reauthenticating:
            return api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE)
        if self.expiry_ns and api_key == SASL_HANDSHAKE:
            return True
        return bool(self.expiry_ns) and time.monotonic_ns() > self.expiry_ns

    def handle(
        self,
        frame: memoryview,
        header: RequestHeader | None,
        conn: Connection,
        serve: Callable[[RequestHeader], Outcome],
    ) -> Outcome:
        """One frame the SASL layer owns; ``serve`` hands ApiVersions to the
        ordinary path."""
        if self.state == AUTHENTICATE_V0:
            return self._token_v0(bytes(frame), conn)
        if header is None:
            raise ProtocolViolation(f"unreadable request header from {conn.peer} before SASL")
        key = header.api_key
        if self.authenticated and not self.reauthenticating:
            if key == SASL_HANDSHAKE and self._may_reauthenticate():
                return self._begin_reauth(frame, header, conn)
            if self.expiry_ns and time.monotonic_ns() > self.expiry_ns:
                self.listener.recorder.session_expired(self.listener.listener)
                raise ProtocolViolation(
                    f"the SASL session of {conn.principal} from {conn.peer} expired"
                    " (connections.max.reauth.ms or the credential's lifetime)"
                )
            return serve(header)
        if key == API_VERSIONS and self.state == HANDSHAKE_OR_VERSIONS:
            self.state = HANDSHAKE
            return serve(header)
        if key == SASL_HANDSHAKE and self.state in (HANDSHAKE_OR_VERSIONS, HANDSHAKE):
            return self._handshake(frame, header, conn)
        if self.state == AUTHENTICATE:
            if key == SASL_AUTHENTICATE:
                return self._authenticate(frame, header, conn)
            return self._unexpected(frame, header, conn)
        api = API_KEYS.get(key)
        raise ProtocolViolation(
            f"{conn.peer} sent {api.name if api else f'API key {key}'} before authenticating"
            " (Kafka: Unexpected Kafka request during SASL handshake)"
        )

    def _may_reauthenticate(self) -> bool:
        """A SaslHandshake after authentication begins re-authentication when the
        session has a lifetime and the last one began at least a second ago."""
        if not self.expiry_ns:
            return False
        last = self.last_reauth_ns
        return not last or time.monotonic_ns() - last >= MIN_REAUTH_INTERVAL_NS

    def oversized_token(self) -> None:
        """The connection refused a frame past ``max_receive`` before authentication
        (and closes): a failed authentication."""
        self.state = FAILED
        self.exchange = None
        listener = self.listener
        mechanism = self.mechanism if self.mechanism in listener.mechanisms else "unknown"
        listener.recorder.authenticated(listener.listener, mechanism, False)

    # ---- the steps -------------------------------------------------------------------------------

    def _decode(
        self, header: RequestHeader, frame: memoryview, conn: Connection, cls: type[_RequestT]
    ) -> _RequestT:
        """The request of class ``cls`` (the state machine chose the step by the API key)."""
        api = API_KEYS[header.api_key]
        if not api.supports(header.api_version):
            raise ProtocolViolation(f"{conn.peer} sent {api.name} v{header.api_version}")
        try:
            request = decode_request(header, frame)
        except DecodeError as exc:
            raise ProtocolViolation(f"malformed {api.name} from {conn.peer}: {exc}") from exc
        if not isinstance(request, cls):
            raise ProtocolViolation(f"{conn.peer} sent {api.name} where {cls.__name__} was due")
        return request

    def _handshake(self, frame: memoryview, header: RequestHeader, conn: Connection) -> Outcome:
        request = self._decode(header, frame, conn, SaslHandshakeRequest)
        mechanism = request.mechanism
        listener = self.listener
        if mechanism not in listener.mechanisms:
            log.info(
                "closing connection from %s: SASL mechanism %r is not enabled on listener %s",
                conn.peer,
                mechanism[:64],
                listener.listener,
            )
            response = SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                mechanisms=list(listener.mechanisms),
            )
            return self._fail(conn, mechanism, encode_response(header, response).segments)
        self.mechanism = mechanism
        self.exchange = listener.exchanges[mechanism]()
        self.state = AUTHENTICATE if header.api_version >= 1 else AUTHENTICATE_V0
        response = SaslHandshakeResponse(
            error_code=ErrorCode.NONE, mechanisms=list(listener.mechanisms)
        )
        return encode_response(header, response).segments

    def _begin_reauth(self, frame: memoryview, header: RequestHeader, conn: Connection) -> Outcome:
        self.last_reauth_ns = time.monotonic_ns()
        request = self._decode(header, frame, conn, SaslHandshakeRequest)
        if request.mechanism != self.mechanism:
            # Kafka's REAUTH_BAD_MECHANISM: the handshake fails as a re-authentication
            log.info(
                "re-authentication failed on listener %s from %s: mechanism %r instead of %s",
                self.listener.listener,
                conn.peer,
                request.mechanism[:64],
                self.mechanism,
            )
            response = SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                mechanisms=list(self.listener.mechanisms),
            )
            return self._fail(conn, self.mechanism, encode_response(header, response).segments)
        self.reauthenticating = True
        self.state = AUTHENTICATE
        self.exchange = self.listener.exchanges[self.mechanism]()
        response = SaslHandshakeResponse(
            error_code=ErrorCode.NONE, mechanisms=list(self.listener.mechanisms)
        )
        return encode_response(header, response).segments

    def _unexpected(self, frame: memoryview, header: RequestHeader, conn: Connection) -> Outcome:
        """Not a SaslAuthenticate while one is expected: Kafka's
        ``handleSaslToken`` parses the request and fails the authentication with
        the API's error response (IllegalSaslStateException)."""
        api = API_KEYS.get(header.api_key)
        if api is None:
            raise ProtocolViolation(
                f"{conn.peer} sent API key {header.api_key} while authenticating"
            )
        self._decode(header, frame, conn, Data)  # any request: parsed, then refused
        message = (
            f"Unexpected Kafka request of type {kafka_enum_name(api)} during SASL authentication."
        )
        log.info(
            "authentication failed on listener %s from %s with %s: %s",
            self.listener.listener,
            conn.peer,
            self.mechanism,
            message,
        )
        response = illegal_state_response(api, header.api_version, message)
        segments = None if response is None else encode_response(header, response).segments
        return self._fail(conn, self.mechanism, segments)

    def _authenticate(self, frame: memoryview, header: RequestHeader, conn: Connection) -> Outcome:
        request = self._decode(header, frame, conn, SaslAuthenticateRequest)
        assert self.exchange is not None
        try:
            token = self.exchange.evaluate(bytes(request.auth_bytes))
            lifetime_ms = self._complete(conn) if self.exchange.complete else 0
        except AuthenticationFailed as exc:
            log.info(
                "%s failed on listener %s from %s with %s: %s",
                "re-authentication" if self.reauthenticating else "authentication",
                self.listener.listener,
                conn.peer,
                self.mechanism,
                exc,
            )
            message = exc.client_message
            if self.reauthenticating and message == generic_failure(self.mechanism):
                message = generic_failure(self.mechanism, reauthenticating=True)
            response = SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=message,
                auth_bytes=b"",
            )
            return self._fail(conn, self.mechanism, encode_response(header, response).segments)
        response = SaslAuthenticateResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            auth_bytes=token,
            session_lifetime_ms=lifetime_ms,
        )
        return encode_response(header, response).segments

    def _token_v0(self, token: bytes, conn: Connection) -> Outcome:
        assert self.exchange is not None
        try:
            answer = self.exchange.evaluate(token)
            if self.exchange.complete:
                self._complete(conn)
        except AuthenticationFailed as exc:
            log.info(
                "authentication failed on listener %s from %s with %s: %s",
                self.listener.listener,
                conn.peer,
                self.mechanism,
                exc,
            )
            return self._fail(conn, self.mechanism, None)
        return [len(answer).to_bytes(4, "big"), answer]

    def _complete(self, conn: Connection) -> int:
        """The exchange succeeded: principal, session lifetime (ms, 0 = none)."""
        assert self.exchange is not None
        principal = "User:" + self.exchange.authorization_id
        if self.reauthenticating and principal != conn.principal:
            # ReauthInfo.ensurePrincipalUnchanged prints type.name
            raise AuthenticationFailed(
                "Cannot change principals during re-authentication from"
                f" {conn.principal.replace(':', '.', 1)}: {principal.replace(':', '.', 1)}"
            )
        reauth_ms = self.listener.reauth_ms.get(self.mechanism, 0)
        lifetime_ms = 0
        expiry = self.exchange.lifetime_ms
        if expiry is not None or reauth_ms > 0:
            left = None if expiry is None else max(0, expiry - int(time.time() * 1000))
            if left is None:
                lifetime_ms = reauth_ms
            elif reauth_ms <= 0:
                lifetime_ms = left
            else:
                lifetime_ms = min(left, reauth_ms)
            self.expiry_ns = time.monotonic_ns() + lifetime_ms * 1_000_000
        conn.principal = principal
        self.authenticated = True
        self.reauthenticating = False
        self.state = COMPLETE
        self.exchange = None
        self.listener.recorder.authenticated(self.listener.listener, self.mechanism, True)
        return lifetime_ms

    def _fail(self, conn: Connection, mechanism: str, segments: Segments | None) -> Outcome:
        """Answer after the failure delay, then close; nothing behind is dispatched."""
        self.state = FAILED
        self.exchange = None
        self.listener.recorder.authenticated(
            self.listener.listener,
            mechanism if mechanism in self.listener.mechanisms else "unknown",
            False,
        )
        conn.close()
        delay = self.listener.failed_delay_s
        sleep = self.listener.sleep

        async def later() -> Segments | None:
            if delay > 0:
                await sleep(delay)
            return segments

        return DelayedReply.of_awaitable(later())


def kafka_enum_name(api: ApiKey) -> str:
    """``ApiKeys``' constant name as Java prints it: "Metadata" -> "METADATA",
    "ApiVersions" -> "API_VERSIONS"."""
    out = []
    for i, ch in enumerate(api.name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


def illegal_state_response(api: ApiKey, version: int, message: str) -> Data | None:
    """The API's error response for ILLEGAL_SASL_STATE (``server/error_response.py``):
    None for APIs whose error response repeats the request's topics or
    partitions (Produce, Metadata, ListOffsets, CreateTopics, ...)."""
    return error_response(api, version, ErrorCode.ILLEGAL_SASL_STATE, message)
