"""What TLS and SASL cost (issue 19), ratios against baselines of the same run.

One broker process (core 0) with four listeners: PLAINTEXT, SSL, SASL_SSL
(SCRAM-SHA-512) and SASL_PLAINTEXT (SCRAM-SHA-512), certificates made here
(trustme), one SCRAM user with 4096 iterations (the minimum, the hardest
case for (3)). Clients run on core 1; rounds alternate between the two sides
of each ratio and the best round of each side is kept (``bench/common.py``).

(1) The load generator (``bench/loadgen.py``, asyncio engine for both sides,
    ``--tls`` for one) replaying ~1 MB ProduceRequests of 100 B records,
    4 in flight, acks=1, over SSL against PLAINTEXT: records/s (goal
    >= 0.6x) and the broker's CPU per request of each. The broker's core
    is the limit on both sides, so the ratio cannot pass PLAINTEXT's CPU
    per request over that plus what decrypting 1 MB costs; that cost is
    measured here too, in process, through the ``ssl`` module as the loop's
    TLS transport uses it (``SSLObject`` over memory BIOs, the listener's
    context, TLS 1.3 as the clients negotiate it), and the ceiling printed.
(2) confluent-kafka producing 100 B records, acks=1, over SASL_SSL against
    PLAINTEXT (``bench_server.confluent_round``): records/s (goal >= 0.9x),
    and how busy each core was: the client's (the Python produce loop and
    librdkafka's threads) and the broker's.
(3) SCRAM-SHA-512 authentications per second: clients doing what a Kafka
    client does on a new connection (TCP connect, ApiVersions,
    SaslHandshake, two SaslAuthenticate, the salted password computed each
    time: PBKDF2, the client's part, with the server's salt and iterations)
    against the SASL_PLAINTEXT listener, against the PBKDF2 floor:
    ``hashlib.pbkdf2_hmac('sha512', ...)`` with the same 4096 iterations,
    same process, same core. The salted password is what a SCRAM
    authentication must cost; the rest (round trips, the broker's HMACs,
    connection set-up) is what this measures. Throughput (goal >= 0.8x):
    ``AUTH_THREADS`` clients on the client core at once, as a broker meets
    many clients (``pbkdf2_hmac`` releases the GIL, so one client's hashing
    overlaps another's round trips; the core still does one PBKDF2 at a
    time). Also shown: one client alone, one authentication after the other,
    whose time is the PBKDF2 plus four round trips through both processes
    (the latency a client starting up sees).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bench_server import (
    CLIENT_CPU,
    LOADGEN_WINDOW,
    RECORD_BYTES,
    REQUEST_BYTES,
    Server,
    confluent_round,
    create_topic,
    free_port,
    on_client_cpu,
    settle,
)
from bench.common import Report, note_rounds

#: what this bench imports beyond the broker's dependencies (checked by bench/__main__.py)
REQUIRES = ("trustme",)

MECHANISM = "SCRAM-SHA-512"
ITERATIONS = 4096
USER = "bench"
LOADGEN_REQUESTS = 300
LOADGEN_ROUNDS = 5
CONFLUENT_ROUNDS = 3
AUTH_ROUNDS = 5
AUTHS_PER_ROUND = 100
AUTH_THREADS = 4


class Secured:
    """The broker, its ports by listener, the CA and the SCRAM password."""

    def __init__(
        self,
        server: Server,
        ports: dict[str, int],
        ca: Path,
        password: str,
        ssl_settings: dict[str, str],
    ) -> None:
        self.server = server
        self.ports = ports
        self.ca = ca
        self.password = password
        #: the SSL listener's ssl.* keys
        self.ssl_settings = ssl_settings


@contextlib.contextmanager
def secured_broker(tmp: Path) -> Iterator[Secured]:
    from tests.integration.security_setup import Pki

    pki = Pki.make(tmp / "pki")
    ports = {n: free_port() for n in ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")}
    metrics = free_port()
    settings = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "metrics.listener": f"127.0.0.1:{metrics}",
        "log.dirs": str(tmp / "data"),
        **pki.server_overrides("SSL"),
        **pki.server_overrides("SASL_SSL"),
        "sasl.enabled.mechanisms": MECHANISM,
    }
    args = ["-m", "broker", "serve"]
    for key, value in settings.items():
        args += ["--override", f"{key}={value}"]
    server = Server(args, tmp / "broker.log")
    server.metrics_port = metrics

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/readyz", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    try:
        server.wait(ready)
        password = secrets.token_urlsafe(16)
        add_scram_user(ports["PLAINTEXT"], password)
        yield Secured(server, ports, pki.ca_pem, password, pki.server_overrides("SSL"))
    finally:
        server.stop()


def add_scram_user(port: int, password: str) -> None:
    from broker.admin.client import AdminConnection
    from broker.protocol.messages import AlterUserScramCredentialsRequest
    from broker.security.scram_store import MECHANISMS, new_salt, salted_password

    salt = new_salt()
    upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=USER,
        mechanism=MECHANISMS[MECHANISM][0],
        iterations=ITERATIONS,
        salt=salt,
        salted_password=salted_password(MECHANISM, password, salt, ITERATIONS),
    )
    with AdminConnection.connect(f"127.0.0.1:{port}") as conn:
        response = conn.call(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
    assert response.results[0].error_code == 0, response


# ---- (1) the load generator over TLS ----------------------------------------------------------


def loadgen_round(port: int, topic: str, ca: Path | None) -> dict[str, Any]:
    args = [
        sys.executable, "-m", "bench.loadgen", "--port", str(port), "--topic", topic,
        "--request-bytes", str(REQUEST_BYTES), "--record-bytes", str(RECORD_BYTES),
        "--acks", "1", "--window", str(LOADGEN_WINDOW), "--requests", str(LOADGEN_REQUESTS),
        "--warmup", "20", "--seconds", "60", "--cpu", str(CLIENT_CPU), "--engine", "asyncio",
    ]  # fmt: skip
    if ca is not None:
        args += ["--tls", "--ca-file", str(ca)]
    out = subprocess.run(args, capture_output=True, check=True, timeout=180)
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert set(result["errors"]) == {"0"}, result["errors"]
    result["rate"] = result["records"] / result["elapsed"]
    return result


def tls_produce(report: Report, b: Secured) -> None:
    sides = {"PLAINTEXT": None, "SSL": b.ca}
    create_topic(b.ports["PLAINTEXT"], "lg")
    for name, ca in sides.items():
        loadgen_round(b.ports[name], "lg", ca)  # warm-up
    rounds: dict[str, list[dict[str, Any]]] = {n: [] for n in sides}
    for i in range(LOADGEN_ROUNDS):
        for name in sorted(sides, reverse=bool(i % 2)):
            settle()
            before = b.server.cpu_seconds()
            result = loadgen_round(b.ports[name], "lg", sides[name])
            result["cpu_ms"] = (b.server.cpu_seconds() - before) * 1000 / (result["requests"] + 20)
            rounds[name].append(result)
    for rs in rounds.values():
        note_rounds((r["rate"] for r in rs), best="max")
    best = {n: max(rs, key=lambda r: r["rate"]) for n, rs in rounds.items()}
    cpu = {n: min(r["cpu_ms"] for r in rs) for n, rs in rounds.items()}
    for name in sides:
        report.value(f"(1) load generator, 1 MB requests, {name}", best[name]["rate"], "records/s")
        report.value(f"(1) broker CPU per 1 MB request, {name}", cpu[name], "ms")
        report.value(f"(1) p99 latency, {name}", best[name]["p99_ms"], "ms")
    decrypt = decrypt_ms(b)
    report.value("(1) decrypting 1 MB of TLS 1.3 records in process (ssl.SSLObject)", decrypt,
                 "ms")  # fmt: skip
    report.ratio(
        "(1) ceiling of TLS / PLAINTEXT: CPU per request PLAINTEXT / (that + decrypting)",
        cpu["PLAINTEXT"],
        cpu["PLAINTEXT"] + decrypt,
    )
    r = best["SSL"]["rate"] / best["PLAINTEXT"]["rate"]
    report.ratio(
        "(1) produce over TLS / PLAINTEXT (load generator, 1 MB)",
        best["SSL"]["rate"],
        best["PLAINTEXT"]["rate"],
        goal=">= 0.6x",
        ok=r >= 0.6,
    )
    report.ratio(
        "(1) broker CPU per request, PLAINTEXT / TLS (what TLS costs the broker)",
        cpu["PLAINTEXT"],
        cpu["SSL"],
    )


def decrypt_ms(b: Secured) -> float:
    """Least milliseconds to decrypt 1 MB sent by a TLS 1.3 client, through
    ``SSLObject`` and memory BIOs with the broker's own context."""
    import ssl

    from broker.config import BrokerConfig
    from broker.security.tls import TlsSettings, build_context

    props = {k.removeprefix("listener.name.ssl."): v for k, v in b.ssl_settings.items()}
    server = build_context(TlsSettings.from_config(BrokerConfig.from_properties(props), "SSL"))
    client = ssl.create_default_context(cafile=str(b.ca))
    client.check_hostname = False
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(4):
        for side in (c, s):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        s_in.write(c_out.read())
        c_in.write(s_out.read())
    payload = secrets.token_bytes(REQUEST_BYTES)
    buf = bytearray(REQUEST_BYTES)
    view = memoryview(buf)
    best = float("inf")
    with on_client_cpu():
        for _ in range(30):
            c.write(payload)
            wire = c_out.read()
            start = time.perf_counter()
            s_in.write(wire)
            done = 0
            while done < REQUEST_BYTES:
                done += s.read(REQUEST_BYTES - done, view[done:])
            best = min(best, time.perf_counter() - start)
    assert buf == payload
    return best * 1e3


