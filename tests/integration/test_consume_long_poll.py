"""Long poll: a consumer waiting at the log end gets a record as soon as it is appended,
and an idle fetch is answered, empty, when its max_wait_ms runs out.

Real consumers (confluent-kafka, kafka-python with Fetch v12 and with
api_version (0, 10, 0), i.e. Fetch v2 through down-conversion, aiokafka)
wait with a 2000 ms fetch wait at the end of an empty partition. After an
idle second -- in which the broker must not answer more than one of their
fetches, or they would be polling, not waiting -- a raw client appends a
record; the time from the produce answer to the consumer handing over the
record must be a small fraction of the wait. Raw fetches check the
deadlines: 300 ms of waiting with nothing to read returns after about
300 ms with no records (several Fetch versions), and a min_bytes that is
never reached returns what there is at the deadline.
"""

from __future__ import annotations

import select
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.errors import ErrorCode
from broker.records.iterate import iter_records
from tests.aio import run
from tests.integration.harness import BrokerProcess
from tests.integration.netutil import metric_sum, produce
from tests.integration.readback import kafka_python
from tests.integration.wire import RawClient, fetch_request, only_partition, topic_id_of

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

WAIT_MS = 2000
#: the consumer must hand the record over within this long after the produce answer
LATENCY_BOUND = 0.5
IDLE = 1.0
#: a 300 ms wait must be answered before this (seconds): about 300 ms, not 2 s, not at once
DEADLINE_BOUND = 0.75


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("longpoll") / "data"
    data.mkdir()
    with BrokerProcess(data) as b:
        yield b
        assert "Traceback" not in b.log(), b.log()


def new_topic(broker: BrokerProcess) -> str:
    name = f"lp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(15)
    return name


def fetches_answered(broker: BrokerProcess) -> float:
    return metric_sum(broker.metrics(), "kafka_requests_total", request="Fetch")


def check_wakes_up(broker: BrokerProcess, topic: str, waiter: Any) -> None:
    """``waiter.idle(seconds)`` polls the consumer without data,
    ``waiter.receive(deadline)`` polls until a record arrives (its value)."""
    before = fetches_answered(broker)
    waiter.idle(IDLE)  # the consumer's fetch is parked at the broker now
    idle_answers = fetches_answered(broker) - before
    assert idle_answers <= 1, f"{idle_answers} fetches answered while idle: not waiting"
    with RawClient(broker.port) as producer:
        produce(producer, topic, [b"wake up"])
        acked = time.monotonic()
    value = waiter.receive(acked + WAIT_MS / 1000 + 5)
    latency = time.monotonic() - acked
    assert value == b"wake up"
    assert latency < LATENCY_BOUND, f"record handed over {latency * 1000:.0f} ms after the append"


def test_confluent_wakes_up(broker: BrokerProcess) -> None:
    import confluent_kafka
    from confluent_kafka import TopicPartition

    topic = new_topic(broker)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "long-poll",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": WAIT_MS,
        }
    )

    class W:
        @staticmethod
        def idle(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                assert consumer.poll(0.05) is None

        @staticmethod
        def receive(deadline: float) -> bytes:
            while time.monotonic() < deadline:
                m = consumer.poll(0.005)
                if m is not None:
                    assert m.error() is None, m.error()
                    return bytes(m.value())
            raise AssertionError("no record")

    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        check_wakes_up(broker, topic, W)
    finally:
        consumer.close()


@pytest.mark.parametrize("api_version", [None, (0, 10, 0)], ids=["default", "0.10.0"])
def test_kafka_python_wakes_up(broker: BrokerProcess, api_version: tuple[int, ...] | None) -> None:
    kafka = kafka_python()
    topic = new_topic(broker)
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        api_version=api_version,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=WAIT_MS,
        request_timeout_ms=WAIT_MS + 10_000,
    )
    tp = kafka.TopicPartition(topic, 0)

    class W:
        @staticmethod
        def idle(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                assert not consumer.poll(timeout_ms=50)

        @staticmethod
        def receive(deadline: float) -> bytes:
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=5).values():
                    return bytes(records[0].value)
            raise AssertionError("no record")

    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        check_wakes_up(broker, topic, W)
    finally:
        consumer.close()


def test_aiokafka_wakes_up(broker: BrokerProcess) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = new_topic(broker)

    async def go() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=WAIT_MS,
            request_timeout_ms=WAIT_MS + 10_000,
        )
        await consumer.start()
        tp = TopicPartition(topic, 0)
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            before = fetches_answered(broker)
            assert await consumer.getmany(timeout_ms=int(IDLE * 1000)) == {}
            idle_answers = fetches_answered(broker) - before
            assert idle_answers <= 1, f"{idle_answers} fetches answered while idle"
            with RawClient(broker.port) as producer:
                produce(producer, topic, [b"wake up"])
                acked = time.monotonic()
            record = await asyncio.wait_for(consumer.getone(), WAIT_MS / 1000 + 5)
            latency = time.monotonic() - acked
            assert record.value == b"wake up"
            assert latency < LATENCY_BOUND, f"handed over {latency * 1000:.0f} ms after the append"
        finally:
            await consumer.stop()

    run(go())


@pytest.mark.parametrize("version", [0, 2, 4, 11])
def test_raw_fetch_wakes_up_on_append(broker: BrokerProcess, version: int) -> None:
    topic = new_topic(broker)
    with RawClient(broker.port) as consumer, RawClient(broker.port) as producer:
        consumer.send(fetch_request(topic, 0, 0, max_wait_ms=WAIT_MS), version)
        # parked: nothing comes back before the append
        readable, _, _ = select.select([consumer.sock], [], [], 0.3)
        assert not readable, "the fetch was answered before anything was appended"
        produce(producer, topic, [b"first"])
        acked = time.monotonic()
        p = only_partition(consumer.recv())
        latency = time.monotonic() - acked
    assert p.error_code == ErrorCode.NONE
    assert [r.value for r in iter_records(bytes(p.records), file=True)] == [b"first"]
    assert latency < 0.2, f"answered {latency * 1000:.0f} ms after the append"


@pytest.mark.parametrize("version", [0, 3, 4, 11, 12, 16])
def test_idle_fetch_returns_empty_at_deadline(broker: BrokerProcess, version: int) -> None:
    topic = new_topic(broker)
    with RawClient(broker.port) as client:
        produce(client, topic, [b"a", b"b"])  # the log end is 2
        tid = topic_id_of(client, topic) if version >= 13 else None
        start = time.monotonic()
        response = client.call(fetch_request(topic, 0, 2, max_wait_ms=300, topic_id=tid), version)
        elapsed = time.monotonic() - start
    p = only_partition(response)
    assert p.error_code == ErrorCode.NONE
    assert p.high_watermark == 2
    assert not p.records
    assert 0.29 <= elapsed < DEADLINE_BOUND, f"answered after {elapsed * 1000:.0f} ms"


def test_min_bytes_not_reached_returns_what_there_is_at_deadline(broker: BrokerProcess) -> None:
    topic = new_topic(broker)
    with RawClient(broker.port) as client:
        produce(client, topic, [b"small"])
        start = time.monotonic()
        request = fetch_request(topic, 0, 0, max_wait_ms=300, min_bytes=1 << 20)
        p = only_partition(client.call(request, 11))
        elapsed = time.monotonic() - start
    assert p.error_code == ErrorCode.NONE
    assert [r.value for r in iter_records(bytes(p.records), file=True)] == [b"small"]
    assert 0.29 <= elapsed < DEADLINE_BOUND, f"answered after {elapsed * 1000:.0f} ms"
