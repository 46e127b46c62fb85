"""The consumer group protocol (KIP-848) with a real client: confluent-kafka (librdkafka 2.x)
consumers with ``group.protocol=consumer`` against the broker as a subprocess.

Three consumers share a topic of 12 partitions with the server-side assignor
they ask for (``group.remote.assignor`` uniform or range): every partition
is owned exactly once; one consumer closes and its partitions move to the
other two. Offsets committed by a member (OffsetCommit v9 with its epoch)
survive a broker restart and a new consumer of the group resumes there. The
heartbeat interval is lowered (group.consumer.heartbeat.interval.ms=300) to
keep each test within seconds. A regex subscription gets the topics whose
whole name matches, a static member comes back as itself, and a classic
member of the same group is served inside the consumer group (online
migration; test_group_migration.py covers the conversions).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from tests.integration.harness import BrokerProcess
from tests.integration.test_consumer_groups import TIMEOUT, make_topic

pytestmark = [pytest.mark.integration]

SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("consumer-protocol") / "data"
    data.mkdir()
    with BrokerProcess(data, **SETTINGS) as b:
        yield b


def consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    config.update(extra)
    return Consumer(config)


def owned(consumers: Sequence[Consumer]) -> list[list[int]]:
    return [sorted(tp.partition for tp in c.assignment()) for c in consumers]


def poll_until(
    consumers: Sequence[Consumer], done: Callable[[], bool], timeout: float = TIMEOUT
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if done():
            return
    raise AssertionError(f"timed out: {owned(consumers)}")


def each_once(consumers: Sequence[Consumer], partitions: int) -> bool:
    parts = owned(consumers)
    return all(parts) and sorted(p for ps in parts for p in ps) == list(range(partitions))


def counts(consumers: Sequence[Consumer]) -> list[int]:
    return sorted(len(p) for p in owned(consumers))


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_three_consumers_share_twelve_partitions(broker, assignor):
    topic = make_topic(broker.bootstrap, 12, 2)
    group = f"kip848-{assignor}-{uuid.uuid4().hex[:6]}"
    settings = [{"group.remote.assignor": assignor, "client.id": f"c{i}"} for i in range(3)]
    consumers = [consumer(broker.bootstrap, group, **s) for s in settings]
    try:
        for c in consumers:
            c.subscribe([topic])
        # partitions move a few at a time (a member gets those others have given up), so
        # every partition can be owned once before the counts are even: wait for both
        poll_until(consumers, lambda: each_once(consumers, 12) and counts(consumers) == [4, 4, 4])
        if assignor == "range":
            assert sorted(owned(consumers)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        # one consumer leaves (ConsumerGroupHeartbeat with epoch -1): the others take its part
        consumers.pop(1).close()
        poll_until(consumers, lambda: each_once(consumers, 12) and counts(consumers) == [6, 6])
    finally:
        for c in consumers:
            c.close()


def test_regex_static_member_and_a_classic_member(broker):
    topic = make_topic(broker.bootstrap, 3, 1)
    other = make_topic(broker.bootstrap, 2, 1)
    group = f"kip848-regex-{uuid.uuid4().hex[:6]}"
    # a regex subscription (ConsumerGroupHeartbeat v1 SubscribedTopicRegex) matches whole names
    c = consumer(broker.bootstrap, group, **{"group.instance.id": "i1"})
    classic = None
    try:
        c.subscribe([f"^{topic[:-1]}.$"])
        poll_until([c], lambda: len(c.assignment()) == 3)
        assert {tp.topic for tp in c.assignment()} == {topic} != {other}
        # a static member that closes (epoch -2) comes back as itself with its partitions
        c.close()
        c = consumer(broker.bootstrap, group, **{"group.instance.id": "i1"})
        c.subscribe([f"^{topic[:-1]}.$"])
        poll_until([c], lambda: len(c.assignment()) == 3)
        # a classic member of the same group is served inside the consumer group: the
        # topic's partitions are split between the two
        classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})  # fmt: skip
        classic.subscribe([topic])
        members = [c, classic]
        poll_until(members, lambda: each_once(members, 3))
    finally:
        c.close()
        if classic is not None:
            classic.close()


def _consume(c: Consumer, count: int) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        msg = c.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append((msg.partition(), msg.offset()))
    assert len(got) == count, got
    return got


def test_committed_offsets_survive_a_restart(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    group = "kip848-restart"
    with BrokerProcess(data, **SETTINGS) as b:
        topic = make_topic(b.bootstrap, 3, 10)
        c = consumer(b.bootstrap, group)
        c.subscribe([topic])
        _consume(c, 14)
        c.commit(asynchronous=False)  # OffsetCommit v9 with the member's epoch
        wanted = sorted(
            (tp.partition, tp.offset)
            for tp in c.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
        )
        c.close()
    assert sum(max(o, 0) for _, o in wanted) == 14
    with BrokerProcess(data, **SETTINGS) as b:
        c = consumer(b.bootstrap, group)
        c.subscribe([topic])
        rest = _consume(c, 30 - 14)
        c.close()
        starts = {p: min(o for q, o in rest if q == p) for p in {q for q, _ in rest}}
        assert starts == {p: max(o, 0) for p, o in wanted if p in starts}
