"""``spark.read.format("kafka-log")`` on logs the broker wrote for real
clients, on old-format segments and on damaged ones."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from broker.log.files import TopicPartition
from tests.integration.spark.conftest import KAFKA_PYTHON_RUNS, RECORDS_PER_RUN, Sent
from tests.spark_logs import Expected, plain_records

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _by_partition(rows: list[Any]) -> dict[tuple[str, int], list[Expected]]:
    out: dict[tuple[str, int], list[Expected]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"])):
        headers = tuple((h["key"], h["value"]) for h in r["headers"])
        out[(r["topic"], r["partition"])].append(
            Expected(r["offset"], r["timestamp"], r["key"], r["value"], headers)
        )
    return dict(out)


def test_reads_what_the_broker_stored_for_real_clients(
    spark: Any, broker_logs: Path, produced: list[Sent]
) -> None:
    df = spark.read.format("kafka-log").load(str(broker_logs))
    rows = [r.asDict(recursive=True) for r in df.collect()]
    assert not [r for r in rows if r["error"] is not None]
    assert all(r["crc_valid"] for r in rows)
    got = _by_partition(rows)
    assert got == plain_records([str(broker_logs)])
    # ... and that is what the clients sent, in order, offsets from 0
    sent: dict[tuple[str, int], list[tuple[Any, ...]]] = defaultdict(list)
    for s in produced:
        sent[(s.topic, s.partition)].append((s.key, s.value, s.headers))
    assert {tp: [(e.key, e.value, e.headers) for e in recs] for tp, recs in got.items()} == sent
    assert all([e.offset for e in recs] == list(range(len(recs))) for recs in got.values())
    assert len(rows) == RECORDS_PER_RUN * (len(KAFKA_PYTHON_RUNS) + 1)
    # the broker stores v2 whatever the client spoke (Kafka 3.x), keeping the codec
    kinds = {(r["topic"], r["magic"], r["codec"]) for r in rows}
    assert ("kp-m0-snappy", 2, "snappy") in kinds and ("kp-m2-zstd", 2, "zstd") in kinds
    v0 = [r for r in rows if r["topic"] == "kp-m0-none"]
    assert {r["timestamp"] for r in v0} == {-1}  # v0 records carry no timestamp
    idem = [r for r in rows if r["topic"] == "ck-idem-gzip"]
    assert {r["producer_id"] >= 0 for r in idem} == {True}
    assert len(list(broker_logs.glob("kp-m2-lz4-0/*.log"))) >= 2  # rolled segments


def test_pushed_filters_are_exact_and_prune_files(spark: Any, broker_logs: Path) -> None:
    # a fresh DataFrame per filter set: Spark 4.3.0 keeps the read planned for one
    # pushdown on the relation and reuses it for a later query of the same
    # DataFrame that pushes nothing (README, "kafka-log data source"). No
    # packing: one task per planned segment, so task counts show what was kept
    def log() -> Any:
        return spark.read.format("kafka-log").option("packBytes", "0").load(str(broker_logs))

    narrow = log().where(
        "topic = 'kp-m2-lz4' AND partition = 0 AND offset >= 3 AND offset < 9 AND key IS NOT NULL"
    )
    rows = narrow.select("topic", "partition", "offset").collect()
    # offset o is send o; send 4 (4 % 9 == 4) had no key
    assert [(r.topic, r.partition, r.offset) for r in rows] == [
        ("kp-m2-lz4", 0, o) for o in (3, 5, 6, 7, 8)
    ]
    # planning opened only the files that may hold the rows: one task per segment
    # of the topic, of the partition, and then of the offset range
    files_of_topic = len(list(broker_logs.glob("kp-m2-lz4-*/*.log")))
    assert log().rdd.getNumPartitions() > files_of_topic >= 2
    assert log().where("topic = 'kp-m2-lz4'").rdd.getNumPartitions() == files_of_topic
    assert log().where("topic = 'kp-m2-lz4' AND partition = 1").rdd.getNumPartitions() == 1
    bases = sorted(int(f.stem) for f in broker_logs.glob("kp-m2-lz4-0/*.log"))
    holding = [
        b for i, b in enumerate(bases) if b < 9 and (i + 1 == len(bases) or bases[i + 1] > 3)
    ]
    assert narrow.rdd.getNumPartitions() == len(holding) < len(bases)
    in_list = log().where("topic IN ('kp-m1-gzip', 'kp-m0-none') AND offset IN (0, 39, 99)")
    assert sorted((r.topic, r.partition, r.offset) for r in in_list.collect()) == [
        (t, 0, o) for t in ("kp-m0-none", "kp-m1-gzip") for o in (0, 39)
    ]


def test_paths_splits_and_options(spark: Any, broker_logs: Path, legacy_logs: Path) -> None:
    partition_dir = broker_logs / "kp-m2-lz4-0"
    one_segment = sorted(partition_dir.glob("*.log"))[1]
    df = spark.read.format("kafka-log").load([str(one_segment), str(legacy_logs / "old-v1-1")])
    topics = {r.topic for r in df.select("topic").distinct().collect()}
    assert topics == {"kp-m2-lz4", "old-v1"}
    whole = spark.read.format("kafka-log").option("values", "false").load(str(partition_dir))
    split = (
        spark.read.format("kafka-log")
        .option("values", "false")
        .option("maxPartitionBytes", "300")
        .load(str(partition_dir))
    )
    assert split.rdd.getNumPartitions() > whole.rdd.getNumPartitions()
    assert sorted(split.collect()) == sorted(whole.collect())
    assert {r.value for r in whole.select("value").collect()} == {None}
    by_option = (
        spark.read.format("kafka-log")
        .option("topics", "old-v0")
        .option("startOffset", "10")
        .option("endOffset", "12")
        .load(str(legacy_logs))
    )
    assert sorted((r.partition, r.offset) for r in by_option.collect()) == [
        (0, 10),
        (0, 11),
        (1, 10),
        (1, 11),
    ]


def test_old_format_segments(
    spark: Any, legacy_logs: Path, legacy_run: tuple[Path, dict[TopicPartition, list[Expected]]]
) -> None:
    _, expected = legacy_run
    rows = [
        r.asDict(recursive=True)
        for r in spark.read.format("kafka-log").load(str(legacy_logs)).collect()
    ]
    got = _by_partition(rows)
    assert got == {(tp.topic, tp.partition): exp for tp, exp in expected.items()}
    magics = {
        (r["topic"], r["partition"], r["magic"], r["codec"], r["timestamp_type"]) for r in rows
    }
    assert ("old-v0", 0, 0, "none", -1) in magics
    assert ("old-v1", 1, 1, "snappy", 0) in magics
    assert ("old-v1-lat", 0, 1, "gzip", 1) in magics
    # compressed wrappers: one batch of three records, base offset = first inner offset
    wrapped = [r for r in rows if r["topic"] == "old-v1" and r["partition"] == 1]
    assert {(r["base_offset"], r["last_offset"]) for r in wrapped if r["offset"] == 4} == {(3, 5)}


def test_damage_is_reported_not_fatal(spark: Any, damaged_logs: Path) -> None:
    df = spark.read.format("kafka-log").load(str(damaged_logs))
    rows = [r.asDict() for r in df.collect()]
    errors = [r for r in rows if r["error"] is not None]
    kinds = sorted(r["error"].split(":")[0] for r in errors)
    assert kinds == [
        "size field 5 is too small for a magic v2 entry",
        "torn tail",
        "undecodable batch",
    ]
    assert sorted({r["crc_valid"] for r in rows if r["error"] is None}, key=str) == [False, True]
    assert len([r for r in rows if r["partition"] == 1 and r["error"] is None]) == 90
