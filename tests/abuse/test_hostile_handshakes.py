"""Hostile TLS and SASL handshakes while a good client produces (issue 19).

The broker listens on PLAINTEXT (the good producer of ``good_producer.py``),
SSL, SSL with TLS 1.3 only, SASL_PLAINTEXT and SASL_SSL (PLAIN), with
``connection.frame.timeout.ms`` 1 s (also the TLS handshake timeout) and
``connections.max.idle.ms`` 3 s. Each abuse runs while the good producer
produces; the broker must close every hostile connection, count it, and
keep the good producer's p99 and longest wait bounded:

* garbage, an HTTP request or a plaintext Kafka request instead of a ClientHello;
* clients that stop mid-handshake: half a ClientHello, half a SaslAuthenticate
  frame, nothing after SaslHandshake;
* SASL tokens of 8 MB before authentication (refused on their size prefix);
* requests other than ApiVersions before authenticating, and while
  authenticating (Kafka's ILLEGAL_SASL_STATE answer after the failure delay);
* ``openssl s_client``: TLS 1.2 and 1.3 offered, 1.0 and 1.1 refused, 1.2
  refused where only 1.3 is enabled.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest

from broker.protocol import decode_response, encode_request
from broker.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from broker.records import scan
from tests.abuse.good_producer import GoodProducer
from tests.integration.harness import HOST, BrokerProcess, free_port
from tests.integration.security_setup import Pki
from tests.integration.test_connection_limits import closed_by_broker, descriptors, metric
from tests.integration.wire import create_topics_on_disk

COMPILED = scan.IMPLEMENTATION == "compiled"
P99_BOUND = 0.02 if COMPILED else 0.1
MAX_BOUND = 0.5 if COMPILED else 2.0
MiB = 1 << 20
_SIZE = struct.Struct(">i")
FAILURES = "kafka_network_tls_handshake_failures_total"
AUTHS = "kafka_network_authentications_total"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' user_good="good-pass-for-this-test";'
)


class Hostile:
    def __init__(self, broker: BrokerProcess, pki: Pki, ports: dict[str, int]) -> None:
        self.broker = broker
        self.pki = pki
        self.ports = ports

    def metric(self, name: str, **labels: str) -> float:
        return metric(self.broker, name, **labels)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    root = tmp_path_factory.mktemp("handshakes")
    pki = Pki.make(root / "pki")
    data = root / "data"
    create_topics_on_disk(data, {"good": (1, {})})
    broker = BrokerProcess(data)
    ports = {"PLAINTEXT": broker.port}
    ports.update({n: free_port() for n in ("SSL", "TLS13", "SASL_PLAINTEXT", "SASL_SSL")})
    broker.overrides.update(
        {
            "listeners": ",".join(f"{n}://{HOST}:{p}" for n, p in ports.items()),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SSL:SSL,TLS13:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                "SASL_SSL:SASL_SSL"
            ),
            **pki.server_overrides("SSL"),
            **pki.server_overrides("TLS13"),
            **pki.server_overrides("SASL_SSL"),
            "listener.name.tls13.ssl.enabled.protocols": "TLSv1.3",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "connection.frame.timeout.ms": "1000",
            "connections.max.idle.ms": "3000",
        }
    )
    with descriptors(4000):
        broker.start()
        yield Hostile(broker, pki, ports)
        assert broker.stop() == 0, broker.log()


def _check(good: GoodProducer) -> None:
    good.check()
    assert good.percentile(0.99) < P99_BOUND, good.percentile(0.99)
    assert max(good.latencies) < MAX_BOUND, max(good.latencies)


@contextlib.contextmanager
def connections(n: int, port: int) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.create_connection((HOST, port), timeout=10)
            opened.append(s)
        yield opened
    finally:
        for s in opened:
            s.close()


def client_hello() -> bytes:
    """The first flight of a real TLS client (Python's ssl, through memory BIOs)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def frame(request: object, version: int, correlation: int = 1) -> bytes:
    return encode_request(version, correlation, "hostile", request).to_bytes()


def wait_for(read: object, target: float, within: float = 10.0) -> float:
    deadline = time.monotonic() + within
    value = read()  # type: ignore[operator]
    while value < target and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()  # type: ignore[operator]
    return float(value)


def all_closed(socks: list[socket.socket], within: float) -> bool:
    deadline = time.monotonic() + within
    return all(closed_by_broker(s, max(0.1, deadline - time.monotonic())) for s in socks)


def test_garbage_instead_of_a_client_hello(hostile: Hostile) -> None:
    port = hostile.ports["SSL"]
    before = hostile.metric(FAILURES, listener="SSL", reason="protocol")
    # random bytes behind two that make no TLS record header: with a version byte of 3
    # (or a first byte from 0x80 up, an SSLv2 header) OpenSSL may wait for the length
    # the header announces; that client is then aborted at the handshake timeout and
    # counted as incomplete (test_clients_that_stop_mid_handshake), not as protocol
    garbage = (
        frame(ApiVersionsRequest(), 3),
        b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n",
        b"\x00\x00" + os.urandom(4094),
        b"\x7f\x7f" + os.urandom(4094),
    )
    with GoodProducer(hostile.ports["PLAINTEXT"]) as good, connections(200, port) as socks:
        for i, s in enumerate(socks):
            s.sendall(garbage[i % len(garbage)])
        assert all_closed(socks, 10)
        after = wait_for(lambda: hostile.metric(FAILURES, listener="SSL", reason="protocol"),
                         before + 200)  # fmt: skip
    _check(good)
    assert after - before == 200


def test_clients_that_stop_mid_handshake(hostile: Hostile) -> None:
    """Half a ClientHello: aborted at the handshake timeout (1 s), counted as
    incomplete. Half a SaslAuthenticate frame: closed at connection.frame.timeout.ms.
    Nothing after SaslHandshake: closed at connections.max.idle.ms (3 s)."""
    hello = client_hello()
    before = hostile.metric(FAILURES, listener="SSL", reason="incomplete")
    expired = "kafka_network_connections_expired_total"
    frames_before = hostile.metric(expired, reason="frame_timeout")
    idle_before = hostile.metric(expired, reason="idle")
    handshake = frame(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    token = frame(SaslAuthenticateRequest(auth_bytes=b"\0good\0x"), 2, 2)
    with (
        GoodProducer(hostile.ports["PLAINTEXT"]) as good,
        connections(200, hostile.ports["SSL"]) as tls,
        connections(100, hostile.ports["SASL_PLAINTEXT"]) as half_frames,
        connections(50, hostile.ports["SASL_PLAINTEXT"]) as quiet,
    ):
        for s in tls:
            s.sendall(hello[: len(hello) // 2])
        for s in half_frames:
            s.sendall(handshake + token[: len(token) // 2])
        for s in quiet:
            s.sendall(handshake)
        start = time.monotonic()
        assert all_closed(tls + half_frames, 6)
        assert all_closed(quiet, 8)
        took = time.monotonic() - start
        incomplete = wait_for(
            lambda: hostile.metric(FAILURES, listener="SSL", reason="incomplete"), before + 200
        )
    _check(good)
    assert 2.5 < took < 8, took  # the idle ones lasted their 3 s
    assert incomplete - before == 200
    assert hostile.metric(expired, reason="frame_timeout") - frames_before == 100
    assert hostile.metric(expired, reason="idle") - idle_before == 50


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_huge_sasl_tokens_are_refused_on_their_size(hostile: Hostile, listener: str) -> None:
    """SaslAuthenticate frames of 8 MB (sasl.server.max.receive.size is 512 KiB):
    closed once the size prefix arrives, never buffered, counted as failures."""
    clients = 20 if listener == "SASL_PLAINTEXT" else 5
    before = hostile.metric(AUTHS, listener=listener, mechanism="PLAIN", result="failure")
    token = frame(SaslAuthenticateRequest(auth_bytes=b"\0good\0" + b"x" * (8 * MiB)), 2, 2)
    tls = ssl.create_default_context(cafile=str(hostile.pki.ca_pem))
    tls.check_hostname = False
    with GoodProducer(hostile.ports["PLAINTEXT"]) as good:
        for _ in range(clients):
            raw = socket.create_connection((HOST, hostile.ports[listener]), timeout=10)
            s = tls.wrap_socket(raw) if listener == "SASL_SSL" else raw
            with s:
                s.sendall(frame(SaslHandshakeRequest(mechanism="PLAIN"), 1))
                (size,) = _SIZE.unpack(s.recv(4))
                s.recv(size)
                sent = 0
                with contextlib.suppress(OSError):
                    for i in range(0, len(token), 64 * 1024):
                        sent += s.send(token[i : i + 64 * 1024])
                assert closed_by_broker(s, 5)
                assert sent < len(token)  # the broker stopped reading long before
        after = wait_for(
            lambda: hostile.metric(AUTHS, listener=listener, mechanism="PLAIN", result="failure"),
            before + clients,
        )
    _check(good)
    assert after - before == clients


def test_requests_before_and_during_authentication(hostile: Hostile) -> None:
    """Metadata first: closed at once, no answer (Kafka's InvalidRequestException).
    ApiVersions while a token is expected: its error response (ILLEGAL_SASL_STATE)
    after connection.failed.authentication.delay.ms, then the close."""
    port = hostile.ports["SASL_PLAINTEXT"]
    with GoodProducer(hostile.ports["PLAINTEXT"]) as good:
        with connections(100, port) as early:
            for s in early:
                s.sendall(frame(MetadataRequest(topics=None), 12))
            for s in early:
                s.settimeout(5)
                assert s.recv(4) == b""  # closed without an answer
        with connections(50, port) as during:
            for s in during:
                s.sendall(frame(SaslHandshakeRequest(mechanism="PLAIN"), 1)
                          + frame(ApiVersionsRequest(), 3, 2))  # fmt: skip
            start = time.monotonic()
            for s in during:
                s.settimeout(5)
                for correlation in (1, 2):
                    (size,) = _SIZE.unpack(_exact(s, 4))
                    body = _exact(s, size)
                    if correlation == 2:
                        _, response = decode_response(18, 3, body)
                        assert response.error_code == 34  # ILLEGAL_SASL_STATE
                assert closed_by_broker(s, 5)
            assert time.monotonic() - start >= 0.09  # the failure delay, 100 ms
    _check(good)


def _exact(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "closed early"
        out += chunk
    return out


# ---- openssl s_client ---------------------------------------------------------------------------


def s_client(hostile: Hostile, listener: str, *options: str) -> tuple[int, str]:
    done = subprocess.run(
        ["openssl", "s_client", "-connect", f"{HOST}:{hostile.ports[listener]}",
         "-CAfile", str(hostile.pki.ca_pem), "-servername", "localhost",
         # the client's own floor would refuse TLS 1.0/1.1 before the broker does
         "-cipher", "DEFAULT@SECLEVEL=0", *options],
        input=b"", capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


@pytest.mark.parametrize(
    ("listener", "option", "version"),
    [("SSL", "-tls1_2", "TLSv1.2"), ("SSL", "-tls1_3", "TLSv1.3"), ("TLS13", "-tls1_3", "TLSv1.3")],
)
def test_openssl_negotiates_the_enabled_versions(
    hostile: Hostile, listener: str, option: str, version: str
) -> None:
    code, out = s_client(hostile, listener, option)
    assert code == 0, out
    assert f"New, {version}, Cipher is" in out and "Verify return code: 0 (ok)" in out


@pytest.mark.parametrize(
    ("listener", "option"),
    [("SSL", "-tls1"), ("SSL", "-tls1_1"), ("TLS13", "-tls1_2"), ("SASL_SSL", "-tls1_1")],
)
def test_openssl_older_versions_are_refused(hostile: Hostile, listener: str, option: str) -> None:
    before = hostile.metric(FAILURES, listener=listener, reason="protocol")
    code, out = s_client(hostile, listener, option)
    assert code != 0
    assert "Cipher is (NONE)" in out and "no peer certificate available" in out, out
    after = wait_for(lambda: hostile.metric(FAILURES, listener=listener, reason="protocol"),
                     before + 1)  # fmt: skip
    assert after == before + 1


def test_the_broker_carried_on(hostile: Hostile) -> None:
    """After all of the above: a TLS client and a SASL client still get served."""
    tls = ssl.create_default_context(cafile=str(hostile.pki.ca_pem))
    tls.check_hostname = False
    with tls.wrap_socket(socket.create_connection((HOST, hostile.ports["SASL_SSL"]), 10)) as s:
        s.sendall(frame(SaslHandshakeRequest(mechanism="PLAIN"), 1))
        _exact(s, _SIZE.unpack(_exact(s, 4))[0])
        s.sendall(
            frame(SaslAuthenticateRequest(auth_bytes=b"\0good\0good-pass-for-this-test"), 2, 2)
        )
        _, done = decode_response(36, 2, _exact(s, _SIZE.unpack(_exact(s, 4))[0]))
        assert done.error_code == 0
        s.sendall(frame(MetadataRequest(topics=None), 12, 3))
        _, meta = decode_response(3, 12, _exact(s, _SIZE.unpack(_exact(s, 4))[0]))
        assert [t.name for t in meta.topics] == ["good"]
