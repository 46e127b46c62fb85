"""How the ``kafka-log`` source packs small segments into input partitions
(``broker.spark.splits.pack`` / ``pack_target``, ``KafkaLogReader.partitions``),
without Spark: the reader's planning and reading are plain Python."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.spark import datasource
from broker.spark.datasource import KafkaLogReader, ReaderConfig
from broker.spark.layout import SegmentFile, discover
from broker.spark.selection import Selection
from broker.spark.splits import (
    DEFAULT_MAX_SPLIT_BYTES,
    DEFAULT_OPEN_COST_BYTES,
    FolderSplit,
    PackedSplit,
    SegmentSplit,
    pack,
    pack_target,
    plan,
)
from tests.spark_logs import topic_config, v2_appends, write_log_dir

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def small_segments(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """One partition of about 200 segments of one or two small batches;
    (log dir, records, segments)."""
    log_dir = tmp_path_factory.mktemp("packing") / "logs"
    appends, expected = v2_appends(200, 2)
    write_log_dir(log_dir, {TopicPartition("t", 0): appends}, topic_config(segment_bytes=256))
    segments = len(discover([str(log_dir)]))
    assert segments > 150
    return log_dir, len(expected), segments


def reader(log_dir: Path, **options: str) -> KafkaLogReader:
    return KafkaLogReader(ReaderConfig.from_options({"path": str(log_dir), **options}))


def parts_of(split: object) -> tuple[SegmentSplit, ...]:
    if isinstance(split, PackedSplit):
        return split.parts
    assert isinstance(split, SegmentSplit)
    return (split,)


def test_pack_target_is_sparks_max_split_bytes() -> None:
    # min(maxPartitionBytes, max(openCost, (bytes + openCost per file) / minPartitions))
    assert pack_target([1000] * 200, 128 * MIB, 4 * MIB, 2) == 128 * MIB
    assert pack_target([1000] * 200, 128 * MIB, 4 * MIB, 400) == 4 * MIB
    assert pack_target([100 * MIB] * 3, 128 * MIB, 4 * MIB, 8) == (312 * MIB) // 8
    assert pack_target([], 128 * MIB, 4 * MIB, 8) == 4 * MIB
    assert pack_target([10, 10], 128 * MIB, 0, 1) == 20


def test_each_split_counts_its_open_cost() -> None:
    segment = SegmentFile("t", 0, 0, "/logs/t-0/00000000000000000000.log", 1000, None)
    splits = [SegmentSplit(segment)] * 10
    packed = pack(splits, 10 * MIB, open_cost=4 * MIB)
    # 1000 B + 4 MiB each: a third still starts below 10 MiB, a fourth would not
    assert [len(parts_of(t)) for t in packed] == [3, 3, 3, 1]
    assert pack(splits, 10 * MIB) == [PackedSplit(tuple(splits))]  # no open cost: all in one


def test_many_small_segments_are_packed_by_default(
    small_segments: tuple[Path, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    log_dir, records, count = small_segments
    monkeypatch.setattr(datasource.os, "cpu_count", lambda: 2)
    segments = discover([str(log_dir)])
    r = reader(log_dir)
    tasks = r.planned_splits()
    # 128 MiB tasks of segments costing their bytes + 4 MiB each: 32 per task
    per_task = DEFAULT_MAX_SPLIT_BYTES // DEFAULT_OPEN_COST_BYTES
    assert len(tasks) == math.ceil(count / per_task)
    # every segment once, in log order
    flat = [p for t in tasks for p in parts_of(t)]
    assert flat == plan(segments, Selection())
    rows = [row for p in r.partitions() for b in r.read(p) for row in b.to_pylist()]
    assert [row["offset"] for row in rows] == list(range(records))


def test_pack_bytes_0_reads_one_partition_per_segment(
    small_segments: tuple[Path, int, int],
) -> None:
    log_dir, records, count = small_segments
    r = reader(log_dir, packBytes="0")
    tasks = r.planned_splits()
    assert len(tasks) == count
    assert all(isinstance(t, SegmentSplit) for t in tasks)
    rows = [row for p in r.partitions() for b in r.read(p) for row in b.to_pylist()]
    assert len(rows) == records


def test_min_partitions_keeps_small_reads_spread(small_segments: tuple[Path, int, int]) -> None:
    log_dir, _, count = small_segments
    # as many tasks wanted as segments: each task's target falls to the open
    # cost, which one small segment fills
    assert len(reader(log_dir, minPartitions=str(count)).planned_splits()) == count
    few = reader(log_dir, minPartitions="20").planned_splits()
    assert 20 <= len(few) < count
    assert len(reader(log_dir, minPartitions="1", openCostInBytes="0").planned_splits()) == 1


def test_pack_bytes_sets_the_target(small_segments: tuple[Path, int, int]) -> None:
    log_dir, _, count = small_segments
    tasks = reader(log_dir, packBytes=str(40 * MIB)).planned_splits()
    assert [len(parts_of(t)) for t in tasks][:-1] == [10] * (len(tasks) - 1)
    assert sum(len(parts_of(t)) for t in tasks) == count


def test_index_level_packs_partition_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasource.os, "cpu_count", lambda: 2)
    appends, _ = v2_appends(3, 2)
    folders = 40
    write_log_dir(
        tmp_path / "logs",
        {TopicPartition("t", p): appends for p in range(folders)},
        topic_config(segment_bytes=256),
    )
    default = reader(tmp_path / "logs", level="index").planned_splits()
    one_each = reader(tmp_path / "logs", level="index", packBytes="0").planned_splits()
    assert len(one_each) == folders
    assert 1 < len(default) < folders
    for splits in (default, one_each):
        assert all(isinstance(s, FolderSplit) for s in splits)
        where: dict[str, set[int]] = {}
        for i, split in enumerate(splits):
            assert isinstance(split, FolderSplit)
            for segment in split.segments:
                where.setdefault(os.path.dirname(segment.path), set()).add(i)
        # every folder read, each whole by one task
        assert len(where) == folders
        assert all(len(tasks) == 1 for tasks in where.values())


@pytest.mark.parametrize(
    ("key", "value"),
    [("packBytes", "-1"), ("minPartitions", "0"), ("openCostInBytes", "-5")],
)
def test_bad_packing_options_are_refused(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"(?i){key}"):
        ReaderConfig.from_options({"path": str(tmp_path), key: value})
