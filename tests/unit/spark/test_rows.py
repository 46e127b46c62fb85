"""Splits and rows of one segment (``broker.spark.splits``, ``broker.spark.rows``),
without Spark: the reader functions are plain Python over Arrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType
from broker.spark import schemas
from broker.spark.layout import SegmentFile, discover
from broker.spark.rows import ReadOptions, ScanStats, read_batches, read_index, read_records
from broker.spark.selection import Range, Selection
from broker.spark.splits import SegmentSplit, plan, plan_folders
from tests.spark_logs import (
    Expected,
    batch_positions,
    cut,
    flip_byte,
    legacy_appends,
    topic_config,
    v2_appends,
    write_log_dir,
)


@pytest.fixture
def log(tmp_path: Path) -> tuple[list[SegmentFile], list[Expected]]:
    appends, expected = v2_appends(60, 5, codec=CompressionType.GZIP)
    write_log_dir(
        tmp_path / "logs",
        {TopicPartition("t", 0): appends, TopicPartition("u", 1): appends[:3]},
        topic_config(segment_bytes=3000, index_interval_bytes=400),
    )
    return discover([str(tmp_path / "logs")]), expected


def _table(batches: object) -> pa.Table:
    return pa.Table.from_batches(list(batches), schema=schemas.arrow_schema(schemas.LEVEL_RECORDS))


def _read(
    splits: list[SegmentSplit],
    selection: Selection,
    stats: ScanStats | None = None,
    **options: object,
) -> pa.Table:
    chunks = [b for s in splits for b in read_records(s, selection, ReadOptions(**options), stats)]  # type: ignore[arg-type]
    return _table(chunks)


def test_every_record_once_in_offset_order(log: tuple[list[SegmentFile], list[Expected]]) -> None:
    segments, expected = log
    t_segments = [s for s in segments if s.topic == "t"]
    assert len(t_segments) > 3
    table = _read(plan(t_segments, Selection()), Selection(), rows_per_batch=7)
    rows = table.to_pylist()
    assert [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in rows] == [
        (e.offset, e.timestamp, e.key, e.value) for e in expected
    ]
    assert [tuple((h["key"], h["value"]) for h in r["headers"]) for r in rows] == [
        e.headers for e in expected
    ]
    assert {(r["magic"], r["codec"], r["crc_valid"], r["error"]) for r in rows} == {
        (2, "gzip", True, None)
    }
    assert all(r["segment"].endswith(".log") for r in rows)


def test_large_segments_split_at_index_positions(
    log: tuple[list[SegmentFile], list[Expected]],
) -> None:
    segments, expected = log
    t_segments = [s for s in segments if s.topic == "t"]
    whole = plan(t_segments, Selection())
    pieces = plan(t_segments, Selection(), max_bytes=1000)
    assert len(pieces) > 2 * len(whole)
    for seg in t_segments:
        mine = [p for p in pieces if p.segment == seg]
        starts = {p for p, _ in batch_positions(seg.path)}
        assert mine[0].start == 0 and mine[-1].stop is None
        assert all(p.start in starts for p in mine)  # cut at batch boundaries
        assert [p.stop for p in mine[:-1]] == [p.start for p in mine[1:]]
    assert _read(pieces, Selection()).to_pylist() == _read(whole, Selection()).to_pylist()
    assert _read(pieces, Selection()).num_rows == len(expected)


def test_offset_filters_skip_files_and_batches(
    log: tuple[list[SegmentFile], list[Expected]],
) -> None:
    segments, expected = log
    t_segments = [s for s in segments if s.topic == "t"]
    selection = Selection(topics=frozenset({"t"}), offsets=Range(133, 141))
    splits = plan(segments, selection)
    # only the segment covering 133..140 is planned, and it starts at an index entry
    assert len(splits) == 1
    (split,) = splits
    assert split.segment.base_offset <= 133 and split.start > 0
    stats = ScanStats()
    table = _read(splits, selection, stats)
    assert table.column("offset").to_pylist() == list(range(133, 141))
    assert [r["value"] for r in table.to_pylist()] == [e.value for e in expected[133:141]]
    batches_in_segment = len(batch_positions(split.segment.path))
    assert stats.decoded_batches == 3  # 130-134, 135-139, 140-144
    assert stats.stopped_early
    assert stats.spans < batches_in_segment
    assert len(t_segments) > 1


def test_wrong_index_entries_do_not_lose_records(
    log: tuple[list[SegmentFile], list[Expected]],
) -> None:
    segments, expected = log
    seg = next(s for s in segments if s.topic == "t" and s.base_offset > 0)
    index = Path(seg.offset_index_path)
    data = bytearray(index.read_bytes())
    assert len(data) >= 16
    data[4:8] = (5).to_bytes(4, "big")  # first entry points mid-batch
    data[8:12] = (0).to_bytes(4, "big")  # second claims offset base+0 at a later batch
    index.write_bytes(bytes(data))
    low = seg.base_offset + 12
    selection = Selection(offsets=Range(low, low + 3))
    table = _read(plan([seg], selection), selection)
    assert table.column("offset").to_pylist() == [low, low + 1, low + 2]
    split_pieces = plan([seg], Selection(), max_bytes=200)
    assert _read(split_pieces, Selection()).num_rows == sum(
        1 for e in expected if seg.base_offset <= e.offset < (seg.next_base_offset or 10**9)
    )


def test_damage_gives_error_rows_and_the_rest(
    log: tuple[list[SegmentFile], list[Expected]],
) -> None:
    segments, _expected = log
    seg = next(s for s in segments if s.topic == "t")
    batches = batch_positions(seg.path)
    flip_byte(seg.path, batches[1][0] + 80)  # inside the deflate data: CRC and gzip fail
    last_pos, last_size = batches[-1]
    cut(seg.path, last_pos + last_size - 3)
    rows = _read(plan([seg], Selection()), Selection()).to_pylist()
    errors = [r for r in rows if r["error"] is not None]
    assert [(e["batch_position"], e["offset"], e["crc_valid"]) for e in errors] == [
        (batches[1][0], 5, False),
        (last_pos, None, None),
    ]
    assert "undecodable" in errors[0]["error"] and "torn tail" in errors[1]["error"]
    good = [r for r in rows if r["error"] is None]
    assert len(good) == 5 * (len(batches) - 2)
    # an offset bound drops the torn tail's row (its offset is unknown) but keeps batch 1's
    selection = Selection(offsets=Range(0, 10**9))
    bounded = _read(plan([seg], selection), selection).to_pylist()
    assert [r["batch_position"] for r in bounded if r["error"]] == [batches[1][0]]


def test_values_can_be_left_out(log: tuple[list[SegmentFile], list[Expected]]) -> None:
    segments, expected = log
    seg = segments[0]
    rows = _read(plan([seg], Selection()), Selection(), values=False).to_pylist()
    assert rows and all(r["value"] is None for r in rows)
    assert [r["key"] for r in rows] == [e.key for e in expected[: len(rows)]]


def test_batch_and_index_levels(tmp_path: Path) -> None:
    appends, _ = legacy_appends(1, 30, 3, codec=CompressionType.SNAPPY)
    write_log_dir(
        tmp_path / "l",
        {TopicPartition("l", 0): appends},
        topic_config(segment_bytes=1500, index_interval_bytes=100),
    )
    segments = discover([str(tmp_path / "l")])
    assert len(segments) > 1
    batch_rows = [
        r for s in plan(segments, Selection()) for b in read_batches(s) for r in b.to_pylist()
    ]
    assert len(batch_rows) == 30
    assert {(r["magic"], r["codec"], r["record_count"]) for r in batch_rows} == {(1, "snappy", 3)}
    assert sum(r["size"] for r in batch_rows) == sum(s.size for s in segments)
    index_rows = [
        r for s in plan_folders(segments, Selection()) for b in read_index(s) for r in b.to_pylist()
    ]
    assert {r["index"] for r in index_rows} == {"offset", "time"}
    assert not [r for r in index_rows if r["mismatch"]]
    assert all(r["problem"] is None for r in index_rows)


def test_small_splits_share_tasks(log: tuple[list[SegmentFile], list[Expected]]) -> None:
    from broker.spark.rows import read_split
    from broker.spark.splits import PackedSplit, pack, split_size

    segments, expected = log
    splits = plan(segments, Selection())
    assert pack(splits, 0) == splits
    budget = 2 * max(split_size(s) for s in splits)
    packed = pack(splits, budget)
    assert 1 < len(packed) < len(splits)
    assert all(
        sum(split_size(p) for p in task.parts) <= budget
        for task in packed
        if isinstance(task, PackedSplit)
    )
    # nothing lost, nothing read twice, log order kept
    flat = [p for t in packed for p in (t.parts if isinstance(t, PackedSplit) else (t,))]
    assert flat == splits
    rows = [
        r
        for task in packed
        for b in read_split("records", task, Selection())
        for r in b.to_pylist()
    ]
    assert len(rows) == len(expected) + 3 * 5  # topic t and the 3 batches of u
    big = pack(splits, 1)  # every split larger than the budget: each alone
    assert big == splits
    folders = plan_folders(segments, Selection(), pack_bytes=10**9)
    assert len(folders) == 1 and len(folders[0].segments) == len(segments)
