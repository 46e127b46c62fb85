"""A small blocking Kafka client for the admin tools: one connection, one request at a time.

::

    with AdminConnection.connect("127.0.0.1:9092") as conn:
        version = conn.version_for(29)           # highest DescribeAcls version both speak
        response = conn.call(DescribeAclsRequest(...), version)

It speaks to the bootstrap address only (the broker is a single node), asks
ApiVersions first (v3, then v0 if the broker answers UNSUPPORTED_VERSION),
and encodes and decodes with ``broker.protocol``; a response that does not
arrive within the timeout, or a closed connection, raises
:class:`AdminClientError`; an error code in an answer becomes
:class:`BrokerRefused` (``check``). On a secured listener ``security`` (a
``--command-config`` read by ``client_security.py``) does the TLS handshake
before ApiVersions and the SASL exchange after it, as Kafka's clients do.

A listener the client is not set up for shows itself in how it treats a
Kafka request, and the error says so (``secured_listener_hint``)::

    TLS listener        closes at once (or answers with a TLS alert record,
                        15 03 0x ..., instead of a size) -> may need TLS or SASL
    SASL listener       answers ApiVersions, then closes on the next request
                        (Kafka's SaslServerAuthenticator), or answers it with
                        ILLEGAL_SASL_STATE                  -> may need SASL

either way the message names ``--command-config FILE`` and its keys.
"""

from __future__ import annotations

import itertools
import socket
import struct
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from broker import __version__
from broker.admin.client_security import PLAINTEXT, ClientSecurity, ClientSecurityError
from broker.errors import ErrorCode
from broker.protocol import API_KEYS, DecodeError, decode_response_to, encode_request
from broker.protocol.data import Data
from broker.protocol.messages import ApiVersionsRequest, codec_for

if TYPE_CHECKING:
    from broker.protocol.message_classes import Request

_R = TypeVar("_R", bound=Data)
_SIZE = struct.Struct(">i")
#: the largest response the client reads (DescribeAcls of many ACLs is a few MB)
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
CLIENT_ID = "broker-admin"
#: a TLS record of type alert (21) and major version 3: a TLS server refusing our bytes
_TLS_ALERT = b"\x15\x03"
_TLS_HINT = (
    "pass --command-config FILE with security.protocol=SSL, SASL_SSL or SASL_PLAINTEXT"
    " (and ssl.truststore.location, sasl.mechanism, sasl.jaas.config as the listener needs)"
)
_SASL_HINT = (
    "pass --command-config FILE with security.protocol=SASL_PLAINTEXT or SASL_SSL,"
    " sasl.mechanism and sasl.jaas.config"
)


class AdminClientError(Exception):
    """The broker could not be reached or answered something unreadable."""


class ConnectionClosed(OSError):
    """The broker closed the connection in the middle of a response (or before it)."""


class BrokerRefused(Exception):
    """The broker answered an error code (``code``: Kafka's, as an int)."""

    def __init__(self, text: str, code: int) -> None:
        super().__init__(text)
        self.code = code


def error_name(code: int) -> str:
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)


def check(code: int, what: str, message: str | None = None) -> None:
    """BrokerRefused("<what>: <ERROR_NAME>[: message]") unless ``code`` is NONE."""
    if code != ErrorCode.NONE:
        raise BrokerRefused(
            f"{what}: {error_name(code)}"
            + (f": {message}" if message else "")
            + secured_listener_hint(code),
            code,
        )


