"""What the authorizer costs a PLAINTEXT producer (issue 19: at least 0.97x).

The same Produce requests with the authorizer on (``authorizer.class.name``
set; the producer's principal, ``User:ANONYMOUS``, has one ALLOW WRITE ACL
per topic, among ``BACKGROUND_ACLS`` other ACLs) and off, same run, rounds
alternating between the two:

(1) in process, through the whole dispatcher wired as the app wires it
    (``broker.wiring.build_core``: header, decode, authorization, validate, append, encode, metrics), the
    least thread CPU per request of each side, for 1 MB, 16 KB and 1 KB
    requests of 100 B records: the steady figure on a shared 2-core machine.
    A 1 KB request is where a per-request cost shows most.
(2) the load generator against two broker subprocesses (on/off) over
    sockets, 1 MB and 16 KB requests, acks=1: broker CPU per request (the
    primary figure) and records/s (noisy).

On the produce path the check is one lookup of the topic in the
authorizer's cached decisions per request topic (``handlers/produce.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_server import (
    CLIENT_CPU,
    LOADGEN_WINDOW,
    RECORD_BYTES,
    app_core,
    broker,
    close_core,
    create_topic,
    dispatch_as,
    on_client_cpu,
    settle,
)
from bench.common import Report
from bench.loadgen import build_frames

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PRINCIPAL = "User:ANONYMOUS"
#: ACLs of other principals and resources beside the producer's own
BACKGROUND_ACLS = 1000
#: (label, request bytes, requests per in-process round)
IN_PROCESS = (
    ("1 MB requests", 1_000_000, 60),
    ("16 KB requests", 16_000, 2_000),
    ("1 KB requests", 1_000, 10_000),
)
IN_PROCESS_ROUNDS = 15
#: (label, request bytes, requests per socket round)
SOCKETS = (("1 MB requests", 1_000_000, 200), ("16 KB requests", 16_000, 4_000))
SOCKET_ROUNDS = 8
GOAL = ">= 0.97x (the authorizer costs at most 3%)"


def acl_bindings(topic: str) -> list[Any]:
    """The producer's ALLOW WRITE on its topic, CREATE on the cluster (the topic is
    created by Metadata), and background ACLs: other principals' literal and
    prefixed topic ACLs, DENYs for others, group ACLs."""
    from broker.security.acl import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )

    def binding(
        rtype: ResourceType, name: str, ptype: PatternType, principal: str, op: AclOperation,
        perm: AclPermissionType = AclPermissionType.ALLOW,
    ) -> AclBinding:  # fmt: skip
        return AclBinding(
            ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, "*", op, perm)
        )

    lit, pre = PatternType.LITERAL, PatternType.PREFIXED
    out = [
        binding(ResourceType.TOPIC, topic, lit, PRINCIPAL, AclOperation.WRITE),
        binding(ResourceType.CLUSTER, "kafka-cluster", lit, PRINCIPAL, AclOperation.CREATE),
    ]
    for i in range(BACKGROUND_ACLS):
        kind = i % 4
        if kind == 0:
            out.append(binding(ResourceType.TOPIC, f"t{i}", lit, f"User:u{i}", AclOperation.READ))
        elif kind == 1:
            out.append(binding(ResourceType.TOPIC, f"p{i}-", pre, f"User:u{i}", AclOperation.WRITE))
        elif kind == 2:
            out.append(
                binding(ResourceType.TOPIC, f"{topic[:2]}{i}", lit, "User:*", AclOperation.WRITE,
                        AclPermissionType.DENY)
            )  # fmt: skip
        else:
            out.append(binding(ResourceType.GROUP, f"g{i}", lit, f"User:u{i}", AclOperation.READ))
    return out


def seed_acls(log_dir: Path, topic: str) -> None:
    """Write the ACL file the broker loads at start (``broker/security/acl_store.py``)."""
    from broker.security.acl_store import AclStore

    log_dir.mkdir(parents=True, exist_ok=True)
    AclStore(log_dir).save(acl_bindings(topic))


# ---- (1) in process -------------------------------------------------------------------------


class Dispatching:
    """The app's request path in process (:func:`bench.bench_server.app_core`:
    config, logs, partitions, real metrics, registry and dispatcher) and
    (``authorized``) the authorizer with its ACLs."""

    def __init__(self, tmp: Path, name: str, request_bytes: int, authorized: bool) -> None:
        from broker.config import BrokerConfig
        from broker.metrics import BrokerMetrics

        self.frames, self.per_frame = build_frames(name, 1, request_bytes, RECORD_BYTES, 1)
        data = tmp / name
        # no worker threads here: every partition is validated inline, whatever the
        # machine's other tenants do to a request's time (produce.inline.max.ms)
        props = {"log.dirs": str(data), "produce.inline.max.ms": "60000"}
        if authorized:
            props["authorizer.class.name"] = AUTHORIZER
            seed_acls(data, name)
        config = BrokerConfig.from_properties(props)
        metrics = BrokerMetrics(records_implementation="bench", event_loop="none", version="0")
        self.core = app_core(config, metrics)
        self.core.replica_manager.create_topic(name, 1)
        assert (self.core.acl_control is not None) == authorized
        self.handle = dispatch_as(self.core, PRINCIPAL)

    def cpu_per_request(self, requests: int) -> float:
        """Thread CPU microseconds per request over ``requests`` requests."""
        from broker.protocol import decode_response

        frames, handle = self.frames, self.handle
        buf = bytearray(max(len(f) for f in frames))
        start = time.thread_time()
        for i in range(requests):
            data = frames[i % len(frames)]
            buf[: len(data)] = data
            assert handle(memoryview(buf)[4 : len(data)]) is not None
        cpu = (time.thread_time() - start) * 1e6 / requests
        # the answers must be successes: a denied produce would be cheaper
        buf[: len(frames[0])] = frames[0]
        segments = handle(memoryview(buf)[4 : len(frames[0])])
        body = b"".join(bytes(s) for s in segments)
        _, resp = decode_response(0, 9, body[4:])
        assert resp.responses[0].partition_responses[0].error_code == 0, resp
        return cpu

    def close(self) -> None:
        close_core(self.core)


def in_process(report: Report, tmp: Path) -> None:
    for label, request_bytes, requests in IN_PROCESS:
        tag = str(request_bytes)
        on = Dispatching(tmp, f"on-{tag}", request_bytes, True)
        off = Dispatching(tmp, f"off-{tag}", request_bytes, False)
        try:
            best = {"on": float("inf"), "off": float("inf")}
            on.cpu_per_request(requests // 4)  # warm-up (and the first, uncached decision)
            off.cpu_per_request(requests // 4)
            sides = {"on": on, "off": off}
            with on_client_cpu():
                for i in range(IN_PROCESS_ROUNDS):
                    # the order alternates, so neither side always runs first
                    for side in ("off", "on") if i % 2 else ("on", "off"):
                        best[side] = min(best[side], sides[side].cpu_per_request(requests))
        finally:
            on.close()
            off.close()
        report.value(f"(1) in process, {label}: CPU per request, authorizer on", best["on"], "us")
        report.value(f"(1) in process, {label}: CPU per request, authorizer off", best["off"], "us")
        report.ratio(
            f"(1) in process, {label} of 100 B records: throughput authorizer on / off",
            best["off"],
            best["on"],
            goal=GOAL,
            ok=best["off"] / best["on"] >= 0.97,
        )


# ---- (2) sockets -----------------------------------------------------------------------------


def loadgen(port: int, topic: str, request_bytes: int, requests: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable, "-m", "bench.loadgen", "--port", str(port), "--topic", topic,
            "--request-bytes", str(request_bytes), "--record-bytes", str(RECORD_BYTES),
            "--acks", "1", "--window", str(LOADGEN_WINDOW), "--requests", str(requests),
            "--warmup", "20", "--seconds", "60", "--cpu", str(CLIENT_CPU),
        ],
        capture_output=True,
        check=True,
        timeout=180,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert set(result["errors"]) == {"0"}, result["errors"]
    result["rate"] = result["records"] / result["elapsed"]
    return result


def sockets(report: Report, tmp: Path) -> None:
    for label, request_bytes, requests in SOCKETS:
        tag = str(request_bytes)
        topic = f"bench-{tag}"
        seed_acls(tmp / f"s-on-{tag}", topic)
        with (
            broker(tmp, f"s-on-{tag}", **{"authorizer.class.name": AUTHORIZER}) as (on_port, on),
            broker(tmp, f"s-off-{tag}") as (off_port, off),
        ):
            servers = {"on": (on_port, on), "off": (off_port, off)}
            for port, _ in servers.values():
                create_topic(port, topic)
                loadgen(port, topic, request_bytes, requests // 10)  # warm-up
            rounds: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
            for i in range(SOCKET_ROUNDS):
                for side in ("off", "on") if i % 2 else ("on", "off"):
                    port, server = servers[side]
                    settle()
                    before = server.cpu_seconds()
                    result = loadgen(port, topic, request_bytes, requests)
                    result["cpu_us"] = (
                        (server.cpu_seconds() - before) * 1e6 / (result["requests"] + 20)
                    )
                    rounds[side].append(result)
        cpu = {side: min(r["cpu_us"] for r in rs) for side, rs in rounds.items()}
        rate = {side: max(r["rate"] for r in rs) for side, rs in rounds.items()}
        for side in ("on", "off"):
            report.value(f"(2) sockets, {label}: broker CPU per request, authorizer {side}",
                         cpu[side], "us")  # fmt: skip
            report.value(f"(2) sockets, {label}: authorizer {side}", rate[side], "records/s")
        report.ratio(
            f"(2) sockets, {label}: CPU-bound throughput authorizer on / off",
            cpu["off"],
            cpu["on"],
            goal=GOAL,
            ok=cpu["off"] / cpu["on"] >= 0.97,
        )
        report.ratio(
            f"(2) sockets, {label}: measured throughput authorizer on / off (noisy)",
            rate["on"],
            rate["off"],
        )


def main(report: Report) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-authorizer-"))
    try:
        in_process(report, tmp)
        sockets(report, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
