"""One core against two: the multi-node prototype (``python -m bench scaling``, issue 20).

``docs/scaling.md`` explains the design: N broker processes on one machine,
each a Kafka node with its own port and log dir (``cluster.nodes``), each
leading every N-th partition, so clients send each partition's requests to
the process that owns it and nothing is forwarded.

The load: 16 partitions, 16 KB produce requests of 100 B records, acks=1,
64 requests in flight per load generator. Two rounds, alternating:

* one node: the broker pinned to core 0, one load generator (every
  partition) pinned to core 1;
* two nodes: node 0 on core 0, node 1 on core 1, and two load generators
  (even / odd partitions) left to the scheduler, since the machine has no
  third core.

Printed: records/s of each layout and the ratio, and the CPU each process
used per second of the round (brokers and load generators), which says how
much of the two cores the load generators took from the brokers.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bench_server import Server, free_port
from bench.common import Report, settle

PARTITIONS = 16
REQUEST_BYTES = 16_000
SECONDS = 6.0
ROUNDS = 2


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in ticks of 10 ms


@contextlib.contextmanager
def _nodes(tmp: Path, count: int) -> Iterator[list[tuple[int, Server]]]:
    from tests.integration.wire import create_topics_on_disk

    ports = [free_port() for _ in range(count)]
    nodes = ",".join(f"{i}@127.0.0.1:{port}" for i, port in enumerate(ports))
    servers: list[tuple[int, Server]] = []
    try:
        for i, port in enumerate(ports):
            data = tmp / f"n{count}-{i}"
            create_topics_on_disk(data, {"s": (PARTITIONS, {})}, node_id=str(i))
            args = ["-m", "broker", "serve"]
            settings = {
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "metrics.listener": "",
                "log.dirs": str(data),
                "node.id": str(i),
            }
            if count > 1:
                settings["cluster.nodes"] = nodes
            for key, value in settings.items():
                args += ["--override", f"{key}={value}"]
            server = Server(args, tmp / f"n{count}-{i}.log", cpu=i)
            servers.append((port, server))
        for port, server in servers:
            server.wait(lambda p=port: _listening(p))
        yield servers
    finally:
        for _, server in servers:
            server.stop()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _round(servers: list[tuple[int, Server]], pin_client: bool) -> dict[str, Any]:
    count = len(servers)
    gens = []
    for i, (port, _) in enumerate(servers):
        ids = ",".join(str(p) for p in range(PARTITIONS) if p % count == i)
        args = [
            sys.executable, "-m", "bench.loadgen", "--port", str(port), "--topic", "s",
            "--partitions", str(PARTITIONS), "--partition-ids", ids,
            "--request-bytes", str(REQUEST_BYTES), "--record-bytes", "100", "--acks", "1",
            "--window", "64", "--requests", "1000000", "--warmup", "100",
            "--seconds", str(SECONDS),
        ]  # fmt: skip
        if pin_client:
            args += ["--cpu", "1"]
        gens.append(subprocess.Popen(args, stdout=subprocess.PIPE))
    time.sleep(0.5)
    broker_cpu0 = [_cpu_seconds(s.proc.pid) for _, s in servers]
    gen_cpu0 = [_cpu_seconds(g.pid) for g in gens]
    began = time.monotonic()
    time.sleep(SECONDS - 1.0)
    broker_cpu = [
        _cpu_seconds(s.proc.pid) - c for (_, s), c in zip(servers, broker_cpu0, strict=True)
    ]
    gen_cpu = [_cpu_seconds(g.pid) - c for g, c in zip(gens, gen_cpu0, strict=True)]
    window = time.monotonic() - began
    results = []
    for g in gens:
        out, _ = g.communicate(timeout=120)
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    for r in results:
        assert set(r["errors"]) == {"0"}, r["errors"]
    return {
        "rate": sum(r["records"] / r["elapsed"] for r in results),
        "broker_cores": sum(broker_cpu) / window,
        "client_cores": sum(gen_cpu) / window,
    }


def main(report: Report) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        best: dict[int, dict[str, Any]] = {}
        with _nodes(tmp, 1) as one, _nodes(tmp, 2) as two:
            for _ in range(ROUNDS):
                for count, servers in ((1, one), (2, two)):
                    settle()
                    result = _round(servers, pin_client=count == 1)
                    if count not in best or result["rate"] > best[count]["rate"]:
                        best[count] = result
        report.ratio(
            "records/s, two nodes (two cores) vs one node",
            best[2]["rate"],
            best[1]["rate"],
            goal="(measured; docs/scaling.md)",
        )
        per_core = [best[c]["rate"] / best[c]["broker_cores"] for c in (1, 2)]
        report.ratio(
            "records/s per broker core, two nodes vs one node",
            per_core[1],
            per_core[0],
            goal="(measured)",
        )
        for count in (1, 2):
            b = best[count]
            report.value(f"{count} node(s): records/s", b["rate"], "rec/s")
            report.value(f"{count} node(s): broker CPU (cores)", b["broker_cores"], "cores")
            report.value(f"{count} node(s): load generator CPU (cores)", b["client_cores"], "cores")
