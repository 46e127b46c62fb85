"""The group coordinator's costs (``python -m bench groups``), in process, through the dispatcher.

(1) OffsetCommit of one partition (offsets.commit.required.acks=1: answered
    once appended, acks=1 style) against a Produce (acks=1) of one record of
    the same key and value sizes to a normal topic: requests/s of each
    through the real dispatcher (header, decode, handler, append, encode),
    rounds alternating (goal >= 0.8x the produce rate). Both append one
    batch of one record to a log; the commit also checks the group and
    encodes the record itself.
(2) A rebalance of 100 members over 1,000 partitions: a Stable group of 100
    members, each rejoining after its own delay (spread up to 0.5 s, the
    longest member's join delay), the leader then sending an assignment of
    1,000 partitions: wall time from the first JoinGroup to the last
    SyncGroup answer (goal < 2x the longest delay: no per-member quadratic
    work), and the coordinator's CPU for the whole rebalance with no delays.

Every loop is bounded; data lives in a temporary directory removed at the end.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_server import app_core, close_core
from bench.common import Report
from broker.config import BrokerConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.metrics import BrokerMetrics
from broker.protocol import decode_response, encode_request
from broker.protocol.messages import (
    JoinGroupRequest,
    OffsetCommitRequest,
    ProduceRequest,
    SyncGroupRequest,
)
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord

COMMIT_REQUESTS = 20_000
COMMIT_ROUNDS = 5
MEMBERS = 100
PARTITIONS = 1000
LONGEST_JOIN_DELAY_S = 0.5


class _Conn:
    peer = "127.0.0.1:1"
    principal = "User:ANONYMOUS"
    peer_host = "127.0.0.1"
    listener_name = "PLAINTEXT"
    sasl = None  # not a SASL listener (server/sasl_gate.py)
    client_software_name = None
    client_software_version = None

    def close(self) -> None:
        pass


class _Broker:
    """The app's request path (:func:`bench.bench_server.app_core`), its group
    coordinator on the wall clock."""

    def __init__(self, data: Path, **overrides: str) -> None:
        self.config = BrokerConfig.from_properties({"log.dirs": str(data), **overrides})
        self.metrics = BrokerMetrics(
            records_implementation="bench", event_loop="bench", version="0"
        )
        self.core = app_core(self.config, self.metrics)
        self.rm = self.core.replica_manager
        assert self.core.groups is not None
        self.groups: GroupCoordinator = self.core.groups
        self.dispatcher = self.core.dispatcher
        self.conn = _Conn()
        self._correlation = 0

    def frame(self, request: Any, version: int) -> bytes:
        self._correlation += 1
        return encode_request(version, self._correlation, "bench", request).to_bytes()

    def send(self, frame: bytes) -> Any:
        return self.dispatcher.handle_frame(memoryview(bytearray(frame))[4:], self.conn)  # type: ignore[arg-type]

    async def call(self, request: Any, version: int, api_key: int) -> Any:
        outcome = self.send(self.frame(request, version))
        if inspect.isawaitable(outcome):
            outcome = await outcome
        data = b"".join(bytes(s) for s in outcome)
        return decode_response(api_key, version, data[4:])[1]

    def close(self) -> None:
        close_core(self.core)


# ---- (1) commit vs produce --------------------------------------------------------------------


def _commit_frame(b: _Broker) -> bytes:
    return b.frame(
        OffsetCommitRequest(
            group_id="bench-group",
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=123_456, committed_metadata=""
                        )
                    ],
                )
            ],
        ),
        8,
    )


def _produce_frame(b: _Broker, key: bytes, value: bytes) -> bytes:
    records = build_v2_batch(
        [SimpleRecord(timestamp=int(time.time() * 1000), key=key, value=value)]
    )
    return b.frame(
        ProduceRequest(
            acks=1,
            timeout_ms=30_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="p",
                    partition_data=[
                        ProduceRequest.PartitionProduceData(index=0, records=records.buffer)
                    ],
                )
            ],
        ),
        9,
    )


async def _rate(b: _Broker, frame: bytes) -> float:
    start = time.perf_counter()
    for _ in range(COMMIT_REQUESTS):
        outcome = b.send(frame)
        if inspect.isawaitable(outcome):
            # a request held up past produce.inline.max.ms (a preempted loop) is queued
            await outcome
    return COMMIT_REQUESTS / (time.perf_counter() - start)


def commit_vs_produce(report: Report, data: Path) -> None:
    from broker.coordinator.group.records import offset_commit_record

    b = _Broker(data, **{"offsets.commit.required.acks": "1", "offsets.topic.num.partitions": "1"})
    try:
        b.rm.create_topic("t", 1)
        b.rm.create_topic("p", 1)
        b.groups.ensure_topic()
        # the same key and value bytes as the commit's record
        key, value = offset_commit_record(
            "bench-group", "t", 0, offset=123_456, leader_epoch=-1, metadata="",
            commit_timestamp=int(time.time() * 1000), expire_timestamp=-1,
        )  # fmt: skip
        assert value is not None
        commit, produce = _commit_frame(b), _produce_frame(b, key, value)

        async def rounds() -> tuple[float, float]:
            best_commit = best_produce = 0.0
            for _ in range(COMMIT_ROUNDS):
                best_commit = max(best_commit, await _rate(b, commit))
                best_produce = max(best_produce, await _rate(b, produce))
            return best_commit, best_produce

        commits, produces = asyncio.run(rounds())
        report.value("OffsetCommit of one partition (acks=1 style)", commits, "req/s")
        report.value("Produce of one record of the same size (acks=1)", produces, "req/s")
        r = commits / produces
        report.ratio("commit rate / produce rate", r, 1.0, goal="goal >= 0.8x", ok=r >= 0.8)
    finally:
        b.close()


# ---- (2) a rebalance of 100 members -----------------------------------------------------------


def _subscription() -> bytes:
    return b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"


def _assignment(partitions: list[int]) -> bytes:
    out = bytearray(b"\x00\x00\x00\x00\x00\x01\x00\x01t")
    out += len(partitions).to_bytes(4, "big")
    for p in partitions:
        out += p.to_bytes(4, "big")
    return bytes(out + b"\xff\xff\xff\xff")


async def _rebalance(b: _Broker, group: str, delays: list[float]) -> tuple[float, float]:
    """(wall seconds, coordinator CPU seconds) of one rebalance of a Stable group."""

    def join(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group,
            session_timeout_ms=30_000,
            rebalance_timeout_ms=30_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=_subscription())
            ],
        )

    async def member(member_id: str, delay: float) -> Any:
        await asyncio.sleep(delay)
        joined = await b.call(join(member_id), 7, 11)
        assignments = []
        if joined.leader == member_id:
            ids = sorted(m.member_id for m in joined.members)
            per = PARTITIONS // len(ids)
            assignments = [
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=m, assignment=_assignment(list(range(i * per, (i + 1) * per)))
                )
                for i, m in enumerate(ids)
            ]
        return await b.call(
            SyncGroupRequest(
                group_id=group,
                generation_id=joined.generation_id,
                member_id=member_id,
                assignments=assignments,
            ),
            3,
            14,
        )

    members = list(b.groups.shards[b.groups.partition_for(group)].classic.groups[group].members)
    cpu = time.thread_time()
    start = time.perf_counter()
    answers = await asyncio.gather(*(member(m, d) for m, d in zip(members, delays, strict=True)))
    wall = time.perf_counter() - start
    assert all(a.error_code == 0 for a in answers), [a.error_code for a in answers]
    return wall, time.thread_time() - cpu


async def _stable_group(b: _Broker, group: str) -> None:
    """MEMBERS members joined (v3: no member id round trip) and synced once."""

    async def first(i: int) -> Any:
        return await b.call(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id="",
                protocol_type="consumer",
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(
                        name="range", metadata=_subscription()
                    )
                ],
            ),
            3,
            11,
        )

    joined = await asyncio.gather(*(first(i) for i in range(MEMBERS)))
    leader = joined[0].leader
    await asyncio.gather(
        *(
            b.call(
                SyncGroupRequest(
                    group_id=group,
                    generation_id=j.generation_id,
                    member_id=j.member_id,
                    assignments=[
                        SyncGroupRequest.SyncGroupRequestAssignment(
                            member_id=x.member_id, assignment=b""
                        )
                        for x in j.members
                    ]
                    if j.member_id == leader
                    else [],
                ),
                3,
                14,
            )
            for j in joined
        )
    )


def rebalance(report: Report, data: Path) -> None:
    b = _Broker(
        data,
        **{
            "group.initial.rebalance.delay.ms": "100",
            "offsets.commit.required.acks": "1",
            "offsets.topic.num.partitions": "1",
        },
    )
    try:
        b.rm.create_topic("t", PARTITIONS)

        async def scenario() -> tuple[float, float]:
            await _stable_group(b, "spread")
            spread = [LONGEST_JOIN_DELAY_S * i / (MEMBERS - 1) for i in range(MEMBERS)]
            wall, _ = await _rebalance(b, "spread", spread)
            await _stable_group(b, "instant")
            _, cpu = await _rebalance(b, "instant", [0.0] * MEMBERS)
            return wall, cpu

        wall, cpu = asyncio.run(scenario())
        report.value(
            f"rebalance of {MEMBERS} members / {PARTITIONS} partitions, wall", wall * 1000, "ms"
        )
        report.value("longest member join delay", LONGEST_JOIN_DELAY_S * 1000, "ms")
        report.ratio(
            "rebalance time / longest join delay",
            wall,
            LONGEST_JOIN_DELAY_S,
            goal="goal < 2x",
            ok=wall < 2 * LONGEST_JOIN_DELAY_S,
        )
        report.value(f"CPU of a rebalance of {MEMBERS} members (no delays)", cpu * 1000, "ms")
    finally:
        b.close()


def main(report: Report) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    try:
        commit_vs_produce(report, data / "commit")
        rebalance(report, data / "rebalance")
    finally:
        shutil.rmtree(data, ignore_errors=True)
