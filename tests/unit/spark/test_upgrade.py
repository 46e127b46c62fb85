"""One partition rewritten as v2 (``broker.spark.upgrade``), checked by opening
the result with the broker's own log and by the plain audit."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType, TimestampType
from broker.spark import plain
from broker.spark.layout import discover
from broker.spark.upgrade import convert_partition
from tests.spark_logs import (
    BASE_TS,
    Expected,
    batch_positions,
    flip_byte,
    legacy_appends,
    read_through_log,
    topic_config,
    v2_appends,
    write_log_dir,
)

SOURCES = {
    "v0-none": (0, CompressionType.NONE, None),
    "v0-gzip": (0, CompressionType.GZIP, None),
    "v1-none": (1, CompressionType.NONE, None),
    "v1-snappy": (1, CompressionType.SNAPPY, None),
    "v1-lz4": (1, CompressionType.LZ4, None),
    "v1lat-none": (1, CompressionType.NONE, BASE_TS + 42),
    "v1lat-gzip": (1, CompressionType.GZIP, BASE_TS + 43),
}


def _write(tmp_path: Path, name: str) -> tuple[Path, list[Expected]]:
    magic, codec, lat = SOURCES[name]
    appends, expected = legacy_appends(magic, 25, 4, codec=codec, log_append_time=lat)
    write_log_dir(
        tmp_path / "src", {TopicPartition(name, 0): appends}, topic_config(segment_bytes=1500)
    )
    return tmp_path / "src" / f"{name}-0", expected


def _key(records: list[Expected]) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in records]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_legacy_partitions_become_v2_with_the_same_records(tmp_path: Path, name: str) -> None:
    src, expected = _write(tmp_path, name)
    result = convert_partition(str(src), str(tmp_path / "dst"))
    dst = tmp_path / "dst" / src.name
    assert not result.problems
    assert (result.records, result.log_start_offset, result.log_end_offset) == (100, 0, 100)
    # the broker's log opens it (with full recovery too: nothing to truncate) and serves it
    for clean in (True, False):
        log, records = read_through_log(dst, clean=clean)
        assert log.truncated_bytes == 0
        log.close()
        assert _key(records) == _key(expected)
    # same segment boundaries, only v2, indexes as the broker writes them
    assert [s.base_offset for s in discover([str(dst)])] == [
        s.base_offset for s in discover([str(src)])
    ]
    tables = plain.audit([str(dst)])
    (topic,) = tables.topics
    assert topic["records"] == 100 and topic["legacy_batches"] == 0
    assert not tables.problems
    codec = SOURCES[name][1]
    kinds = {(k["magic"], k["codec"]) for k in tables.batch_kinds}
    assert kinds == {(2, CompressionType(codec).config_name.replace("uncompressed", "none"))}
    if codec == CompressionType.NONE:  # single entries grouped into fewer batches
        assert result.batches_out < result.batches_in
    else:  # one v2 batch per wrapper
        assert result.batches_out == result.batches_in == 25
    assert list(dst.glob("*.snapshot")) and (dst / "leader-epoch-checkpoint").exists()


def test_a_target_codec_recompresses_every_batch(tmp_path: Path) -> None:
    legacy, expected_legacy = legacy_appends(1, 10, 3, codec=CompressionType.GZIP)
    modern, expected_modern = v2_appends(
        10, 3, codec=CompressionType.LZ4, start_offset=30, producer_id=7
    )
    write_log_dir(tmp_path / "src", {TopicPartition("mixed", 0): legacy + modern})
    result = convert_partition(
        str(tmp_path / "src" / "mixed-0"), str(tmp_path / "dst"), codec=CompressionType.ZSTD
    )
    assert result.recompressed_batches == 10 and not result.problems
    dst = tmp_path / "dst" / "mixed-0"
    log, records = read_through_log(dst, now_ms=BASE_TS + 60_000)
    assert _key(records) == _key(expected_legacy + expected_modern)
    assert [r.headers for r in records[30:]] == [e.headers for e in expected_modern]
    # the producer's state survived: last batch 57-59 with sequence 27-29
    entry = log.producer_state.last_entry(7)
    assert entry is not None and (entry.last_seq, entry.last_data_offset) == (29, 59)
    log.close()
    tables = plain.audit([str(dst)])
    assert {(k["magic"], k["codec"]) for k in tables.batch_kinds} == {(2, "zstd")}
    assert not tables.problems


def test_lat_uncompressed_entries_group_only_while_their_timestamp_holds(tmp_path: Path) -> None:
    first, e1 = legacy_appends(1, 3, 2, log_append_time=BASE_TS + 1)
    second, e2 = legacy_appends(1, 3, 2, start_offset=6, log_append_time=BASE_TS + 2)
    create, e3 = legacy_appends(1, 3, 2, start_offset=12)
    write_log_dir(tmp_path / "src", {TopicPartition("lat", 0): first + second + create})
    result = convert_partition(str(tmp_path / "src" / "lat-0"), str(tmp_path / "dst"))
    assert result.batches_out == 3
    dst = tmp_path / "dst" / "lat-0"
    _log, records = read_through_log(dst)
    assert _key(records) == _key(e1 + e2 + e3)
    from broker.records.iterate import iter_batches

    data = b"".join(Path(s.path).read_bytes() for s in discover([str(dst)]))
    types = [b.header().timestamp_type for b in iter_batches(data, file=True)]
    assert types == [
        TimestampType.LOG_APPEND_TIME,
        TimestampType.LOG_APPEND_TIME,
        TimestampType.CREATE_TIME,
    ]


def test_damaged_batches_are_left_out_and_reported(tmp_path: Path) -> None:
    src, expected = _write(tmp_path, "v1-snappy")
    seg = discover([str(src)])[0]
    pos, size = batch_positions(seg.path)[2]
    flip_byte(seg.path, pos + size - 1)
    result = convert_partition(str(src), str(tmp_path / "dst"))
    assert len(result.problems) == 1 and "CRC" in result.problems[0]
    _log, records = read_through_log(tmp_path / "dst" / src.name)
    assert _key(records) == _key(expected[:8] + expected[12:])
