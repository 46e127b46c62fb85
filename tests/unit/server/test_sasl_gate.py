"""The SASL state machine of a SASL listener's connection (server/sasl_gate.py),
as Kafka's SaslServerAuthenticator, through the real dispatcher: which
requests are served before authentication, what is answered and when
(connection.failed.authentication.delay.ms), the v0 handshake's raw tokens,
re-authentication (KIP-368); then over a real socket: the delay before the
answer, nothing dispatched behind a failure, tokens past
sasl.server.max.receive.size."""

from __future__ import annotations

import asyncio
import functools
import inspect
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol import encode_request
from broker.protocol.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from broker.security.sasl_mechanisms import (
    OAuthBearerExchange,
    PlainExchange,
    ScramExchange,
    generic_failure,
)
from broker.server.budget import ReceiveBudget
from broker.server.connection import Connection, ConnectionLimits, ProtocolViolation
from broker.server.listener import ListenerSpec
from broker.server.listener_security import ListenerSecurity
from broker.server.sasl_gate import COMPLETE, SaslListener, SaslSession
from tests.aio import run
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.security.sasl_support import (
    Jwks,
    ScramClient,
    oauth_token,
    plain_token,
    scram_credential,
)

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
ILLEGAL = ErrorCode.ILLEGAL_SASL_STATE
FAILED = ErrorCode.SASL_AUTHENTICATION_FAILED


class Recorder:
    def __init__(self) -> None:
        self.auths: list[tuple[str, bool]] = []
        self.expired = 0
        self.handshakes: list[str] = []

    def authenticated(self, listener: str, mechanism: str, success: bool) -> None:
        self.auths.append((mechanism, success))

    def session_expired(self, listener: str) -> None:
        self.expired += 1

    def handshake_failed(self, listener: str, reason: str) -> None:
        self.handshakes.append(reason)


class Delays:
    """The failure delay, recorded instead of slept."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


def sasl_listener(
    recorder: Recorder,
    *,
    reauth_ms: int = 0,
    jwks: Jwks | None = None,
    scram: dict[tuple[str, str], Any] | None = None,
    sleep: Any = None,
    max_receive: int = 524_288,
) -> SaslListener:
    creds = scram or {}
    exchanges: dict[str, Any] = {
        "PLAIN": functools.partial(PlainExchange, USERS),
        "SCRAM-SHA-256": functools.partial(
            ScramExchange, "SCRAM-SHA-256", lambda u, m: creds.get((u, m))
        ),
        "SCRAM-SHA-512": functools.partial(
            ScramExchange, "SCRAM-SHA-512", lambda u, m: creds.get((u, m))
        ),
    }
    if jwks is not None:
        from broker.security.oauth import JwtValidator

        check = JwtValidator(
            jwks.url, issuer=None, audience=(), clock_skew_s=0, scope_claim="scope",
            sub_claim="sub",
        )  # fmt: skip
        exchanges["OAUTHBEARER"] = functools.partial(OAuthBearerExchange, check)
    listener = SaslListener(
        listener="SASL_PLAINTEXT",
        mechanisms=tuple(exchanges),
        exchanges=exchanges,
        reauth_ms=dict.fromkeys(exchanges, reauth_ms),
        max_receive=max_receive,
        failed_delay_s=0.1,
        recorder=recorder,
    )
    if sleep is not None:
        listener.sleep = sleep
    return listener


class Gate:
    """An in-process broker whose connection is a SASL listener's."""

    def __init__(self, tmp_path: Path, listener: SaslListener) -> None:
        self.broker = InProcessBroker(tmp_path / "data")
        self.conn = self.broker.conn
        listener.begin(self.conn)  # type: ignore[arg-type]
        self.session: SaslSession = self.conn.sasl  # type: ignore[assignment]

    def send(self, request: Any, version: int) -> Any:
        return self.broker.send(request, version)

    def call(self, request: Any, version: int) -> Any:
        """The decoded answer, awaiting a delayed one; None when none comes
        (handled in a running loop, as the server does: a later answer's
        work starts there)."""
        outcome = run(_await(lambda: self.send(request, version)))
        correlation = self.broker.correlation
        if outcome is None:
            return None
        from tests.unit.handlers.conftest import _api_key_of

        return self.broker.decode(_api_key_of(type(request)), version, outcome, correlation)

    def handshake(self, mechanism: str, version: int = 1) -> Any:
        return self.call(SaslHandshakeRequest(mechanism=mechanism), version)

    def authenticate(self, token: bytes, version: int = 2) -> Any:
        return self.call(SaslAuthenticateRequest(auth_bytes=token), version)

    def close(self) -> None:
        self.broker.close()


