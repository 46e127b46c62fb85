"""Fixtures of the Spark pipeline tests.

* ``spark``: ONE SparkSession for the whole run (local[2], UI off, two
  shuffle partitions, SPARK_LOCAL_IP=127.0.0.1, quiet log4j, the JVM
  class-data-sharing archive under the user's cache dir), stopped with its
  JVM at the end (``broker.spark.session``).
* ``broker_logs``: a log dir written by the broker itself, run as a
  subprocess (``tests/integration/harness.py``), fed by real clients:
  kafka-python speaking magic 0, 1 and 2 with every codec it supports for
  that magic, and confluent-kafka (librdkafka); the broker is stopped
  cleanly before Spark reads the files. ``produced`` says what was sent.
* ``legacy_logs``: segments of v0/v1 message sets (uncompressed and
  compressed wrappers) as an old broker wrote them, with their indexes.
* ``damaged_logs``: a copy of part of both with a torn tail, a bad CRC, an
  undecodable batch and a lying index entry.
* ``compacted_logs``: a compacted topic, one partition cleaned by the log
  cleaner up to its fifth segment, the other never cleaned.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType
from tests.integration.harness import BrokerProcess
from tests.spark_logs import (
    BASE_TS,
    Expected,
    batch_positions,
    clean_partition,
    cut,
    flip_byte,
    keyed_appends,
    legacy_appends,
    overwrite,
    topic_config,
    v2_appends,
    write_log_dir,
)

#: (topic, kafka-python api_version or None for the newest, codec)
KAFKA_PYTHON_RUNS = [
    ("kp-m0-none", (0, 8, 2), None),
    ("kp-m0-snappy", (0, 8, 2), "snappy"),
    ("kp-m1-gzip", (0, 10, 0), "gzip"),
    ("kp-m1-lz4", (0, 10, 0), "lz4"),
    ("kp-m2-none", None, None),
    ("kp-m2-snappy", None, "snappy"),
    ("kp-m2-lz4", None, "lz4"),
    ("kp-m2-zstd", None, "zstd"),
]
RECORDS_PER_RUN = 40


@dataclass(frozen=True)
class Sent:
    topic: str
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from broker.spark import session

    started = session.start(
        "local[2]",
        {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
        app_name="broker-tests",
        progress=False,
    )
    try:
        yield started.spark
    finally:
        started.stop()


def _produce(bootstrap: str) -> list[Sent]:
    # kafka-python reads its schemas with a deprecated importlib API (as it
    # loads them, not only on import)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r".* is deprecated\. Use files\(\)", DeprecationWarning)
        return _produce_with_clients(bootstrap)


def _produce_with_clients(bootstrap: str) -> list[Sent]:
    from confluent_kafka import Producer
    from kafka import KafkaProducer

    sent: list[Sent] = []
    for topic, api, codec in KAFKA_PYTHON_RUNS:
        kwargs: dict[str, Any] = {"bootstrap_servers": bootstrap, "linger_ms": 20}
        if api is not None:
            kwargs["api_version"] = api
        producer = KafkaProducer(compression_type=codec, **kwargs)
        for i in range(RECORDS_PER_RUN):
            key = None if i % 9 == 4 else b"k%d" % i
            value = b"%s-%d-" % (topic.encode(), i) * (1 + i % 4)
            headers = (("n", b"%d" % i),) if api is None and i % 3 else ()
            partition = 0
            producer.send(
                topic, key=key, value=value, partition=partition, headers=list(headers) or None
            )
            sent.append(Sent(topic, partition, key, value, headers))
            if i % 6 == 5:  # several batches per partition, hence several segments
                producer.flush(30)
        producer.flush(30)
        producer.close(10)
    producer_ck = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "gzip",
            "linger.ms": 20,
            "enable.idempotence": True,
        }
    )
    for i in range(RECORDS_PER_RUN):
        value = b"ck-%d" % i
        producer_ck.produce(
            "ck-idem-gzip",
            value=value,
            key=b"c%d" % i,
            partition=0,
            headers=[("src", b"librdkafka")],
        )
        sent.append(Sent("ck-idem-gzip", 0, b"c%d" % i, value, (("src", b"librdkafka"),)))
    assert producer_ck.flush(30) == 0
    return sent


@pytest.fixture(scope="session")
def broker_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Sent]]:
    data = tmp_path_factory.mktemp("broker") / "data"
    data.mkdir()
    broker = BrokerProcess(
        data, num_partitions=1, log_segment_bytes=1024, log_index_interval_bytes=128
    )
    with broker:
        sent = _produce(broker.bootstrap)
    assert broker.proc is not None and broker.proc.returncode == 0, broker.log()
    return data, sent


@pytest.fixture(scope="session")
def broker_logs(broker_run: tuple[Path, list[Sent]]) -> Path:
    return broker_run[0]


@pytest.fixture(scope="session")
def produced(broker_run: tuple[Path, list[Sent]]) -> list[Sent]:
    return broker_run[1]


LEGACY = {
    TopicPartition("old-v0", 0): (0, CompressionType.NONE, None),
    TopicPartition("old-v0", 1): (0, CompressionType.GZIP, None),
    TopicPartition("old-v1", 0): (1, CompressionType.NONE, None),
    TopicPartition("old-v1", 1): (1, CompressionType.SNAPPY, None),
    TopicPartition("old-v1-lz4", 0): (1, CompressionType.LZ4, None),
    TopicPartition("old-v1-lat", 0): (1, CompressionType.GZIP, BASE_TS + 123),
}


@pytest.fixture(scope="session")
def legacy_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[TopicPartition, list[Expected]]]:
    root = tmp_path_factory.mktemp("legacy") / "logs"
    appends: dict[TopicPartition, list[bytes]] = {}
    expected: dict[TopicPartition, list[Expected]] = {}
    for tp, (magic, codec, lat) in LEGACY.items():
        appends[tp], expected[tp] = legacy_appends(
            magic, 30, 3, codec=codec, log_append_time=lat, ts_step=600_000
        )
    write_log_dir(root, appends, topic_config(segment_bytes=5000, index_interval_bytes=256))
    return root, expected


@pytest.fixture(scope="session")
def legacy_logs(legacy_run: tuple[Path, dict[TopicPartition, list[Expected]]]) -> Path:
    return legacy_run[0]


@pytest.fixture(scope="session")
def damaged_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Topic ``damaged``: partition 0 (v2 gzip) hurt in each of its first, second
    and last segments; partition 1 (v1 snappy) intact beside it."""
    root = tmp_path_factory.mktemp("damaged") / "logs"
    v2, _ = v2_appends(40, 3, codec=CompressionType.GZIP)
    v1, _ = legacy_appends(1, 30, 3, codec=CompressionType.SNAPPY)
    write_log_dir(
        root,
        {TopicPartition("damaged", 0): v2, TopicPartition("damaged", 1): v1},
        topic_config(segment_bytes=2000, index_interval_bytes=300),
    )
    p0 = sorted((root / "damaged-0").glob("*.log"))
    assert len(p0) >= 3
    first = batch_positions(p0[0])
    flip_byte(p0[0], first[1][0] + first[1][1] - 5)  # bad CRC (and gzip trailer)
    flip_byte(p0[0], first[2][0] + 30)  # bad CRC only: max timestamp field
    second = batch_positions(p0[1])
    overwrite(p0[1], second[1][0] + 8, b"\x00\x00\x00\x05")  # size field 5: unreadable
    index = p0[1].with_suffix(".index")
    raw = bytearray(index.read_bytes())
    raw[4:8] = (second[0][0] + 3).to_bytes(4, "big")  # an entry pointing mid-batch
    index.write_bytes(bytes(raw))
    last = batch_positions(p0[-1])
    cut(p0[-1], last[-1][0] + last[-1][1] // 2)  # torn tail
    return root


@pytest.fixture(scope="session")
def compacted_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compacted") / "logs"
    config = topic_config(segment_bytes=600, cleanup_policy="compact")
    cleaned, never = TopicPartition("kv", 0), TopicPartition("kv", 1)
    write_log_dir(root, {cleaned: keyed_appends(40, 2, 3), never: keyed_appends(8, 2, 3)}, config)
    clean_partition(root, cleaned, config, 4)
    return root


def run_cli(spark: Any, *argv: str) -> int:
    """``broker pipeline ...`` parsed by the real parser and run on the suite's
    session (``broker.spark.cli.run`` would start and stop a JVM of its own)."""
    from broker.cli import build_parser
    from broker.spark.cli import _dispatch

    args = build_parser("pipeline").parse_args(["pipeline", *argv, "--quiet"])
    return _dispatch(args, spark, lambda _message: None)


@pytest.fixture(scope="session")
def converted(spark: Any, legacy_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``legacy_logs`` rewritten as v2 by ``broker pipeline convert``."""
    out = tmp_path_factory.mktemp("converted") / "logs"
    argv = ["convert", str(legacy_logs), "--out", str(out)]
    argv += ["--index-interval-bytes", "200", "--batch-bytes", "256"]
    assert run_cli(spark, *argv) == 0
    return out


@pytest.fixture(scope="session")
def audited(
    spark: Any,
    broker_logs: Path,
    legacy_logs: Path,
    damaged_logs: Path,
    converted: Path,
    compacted_logs: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[str]]:
    """One ``broker pipeline audit`` of every log dir of the suite (Spark's
    start-up and first job are paid once)."""
    out = tmp_path_factory.mktemp("audit")
    paths = [str(p) for p in (broker_logs, legacy_logs, damaged_logs, converted, compacted_logs)]
    assert run_cli(spark, "audit", *paths, "--out", str(out)) == 1  # 1: problems found
    return out, paths
