"""Connection-level abuse while a good client produces (issue 18).

``tests/integration/test_connection_limits.py`` pushes each connection bound
on its own; here each abuse runs while :class:`GoodProducer` keeps producing
on its own connection, and the figures are its latency and the broker's
memory:

* a client that pipelines requests with large answers and never reads them;
* 2,000 connections each holding the start of a frame;
* a flood of connections past ``max.connections``;
* slowloris clients trickling frames, closed after ``connection.frame.timeout.ms``.

Bounds are generous (CI machines are shared); ``bench/bench_abuse.py`` prints
the figures against the good producer alone.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.protocol import encode_request
from broker.records import scan
from tests.abuse.good_producer import GoodProducer
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.netutil import produce
from tests.integration.test_connection_limits import (
    descriptors,
    metric,
    settled,
    settled_rss,
    sockets,
)
from tests.integration.wire import RawClient, create_topics_on_disk, fetch_request

MiB = 1 << 20
COMPILED = scan.IMPLEMENTATION == "compiled"
P99_BOUND = 0.02 if COMPILED else 0.1
MAX_BOUND = 0.5 if COMPILED else 2.0
_SIZE = struct.Struct(">i")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data: Path = tmp_path_factory.mktemp("connabuse") / "data"
    create_topics_on_disk(data, {"good": (1, {}), "big": (1, {})})
    with descriptors(6000):
        process = BrokerProcess(
            data,
            connection_max_inflight_bytes=str(4 * MiB),
            max_connections="2500",
            connection_frame_timeout_ms="1000",
        ).start()
        with RawClient(process.port) as c:
            for _ in range(10):  # 1 MB of records for the fetches below
                produce(c, "big", [bytes([i]) * 10_000 for i in range(10)])
        yield process
        assert process.stop() == 0, process.log()


def _check(good: GoodProducer) -> None:
    good.check()
    assert good.percentile(0.99) < P99_BOUND, good.percentile(0.99)
    assert max(good.measured) < MAX_BOUND, max(good.measured)


def test_a_never_reading_client_costs_others_nothing(broker):
    base = settled_rss(broker)
    frames = b"".join(
        encode_request(3, i, "never-reads", fetch_request("big", 0, 0, max_bytes=MiB)).to_bytes()
        for i in range(300)
    )
    with GoodProducer(broker.port) as good, socket.socket() as hog:
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hog.connect((HOST, broker.port))
        hog.sendall(frames)
        time.sleep(1.0)
        grown = settled_rss(broker) - base
    _check(good)
    assert grown < 4 * MiB + 40 * MiB, grown / MiB


def test_two_thousand_partial_frames_cost_their_bytes(broker):
    clients = 2000
    base = settled_rss(broker)
    head = _SIZE.pack(104_857_000) + struct.pack(">hhi", 0, 9, 1)
    with GoodProducer(broker.port) as good, sockets(clients, broker) as socks:
        for s in socks:
            s.sendall(head)
        time.sleep(0.5)
        grown = settled_rss(broker) - base
    _check(good)
    assert grown < clients * 48 * 1024, grown / clients


def test_a_connection_flood_is_refused_past_max_connections(broker):
    refused_before = metric(broker, "kafka_network_connections_refused_total",
                            reason="max_connections")  # fmt: skip
    with GoodProducer(broker.port) as good, contextlib.ExitStack() as stack:
        opened = []
        for _ in range(3000):
            s = stack.enter_context(socket.socket())
            with contextlib.suppress(OSError):
                s.connect((HOST, broker.port))
                opened.append(s)
        wait = time.monotonic() + 10
        while time.monotonic() < wait:
            refused = metric(broker, "kafka_network_connections_refused_total",
                             reason="max_connections")  # fmt: skip
            if refused - refused_before >= 3000 - 2500:
                break
            time.sleep(0.1)
    _check(good)
    assert refused - refused_before >= 3000 - 2500 - 2  # the good client holds one


def test_slowloris_clients_are_closed_and_others_served(broker):
    """100 clients each send a frame's size prefix, then a byte every 100 ms:
    each is closed once its frame is older than connection.frame.timeout.ms
    (1 s here), while the good producer goes on."""
    name = "kafka_network_connections_expired_total"
    before = metric(broker, name, reason="frame_timeout")
    with GoodProducer(broker.port) as good, sockets(100, broker) as socks:
        for s in socks:
            s.sendall(_SIZE.pack(100))
            s.setblocking(False)
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(b"x")
            time.sleep(0.1)
        expired = settled(lambda: metric(broker, name, reason="frame_timeout"), within=0.5)
    _check(good)
    assert expired - before == 100
