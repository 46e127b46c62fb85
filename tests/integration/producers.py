"""Producing with the real clients, each configured to send a given message format.

How each client is made to send magic 0/1/2 (measured with the clients these tests install):

=============  ==========================================================  =====
client         settings                                                    magic
=============  ==========================================================  =====
librdkafka     ``api.version.request=false``,                              0
(confluent,    ``broker.version.fallback=0.9.0``
kcat)          client id ``magic1-...`` behind a proxy that caps Produce   1
               at v2 in the ApiVersions answer (a fallback of 0.10.0
               turns ApiVersions back on, and our broker offers v11)
               defaults (ApiVersions: Produce v3+ and Fetch v4+)           2
kafka-python   ``api_version=(0, 8, 2)`` / ``(0, 10, 0)`` / probed         0/1/2
aiokafka 0.14  always                                                      2
=============  ==========================================================  =====

Every producer function takes the messages to send (:class:`Msg`) and
returns once the client reports them delivered (acks 1/all) or flushed
(acks 0). What was sent on the wire and what was stored is for the tests to
check; nothing here trusts the client's settings.
"""

from __future__ import annotations

import asyncio
import subprocess
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.aio import run

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: librdkafka clients whose id starts with this get Produce capped at v2 by
#: :class:`tests.integration.wire.CaptureProxy` (``MAGIC1_CAPS``)
MAGIC1_CLIENT_ID = "magic1-librdkafka"
MAGIC1_CAPS = {"magic1-": {0: 2}}
KAFKA_PYTHON_API_VERSION: dict[int, tuple[int, ...] | None] = {0: (0, 8, 2), 1: (0, 10, 0), 2: None}


@dataclass(frozen=True)
class Msg:
    partition: int
    key: bytes | None
    #: None: a null value (a tombstone)
    value: bytes | None
    #: a None header value is a null one (kafka-python refuses those)
    headers: tuple[tuple[str, bytes | None], ...] = ()
    #: the CreateTime the client is asked to set; None lets the client stamp it
    timestamp: int | None = None


def filler(tag: str, size: int = 2048) -> bytes:
    """A compressible value: the tag, then repeated text (every codec shrinks it)."""
    text = f"{tag}|" + "the quick brown fox jumps over the lazy dog; " * (size // 45 + 1)
    return text.encode()[:size]


def _kafka_python() -> Any:
    with warnings.catch_warnings():
        # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka

    return kafka


# ---- librdkafka: confluent-kafka -------------------------------------------------------------


def librdkafka_config(
    magic: int, codec: str, acks: int, idempotent: bool, **extra: Any
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "compression.type": codec,
        "acks": str(acks),
        "linger.ms": 20,
        "enable.idempotence": idempotent,
        "message.timeout.ms": 20_000,
        "socket.timeout.ms": 10_000,
    }
    if magic == 0:
        config["api.version.request"] = False
        config["broker.version.fallback"] = "0.9.0"
    elif magic == 1:
        config["client.id"] = MAGIC1_CLIENT_ID
    config.update(extra)
    return config


def produce_confluent(
    bootstrap: str,
    topic: str,
    msgs: Sequence[Msg],
    *,
    magic: int,
    codec: str,
    acks: int,
    idempotent: bool = False,
) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, **librdkafka_config(magic, codec, acks, idempotent)}
    )
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for m in msgs:
        kwargs: dict[str, Any] = {"partition": m.partition, "on_delivery": delivered}
        if m.headers:
            kwargs["headers"] = list(m.headers)
        if m.timestamp is not None:
            kwargs["timestamp"] = m.timestamp
        producer.produce(topic, value=m.value, key=m.key, **kwargs)
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages not delivered"
    assert not errors, errors


# ---- librdkafka: kcat (Debian) ---------------------------------------------------------------


def produce_kcat(
    bootstrap: str,
    topic: str,
    msgs: Sequence[Msg],
    *,
    magic: int,
    codec: str,
    acks: int,
    idempotent: bool = False,
) -> None:
    """One kcat run per partition; keys via ``-K`` (a line without the tab has a
    null key), null values via ``-Z`` (an empty value is sent as null), one
    shared header set via ``-H`` (``-H name`` alone: a null value; kcat cannot
    vary headers per message, nor set timestamps)."""
    config = librdkafka_config(magic, codec, acks, idempotent)
    for partition in sorted({m.partition for m in msgs}):
        part = [m for m in msgs if m.partition == partition]
        headers = {m.headers for m in part}
        assert len(headers) == 1, "kcat sends one header set per run"
        assert all(m.timestamp is None for m in part), "kcat stamps its own timestamps"
        assert all(m.value != b"" for m in part), "-Z turns empty values into nulls"
        args = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", str(partition), "-K", "\t", "-Z"]
        for k, v in next(iter(headers)):
            args += ["-H", k if v is None else f"{k}={v.decode()}"]
        for key, value in config.items():
            args += ["-X", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
        lines = [
            (m.value or b"") if m.key is None else m.key + b"\t" + (m.value or b"") for m in part
        ]
        assert not any(b"\n" in line for line in lines)
        stdin = b"".join(line + b"\n" for line in lines)
        done = subprocess.run(args, input=stdin, capture_output=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr.decode()
        assert b"ERROR" not in done.stderr and b"failed" not in done.stderr, done.stderr.decode()


# ---- kafka-python -----------------------------------------------------------------------------


def produce_kafka_python(
    bootstrap: str,
    topic: str,
    msgs: Sequence[Msg],
    *,
    magic: int,
    codec: str,
    acks: int,
    idempotent: bool = False,
) -> None:
    kafka = _kafka_python()
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=KAFKA_PYTHON_API_VERSION[magic],
        compression_type=None if codec == "none" else codec,
        acks="all" if acks == -1 else acks,
        enable_idempotence=idempotent,
        linger_ms=20,
        request_timeout_ms=20_000,
    )
    try:
        futures = []
        for m in msgs:
            futures.append(
                producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    headers=list(m.headers) if m.headers else None,
                    partition=m.partition,
                    timestamp_ms=m.timestamp,
                )
            )
        producer.flush(30)
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close(timeout=10)


# ---- aiokafka ---------------------------------------------------------------------------------


def produce_aiokafka(
    bootstrap: str,
    topic: str,
    msgs: Sequence[Msg],
    *,
    magic: int,
    codec: str,
    acks: int,
    idempotent: bool = False,
) -> None:
    assert magic == 2, "aiokafka 0.14 always sends magic 2"
    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if codec == "none" else codec,
            acks="all" if acks == -1 else acks,
            enable_idempotence=idempotent,
            linger_ms=20,
            request_timeout_ms=20_000,
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    headers=list(m.headers) if m.headers else None,
                    partition=m.partition,
                    timestamp_ms=m.timestamp,
                )
                for m in msgs
            ]
            await asyncio.wait_for(asyncio.gather(*futures), 30)
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
