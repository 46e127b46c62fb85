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
    attack, against the idle broker.

The same broker serves every round (topics created before it starts); each
round is bounded in time.
"""

from __future__ import annotations

import contextlib
import os
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
