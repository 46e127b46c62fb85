"""Reading back with every real client: the consumer side of the round-trip tests
(the producing side is :mod:`tests.integration.producers`).

Every consumer assigns partitions itself (no consumer groups here,
``docs/operations.md``), starts at the beginning or at a given offset, and
returns what the client handed to the application as :class:`Got` (key,
value, headers, timestamp type and timestamp, offset), normalised across the
clients: a timestamp of -1 or a client's "not available" is ``None``.

kafka-python's old ``api_version`` values make it fetch with old versions:
(0, 10, 0) -> Fetch v2 (magic 1 down-conversion), (0, 9) -> Fetch v1 and
(0, 8, 2) -> Fetch v0 (magic 0).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.aio import run

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Got:
    """One record as a consumer handed it to the application."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    #: CREATE_TIME, LOG_APPEND_TIME or None (no timestamp)
    timestamp_type: str | None
    timestamp: int | None


def normalise_timestamp(kind: str | None, ts: int | None) -> tuple[str | None, int | None]:
    if kind is None or ts is None or ts < 0:
        return None, None
    return kind, ts


def kafka_python() -> Any:
    with warnings.catch_warnings():
        # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka

    return kafka


# ---- consuming ---------------------------------------------------------------------------------

#: a start position: an offset, or BEGINNING
BEGINNING = -2
TIMEOUT = 30.0


def _done(got: Mapping[str, list[Got]], want: Mapping[str, int]) -> bool:
    return all(len(got[t]) >= n for t, n in want.items())


def _progress(got: Mapping[str, list[Got]], want: Mapping[str, int]) -> str:
    return ", ".join(f"{t}: {len(got[t])}/{n}" for t, n in want.items() if len(got[t]) < n)


def consume_confluent(
    bootstrap: str,
    starts: Mapping[str, int],
    want: Mapping[str, int],
    *,
    timeout: float = TIMEOUT,
    **config: Any,
) -> dict[str, list[Got]]:
    """Partition 0 of each topic from its start; until ``want`` records per topic."""
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    kinds = {
        confluent_kafka.TIMESTAMP_CREATE_TIME: CREATE_TIME,
        confluent_kafka.TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME,
    }
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            # librdkafka insists on a group id; assign() joins no group
            "group.id": f"rt-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            **config,
        }
    )
    got: dict[str, list[Got]] = {t: [] for t in want}
    try:
        consumer.assign(
            [
                TopicPartition(t, 0, OFFSET_BEGINNING if start == BEGINNING else start)
                for t, start in starts.items()
            ]
        )
        deadline = time.monotonic() + timeout
        while not _done(got, want) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.2):
                assert m.error() is None, m.error()
                kind, ts = m.timestamp()
                got[m.topic()].append(
                    Got(
                        m.offset(),
                        m.key(),
                        m.value(),
                        tuple(m.headers() or ()),
                        *normalise_timestamp(kinds.get(kind), ts),
                    )
                )
    finally:
        consumer.close()
    assert _done(got, want), f"confluent-kafka: {_progress(got, want)}"
    return got


def _got_from_consumer_record(r: Any) -> Got:
    """kafka-python's and aiokafka's ConsumerRecord (same attributes) as a Got."""
    kind = {0: CREATE_TIME, 1: LOG_APPEND_TIME}.get(r.timestamp_type)
    return Got(
        r.offset, r.key, r.value, tuple(r.headers or ()), *normalise_timestamp(kind, r.timestamp)
    )


def consume_kafka_python(
    bootstrap: str,
    starts: Mapping[str, int],
    want: Mapping[str, int],
    *,
    api_version: tuple[int, ...] | None = None,
    timeout: float = TIMEOUT,
) -> dict[str, list[Got]]:
    kafka = kafka_python()
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=20_000,
    )
    got: dict[str, list[Got]] = {t: [] for t in want}
    try:
        tps = {t: kafka.TopicPartition(t, 0) for t in starts}
        consumer.assign(list(tps.values()))
        for t, start in starts.items():
            if start == BEGINNING:
                consumer.seek_to_beginning(tps[t])
            else:
                consumer.seek(tps[t], start)
        deadline = time.monotonic() + timeout
        while not _done(got, want) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200, max_records=10_000).items():
                got[tp.topic].extend(map(_got_from_consumer_record, records))
    finally:
        consumer.close()
    assert _done(got, want), f"kafka-python {api_version}: {_progress(got, want)}"
    return got


def consume_aiokafka(
    bootstrap: str,
    starts: Mapping[str, int],
    want: Mapping[str, int],
    *,
    timeout: float = TIMEOUT,
) -> dict[str, list[Got]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    got: dict[str, list[Got]] = {t: [] for t in want}

    async def go() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            request_timeout_ms=20_000,
        )
        await consumer.start()
        try:
            tps = {t: TopicPartition(t, 0) for t in starts}
            consumer.assign(list(tps.values()))
            for t, start in starts.items():
                if start == BEGINNING:
                    await consumer.seek_to_beginning(tps[t])
                else:
                    consumer.seek(tps[t], start)
            deadline = time.monotonic() + timeout
            while not _done(got, want) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200, max_records=10_000)
                for tp, records in batches.items():
                    got[tp.topic].extend(map(_got_from_consumer_record, records))
        finally:
            await consumer.stop()

    run(go())
    assert _done(got, want), f"aiokafka: {_progress(got, want)}"
    return got


KCAT_CONSUME = ("kcat", "-C", "-p", "0", "-o", "beginning", "-e", "-J", "-q")
KCAT_CONSUME += ("-X", "fetch.wait.max.ms=100")


def consume_kcat(
    bootstrap: str, topics: Sequence[str], *, parallel: int = 8, timeout: float = TIMEOUT
) -> dict[str, list[Got]]:
    """``kcat -C -o beginning -e -J`` per topic (partition 0), a few at a time."""
    kinds = {"create": CREATE_TIME, "logappend": LOG_APPEND_TIME}

    def decode(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    out: dict[str, list[Got]] = {}
    pending = list(topics)
    while pending:
        wave, pending = pending[:parallel], pending[parallel:]
        procs = {
            t: subprocess.Popen(
                [*KCAT_CONSUME, "-b", bootstrap, "-t", t],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for t in wave
        }
        for t, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, (t, stderr.decode())
            records = []
            for line in stdout.decode().splitlines():
                j = json.loads(line)
                assert j["topic"] == t and j["partition"] == 0, j
                flat = j.get("headers") or []
                headers = tuple((flat[i], decode(flat[i + 1])) for i in range(0, len(flat), 2))
                records.append(
                    Got(
                        j["offset"],
                        decode(j["key"]),
                        decode(j["payload"]),
                        headers,
                        *normalise_timestamp(kinds.get(j["tstype"]), j["ts"]),
                    )
                )
            out[t] = records
    return out
