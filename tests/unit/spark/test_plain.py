"""The single-process audit (``broker.spark.plain``) against numbers known by
construction: it is the reference the Spark audit is held to."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.spark import plain
from tests.spark_logs import (
    BASE_TS,
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


def _compacted() -> list[bytes]:
    """Two batches with offsets 0,2,5 and 9,10 (holes 1,3,4 inside; gap 6-8 between)."""
    a = build_v2_batch([SimpleRecord(BASE_TS + i, b"k", b"v") for i in range(3)], offsets=[0, 2, 5])
    b = build_v2_batch(
        [SimpleRecord(BASE_TS + 9, b"k", b"v"), SimpleRecord(-1, b"k", b"v")], base_offset=9
    )
    return [bytes(a.buffer), bytes(b.buffer)]


def test_clean_logs(tmp_path: Path) -> None:
    v2, _ = v2_appends(10, 4, codec=CompressionType.SNAPPY)
    v0, _ = legacy_appends(0, 5, 3)
    write_log_dir(
        tmp_path / "logs",
        {
            TopicPartition("a", 0): v2,
            TopicPartition("a", 1): v0,
            TopicPartition("c", 0): _compacted(),
        },
        topic_config(segment_bytes=1 << 20),
    )
    tables = plain.audit([str(tmp_path / "logs")])
    seg = {(s["topic"], s["partition"]): s for s in tables.segments}
    a0, a1, c0 = seg[("a", 0)], seg[("a", 1)], seg[("c", 0)]
    assert (a0["batches"], a0["records"], a0["legacy_batches"]) == (10, 40, 0)
    assert (a0["first_offset"], a0["last_offset"]) == (0, 39)
    assert (a0["min_timestamp"], a0["max_timestamp"]) == (BASE_TS, BASE_TS + 39_000)
    assert a0["bytes"] == a0["record_batch_bytes"] == Path(a0["segment"]).stat().st_size
    assert a0["compression_ratio"] > 1
    assert (a1["batches"], a1["records"], a1["legacy_batches"]) == (15, 15, 15)
    assert (a1["no_timestamp_records"], a1["min_timestamp"]) == (15, None)
    assert a1["compression_ratio"] == 1.0
    assert (c0["batch_offset_holes"], c0["offset_gaps"], c0["missing_offsets"]) == (3, 1, 3)
    assert c0["no_timestamp_records"] == 1 and c0["max_timestamp"] == BASE_TS + 9
    assert [p["kind"] for p in tables.problems] == ["gap"]
    assert tables.problems[0]["offset"] == 6
    (topic_a,) = [t for t in tables.topics if t["topic"] == "a"]
    assert (topic_a["partitions"], topic_a["segments"], topic_a["records"]) == (2, 2, 55)
    kinds = {(k["topic"], k["magic"], k["codec"]): k for k in tables.batch_kinds}
    assert kinds[("a", 2, "snappy")]["batches"] == 10
    assert kinds[("a", 0, "none")]["records"] == 15
    assert sum(t["records"] for t in tables.timeline) == 40 + 5  # batches with a timestamp
    assert {t["hour"] % plain.HOUR_MS for t in tables.timeline} == {0}


def test_damaged_logs(tmp_path: Path) -> None:
    v2, _ = v2_appends(30, 2, codec=CompressionType.GZIP)
    write_log_dir(
        tmp_path / "logs",
        {TopicPartition("d", 0): v2},
        topic_config(segment_bytes=1 << 20, index_interval_bytes=300),
    )
    path = tmp_path / "logs" / "d-0" / "00000000000000000000.log"
    batches = batch_positions(path)
    flip_byte(path, batches[3][0] + 90)  # CRC and gzip stream
    flip_byte(path, batches[5][0] + 30)  # CRC only (the max timestamp field)
    overwrite(
        path, batches[10][0] + 16, b"\x07"
    )  # magic 7: unreadable until the next index position
    cut(path, batches[-1][0] + 20)  # torn tail
    index = tmp_path / "logs" / "d-0" / "00000000000000000000.index"
    entries = bytearray(index.read_bytes())
    entries[4:8] = (batches[1][0] + 1).to_bytes(4, "big")  # first entry: not a batch start
    index.write_bytes(bytes(entries))
    tables = plain.audit([str(tmp_path / "logs")])
    (seg,) = tables.segments
    kinds = sorted(p["kind"] for p in tables.problems)
    assert seg["crc_failures"] == 2 and kinds.count("crc") == 2
    assert seg["undecodable_batches"] == 1 and kinds.count("undecodable") == 1
    assert seg["unreadable_spans"] == 2 and kinds.count("unreadable") == 2
    assert seg["offset_index_mismatches"] >= 1 and "offset-index" in kinds
    assert seg["offset_gaps"] >= 1 and "gap" in kinds
    unreadable = [p for p in tables.problems if p["kind"] == "unreadable"]
    assert unreadable[0]["position"] == batches[10][0]
    assert "torn tail" in unreadable[-1]["detail"]
    # every byte is in a decoded batch, the undecodable one, or an unreadable span
    assert seg["bytes"] == seg["record_batch_bytes"] + batches[3][1] + seg["unreadable_bytes"]
    assert seg["records"] == 2 * (seg["batches"] - 1)  # every framed batch but the undecodable


def test_a_compacted_partition(tmp_path: Path) -> None:
    """Gaps the log cleaner left are counted apart and are no problem; the
    segments from the first dirty offset on are dirty."""
    logs = tmp_path / "logs"
    config = topic_config(segment_bytes=600, cleanup_policy="compact")
    tp = TopicPartition("kv", 0)
    write_log_dir(logs, {tp: keyed_appends(40, 2, 3)}, config)
    first_dirty = clean_partition(logs, tp, config, 4)
    tables = plain.audit([str(logs)])
    assert tables.problems == []
    segments = sorted(tables.segments, key=lambda s: s["segment"])
    assert len(segments) == 8
    dirty = [s for s in segments if s["dirty_bytes"]]
    assert dirty and dirty[0]["first_offset"] == first_dirty
    assert all(s["dirty_bytes"] == s["bytes"] for s in dirty)
    assert all(s["compacted_segments"] == 1 and s["offset_gaps"] == 0 for s in segments)
    cleaned = [s for s in segments if not s["dirty_bytes"]]
    assert sum(s["cleaned_offset_gaps"] for s in cleaned) > 0
    assert sum(s["batch_offset_holes"] for s in cleaned) > 0
    assert sum(s["records"] for s in cleaned) < first_dirty
    (partition,) = tables.partitions
    total = sum(s["bytes"] for s in segments)
    assert partition["dirty_ratio"] == pytest.approx(sum(s["bytes"] for s in dirty) / total)
    assert partition["dirty_bytes"] < total
    # not compacted: no dirty ratio, gaps are problems (test_clean_logs)
    write_log_dir(tmp_path / "plain", {TopicPartition("p", 0): keyed_appends(2, 5, 3)})
    (plain_partition,) = plain.audit([str(tmp_path / "plain")]).partitions
    assert plain_partition["dirty_ratio"] is None and plain_partition["dirty_bytes"] == 0
