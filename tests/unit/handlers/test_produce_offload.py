"""Produce validations that leave the event loop (``broker/partition/partition.py``).

A partition whose validation would cost more than ``produce.inline.max.cost``,
or that comes after a request spent ``produce.inline.max.ms`` on the loop, is
validated on a worker thread and queued on its partition. These tests check
that this changes nothing a client sees: the same responses, the same bytes
on disk, appends in arrival order per partition, acks=0/all handled after the
queued appends, meters counted, and a deleted topic failing cleanly.
"""

from __future__ import annotations

import inspect

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import ProduceRequest
from broker.records.batch import MAGIC_V0, MAGIC_V1, CompressionType
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.aio import run
from tests.unit.handlers.conftest import InProcessBroker

NOW = 1_700_000_000_000


def _records(n: int, *, key: bool = True, ts: int = NOW) -> list[SimpleRecord]:
    return [
        SimpleRecord(ts + i, f"k{i}".encode() if key else None, b"value-%d" % i * 8)
        for i in range(n)
    ]


def _request(parts: dict[tuple[str, int], bytes], acks: int = 1) -> ProduceRequest:
    topics: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
    for (topic, index), payload in parts.items():
        topics.setdefault(topic, []).append(
            ProduceRequest.PartitionProduceData(index=index, records=payload)
        )
    return ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(name=name, partition_data=parts)
            for name, parts in topics.items()
        ],
    )


#: (name, produce version, records): every path of the validator, valid and not
CASES = [
    ("v2 none", 9, bytes(build_v2_batch(_records(30)).buffer)),
    ("v2 gzip", 9, bytes(build_v2_batch(_records(30), compression_type=CompressionType.GZIP).buffer)),
    ("v2 lz4", 9, bytes(build_v2_batch(_records(30), compression_type=CompressionType.LZ4).buffer)),
    ("v2 zstd", 9, bytes(build_v2_batch(_records(30), compression_type=CompressionType.ZSTD).buffer)),
    ("v0 set", 1, bytes(build_legacy(_records(5), magic=MAGIC_V0).buffer)),
    ("v1 snappy", 2, bytes(build_legacy(_records(5), magic=MAGIC_V1,
                                        compression_type=CompressionType.SNAPPY).buffer)),
    ("keyless on compacted", 9, bytes(build_v2_batch(_records(30, key=False)).buffer)),
    ("old timestamps", 9, bytes(build_v2_batch(_records(3, ts=NOW - 10**9)).buffer)),
    ("corrupt crc", 9, bytes(build_v2_batch(_records(3)).buffer[:-1]) + b"\x00"),
]  # fmt: skip


def _setup(broker: InProcessBroker) -> None:
    rm = broker.replica_manager
    rm.create_topic("t", 2, {})
    rm.create_topic("c", 1, {"cleanup.policy": "compact"})
    rm.create_topic("z", 1, {"compression.type": "gzip", "message.timestamp.before.max.ms": "1000"})


def _topic_for(name: str) -> str:
    return {"keyless on compacted": "c", "old timestamps": "z"}.get(name, "t")


def _stored(broker: InProcessBroker, topic: str, partition: int = 0) -> bytes:
    folder = broker.config.log_dirs[0] / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(folder.glob("*.log")))


def _answer(broker: InProcessBroker, request: ProduceRequest, version: int):
    """Dispatch and wait (the send happens inside the loop, as on a socket)."""

    async def go():
        return await broker.call_async(request, version)

    return run(go())


@pytest.mark.parametrize(("name", "version", "payload"), CASES, ids=[c[0] for c in CASES])
def test_offloaded_validation_answers_and_stores_as_inline(make_broker, name, version, payload):
    inline = make_broker()
    offloaded = make_broker(produce_inline_max_cost="0")
    topic = _topic_for(name)
    answers = []
    for broker in (inline, offloaded):
        _setup(broker)
        answers.append([_answer(broker, _request({(topic, 0): payload}), version) for _ in "ab"])
    assert answers[0] == answers[1]
    assert _stored(inline, topic) == _stored(offloaded, topic)
    assert _counters(inline) == _counters(offloaded)


def _counters(broker: InProcessBroker) -> list[str]:
    """The validator's and the topics' counters (what a worker thread records
    is replayed on the loop), not the timings."""
    lines = broker.metrics.render().decode().splitlines()
    wanted = (
        "kafka_invalid_",
        "kafka_no_key_",
        "kafka_topic_",
        "kafka_requests_total",
        "kafka_request_errors_total",
    )
    return [line for line in lines if line.startswith(wanted)]


def test_offloaded_partition_returns_an_awaitable_inline_one_does_not(make_broker):
    payload = CASES[0][2]
    for cost, queued in (("0", True), ("2097152", False)):
        broker = make_broker(produce_inline_max_cost=cost)
        _setup(broker)

        async def go(broker=broker, queued=queued):
            outcome = broker.send(_request({("t", 0): payload}), 9)
            assert inspect.isawaitable(outcome) == queued
            if queued:
                await outcome

        run(go())


