"""Index entries checked against their log (``broker.spark.index_check``)."""

from __future__ import annotations

import struct
from pathlib import Path

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType
from broker.spark.index_check import (
    BatchExtent,
    IndexFile,
    check_offset_index,
    check_time_index,
    load_offset_index,
    load_time_index,
)
from broker.spark.layout import SegmentFile, discover
from tests.spark_logs import legacy_appends, topic_config, v2_appends, write_log_dir

# four batches: offsets 0-4, 5-9, 10-14, 15-19 at 100-byte steps; max timestamps
BATCHES = [
    BatchExtent(0, 100, 4, 1000),
    BatchExtent(100, 200, 9, 3000),
    BatchExtent(200, 300, 14, 2000),
    BatchExtent(300, 400, 19, 4000),
]


def _offsets(*entries: tuple[int, int]) -> IndexFile:
    return IndexFile(True, list(entries), 0, 0)


def _problems(findings: list) -> list[tuple[int, str | None]]:
    return [(f.slot, f.problem) for f in findings if f.mismatch]


def test_offset_entries_as_the_broker_writes_them_agree() -> None:
    # one entry per append: its last offset, where it starts
    findings = check_offset_index(_offsets((9, 100), (19, 300)), BATCHES, 400)
    assert [(f.slot, f.mismatch) for f in findings] == [(0, False), (1, False)]


def test_an_append_of_several_batches_is_one_entry() -> None:
    # batches 1 and 2 were one append: the entry names the last offset of batch 2
    assert not _problems(check_offset_index(_offsets((14, 100), (19, 300)), BATCHES, 400))
    # ... but it may not claim batches that lie past the next entry's position
    overlap, order = _problems(check_offset_index(_offsets((19, 100), (19, 300)), BATCHES, 400))
    assert overlap[0] == 0 and "overlaps the next entry's position 300" in str(overlap[1])
    assert order[0] == 1 and "out of order" in str(order[1])
    (problem,) = _problems(check_offset_index(_offsets((9, 100), (17, 200)), BATCHES, 400))
    assert problem[1] is not None and "not the last offset" in problem[1]


def test_offset_entries_that_lie() -> None:
    cases = {
        (9, 150): "not the start of a batch",
        (7, 100): "below the last offset 9",
        (11, 100): "not the last offset of the batch at position 100",
        (9, 400): "past the end of the log",
    }
    for entry, expected in cases.items():
        ((slot, problem),) = _problems(check_offset_index(_offsets(entry), BATCHES, 400))
        assert slot == 0 and problem is not None and expected in problem, (entry, problem)
    ((slot, problem),) = _problems(check_offset_index(_offsets((14, 200), (9, 100)), BATCHES, 400))
    assert slot == 1 and problem is not None and "out of order" in problem


def test_time_entries() -> None:
    good = IndexFile(True, [(3000, 9), (4000, 19)], 0, 0)
    assert not _problems(check_time_index(good, BATCHES, segment_is_last=False))
    # any offset of the batch that reached the max (Kafka < 3.7 wrote the record's)
    assert not _problems(
        check_time_index(IndexFile(True, [(3000, 7)], 0, 0), BATCHES, segment_is_last=True)
    )
    cases = {
        (2000, 14): "below the max timestamp 3000 of an earlier batch",
        (3500, 9): "not the max timestamp 3000 of the batch holding offset 9",
        (4000, 25): "past the last batch",
    }
    for entry, expected in cases.items():
        found = _problems(
            check_time_index(IndexFile(True, [entry], 0, 0), BATCHES, segment_is_last=True)
        )
        assert len(found) == 1 and found[0][1] is not None and expected in found[0][1], entry
    backwards = IndexFile(True, [(3000, 9), (1000, 4)], 0, 0)
    assert "out of order" in str(
        _problems(check_time_index(backwards, BATCHES, segment_is_last=True))
    )