# ---- (2) confluent-kafka over SASL_SSL ---------------------------------------------------------


def confluent_sasl_ssl(report: Report, b: Secured) -> None:
    sasl_ssl = {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(b.ca),
        "ssl.endpoint.identification.algorithm": "none",
        "sasl.mechanism": MECHANISM,
        "sasl.username": USER,
        "sasl.password": b.password,
    }
    sides = {"PLAINTEXT": {}, "SASL_SSL": sasl_ssl}
    create_topic(b.ports["PLAINTEXT"], "c1")
    rounds: dict[str, list[dict[str, float]]] = {n: [] for n in sides}
    with on_client_cpu():
        for i in range(CONFLUENT_ROUNDS):
            for name in sorted(sides, reverse=bool(i % 2)):
                settle()
                wall, client, broker = (
                    time.perf_counter(),
                    time.process_time(),
                    b.server.cpu_seconds(),
                )
                result = confluent_round(b.ports[name], "c1", 1, sides[name])
                wall = time.perf_counter() - wall
                result["client_busy"] = (time.process_time() - client) / wall * 100
                result["broker_busy"] = (b.server.cpu_seconds() - broker) / wall * 100
                rounds[name].append(result)
    for rs in rounds.values():
        note_rounds((r["rate"] for r in rs), best="max")
    best = {n: max(rs, key=lambda r: r["rate"]) for n, rs in rounds.items()}
    for name in sides:
        report.value(f"(2) confluent-kafka acks=1, {name}", best[name]["rate"], "records/s")
        report.value(f"(2) confluent-kafka p99 latency, {name}", best[name]["p99_ms"], "ms")
        report.value(f"(2) client core busy, {name}", best[name]["client_busy"], "%")
        report.value(f"(2) broker core busy, {name}", best[name]["broker_busy"], "%")
        report.value(f"(2) client CPU per record, {name}",
                     best[name]["client_busy"] / 100 / best[name]["rate"] * 1e6, "us")  # fmt: skip
    r = best["SASL_SSL"]["rate"] / best["PLAINTEXT"]["rate"]
    report.ratio(
        "(2) confluent-kafka end to end, SASL_SSL / PLAINTEXT",
        best["SASL_SSL"]["rate"],
        best["PLAINTEXT"]["rate"],
        goal=">= 0.9x",
        ok=r >= 0.9,
    )


