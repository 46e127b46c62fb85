"""What one abusive client costs everyone else (``python -m bench abuse``, issue 18).

The broker runs pinned to core 0 (``taskset``; its offload threads too, at a
lower priority), this process on core 1. A well-behaved producer
(``tests/abuse/good_producer.py``: one connection, one ~1 KB acks=1 request
at a time) is timed alone, then while another connection sends, back to back,
the worst request of each kind (``tests/abuse/payloads.py``):

(1) latency of the well-behaved producer: p99 under each attack against its
    p99 alone, same run (goal: at most 2x), and the longest any of its
    requests waited (goal: no request waits more than 100 ms behind
    another client's);
(2) the broker's resident memory (VmRSS, and the peak VmHWM) under each
    attack, against the idle broker;
(3) the broker's memory under 2,000 connections each holding the start of a
    frame (a size prefix announcing 100 MB and 8 header bytes), and under a
    client that pipelines 300 Fetches with 1 MB answers and never reads them
    (goal: what grows stays within the receive budget in use plus the
    per-connection bounds, ``docs/operations.md`` "Connections and memory":
    16 KiB per connection holding a frame's start, and
    ``connection.max.inflight.bytes`` (4 MiB here) plus the answers the
    kernel's socket buffers took for the never-reading client).

The same broker serves every round (topics created before it starts); each
round is bounded in time.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_server import CLIENT_CPU, broker
from bench.common import Report
from broker.records.batch import CompressionType
from tests.abuse import payloads
from tests.abuse.good_producer import GoodProducer
from tests.integration.wire import RawClient, create_topics_on_disk, produce_request

#: seconds the good producer runs alone, and under each attack
ROUND_SECONDS = 4.0
P99_GOAL = 2.0
WAIT_GOAL_S = 0.100

#: name -> (records builder, produce version, topic)
ATTACKS: dict[str, tuple[Callable[[], bytes], int, str]] = {
    "gzip v1 LogAppendTime wrapper, 1.97 M inner errors": (
        payloads.legacy_gzip_lat_bomb, 2, "bad"),
    "zstd 4 M keyless records, compacted topic": (payloads.keyless_zstd_bomb, 9, "compact"),
    "zstd declaring 4 M records, one missing": (payloads.short_count_bomb, 9, "bad"),
    "gzip 70 MB of zeros (past the bound)": (
        lambda: payloads.codec_bomb(CompressionType.GZIP), 9, "bad"),
    "lz4 70 MB of zeros (past the bound)": (
        lambda: payloads.codec_bomb(CompressionType.LZ4), 9, "bad"),
    "valid zstd 24 MB recompressed to gzip": (
        lambda: payloads.recompress_bomb(24 << 20), 9, "gzipped"),
}  # fmt: skip


def _status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def _attack(port: int, records: bytes, version: int, topic: str, stop: threading.Event) -> int:
    request = produce_request({(topic, 0): records})
    sent = 0
    with RawClient(port, timeout=120) as client:
        while not stop.is_set() and sent < 10_000:
            client.call(request, version)
            sent += 1
    return sent


def main(report: Report) -> None:
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, {CLIENT_CPU})
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        create_topics_on_disk(
            tmp / "abuse",
            {
                "good": (1, {}),
                "bad": (1, {"max.message.bytes": str(4 << 20)}),
                "compact": (1, {"cleanup.policy": "compact"}),
                "gzipped": (1, {"compression.type": "gzip", "max.message.bytes": str(64 << 20)}),
            },
        )
        with broker(tmp, "abuse", **{"auto.create.topics.enable": "false"}) as (port, server):
            alone = GoodProducer(port)
            alone.run_for(ROUND_SECONDS)
            alone.check()
            base_p99 = alone.percentile(0.99)
            idle = _status(server.proc.pid)
            report.value("good producer alone: p50 (us)", alone.percentile(0.5) * 1e6, "us")
            report.value("good producer alone: p99 (us)", base_p99 * 1e6, "us")
            report.value("good producer alone: requests", len(alone.latencies), "requests")
            report.value("broker RSS idle (MB)", idle["VmRSS"] / 2**20, "MB")
            for name, (build, version, topic) in ATTACKS.items():
                records = build()
                stop = threading.Event()
                sent: list[int] = []
                attacker = threading.Thread(
                    target=lambda r=records, v=version, t=topic, s=stop, out=sent: out.append(
                        _attack(port, r, v, t, s)
                    )
                )
                attacker.start()
                time.sleep(0.3)
                good = GoodProducer(port)
                good.run_for(ROUND_SECONDS)
                stop.set()
                attacker.join(timeout=120)
                good.check()
                status = _status(server.proc.pid)
                p99 = good.percentile(0.99)
                worst = max(good.latencies)
                report.ratio(
                    f"{name}: good p99 vs alone",
                    p99,
                    base_p99,
                    goal=f"<= {P99_GOAL:g}x",
                    ok=p99 <= P99_GOAL * base_p99,
                )
                report.value(f"{name}: good p99 (us)", p99 * 1e6, "us")
                report.value(f"{name}: longest good wait (ms, goal < 100)", worst * 1e3, "ms")
                report.value(f"{name}: attack requests answered", sum(sent), "requests")
                report.value(f"{name}: broker RSS (MB)", status["VmRSS"] / 2**20, "MB")
                report.value(f"{name}: broker peak RSS so far (MB)", status["VmHWM"] / 2**20, "MB")
        _memory(tmp, report)


#: (3): connections holding a frame's start; the never-reading client's bound
PARTIAL_CONNECTIONS = 2000
NEVER_READ_BOUND = 4 << 20


def _settled_rss(pid: int) -> int:
    last = _status(pid)["VmRSS"]
    for _ in range(25):
        time.sleep(0.2)
        now = _status(pid)["VmRSS"]
        if abs(now - last) < 256 * 1024:
            return now
        last = now
    return last


def _memory(tmp: Path, report: Report) -> None:
    import resource
    import struct

    from broker.protocol import encode_request
    from tests.integration.netutil import produce
    from tests.integration.wire import fetch_request

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (min(hard, max(soft, 3 * PARTIAL_CONNECTIONS)), hard)
    )
    create_topics_on_disk(tmp / "memory", {"big": (1, {})})
    settings = {"connection.max.inflight.bytes": str(NEVER_READ_BOUND)}
    with broker(tmp, "memory", **settings) as (port, server):
        pid = server.proc.pid
        with RawClient(port) as c:
            for _ in range(10):
                produce(c, "big", [bytes([i]) * 10_000 for i in range(10)])
        base = _settled_rss(pid)
        frames = b"".join(
            encode_request(
                3, i, "never-reads", fetch_request("big", 0, 0, max_bytes=1 << 20)
            ).to_bytes()
            for i in range(300)
        )
        with socket.socket() as hog:
            hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            hog.connect(("127.0.0.1", port))
            hog.sendall(frames)
            time.sleep(1.0)
            grown = _settled_rss(pid) - base
        report.value("RSS growth, a never-reading client (MB)", grown / 2**20, "MB")
        report.ratio(
            "  against connection.max.inflight.bytes (4 MiB) + 8 MiB kernel-taken answers",
            grown,
            NEVER_READ_BOUND + (8 << 20),
            goal="<= 1x",
            ok=grown <= NEVER_READ_BOUND + (8 << 20),
        )
        base = _settled_rss(pid)
        head = struct.pack(">ihhi", 104_857_000, 0, 9, 1)
        socks = []
        try:
            for i in range(PARTIAL_CONNECTIONS):
                s = socket.create_connection(("127.0.0.1", port))
                socks.append(s)
                s.sendall(head)
                if i % 256 == 255:
                    time.sleep(0.05)  # let the broker accept (listen backlog 511)
            grown = _settled_rss(pid) - base
        finally:
            for s in socks:
                s.close()
        goal = PARTIAL_CONNECTIONS * 16 * 1024
        report.value(
            "RSS growth, 2,000 connections holding a frame start (MB)", grown / 2**20, "MB"
        )
        report.ratio(
            "  against their 16 KiB first buffers",
            grown,
            goal,
            goal="<= 1.5x",
            ok=grown <= 1.5 * goal,
        )