async def _await(dispatch: Callable[[], Any]) -> Any:
    """``dispatch()`` in a running loop; its outcome, awaited when it is later."""
    outcome = dispatch()
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def delays() -> Delays:
    return Delays()


@pytest.fixture
def gate(tmp_path: Path, recorder: Recorder, delays: Delays) -> Iterator[Gate]:
    g = Gate(tmp_path, sasl_listener(recorder, sleep=delays))
    yield g
    g.close()


def test_api_versions_handshake_authenticate_then_requests_are_served(
    gate: Gate, recorder: Recorder
) -> None:
    versions = gate.call(
        ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
    )
    assert versions.error_code == 0 and any(k.api_key == 36 for k in versions.api_keys)
    handshake = gate.handshake("PLAIN")
    assert handshake.error_code == 0
    assert handshake.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    done = gate.authenticate(plain_token("alice", "alice-secret"))
    assert (done.error_code, done.error_message, done.session_lifetime_ms) == (0, None, 0)
    assert gate.conn.principal == "User:alice" and gate.session.state == COMPLETE
    assert recorder.auths == [("PLAIN", True)]
    # now the ordinary path, without the gate
    assert gate.call(MetadataRequest(topics=[]), 12).topics == []
    # SaslHandshake once authenticated, no session lifetime: KafkaApis' ILLEGAL_SASL_STATE
    assert gate.handshake("PLAIN").error_code == ILLEGAL
    again = gate.authenticate(b"x")
    assert again.error_code == ILLEGAL
    assert (
        again.error_message == "SaslAuthenticate request received after successful authentication"
    )
    assert not gate.conn.closed


@pytest.mark.parametrize(
    "steps",
    [
        [(MetadataRequest(topics=[]), 12)],  # nothing but ApiVersions or SaslHandshake first
        [(ApiVersionsRequest(), 3), (ApiVersionsRequest(), 3)],  # ApiVersions only once
        [(SaslAuthenticateRequest(auth_bytes=b"x"), 2)],  # no token before the handshake
    ],
)
def test_requests_out_of_turn_before_the_handshake_close_at_once(
    gate: Gate, steps: list[tuple[Any, int]]
) -> None:
    *before, (last, version) = steps
    for request, v in before:
        gate.call(request, v)
    with pytest.raises(ProtocolViolation):
        gate.send(last, version)


@pytest.mark.parametrize(
    ("request_", "version", "message"),
    [
        (ApiVersionsRequest(), 3, None),
        (SaslHandshakeRequest(mechanism="PLAIN"), 1, None),
        (
            FindCoordinatorRequest(key="g"),
            2,
            "Unexpected Kafka request of type FIND_COORDINATOR during SASL authentication.",
        ),
    ],
)
def test_another_request_while_authenticating_gets_its_error_response_after_the_delay(
    gate: Gate, recorder: Recorder, delays: Delays, request_: Any, version: int, message: str
) -> None:
    """SaslServerAuthenticator.handleSaslToken: the API's getErrorResponse with
    ILLEGAL_SASL_STATE, sent after the failure delay, then the connection closes."""
    gate.handshake("SCRAM-SHA-256")
    response = gate.call(request_, version)
    assert response.error_code == ILLEGAL
    if message is not None:
        assert response.error_message == message
    assert gate.conn.closed and delays.seen == [0.1]
    assert recorder.auths == [("SCRAM-SHA-256", False)]


def test_a_request_whose_error_response_lists_topics_gets_none(gate: Gate, delays: Delays) -> None:
    gate.handshake("PLAIN")
    assert gate.call(MetadataRequest(topics=[]), 12) is None
    assert gate.conn.closed and delays.seen == [0.1]


def test_an_unsupported_version_while_authenticating_closes_at_once(gate: Gate) -> None:
    gate.handshake("PLAIN")
    frame = bytearray(encode_request(12, 9, "c", MetadataRequest(topics=[])).to_bytes())
    struct.pack_into(">h", frame, 6, 99)  # api_version
    with pytest.raises(ProtocolViolation):
        gate.broker.dispatcher.handle_frame(memoryview(frame)[4:], gate.conn)  # type: ignore[arg-type]


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_a_refused_token_answers_after_the_delay_without_naming_the_cause(
    gate: Gate, recorder: Recorder, delays: Delays, user: str, password: str
) -> None:
    gate.handshake("PLAIN")

    async def scenario() -> Any:
        outcome = gate.send(SaslAuthenticateRequest(auth_bytes=plain_token(user, password)), 2)
        assert inspect.isawaitable(outcome)  # the answer waits for the delay ...
        assert gate.conn.closed  # ... and nothing behind it is dispatched
        assert delays.seen == []
        return await outcome

    segments = run(scenario())
    assert delays.seen == [0.1]
    response = gate.broker.decode(36, 2, segments, gate.broker.correlation)
    assert response.error_code == FAILED
    assert response.error_message == "Authentication failed: Invalid username or password"
    assert recorder.auths == [("PLAIN", False)] and gate.conn.principal == "User:ANONYMOUS"