def test_a_rolled_segment_ends_with_its_max_timestamp() -> None:
    partial = IndexFile(True, [(3000, 9)], 0, 0)
    assert not _problems(check_time_index(partial, BATCHES, segment_is_last=True))
    ((slot, problem),) = _problems(check_time_index(partial, BATCHES, segment_is_last=False))
    assert slot == -1 and problem is not None and "max timestamp 4000" in problem
    # a segment without timestamps (v0) keeps an empty time index
    no_ts = [b._replace(max_timestamp=-1) for b in BATCHES]
    assert not _problems(check_time_index(IndexFile(True, [], 0, 0), no_ts, segment_is_last=False))


def _segments(tmp_path: Path) -> list[SegmentFile]:
    v2, _ = v2_appends(40, 3, codec=CompressionType.SNAPPY)
    v1, _ = legacy_appends(1, 40, 3)  # one append = 3 entries: multi-batch index entries
    v0, _ = legacy_appends(0, 10, 4, codec=CompressionType.GZIP)
    write_log_dir(
        tmp_path / "logs",
        {TopicPartition("v2", 0): v2, TopicPartition("v1", 0): v1, TopicPartition("v0", 0): v0},
        topic_config(segment_bytes=2048, index_interval_bytes=200),
    )
    return discover([str(tmp_path / "logs")])


def _extents(seg: SegmentFile) -> list[BatchExtent]:
    from broker.records.entries import iter_file_entries, summarize

    data = Path(seg.path).read_bytes()
    out = []
    for e in iter_file_entries(data):
        s = summarize(data, e)
        out.append(
            BatchExtent(e.position, e.position + e.size_in_bytes, s.last_offset, s.max_timestamp)
        )
    return out


def test_indexes_the_broker_wrote_agree_with_their_logs(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    assert len(segments) > 4
    entries = 0
    for seg in segments:
        offsets = load_offset_index(seg.offset_index_path, seg.base_offset)
        times = load_time_index(seg.time_index_path, seg.base_offset)
        extents = _extents(seg)
        size = Path(seg.path).stat().st_size
        assert not _problems(check_offset_index(offsets, extents, size)), seg.path
        assert not _problems(check_time_index(times, extents, segment_is_last=seg.is_last))
        entries += len(offsets.entries)
    assert entries > 10


def test_untrimmed_missing_and_odd_files(tmp_path: Path) -> None:
    seg = next(s for s in _segments(tmp_path) if s.topic == "v1")
    index = Path(seg.offset_index_path)
    real = load_offset_index(str(index), seg.base_offset)
    index.write_bytes(index.read_bytes() + bytes(8 * 5))  # pre-allocated, not trimmed
    padded = load_offset_index(str(index), seg.base_offset)
    assert padded.entries == real.entries and padded.zero_tail_slots == 5
    extents = _extents(seg)
    size = Path(seg.path).stat().st_size
    findings = check_offset_index(padded, extents, size)
    assert [f.problem for f in findings if f.slot == -1] == [
        "5 zero-filled slots after the last entry (pre-allocated, not trimmed)"
    ]
    assert not _problems(findings)
    index.write_bytes(index.read_bytes()[: 8 * len(real.entries)] + b"\x00\x01\x02")
    odd = load_offset_index(str(index), seg.base_offset)
    assert odd.stray_bytes == 3
    assert _problems(check_offset_index(odd, extents, size)) == [
        (-1, "file length is not a multiple of 8 (3 stray bytes)")
    ]
    index.unlink()
    missing = load_offset_index(str(index), seg.base_offset)
    assert not missing.exists
    assert [(f.problem, f.mismatch) for f in check_offset_index(missing, extents, size)] == [
        ("no .index file", False)
    ]
    time_index = Path(seg.time_index_path)
    struct.pack_into(">q", buf := bytearray(time_index.read_bytes()), 0, 1)
    time_index.write_bytes(bytes(buf))
    found = _problems(
        check_time_index(
            load_time_index(str(time_index), seg.base_offset), extents, segment_is_last=seg.is_last
        )
    )
    assert found and found[0][0] == 0
