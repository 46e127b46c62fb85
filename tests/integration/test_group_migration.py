"""Online group migration (``group.consumer.migration.policy=bidirectional``, Kafka 4.0's
default) with real clients: confluent-kafka (librdkafka 2.x) consumers against the broker as
a subprocess.

A group consumed by a classic consumer (``group.protocol=classic``) is joined by a consumer
with ``group.protocol=consumer``: the group becomes a consumer group (ListGroups type
"consumer") whose classic member keeps being served through JoinGroup/SyncGroup/Heartbeat.
Both consume, committing each record; nothing committed is read again and nothing is lost.
When the consumer protocol member leaves, the group goes back to classic and the classic
consumer takes every partition.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from broker.admin.groups import GroupAdmin
from tests.integration.harness import BrokerProcess
from tests.integration.test_consumer_groups import TIMEOUT, make_topic

pytestmark = [pytest.mark.integration]

PARTITIONS = 4
PER_PARTITION = 10
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
}


def group_type(bootstrap: str, group: str) -> str | None:
    admin = GroupAdmin.connect(bootstrap, TIMEOUT)
    try:
        for g in admin.list_groups():
            if g.group_id == group:
                return str(g.group_type)
        return None
    finally:
        admin.close()


def owned(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def test_classic_group_upgraded_then_downgraded(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with BrokerProcess(data, **SETTINGS) as b:
        topic = make_topic(b.bootstrap, PARTITIONS, PER_PARTITION)
        group = f"migrate-{uuid.uuid4().hex[:6]}"
        common = {"bootstrap.servers": b.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}  # fmt: skip
        classic = Consumer({**common, "group.protocol": "classic", "session.timeout.ms": 6000,
                            "heartbeat.interval.ms": 300})  # fmt: skip
        modern: Consumer | None = None
        seen: dict[tuple[int, int], str] = {}
        try:
            classic.subscribe([topic])

            def poll(c: Consumer, name: str) -> None:
                msg = c.poll(0.05)
                if msg is None or msg.error() is not None:
                    return
                key = (msg.partition(), msg.offset())
                # committed progress is never read again (each record is committed at once)
                assert key not in seen, (key, seen[key], name)
                seen[key] = name
                c.commit(message=msg, asynchronous=False)

            deadline = time.monotonic() + TIMEOUT
            while len(seen) < 12 and time.monotonic() < deadline:
                poll(classic, "classic")
            assert len(seen) >= 12 and group_type(b.bootstrap, group) == "classic"

            # a consumer protocol member joins: the group is upgraded
            modern = Consumer({**common, "group.protocol": "consumer"})
            modern.subscribe([topic])
            deadline = time.monotonic() + TIMEOUT
            shared = False
            while time.monotonic() < deadline and not shared:
                poll(classic, "classic")
                poll(modern, "consumer")
                a, m = owned(classic), owned(modern)
                shared = bool(a) and bool(m) and not a & m and a | m == set(range(PARTITIONS))
            assert shared, (owned(classic), owned(modern))
            assert group_type(b.bootstrap, group) == "consumer"
            # more records: both members consume their partitions
            producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
            for p in range(PARTITIONS):
                for i in range(PER_PARTITION):
                    producer.produce(topic, value=b"more-%d" % i, partition=p)
            assert producer.flush(TIMEOUT) == 0
            total = 2 * PARTITIONS * PER_PARTITION
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline and len(seen) < total:
                poll(classic, "classic")
                poll(modern, "consumer")
            assert sorted(seen) == [
                (p, o) for p in range(PARTITIONS) for o in range(2 * PER_PARTITION)
            ]
            assert {"classic", "consumer"} <= set(seen.values())

            # the consumer protocol member leaves: the group goes back to classic
            modern.close()
            modern = None
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline and owned(classic) != set(range(PARTITIONS)):
                poll(classic, "classic")
            assert owned(classic) == set(range(PARTITIONS))
            assert group_type(b.bootstrap, group) == "classic"
            committed = classic.committed(
                [CTopicPartition(topic, p) for p in range(PARTITIONS)], TIMEOUT
            )
            assert [tp.offset for tp in committed] == [2 * PER_PARTITION] * PARTITIONS
        finally:
            classic.close()
            if modern is not None:
                modern.close()