def test_an_unknown_mechanism_is_refused_with_the_enabled_ones(
    gate: Gate, recorder: Recorder, delays: Delays
) -> None:
    response = gate.handshake("GSSAPI")
    assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert gate.conn.closed and delays.seen == [0.1]
    assert recorder.auths == [("unknown", False)]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_through_the_gate(tmp_path: Path, recorder: Recorder, mechanism: str) -> None:
    creds = {("alice", mechanism): scram_credential(mechanism, "s3cret", 8192)}
    g = Gate(tmp_path, sasl_listener(recorder, scram=creds))
    try:
        g.handshake(mechanism)
        client = ScramClient(mechanism, "alice", "s3cret")
        first = g.authenticate(client.first())
        assert first.error_code == 0 and b",i=8192" in first.auth_bytes
        assert g.conn.principal == "User:ANONYMOUS"
        final = g.authenticate(client.final(first.auth_bytes))
        assert final.error_code == 0
        client.check_server_final(final.auth_bytes)
        assert g.conn.principal == "User:alice"
    finally:
        g.close()


def test_v0_handshake_takes_raw_size_prefixed_tokens(gate: Gate, recorder: Recorder) -> None:
    """SaslHandshake v0: the tokens follow without Kafka headers (pre KIP-152)."""
    assert gate.handshake("PLAIN", version=0).error_code == 0
    token = plain_token("bob", "bob-secret")
    answer = gate.broker.dispatcher.handle_frame(memoryview(bytearray(token)), gate.conn)  # type: ignore[arg-type]
    assert b"".join(bytes(s) for s in answer) == b"\0\0\0\0"  # an empty token, size-prefixed
    assert gate.conn.principal == "User:bob" and recorder.auths == [("PLAIN", True)]
    bad = Gate(gate.broker.log_manager.log_dirs[0].parent / "v0", gate.session.listener)
    try:
        bad.handshake("PLAIN", version=0)
        outcome = run(
            _await(
                lambda: bad.broker.dispatcher.handle_frame(
                    memoryview(bytearray(plain_token("bob", "nope"))),
                    bad.conn,  # type: ignore[arg-type]
                )
            )
        )
        assert outcome is None and bad.conn.closed  # v0: closed, no answer
    finally:
        bad.close()


# ---- re-authentication (KIP-368) ---------------------------------------------------------------


@pytest.fixture
def reauth(tmp_path: Path, recorder: Recorder, delays: Delays) -> Iterator[Gate]:
    g = Gate(tmp_path, sasl_listener(recorder, reauth_ms=60_000, sleep=delays))
    g.handshake("PLAIN")
    assert g.authenticate(plain_token("alice", "alice-secret")).session_lifetime_ms == 60_000
    yield g
    g.close()


def test_reauthentication_keeps_the_connection_and_the_principal(
    reauth: Gate, recorder: Recorder
) -> None:
    session = reauth.session
    expiry = session.expiry_ns
    assert expiry > time.monotonic_ns()
    assert reauth.handshake("PLAIN").error_code == 0 and session.reauthenticating
    # other requests keep flowing during re-authentication
    assert reauth.call(MetadataRequest(topics=[]), 12).topics == []
    done = reauth.authenticate(plain_token("alice", "alice-secret"))
    assert (done.error_code, done.session_lifetime_ms) == (0, 60_000)
    assert session.expiry_ns >= expiry and not session.reauthenticating
    assert reauth.conn.principal == "User:alice" and not reauth.conn.closed
    # a second SaslHandshake within a second is no re-authentication: KafkaApis answers it
    assert reauth.handshake("PLAIN").error_code == ILLEGAL and not reauth.conn.closed
    assert recorder.auths == [("PLAIN", True), ("PLAIN", True)]


def test_reauthentication_may_not_change_the_principal(reauth: Gate) -> None:
    reauth.handshake("PLAIN")
    response = reauth.authenticate(plain_token("bob", "bob-secret"))
    assert response.error_code == FAILED
    assert response.error_message == (
        "Cannot change principals during re-authentication from User.alice: User.bob"
    )
    assert reauth.conn.closed and reauth.conn.principal == "User:alice"


