"""Compaction seen by real clients (confluent-kafka, librdkafka).

A compacted topic with small segments (``segment.bytes``, ``segment.ms``), a
low ``min.cleanable.dirty.ratio``, a short ``delete.retention.ms`` and a
cleaner that looks every 100 ms: keyed updates and tombstones are produced,
the cleaner runs, and a consumer reading from the beginning (assign: there
are no consumer groups) sees the latest value of each key, the tombstones
until their horizon, then none of the tombstoned keys. ListOffsets
(watermarks) and a fetch from an offset the cleaner removed work on the
cleaned log, and /metrics shows the cleaner's gauges.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import BrokerProcess

pytestmark = pytest.mark.integration

TOPIC = "compacted"
KEYS = 20
ROUNDS = 10
RETENTION_MS = 2000
SEGMENT_MS = 400


def produce(bootstrap: str, items: list[tuple[bytes, bytes | None]]) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "enable.idempotence": True,
            "batch.size": 4096,
        }
    )
    errors: list[Any] = []
    for key, value in items:
        producer.produce(
            TOPIC,
            key=key,
            value=value,
            partition=0,
            on_delivery=lambda e, _m: e and errors.append(e),
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors


def roll(bootstrap: str) -> None:
    """Past segment.ms, one more record rolls the segment: what came before is cleanable."""
    time.sleep(SEGMENT_MS / 1000 + 0.1)
    produce(bootstrap, [(b"roll", b"r")])


def read_all(bootstrap: str, start: int | None = None) -> tuple[list[Any], int, int]:
    """Every record from ``start`` (default: the beginning) to the high
    watermark; and the watermarks (ListOffsets)."""
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"c-{uuid.uuid4().hex[:8]}",  # assign() joins no group
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING if start is None else start)])
        got = []
        deadline = time.monotonic() + 20
        while (not got or got[-1].offset() < high - 1) and time.monotonic() < deadline:
            for m in consumer.consume(500, 0.2):
                assert m.error() is None, m.error()
                got.append(m)
        return got, low, high
    finally:
        consumer.close()


def latest(records: list[Any]) -> dict[bytes, bytes | None]:
    out: dict[bytes, bytes | None] = {}
    for m in records:
        out[m.key()] = m.value()
    return out


def wait_until(check: Any, timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, "the cleaner did not get there"
        time.sleep(0.3)


def test_consumers_see_the_latest_value_per_key_and_tombstones_go(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    data = tmp_path / "data"
    data.mkdir()
    with BrokerProcess(
        data,
        **{"log.cleaner.backoff.ms": "100", "log.cleaner.dedupe.buffer.size": str(1 << 20)},
    ) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = NewTopic(
            TOPIC,
            num_partitions=1,
            replication_factor=1,
            config={
                "cleanup.policy": "compact",
                "segment.bytes": "16384",
                "segment.ms": str(SEGMENT_MS),
                "min.cleanable.dirty.ratio": "0.01",
                "delete.retention.ms": str(RETENTION_MS),
            },
        )
        for future in admin.create_topics([topic]).values():
            future.result(10)
        updates = [
            (b"k%02d" % k, b"k%02d-v%d" % (k, r)) for r in range(ROUNDS) for k in range(KEYS)
        ]
        tombstones: list[tuple[bytes, bytes | None]] = [(b"k%02d" % k, None) for k in range(5)]
        produce(broker.bootstrap, [*updates, *tombstones])
        roll(broker.bootstrap)
        produced = len(updates) + len(tombstones) + 1
        want = {b"k%02d" % k: b"k%02d-v%d" % (k, ROUNDS - 1) for k in range(5, KEYS)}
        want |= {b"k%02d" % k: None for k in range(5)}

        def cleaned() -> Any:
            got, low, high = read_all(broker.bootstrap)
            keyed = [m for m in got if m.key() != b"roll"]
            keys = [m.key() for m in keyed]
            if len(keys) == len(set(keys)) and latest(keyed) == want:
                return got, low, high
            return None

        got, low, high = wait_until(cleaned)
        # ListOffsets on the cleaned log: the log start and end did not move
        assert (low, high) == (0, produced)
        offsets = [m.offset() for m in got]
        assert offsets == sorted(set(offsets)) and offsets[-1] == produced - 1
        # the tombstones stay until their delete horizon, as null values
        assert [m.key() for m in got if m.value() is None] == [b"k%02d" % k for k in range(5)]
        # a fetch from an offset the cleaner removed starts at the next record kept
        again, _, _ = read_all(broker.bootstrap, start=1)
        assert again[0].offset() == offsets[0] > 1

        # past the horizon, a later cleaning (more dirty data) drops the tombstones
        time.sleep(RETENTION_MS / 1000)
        produce(broker.bootstrap, [(b"k10", b"k10-new")])
        roll(broker.bootstrap)
        want = {b"k%02d" % k: b"k%02d-v%d" % (k, ROUNDS - 1) for k in range(5, KEYS)}
        want[b"k10"] = b"k10-new"

        def tombstones_gone() -> bool:
            got, _, _ = read_all(broker.bootstrap)
            keyed = [m for m in got if m.key() != b"roll"]
            return latest(keyed) == want and len(keyed) == len(want)

        wait_until(tombstones_gone)

        metrics = broker.metrics()
        gauges = dict(re.findall(r"^(kafka_log_cleaner_\w+) (\S+)$", metrics, re.MULTILINE))
        assert float(gauges["kafka_log_cleaner_dead_threads"]) == 0
        assert 0 < float(gauges["kafka_log_cleaner_recopy_percent"]) < 100
        assert f'kafka_log_cleaner_uncleanable_partitions{{log_directory="{data}"}} 0.0' in metrics
        cleaned_files = [p for p in (data / f"{TOPIC}-0").iterdir() if ".cleaned" in p.name]
        assert not cleaned_files
        checkpoint = (data / "cleaner-offset-checkpoint").read_text().splitlines()
        assert checkpoint[0] == "0" and checkpoint[2].startswith(f"{TOPIC} 0 ")