def secured_listener_hint(code: int) -> str:
    """What to add to a refusal that means the listener wants SASL first."""
    if code == ErrorCode.ILLEGAL_SASL_STATE:
        return f" (the listener may need SASL: {_SASL_HINT})"
    return ""


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` (``[v6]:port`` for IPv6 addresses)."""
    out = []
    for raw in text.split(","):
        item = raw.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise AdminClientError(f"expected host:port in the bootstrap servers, got {item!r}")
        out.append((host.strip("[]"), int(port)))
    return out


class AdminConnection:
    def __init__(
        self,
        sock: socket.socket,
        address: tuple[str, int] = ("", -1),
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self._sock = sock
        #: the (host, port) it connected to
        self.address = address
        self._security = security
        #: responses read so far (1: ApiVersions only)
        self._answered = 0
        self._correlation = itertools.count(1)
        self.versions: dict[int, tuple[int, int]] = {}

    @classmethod
    def connect(
        cls, bootstrap: str, timeout_s: float = 30.0, security: ClientSecurity = PLAINTEXT
    ) -> AdminConnection:
        errors = []
        for host, port in parse_bootstrap(bootstrap):
            try:
                sock = security.open(host, port, timeout_s)
            except ClientSecurityError as exc:
                raise AdminClientError(str(exc)) from None
            except OSError as exc:
                errors.append(f"{host}:{port}: {exc}")
                continue
            conn = cls(sock, (host, port), security)
            try:
                conn._negotiate()
                security.authenticate(conn.call, conn.versions)
            except ClientSecurityError as exc:
                conn.close()
                raise AdminClientError(str(exc)) from None
            except BaseException:
                conn.close()
                raise
            return conn
        raise AdminClientError("cannot connect to " + "; ".join(errors))

    def _negotiate(self) -> None:
        request = ApiVersionsRequest(
            client_software_name="broker-admin", client_software_version=__version__
        )
        response = self.call(request, 3)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            response = self.call(ApiVersionsRequest(), 0)
        if response.error_code != ErrorCode.NONE:
            raise AdminClientError(f"ApiVersions failed: {ErrorCode(response.error_code).name}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def version_for(
        self, api_key: int, lowest: int | None = None, highest: int | None = None
    ) -> int:
        """The highest version of the API both sides speak, within [lowest, highest]
        when the caller builds requests of those versions only."""
        ours = API_KEYS[api_key]
        low = ours.min_version if lowest is None else max(lowest, ours.min_version)
        high = ours.max_version if highest is None else min(highest, ours.max_version)
        theirs = self.versions.get(api_key)
        if theirs is None or theirs[0] > high or theirs[1] < low:
            wanted = f" v{low}-v{high}" if (lowest, highest) != (None, None) else ""
            raise AdminClientError(f"the broker does not serve {ours.name}{wanted}")
        return min(theirs[1], high)

    def call(self, request: Request[_R], version: int) -> _R:
        """Send ``request`` in ``version`` and read its answer (``MetadataRequest`` ->
        ``MetadataResponse``)."""
        api_key = codec_for(request).spec.api_key
        correlation = next(self._correlation)
        frame = encode_request(version, correlation, CLIENT_ID, request).to_bytes()
        name = API_KEYS[api_key].name
        try:
            self._sock.sendall(frame)
            head = self._read(4)
            if head.startswith(_TLS_ALERT) and self._security.tls is None:
                raise AdminClientError(
                    f"the broker at {self._where()} answered {name} with a TLS alert: the"
                    f" listener needs TLS; {_TLS_HINT}"
                )
            (size,) = _SIZE.unpack(head)
            if not 0 < size <= MAX_RESPONSE_BYTES:
                raise AdminClientError(f"response of {size} bytes")
            body = self._read(size)
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as exc:
            raise AdminClientError(self._closed(name, exc)) from None
        except OSError as exc:
            raise AdminClientError(f"{name} failed: {exc}") from exc
        self._answered += 1
        try:
            got, response = decode_response_to(request, version, body)
        except DecodeError as exc:
            raise AdminClientError(f"unreadable {API_KEYS[api_key].name} response: {exc}") from exc
        if got != correlation:
            raise AdminClientError(f"response to request {got}, expected {correlation}")
        return response

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self._sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionClosed("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _where(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def _closed(self, name: str, exc: OSError) -> str:
        """The message for a connection the broker closed (or reset) instead of answering."""
        how = "closed the connection" if isinstance(exc, ConnectionClosed) else str(exc)
        if self._answered == 0 and self._security.tls is None:
            # a TLS listener reads our request as a bad handshake and hangs up
            return (
                f"the broker at {self._where()} {how} without answering {name}: the listener"
                f" may need TLS or SASL; {_TLS_HINT}"
            )
        if self._answered == 1 and not self._security.sasl:
            # SaslServerAuthenticator: ApiVersions is served, anything else closes
            return (
                f"the broker at {self._where()} answered ApiVersions, then {how} on {name}: the"
                f" listener may need SASL; {_SASL_HINT}"
            )
        return f"{name} failed: the broker {how}"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
