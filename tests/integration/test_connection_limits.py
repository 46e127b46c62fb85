"""No client can stall or bloat the broker: memory and connection limits, against a
broker process (issue 18).

* a client that pipelines small requests with large answers and never reads
  them: the broker stops at ``connection.max.inflight.bytes`` (its memory stays
  near the bound) and serves other clients meanwhile
* partial frames on many connections: each costs its first 16 KiB buffer, not
  the size its prefix announces, and frames half received on many connections
  stay within ``queued.max.request.bytes`` (+ one frame)
* idle connections cost a few KB each
* ``max.connections``, ``max.connections.per.ip`` and its overrides refuse the
  connection one too many at accept, and count it
* ``connections.max.idle.ms`` closes idle connections (not one waiting for a
  long poll); ``connection.frame.timeout.ms`` closes a slowloris client

Memory is the broker's VmRSS (``/proc/<pid>/status``); every socket is closed
by the test that opened it.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.protocol import encode_request
from broker.protocol.messages import ApiVersionsRequest
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.netutil import produce
from tests.integration.wire import (
    RawClient,
    create_topics_on_disk,
    fetch_request,
    metric_value,
    wait_for,
)

pytestmark = pytest.mark.integration

MiB = 1 << 20
_SIZE = struct.Struct(">i")


def rss(broker: BrokerProcess) -> int:
    assert broker.proc is not None
    status = Path(f"/proc/{broker.proc.pid}/status").read_text()
    (line,) = [x for x in status.splitlines() if x.startswith("VmRSS:")]
    return int(line.split()[1]) * 1024


def metric(broker: BrokerProcess, name: str, **labels: str) -> float:
    return metric_value(broker.metrics(), name, **labels)


@contextlib.contextmanager
def descriptors(n: int) -> Iterator[None]:
    """Room for ``n`` more open files in this process and the brokers it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n + 1024))
    if want < n + 256:
        pytest.fail(f"RLIMIT_NOFILE hard limit {hard} is too low for {n} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


#: connections opened before waiting for the broker to accept them: a client
#: outpacing accept overflows the listen backlog (511), and the kernel then drops
#: SYNs that are retried a second later
CONNECT_BATCH = 256


@contextlib.contextmanager
def sockets(n: int, broker: BrokerProcess, source: str = HOST) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    before = metric(broker, "kafka_network_connections") if n > CONNECT_BATCH else 0
    try:
        for i in range(n):
            s = socket.socket()
            opened.append(s)
            s.bind((source, 0))
            s.connect((HOST, broker.port))
            if n > CONNECT_BATCH and (i + 1) % CONNECT_BATCH == 0:
                target = before + i + 1
                wait_for(
                    lambda: metric(broker, "kafka_network_connections") >= target,  # noqa: B023
                    10,
                    "the broker to accept",
                )
        yield opened
    finally:
        for s in opened:
            s.close()


def api_versions_frame() -> bytes:
    return encode_request(0, 7, "limits", ApiVersionsRequest()).to_bytes()


def answered(s: socket.socket) -> bool:
    """An ApiVersions round trip on ``s``; False when the broker closed it."""
    s.settimeout(5)
    try:
        s.sendall(api_versions_frame())
        head = s.recv(4)
    except (ConnectionResetError, BrokenPipeError):
        return False
    return len(head) == 4


def closed_by_broker(s: socket.socket, timeout: float = 5.0) -> bool:
    s.settimeout(timeout)
    try:
        while chunk := s.recv(65536):
            del chunk
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


def settled(read: Callable[[], float], within: float = 256 * 1024) -> float:
    """``read()`` once two reads 0.2 s apart differ by less than ``within``
    (the broker finished what the test started), at most 5 s."""
    last = read()
    for _ in range(25):
        time.sleep(0.2)
        now = read()
        if abs(now - last) < within:
            return now
        last = now
    return last


def settled_rss(broker: BrokerProcess) -> int:
    return int(settled(lambda: rss(broker)))


def test_a_client_that_never_reads_its_answers_holds_only_its_bound(tmp_path: Path) -> None:
    """300 pipelined Fetch v3 requests of ~80 bytes, each answered with ~1 MB of
    down-converted records (built in memory), never read: before the bound
    counted answers the broker handled almost all of them and held their
    answers. Now it stops once the answers it holds reach the bound."""
    data = tmp_path / "data"
    create_topics_on_disk(data, {"big": (1, {})})
    bound = 4 * MiB
    with BrokerProcess(data, connection_max_inflight_bytes=str(bound)) as broker:
        with RawClient(broker.port) as c:
            for _ in range(10):  # 1 MB of records in 100 KB batches
                produce(c, "big", [bytes([i]) * 10_000 for i in range(10)])
        base = settled_rss(broker)
        request = fetch_request("big", 0, 0, max_bytes=MiB)
        frames = b"".join(
            encode_request(3, i, "never-reads", request).to_bytes() for i in range(300)
        )
        with socket.socket() as hog:
            hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            hog.connect((HOST, broker.port))
            hog.sendall(frames)
            handled = settled(
                lambda: metric(broker, "kafka_requests_total", request="Fetch", version="3")
            )
            grown = settled_rss(broker) - base
            # the kernel's socket buffers took a few answers, then the bound and one more
            assert handled < 40, handled
            assert grown < bound + 40 * MiB, grown / MiB
            assert metric(broker, "kafka_network_connections_paused") == 1
            # the broker serves others meanwhile
            with RawClient(broker.port) as other:
                produce(other, "big", [b"still served"])
            time.sleep(0.3)
            assert metric(broker, "kafka_requests_total", request="Fetch", version="3") == handled
    log = broker.log()
    assert "Traceback" not in log, log


def test_partial_frames_cost_what_arrived_not_what_they_announce(tmp_path: Path) -> None:
    """1000 connections each send a size prefix announcing 104,857,000 bytes and
    8 header bytes (12 bytes): 16 KiB each, not the 2 MiB buffer each got before
    (+1.7 GB RSS for 1000 of them)."""
    clients = 1000
    with descriptors(2 * clients), BrokerProcess(tmp_path / "data") as broker:
        base = settled_rss(broker)
        head = _SIZE.pack(104_857_000) + struct.pack(">hhi", 0, 9, 1)
        with sockets(clients, broker) as socks:
            for s in socks:
                s.sendall(head)
            grown = settled_rss(broker) - base
            assert grown < clients * 48 * 1024, grown / clients
            wait_for(
                lambda: metric(broker, "kafka_network_receive_buffer_bytes") == clients * 16384,
                10,
                "every connection to hold its first buffer",
            )
            with RawClient(broker.port) as other:  # the broker still serves
                other.call(ApiVersionsRequest(), 0)


def test_frames_half_received_on_many_connections_stay_within_the_budget(
    tmp_path: Path,
) -> None:
    """200 connections each send 400 KB of an 8 MiB frame (80 MB in all) to a
    broker whose receive budget is 8 MiB: it holds at most the budget, one frame
    beyond it (the overdraft that keeps frames moving) and a first buffer per
    connection; the rest waits in the kernel. A client with small requests is
    served all along."""
    clients, sent, frame_size, budget = 200, 400 * 1024, 8 * MiB, 8 * MiB
    with (
        descriptors(2 * clients),
        BrokerProcess(
            tmp_path / "data",
            socket_request_max_bytes=str(frame_size),
            queued_max_request_bytes=str(budget),
        ) as broker,
    ):
        base = settled_rss(broker)
        body = b"\x00" * sent
        with sockets(clients, broker) as socks:
            for s in socks:
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.send(_SIZE.pack(frame_size) + body)
            time.sleep(1.0)
            grown = settled_rss(broker) - base
            assert grown < budget + frame_size + 24 * MiB, grown / MiB
            held = metric(broker, "kafka_network_receive_buffer_bytes")
            assert held <= budget + frame_size + 4 + clients * 16384, held / MiB
            assert metric(broker, "kafka_network_connections_paused") > 0
            with RawClient(broker.port) as other:
                other.call(ApiVersionsRequest(), 0)


def test_idle_connections_cost_a_few_kilobytes(tmp_path: Path) -> None:
    clients = 2000
    with descriptors(2 * clients), BrokerProcess(tmp_path / "data") as broker:
        base = settled_rss(broker)
        with sockets(clients, broker):
            wait_for(
                lambda: metric(broker, "kafka_network_connections") == clients,
                20,
                "every connection accepted",
            )
            per_connection = (settled_rss(broker) - base) / clients
            assert per_connection < 8 * 1024, per_connection
            assert metric(broker, "kafka_network_receive_buffer_bytes") == 0


def test_connection_limits_refuse_the_one_too_many_at_accept(tmp_path: Path) -> None:
    with BrokerProcess(
        tmp_path / "data",
        max_connections="4",
        max_connections_per_ip="2",
        max_connections_per_ip_overrides="127.0.0.2:1,127.0.0.3:5",
    ) as broker:
        with (
            sockets(2, broker, "127.0.0.1") as local,
            sockets(1, broker, "127.0.0.2") as second,
        ):
            assert all(answered(s) for s in local + second)
            with sockets(1, broker, "127.0.0.1") as (extra,):
                assert closed_by_broker(extra)  # max.connections.per.ip
            with sockets(1, broker, "127.0.0.2") as (extra,):
                assert closed_by_broker(extra)  # its override: 1
            with sockets(1, broker, "127.0.0.3") as (fourth,):
                assert answered(fourth)  # override 5, and the fourth connection
                with sockets(1, broker, "127.0.0.3") as (fifth,):
                    assert closed_by_broker(fifth)  # max.connections
            refused = "kafka_network_connections_refused_total"
            assert metric(broker, refused, reason="max_connections_per_ip") == 2
            assert metric(broker, refused, reason="max_connections") == 1
        wait_for(lambda: metric(broker, "kafka_network_connections") == 0, 5, "the closes counted")
        with sockets(1, broker, "127.0.0.1") as (again,):
            assert answered(again)
    assert "refused a connection from 127.0.0.1" in broker.log()


def test_idle_connections_are_closed_after_connections_max_idle_ms(tmp_path: Path) -> None:
    data = tmp_path / "data"
    create_topics_on_disk(data, {"t": (1, {})})
    with (
        BrokerProcess(data, connections_max_idle_ms="400") as broker,
        RawClient(broker.port) as idle,
        RawClient(broker.port) as polling,
    ):
        idle.call(ApiVersionsRequest(), 0)
        started = time.monotonic()
        # a long poll waits 1.5 s for data that never comes: a request in flight
        polling.call(fetch_request("t", 0, 0, max_wait_ms=1500), 11)
        assert time.monotonic() - started >= 1.4
        assert idle.wait_closed(2)
        assert polling.wait_closed(2)  # idle itself once answered
        expired = "kafka_network_connections_expired_total"
        assert metric(broker, expired, reason="idle") == 2


def test_a_slowloris_client_is_closed_after_the_frame_timeout(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", connection_frame_timeout_ms="500") as broker:
        frame = api_versions_frame()
        with socket.create_connection((HOST, broker.port)) as slow, RawClient(broker.port) as ok:
            started = time.monotonic()
            closed = False
            for byte in frame[:-1]:  # one byte every 100 ms: the frame never completes in time
                try:
                    slow.sendall(bytes([byte]))
                except (ConnectionResetError, BrokenPipeError):
                    closed = True
                    break
                time.sleep(0.1)
                ok.call(ApiVersionsRequest(), 0)  # another client is unaffected
                if time.monotonic() - started > 3:
                    break
            assert closed or closed_by_broker(slow, 1.0)
            assert 0.5 <= time.monotonic() - started < 2.5
            expired = "kafka_network_connections_expired_total"
            assert metric(broker, expired, reason="frame_timeout") == 1
        assert "connection.frame.timeout.ms (500)" in broker.log()
