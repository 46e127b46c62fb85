"""Write with one real client, read back with another: the pieces of the round-trip tests.

Producing (every function sends ``rounds``: one flush per round, so each round
leaves the client as one request with one batch of the topic's partition 0):

=============  =========================================================  =====
client         how it is made to write the format                         magic
=============  =========================================================  =====
confluent,     ``api.version.request=false``, ``broker.version.fallback``  0
kcat           ``=0.9.0`` (librdkafka then speaks Produce v1)
(librdkafka)   client id ``magic1-...`` behind :class:`VersionCapProxy`    1
               with Produce capped at v2 (librdkafka picks magic 1 for a
               broker whose Produce ends at v2; a fallback >= 0.10 turns
               ApiVersions back on and gets v11 from us)
               defaults                                                   2
kafka-python   ``api_version=(0, 8, 2)`` / ``(0, 10, 0)`` / probed        0/1/2
aiokafka 0.14  always                                                     2
=============  =========================================================  =====

Consuming: every consumer assigns partitions itself (no consumer groups here,
``docs/operations.md``), starts at the beginning or at a given offset, and
returns what the client handed to the application as :class:`Got` (key,
value, headers, timestamp type and timestamp, offset), normalised across the
clients: a timestamp of -1 or a client's "not available" is ``None``.

kafka-python's old ``api_version`` values make it fetch with old versions:
(0, 10, 0) -> Fetch v2 (magic 1 down-conversion), (0, 9) -> Fetch v1 and
(0, 8, 2) -> Fetch v0 (magic 0).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.records.iterate import iter_batches
from broker.records.record import Record
from tests.aio import run

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: librdkafka clients whose id starts with this see Produce capped at v2 (magic 1)
MAGIC1_PREFIX = "magic1-"
MAGIC1_CAPS = {MAGIC1_PREFIX: {0: 2}}
KAFKA_PYTHON_API_VERSION: dict[int, tuple[int, ...] | None] = {0: (0, 8, 2), 1: (0, 10, 0), 2: None}
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Sent:
    """One record as given to a producer (partition 0)."""

    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    #: the CreateTime asked for; None lets the client stamp it (or none, magic 0)
    timestamp: int | None = None


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


# ---- producing ---------------------------------------------------------------------------------


def librdkafka_config(magic: int, codec: str, tag: str, linger_ms: int = 1000) -> dict[str, Any]:
    config: dict[str, Any] = {
        "compression.type": codec,
        # rd_kafka_flush() sends at once, so no batch leaves before it; kcat's
        # exit flush waits for linger.ms, so kcat gets a short one
        "linger.ms": linger_ms,
        "batch.num.messages": 10_000,
        "message.timeout.ms": 20_000,
        "socket.timeout.ms": 10_000,
        "client.id": f"rt-{tag}",
    }
    if magic == 0:
        config["api.version.request"] = False
        config["broker.version.fallback"] = "0.9.0"
    elif magic == 1:
        config["client.id"] = f"{MAGIC1_PREFIX}{tag}"
    return config


def produce_confluent(
    bootstrap: str, topic: str, rounds: Sequence[Sequence[Sent]], *, magic: int, codec: str
) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, **librdkafka_config(magic, codec, topic)}
    )
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for batch in rounds:
        for m in batch:
            kwargs: dict[str, Any] = {"partition": 0, "on_delivery": delivered}
            if m.headers:
                kwargs["headers"] = list(m.headers)
            if m.timestamp is not None:
                kwargs["timestamp"] = m.timestamp
            producer.produce(topic, value=m.value, key=m.key, **kwargs)
        remaining = producer.flush(30)
        assert remaining == 0, f"{remaining} messages to {topic} not delivered"
    assert not errors, errors


def produce_kcat(
    bootstrap: str, topic: str, rounds: Sequence[Sequence[Sent]], *, magic: int, codec: str
) -> None:
    """One kcat run per round. kcat reads ``key<TAB>value`` lines (no tab: null
    key; ``-Z``: empty value -> null), takes one header set per run (``-H``;
    ``-H name`` alone is a null value) and stamps timestamps itself. It reads
    all of stdin well within its 50 ms linger, so a round is one batch."""
    for batch in rounds:
        (headers,) = {m.headers for m in batch}
        assert all(m.timestamp is None for m in batch), "kcat cannot set timestamps"
        args = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t", "-Z"]
        for name, value in headers:
            args += ["-H", name if value is None else f"{name}={value.decode()}"]
        for key, value in librdkafka_config(magic, codec, topic, linger_ms=50).items():
            args += ["-X", f"{key}={value}"]
        lines = []
        for m in batch:
            value = m.value or b""
            assert b"\n" not in value and b"\t" not in value
            lines.append(value if m.key is None else m.key + b"\t" + value)
        done = subprocess.run(
            args, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr.decode()
        assert b"ERROR" not in done.stderr, done.stderr.decode()


def produce_kafka_python(
    bootstrap: str, topic: str, rounds: Sequence[Sequence[Sent]], *, magic: int, codec: str
) -> None:
    kafka = kafka_python()
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=KAFKA_PYTHON_API_VERSION[magic],
        compression_type=None if codec == "none" else codec,
        linger_ms=1000,
        batch_size=1 << 20,
        request_timeout_ms=20_000,
    )
    try:
        for batch in rounds:
            futures = [
                producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    headers=list(m.headers) if m.headers else None,
                    partition=0,
                    timestamp_ms=m.timestamp,
                )
                for m in batch
            ]
            producer.flush(30)
            for f in futures:
                f.get(timeout=30)
    finally:
        producer.close(timeout=10)


def produce_aiokafka(
    bootstrap: str, topic: str, rounds: Sequence[Sequence[Sent]], *, magic: int, codec: str
) -> None:
    assert magic == 2, "aiokafka 0.14 always writes magic 2"
    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if codec == "none" else codec,
            request_timeout_ms=20_000,
        )
        await producer.start()
        try:
            for batch in rounds:
                # one explicit batch per round: exactly one request
                b = producer.create_batch()
                for m in batch:
                    meta = b.append(
                        key=m.key, value=m.value, timestamp=m.timestamp, headers=list(m.headers)
                    )
                    assert meta is not None, "record does not fit the batch"
                future = await producer.send_batch(b, topic, partition=0)
                await asyncio.wait_for(future, 30)
        finally:
            await producer.stop()

    run(go())


PRODUCERS = {
    "confluent": produce_confluent,
    "kcat": produce_kcat,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
}

#: the formats and codecs each client can send (zstd needs magic 2 everywhere)
FORMATS: dict[str, dict[int, tuple[str, ...]]] = {
    "confluent": {0: CODECS[:4], 1: CODECS[:4], 2: CODECS},
    "kcat": {0: CODECS[:4], 1: CODECS[:4], 2: CODECS},
    "kafka-python": {0: CODECS[:4], 1: CODECS[:4], 2: CODECS},
    "aiokafka": {2: CODECS},
}


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
                for r in records:
                    kind = {0: CREATE_TIME, 1: LOG_APPEND_TIME}.get(r.timestamp_type)
                    got[tp.topic].append(
                        Got(
                            r.offset,
                            r.key,
                            r.value,
                            tuple(r.headers or ()),
                            *normalise_timestamp(kind, r.timestamp),
                        )
                    )
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
                    for r in records:
                        kind = {0: CREATE_TIME, 1: LOG_APPEND_TIME}.get(r.timestamp_type)
                        got[tp.topic].append(
                            Got(
                                r.offset,
                                r.key,
                                r.value,
                                tuple(r.headers or ()),
                                *normalise_timestamp(kind, r.timestamp),
                            )
                        )
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


# ---- what the broker stored --------------------------------------------------------------------


def stored_records(data_dir: Path, topic: str, partition: int = 0) -> list[Record]:
    """Every record in the partition's segment files, in offset order (batches must be v2)."""
    out: list[Record] = []
    for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        for b in iter_batches(data, file=True):
            assert b.magic == 2 and b.is_valid, (path, b.position)
            out += b.records()
    return out


def stored_batch_count(data_dir: Path, topic: str, partition: int = 0) -> int:
    return sum(
        1
        for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log"))
        for _ in iter_batches(path.read_bytes(), file=True)
    )