# ---- (3) SCRAM authentications against the PBKDF2 floor ----------------------------------------


def authentications(port: int, password: str, count: int, threads: int = 1) -> float:
    """Seconds per authentication, ``threads`` clients at once, a new connection each."""
    from broker.admin.client import AdminConnection
    from broker.admin.client_security import ClientSecurity

    security = ClientSecurity("SASL_PLAINTEXT", None, MECHANISM, USER, password)

    def client(n: int) -> None:
        for _ in range(n):
            with AdminConnection.connect(f"127.0.0.1:{port}", 10.0, security):
                pass

    workers = [threading.Thread(target=client, args=(count // threads,)) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return (time.perf_counter() - start) / (count // threads * threads)


def pbkdf2_floor(count: int) -> float:
    salt = secrets.token_bytes(32)
    start = time.perf_counter()
    for i in range(count):
        hashlib.pbkdf2_hmac("sha512", b"password-%d" % i, salt, ITERATIONS)
    return (time.perf_counter() - start) / count


def scram_rate(report: Report, b: Secured) -> None:
    port = b.ports["SASL_PLAINTEXT"]
    failures_before = auth_failures(b)
    best = {"floor": float("inf"), "alone": float("inf"), "clients": float("inf")}
    runs = {
        "floor": lambda: pbkdf2_floor(AUTHS_PER_ROUND),
        "alone": lambda: authentications(port, b.password, AUTHS_PER_ROUND),
        "clients": lambda: authentications(port, b.password, AUTHS_PER_ROUND, AUTH_THREADS),
    }
    with on_client_cpu():
        authentications(port, b.password, 20, AUTH_THREADS)  # warm-up
        for i in range(AUTH_ROUNDS):
            for side in sorted(runs, reverse=bool(i % 2)):
                cpu = b.server.cpu_seconds()
                seconds = runs[side]()
                best[side] = min(best[side], seconds)
                if side == "clients":
                    broker_cpu = (b.server.cpu_seconds() - cpu) / AUTHS_PER_ROUND
    assert auth_failures(b) == failures_before, "an authentication failed"
    floor, alone, clients = best["floor"], best["alone"], best["clients"]
    report.value(f"(3) PBKDF2-HMAC-SHA512 floor, {ITERATIONS} iterations", 1 / floor, "hashes/s")
    report.value(f"(3) {MECHANISM} authentications, {AUTH_THREADS} clients", 1 / clients, "auth/s")
    report.value(f"(3) {MECHANISM} authentications, one client alone", 1 / alone, "auth/s")
    report.value("(3) one client alone: time per authentication beyond the PBKDF2",
                 (alone - floor) * 1e3, "ms")  # fmt: skip
    report.value("(3) broker CPU per authentication (new connection)", broker_cpu * 1e3, "ms")
    report.ratio(
        f"(3) {MECHANISM} authentications/s ({AUTH_THREADS} clients) / PBKDF2 floor",
        1 / clients,
        1 / floor,
        goal=">= 0.8x",
        ok=floor / clients >= 0.8,
    )
    report.ratio(f"(3) {MECHANISM} authentications/s (one client alone) / PBKDF2 floor",
                 1 / alone, 1 / floor)  # fmt: skip


def auth_failures(b: Secured) -> float:
    url = f"http://127.0.0.1:{b.server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("kafka_network_authentications_total{") and 'result="failure"' in line
    )


def main(report: Report) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-security-"))
    try:
        with secured_broker(tmp) as b:
            tls_produce(report, b)
            confluent_sasl_ssl(report, b)
            scram_rate(report, b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