def test_appends_keep_arrival_order_behind_a_queued_one(make_broker):
    """A costly request queued on the partition, then cheap ones pipelined
    behind it on the same connection: the cheap ones queue too, so offsets
    follow arrival, and the partition goes back to inline appends after."""
    broker = make_broker(produce_inline_max_cost="200000")
    _setup(broker)
    big = bytes(build_v2_batch(_records(3000), compression_type=CompressionType.GZIP).buffer)
    small = bytes(build_v2_batch(_records(2)).buffer)

    async def go():
        outcomes = [broker.send(_request({("t", 0): p}), 9) for p in (big, small, small)]
        other = broker.send(_request({("t", 1): small}), 9)  # another partition: inline
        assert all(inspect.isawaitable(o) for o in outcomes)
        assert not inspect.isawaitable(other)
        correlations = range(broker.correlation - 3, broker.correlation)
        answers = [
            broker.decode(0, 9, await o, c) for o, c in zip(outcomes, correlations, strict=True)
        ]
        after = broker.send(_request({("t", 0): small}), 9)
        assert not inspect.isawaitable(after)
        return [a.responses[0].partition_responses[0].base_offset for a in answers]

    assert run(go()) == [0, 3000, 3002]


def test_partitions_after_the_inline_time_budget_are_queued(make_broker):
    """With no time on the loop at all, every partition of a request after
    the first is validated on the worker pool; acks=all then waits for the
    fsync of all."""
    broker = make_broker(produce_inline_max_ms="0")
    _setup(broker)
    payload = bytes(build_v2_batch(_records(10)).buffer)

    async def go():
        outcome = broker.send(_request({("t", 0): payload, ("t", 1): payload}, acks=-1), 9)
        assert inspect.isawaitable(outcome)
        return broker.decode(0, 9, await outcome, broker.correlation)

    answer = run(go())
    parts = answer.responses[0].partition_responses
    assert [(p.index, p.error_code, p.base_offset) for p in parts] == [(0, 0, 0), (1, 0, 0)]
    for index in (0, 1):
        assert broker.replica_manager.get_partition("t", index).log.recovery_point == 10


def test_acks_zero_closes_the_connection_when_a_queued_partition_fails(make_broker):
    broker = make_broker(produce_inline_max_cost="0")
    _setup(broker)
    keyless = bytes(build_v2_batch(_records(4, key=False)).buffer)

    async def go():
        outcome = broker.send(_request({("c", 0): keyless}, acks=0), 9)
        assert await outcome is None

    run(go())
    assert broker.conn.closed


def test_a_topic_deleted_while_its_append_is_queued_answers_unknown_partition(make_broker):
    broker = make_broker(produce_inline_max_cost="0")
    _setup(broker)
    payload = bytes(build_v2_batch(_records(10)).buffer)

    async def go():
        outcome = broker.send(_request({("t", 0): payload}), 9)
        broker.replica_manager.delete_topic("t")
        return broker.decode(0, 9, await outcome, broker.correlation)

    part = run(go()).responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_wait_queued_appends_returns_once_every_queue_is_empty(make_broker):
    broker = make_broker(produce_inline_max_cost="0")
    _setup(broker)
    payload = bytes(build_v2_batch(_records(10)).buffer)

    async def go():
        outcomes = [broker.send(_request({("t", 0): payload, ("t", 1): payload}), 9)
                    for _ in range(3)]  # fmt: skip
        # the appends run whether or not anyone awaits the responses yet
        await broker.replica_manager.wait_queued_appends()
        partitions = [broker.replica_manager.get_partition("t", i) for i in (0, 1)]
        for outcome in outcomes:
            await outcome
        return partitions

    for partition in run(go()):
        assert partition.queued_append is None
        assert partition.log.log_end_offset == 30


def test_cheap_appends_queued_behind_a_costly_one_are_validated_on_the_loop(make_broker):
    """Only the costly append goes to a worker; the cheap ones behind it wait
    for their turn and are validated inline (a partition under steady load
    would otherwise send every append through the pool), and once the queue
    is done the partition appends at once again."""
    broker = make_broker(produce_inline_max_cost="200000")
    _setup(broker)
    partition = broker.replica_manager.get_partition("t", 0)
    offloaded = []
    real = partition._offload

    def counting(fn):
        offloaded.append(fn)
        return real(fn)

    partition._offload = counting
    big = bytes(build_v2_batch(_records(3000), compression_type=CompressionType.GZIP).buffer)
    small = bytes(build_v2_batch(_records(2)).buffer)

    async def go():
        outcomes = [broker.send(_request({("t", 0): p}), 9) for p in (big, *[small] * 5)]
        for outcome in outcomes:
            await outcome
        assert partition.queued_append is None
        assert not inspect.isawaitable(broker.send(_request({("t", 0): small}), 9))

    run(go())
    assert len(offloaded) == 1
    assert partition.log.log_end_offset == 3000 + 6 * 2
