"""``broker pipeline convert``: old-format logs rewritten as v2, then opened
and served by the broker itself."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType
from broker.spark.layout import discover
from tests.integration.harness import BrokerProcess
from tests.integration.spark.conftest import LEGACY
from tests.spark_logs import Expected, read_through_log

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _key(records: list[Expected]) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in records]


def test_the_broker_log_opens_and_reads_the_result(
    converted: Path, legacy_run: tuple[Path, dict[TopicPartition, list[Expected]]]
) -> None:
    source, expected = legacy_run
    assert sorted(p.name for p in converted.iterdir() if p.is_dir()) == sorted(
        f"{tp.topic}-{tp.partition}" for tp in LEGACY
    )
    for name in ("recovery-point-offset-checkpoint", ".kafka_cleanshutdown"):
        assert (converted / name).exists()
    for tp, records in expected.items():
        folder = f"{tp.topic}-{tp.partition}"
        log, read = read_through_log(converted / folder)
        assert (log.log_start_offset, log.log_end_offset) == (0, 90)
        log.close()
        assert _key(read) == _key(records)
        # one destination segment per source segment, at the same base offsets
        assert [s.base_offset for s in discover([str(converted / folder)])] == [
            s.base_offset for s in discover([str(source / folder)])
        ]
        assert list((converted / folder).glob("*.snapshot"))


def test_the_audit_of_the_result_is_clean(audited: tuple[Path, list[str]], converted: Path) -> None:
    out, _paths = audited
    mine = [
        p for p in pq.read_table(out / "partitions").to_pylist() if p["log_dir"] == str(converted)
    ]
    assert len(mine) == len(LEGACY) and sum(p["records"] for p in mine) == 90 * len(LEGACY)
    for p in mine:
        assert p["legacy_batches"] == 0
        assert p["offset_index_mismatches"] == p["time_index_mismatches"] == 0
        assert p["offset_index_entries"] > 0
        assert p["crc_failures"] == p["offset_gaps"] == p["unreadable_bytes"] == 0
    kinds = {
        (k["topic"], k["magic"], k["codec"])
        for k in pq.read_table(out / "batch_kinds").to_pylist()
        if k["log_dir"] == str(converted)
    }
    # codecs kept: uncompressed sets grouped into uncompressed v2 batches
    assert kinds == {
        (tp.topic, 2, CompressionType(codec).config_name.replace("uncompressed", "none"))
        for tp, (_magic, codec, _lat) in LEGACY.items()
    }
    problems = [
        p for p in pq.read_table(out / "problems").to_pylist() if p["log_dir"] == str(converted)
    ]
    assert problems == []


def test_a_real_client_consumes_the_result(
    converted: Path,
    legacy_run: tuple[Path, dict[TopicPartition, list[Expected]]],
    tmp_path: Path,
) -> None:
    _source, expected = legacy_run
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r".* is deprecated\. Use files\(\)", DeprecationWarning)
        got = _consume(converted, list(expected))
    for tp, records in expected.items():
        assert got[tp] == [(r.offset, r.timestamp, r.key, r.value) for r in records], tp


def _consume(data: Path, partitions: list[TopicPartition]) -> dict[TopicPartition, list[Any]]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    out: dict[TopicPartition, list[Any]] = {}
    with BrokerProcess(data) as broker:
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            enable_auto_commit=False,
            consumer_timeout_ms=5000,
        )
        try:
            for tp in partitions:
                ktp = KafkaTopicPartition(tp.topic, tp.partition)
                consumer.assign([ktp])
                consumer.seek(ktp, 0)
                records: list[Any] = []
                for message in consumer:
                    records.append((message.offset, message.timestamp, message.key, message.value))
                    if message.offset == 89:
                        break
                out[tp] = records
        finally:
            consumer.close()
    return out