def test_reauthentication_failure_says_re_authentication(
    tmp_path: Path, recorder: Recorder
) -> None:
    creds = {("alice", "SCRAM-SHA-512"): scram_credential("SCRAM-SHA-512", "s3cret")}
    g = Gate(tmp_path, sasl_listener(recorder, reauth_ms=60_000, scram=creds, sleep=Delays()))
    try:
        for password in ("s3cret", "wrong"):
            g.handshake("SCRAM-SHA-512")
            client = ScramClient("SCRAM-SHA-512", "alice", password)
            first = g.authenticate(client.first())
            final = g.authenticate(client.final(first.auth_bytes))
        assert final.error_code == FAILED
        assert final.error_message == generic_failure("SCRAM-SHA-512", reauthenticating=True)
    finally:
        g.close()


def test_reauthentication_with_another_mechanism_is_refused(reauth: Gate) -> None:
    response = reauth.handshake("SCRAM-SHA-256")
    assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert reauth.conn.closed


def test_an_expired_session_closes_on_the_next_request(reauth: Gate, recorder: Recorder) -> None:
    reauth.session.expiry_ns = time.monotonic_ns() - 1
    with pytest.raises(ProtocolViolation, match="expired"):
        reauth.send(MetadataRequest(topics=[]), 12)
    assert recorder.expired == 1
    # a SaslHandshake still begins re-authentication once the last began a second ago
    # (KafkaChannel.maybeBeginServerReauthentication comes before the expiry check)
    assert reauth.handshake("PLAIN").error_code == 0


def test_an_oauthbearer_session_ends_with_its_token(tmp_path: Path, recorder: Recorder) -> None:
    jwks = Jwks(tmp_path)
    g = Gate(tmp_path, sasl_listener(recorder, reauth_ms=3_600_000, jwks=jwks))
    try:
        g.handshake("OAUTHBEARER")
        done = g.authenticate(oauth_token(jwks.token("carol", lifetime_s=120)))
        assert done.error_code == 0 and g.conn.principal == "User:carol"
        assert 110_000 < done.session_lifetime_ms <= 120_000  # the token's, not the 1 h
    finally:
        g.close()


# ---- over a socket ---------------------------------------------------------------------------


async def _serve(
    tmp_path: Path, listener: SaslListener, recorder: Recorder
) -> tuple[asyncio.AbstractServer, int, InProcessBroker]:
    broker = InProcessBroker(tmp_path / "data")
    security = ListenerSecurity(
        ListenerSpec("SASL_PLAINTEXT", "127.0.0.1", 0, "SASL_PLAINTEXT"), recorder, sasl=listener
    )

    def factory() -> Connection:
        conn = Connection(broker.dispatcher, ConnectionLimits(), ReceiveBudget(1 << 30))
        conn.security = security
        return conn

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], broker


async def _frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def test_the_failure_answer_waits_then_the_connection_closes(
    tmp_path: Path, recorder: Recorder
) -> None:
    listener = sasl_listener(recorder)
    listener.failed_delay_s = 0.3

    async def main() -> tuple[float, bytes]:
        server, port, broker = await _serve(tmp_path, listener, recorder)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                encode_request(1, 1, "c", SaslHandshakeRequest(mechanism="PLAIN")).to_bytes()
            )
            await _frame(reader)
            bad = SaslAuthenticateRequest(auth_bytes=plain_token("alice", "nope"))
            start = time.monotonic()
            # a request right behind the refused token is never dispatched
            writer.write(
                encode_request(2, 2, "c", bad).to_bytes()
                + encode_request(12, 3, "c", MetadataRequest(topics=[])).to_bytes()
            )
            answer = await asyncio.wait_for(_frame(reader), 5)
            waited = time.monotonic() - start
            rest = await asyncio.wait_for(reader.read(), 5)  # EOF: closed
            writer.close()
            return waited, answer + rest
        finally:
            server.close()
            broker.close()

    waited, answer = run(main())
    assert waited >= 0.29
    assert struct.unpack_from(">i", answer)[0] == 2  # the SaslAuthenticate's correlation id
    assert len(answer) < 200  # nothing else followed
    assert recorder.auths == [("PLAIN", False)]


def test_a_token_past_max_receive_fails_the_authentication(
    tmp_path: Path, recorder: Recorder
) -> None:
    listener = sasl_listener(recorder, max_receive=1024)

    async def main() -> bytes:
        server, port, broker = await _serve(tmp_path, listener, recorder)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                encode_request(1, 1, "c", SaslHandshakeRequest(mechanism="PLAIN")).to_bytes()
            )
            await _frame(reader)
            token = SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + b"x" * 4096)
            writer.write(encode_request(2, 2, "c", token).to_bytes())
            rest = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            return rest
        finally:
            server.close()
            broker.close()

    assert run(main()) == b""  # closed without an answer
    assert recorder.auths == [("PLAIN", False)]
