"""Cleaning one log: Kafka's LogCleanerTest cases that apply to one broker
(transaction cases are replaced by this broker's rule: control and
transactional batches are kept whole), plus the delete horizon, compressed
and legacy batches, and the swap's files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.errors import CorruptRecordError
from broker.log import files
from broker.log.cleaner import group_segments_by_size
from broker.log.cleaning_plan import LogToClean, prepare_job
from broker.log.errors import LogCleaningAbortedError
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType, TimestampType
from tests.unit.log.batches import legacy_entry
from tests.unit.log.cleaner_helpers import (
    INT_MAX,
    LONG_MAX,
    TP,
    append_marker,
    append_record,
    append_records,
    batches,
    clean,
    clean_segments,
    headers,
    key,
    keys_in_log,
    last_offsets_per_batch,
    last_sequences,
    make_cleaner,
    make_log,
    offsets_in_log,
    records,
    reopen,
)
from tests.unit.log.helpers import MockTime


def fill_until(log: UnifiedLog, segments: int, key_of=lambda offset: offset) -> None:  # type: ignore[no-untyped-def]
    while log.number_of_segments < segments:
        append_record(log, key_of(log.log_end_offset), log.log_end_offset)


def test_clean_segments(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path)
    fill_until(log, 4)
    assert keys_in_log(log) == list(range(log.log_end_offset))
    for k in (1, 3, 5, 7, 9):
        cleaner.offset_map.put(key(k), LONG_MAX)
    expected_bytes_read = sum(s.size for s in log.segments[:3])
    should_remain = [k for k in keys_in_log(log) if k not in (1, 3, 5, 7, 9)]
    stats = clean_segments(cleaner, log, 3)
    assert keys_in_log(log) == should_remain
    assert stats.bytes_read == expected_bytes_read
    log.close()


def test_size_trimmed_for_preallocated_and_compacted_topic(tmp_path: Path) -> None:
    cleaner = make_cleaner(2)
    log = make_log(tmp_path, segment_bytes=1024, preallocate=True)
    for k in (0, 1, 0, 1, 0):
        append_record(log, k, k)
    log.roll()
    clean(cleaner, log, 2)
    first = log.segments[0]
    assert first.log.file_length() < 1024, (
        "Cleaned segment file should be trimmed to its real size."
    )
    log.close()


def append_idempotent(log: UnifiedLog, pid: int, keys: list[int]) -> tuple[int, int]:
    entry = log.producer_state.last_entry(pid)
    seq = entry.last_seq + 1 if entry is not None else 0
    result = append_records(
        log, [(k, k) for k in keys], producer_id=pid, producer_epoch=0, sequence=seq
    )
    return result.first_offset, result.last_offset


def duplicate_of(log: UnifiedLog, pid: int, first_seq: int, count: int) -> tuple[int, int] | None:
    entry = log.producer_state.last_entry(pid)
    assert entry is not None
    dup = entry.find_duplicate_batch(0, first_seq, first_seq + count - 1)
    return None if dup is None else (dup.first_offset, dup.last_offset)


def test_duplicate_check_after_cleaning(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path, segment_bytes=2048)
    append_idempotent(log, 1, [1, 2, 3])
    append_idempotent(log, 2, [3, 1, 4])
    append_idempotent(log, 3, [1, 4])
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [2, 5, 7]
    assert last_sequences(log) == {1: 2, 2: 2, 3: 1}
    assert keys_in_log(log) == [2, 3, 1, 4]
    assert offsets_in_log(log) == [1, 3, 6, 7]

    # the cleaner kept the sequence numbers: after a reload the retries are duplicates
    log = reopen(log)
    assert duplicate_of(log, 1, 0, 3) == (0, 2)
    assert duplicate_of(log, 3, 0, 2) == (6, 7)
    assert duplicate_of(log, 2, 0, 3) == (3, 5)

    append_idempotent(log, 4, [2])
    log.roll()
    clean(cleaner, log, 0)
    assert last_sequences(log) == {1: 2, 2: 2, 3: 1, 4: 0}
    assert last_offsets_per_batch(log) == [2, 5, 7, 8]
    assert keys_in_log(log) == [3, 1, 4, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8]

    log = reopen(log)
    assert duplicate_of(log, 1, 0, 3) == (0, 2)
    log.close()


def test_log_cleaner_retains_producer_last_sequence(tmp_path: Path) -> None:
    cleaner = make_cleaner(10)
    log = make_log(tmp_path)
    append_record(log, 0, 0)
    append_record(log, 0, 1, producer_id=1, producer_epoch=0, sequence=0)
    append_record(log, 0, 2, producer_id=2, producer_epoch=0, sequence=0)
    append_record(log, 0, 3, producer_id=3, producer_epoch=0, sequence=0)
    append_record(log, 1, 1, producer_id=2, producer_epoch=0, sequence=1)
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [1, 3, 4]
    assert last_sequences(log) == {1: 0, 2: 1, 3: 0}
    assert keys_in_log(log) == [0, 1]
    assert offsets_in_log(log) == [3, 4]
    empty = headers(log)[0]
    # writeEmptyHeader: the batch's offsets, producer, sequence and max timestamp, no records
    assert (empty[0], empty[6], empty[9], empty[10], empty[11], empty[12]) == (1, 0, 1, 0, 0, 0)
    assert empty[1] + 12 == 61 and empty[7] == -1
    log.close()


def test_empty_batch_goes_once_the_producer_wrote_again(tmp_path: Path) -> None:
    cleaner = make_cleaner(10)
    log = make_log(tmp_path)
    append_record(log, 0, 0, producer_id=1, producer_epoch=0, sequence=0)
    append_record(log, 0, 1)
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [0, 1]
    append_record(log, 5, 5, producer_id=1, producer_epoch=0, sequence=1)
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [1, 2]
    assert last_sequences(log) == {1: 1}
    log.close()


def test_cleaning_with_deletes(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path)
    fill_until(log, 2)
    leo = log.log_end_offset
    for k in range(0, leo, 2):
        append_record(log, k, None)
    fill_until(log, 4)
    clean(cleaner, log, 0)
    remaining = set(keys_in_log(log))
    assert not any(k in remaining for k in range(0, leo, 2))
    log.close()


def test_log_cleaner_stats(tmp_path: Path) -> None:
    cleaner = make_cleaner(4)  # load factor 0.75: 3 keys fit
    log = make_log(tmp_path)
    for k in (0, 1, 0, 1, 0):
        append_record(log, k, k)
    log.roll()
    initial_size = log.size
    end_offset, stats = clean(cleaner, log, 2)
    assert end_offset == 5
    assert stats.messages_read == 5
    assert stats.bytes_read == initial_size
    assert stats.messages_written == 2
    assert stats.bytes_written == log.size
    assert stats.invalid_messages_read == 0
    assert stats.end_time >= stats.start_time
    log.close()


def test_partial_segment_clean(tmp_path: Path) -> None:
    cleaner = make_cleaner(2)  # load factor 0.75: one key fits
    log = make_log(tmp_path)
    for k in (0, 1, 0, 1, 0):
        append_record(log, k, k)
    log.roll()
    clean(cleaner, log, 2)
    assert keys_in_log(log) == [1, 0, 1, 0]
    assert offsets_in_log(log) == [1, 2, 3, 4]
    clean(cleaner, log, 3)
    assert keys_in_log(log) == [0, 1, 0]
    assert offsets_in_log(log) == [2, 3, 4]
    clean(cleaner, log, 4)
    assert keys_in_log(log) == [1, 0]
    assert offsets_in_log(log) == [3, 4]
    log.close()


def test_cleaning_with_uncleanable_section(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path)
    n, cleanable, total = 10, 2, 7
    while log.number_of_segments <= cleanable:
        append_record(log, log.log_end_offset % n, log.log_end_offset)
    first_uncleanable = log.log_end_offset + 1
    while log.number_of_segments < total - 1:
        append_record(log, log.log_end_offset % n, log.log_end_offset)

    def distinct_values() -> list[int]:
        out = []
        for segment in log.segments:
            data = segment.log.pread(0, segment.size)
            from broker.records.iterate import iter_records

            out.append(len({r.value for r in iter_records(data, file=True)}))
        return out

    before = distinct_values()
    assert all(v > n for v in before[:-1])
    clean(cleaner, log, 0, first_uncleanable)
    after = distinct_values()
    assert all(a < b for b, a in zip(before[:cleanable], after[:cleanable], strict=True))
    assert before[cleanable:total] == after[cleanable:total]
    log.close()


def test_log_to_clean(tmp_path: Path) -> None:
    log = make_log(tmp_path, segment_bytes=100)
    for _ in range(6):
        append_record(log, 1, b"\0" * 25)
    active = log.active_segment.base_offset
    ltc = LogToClean.of(TP, log, active, active)
    assert ltc.total_bytes == log.size - log.active_segment.size
    log.close()


def test_log_to_clean_with_uncleanable_section(tmp_path: Path) -> None:
    log = make_log(tmp_path, segment_bytes=100)
    for _ in range(6):
        append_record(log, 1, b"\0" * 25)
    segs = log.segments
    ltc = LogToClean.of(TP, log, segs[2].base_offset, segs[4].base_offset)
    clean_size = sum(s.size for s in segs[:2])
    cleanable_size = sum(s.size for s in segs[2:4])
    assert ltc.clean_bytes == clean_size
    assert ltc.cleanable_bytes == cleanable_size
    assert ltc.total_bytes == clean_size + cleanable_size
    assert ltc.cleanable_ratio == pytest.approx(cleanable_size / (clean_size + cleanable_size))
    log.close()


def test_cleaning_with_unkeyed_messages(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path, cleanup_policy=("delete",))
    while log.number_of_segments < 2:
        append_record(log, None, log.log_end_offset)
    invalid = sum(1 for _, r in records(log) if r.key is None)
    size_with_unkeyed = log.size
    fill_until(log, 3)
    expected_size = log.size - size_with_unkeyed
    _, stats = clean(cleaner, log, 0)
    assert sum(1 for _, r in records(log) if r.key is None) == 0
    assert log.size == expected_size
    assert stats.invalid_messages_read == invalid
    log.close()


def test_clean_segments_with_abort(tmp_path: Path) -> None:
    def abort(_tp: object) -> None:
        raise LogCleaningAbortedError("aborted")

    cleaner = make_cleaner(INT_MAX, check_done=abort)
    log = make_log(tmp_path)
    fill_until(log, 4)
    for k in keys_in_log(log):
        cleaner.offset_map.put(key(k), LONG_MAX)
    before = sorted(p.name for p in log.dir.iterdir())
    with pytest.raises(LogCleaningAbortedError):
        clean_segments(cleaner, log, 3)
    # the aborted cleaning leaves no .cleaned file behind
    assert sorted(p.name for p in log.dir.iterdir()) == before
    log.close()


def test_segment_grouping(tmp_path: Path) -> None:
    log = make_log(tmp_path, segment_bytes=300, index_interval_bytes=1)
    while log.number_of_segments < 10:
        append_record(log, b"hello", b"hello")
    job = prepare_job(LogToClean.of(TP, log, 0, log.log_end_offset), 0)
    views = [*job.segments, _active_view(log)]
    end = log.log_end_offset

    def bases(groups: list[list[object]]) -> list[int]:
        out = [v.base_offset for g in groups for v in g]  # type: ignore[attr-defined]
        assert out == sorted(out), "Offsets should be in increasing order."
        return out

    groups = group_segments_by_size(views, INT_MAX, INT_MAX, end)
    assert len(groups) == 1 and len(groups[0]) == log.number_of_segments
    bases(groups)  # type: ignore[arg-type]
    groups = group_segments_by_size(views, 1, INT_MAX, end)
    assert len(groups) == log.number_of_segments and all(len(g) == 1 for g in groups)
    groups = group_segments_by_size(views, INT_MAX, 1, end)
    assert len(groups) == log.number_of_segments and all(len(g) == 1 for g in groups)
    group_size = 3
    log_size = sum(v.size for v in views[:group_size]) + 1
    groups = group_segments_by_size(views, log_size, INT_MAX, end)
    bases(groups)  # type: ignore[arg-type]
    assert all(len(g) == group_size for g in groups[:-1])
    index_size = sum(v.offset_index_bytes for v in views[:group_size]) + 1
    groups = group_segments_by_size(views, INT_MAX, index_size, end)
    bases(groups)  # type: ignore[arg-type]
    assert all(len(g) == group_size for g in groups[:-1])
    log.close()


def _active_view(log: UnifiedLog):  # type: ignore[no-untyped-def]
    """The active segment as a snapshot (grouping tests group every segment)."""
    from broker.log.cleaning_plan import SegmentSnapshot

    s = log.active_segment
    return SegmentSnapshot(
        s,
        s.base_offset,
        s.size,
        s.last_modified(),
        s.offset_index.size_in_bytes(),
        s.time_index.size_in_bytes(),
        s.log.path,
    )


def test_segment_grouping_with_sparse_offsets(tmp_path: Path) -> None:
    log = make_log(tmp_path, segment_bytes=400, index_interval_bytes=1)
    while log.number_of_segments == 1:
        append_record(log, b"hello", b"hello")
    append_records(log, [(b"hello", b"hello")], offsets=[INT_MAX - 1])
    append_record(log, b"hello", b"hello")
    assert log.active_segment.offset_index.last_offset == INT_MAX

    def groups() -> list[list[object]]:
        job = prepare_job(LogToClean.of(TP, log, 0, log.log_end_offset), 0)
        views = [*job.segments, _active_view(log)]
        return group_segments_by_size(views, INT_MAX, INT_MAX, log.log_end_offset)  # type: ignore[return-value]

    assert len(groups()) == 1
    append_record(log, b"hello", b"hello")
    assert len(groups()) == 2
    while log.number_of_segments < 4:
        append_record(log, b"hello", b"hello")
    grouped = groups()
    assert len(grouped) == log.number_of_segments - 1
    for group in grouped:
        first, last = group[0], group[-1]
        assert (
            last.segment.offset_index.last_offset - first.base_offset <= INT_MAX  # type: ignore[attr-defined]
        )
    log.close()


def test_build_offset_map(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    for i in range(500):
        append_record(log, i, i)
    log.roll()  # a job never holds the active segment: seal the last one
    cleaner = make_cleaner(1000)

    def check_range(start: int, end: int) -> None:
        from broker.log.cleaner import CleanerStats

        job = prepare_job(LogToClean.of(TP, log, start, end), 0)
        stats = CleanerStats()
        m = cleaner.offset_map
        cleaner.build_offset_map(job, start, end, stats)
        assert m.latest_offset + 1 == end, "Last offset should be the end offset."
        assert m.size == end - start
        for i in range(start, end):
            assert m.get(key(i)) == i
        assert m.get(key(start - 1)) == -1
        assert m.get(key(end)) == -1
        assert stats.map_messages_read == end - start

    segs = log.segments
    check_range(0, segs[1].base_offset)
    check_range(segs[1].base_offset, segs[3].base_offset)
    check_range(segs[3].base_offset, log.log_end_offset)
    log.close()


def test_build_offset_map_fake_large(tmp_path: Path) -> None:
    log = make_log(tmp_path, segment_bytes=120, segment_index_bytes=120)
    cleaner = make_cleaner(1000)
    append_records(log, [(0, 0)], offsets=[0])
    append_records(log, [(1, 1)], offsets=[7206178])
    log.roll()  # a job never holds the active segment
    from broker.log.cleaner import CleanerStats

    job = prepare_job(LogToClean.of(TP, log, 0, 7206179), 0)
    cleaner.build_offset_map(job, 0, 7206179, CleanerStats())
    m = cleaner.offset_map
    assert m.latest_offset == 7206178
    assert m.size == 2
    assert (m.get(key(0)), m.get(key(1))) == (0, 7206178)
    log.close()


def test_build_partial_offset_map(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    cleaner = make_cleaner(3)  # two keys fit
    for i in range(5):
        append_record(log, i, i)
    log.roll()
    from broker.log.cleaner import CleanerStats

    stats = CleanerStats()
    job = prepare_job(LogToClean.of(TP, log, 2, INT_MAX), 0)
    cleaner.build_offset_map(job, 2, INT_MAX, stats)
    m = cleaner.offset_map
    assert m.size == 2
    assert [m.get(key(i)) for i in range(5)] == [-1, -1, 2, 3, -1]
    assert stats.map_messages_read == 4
    log.close()


def test_clean_tombstone(tmp_path: Path) -> None:
    clock = MockTime()
    log = make_log(tmp_path, clock)
    retention = log.config.delete_retention_ms
    cleaner = make_cleaner(10)
    append_record(log, 0, 0, timestamp=clock() + retention + 10_000)
    log.roll()
    clean(cleaner, log, 0)
    append_record(log, 0, None, timestamp=clock() - retention - 10_000)
    log.roll()
    clean(cleaner, log, 1)
    assert next(batches(log)).header().last_offset == 1, "The tombstone should be retained."
    append_record(log, 1, 1, timestamp=clock())
    log.roll()
    clean(cleaner, log, 2)
    assert next(batches(log)).header().last_offset == 1, "The tombstone should be retained."
    log.close()


def test_tombstone_delete_horizon(tmp_path: Path) -> None:
    """KIP-534: the first cleaning that keeps a tombstone sets its batch's delete
    horizon (attribute bit 6, base timestamp = now + delete.retention.ms); the
    tombstone stays until a cleaning at or after the horizon."""
    clock = MockTime()
    log = make_log(tmp_path, clock, delete_retention_ms=1000)
    cleaner = make_cleaner(100)
    append_record(log, 0, 0)
    append_records(log, [(0, None), (1, 1)])
    log.roll()
    now = clock()
    clean(cleaner, log, 0, now=now)
    (h,) = headers(log)
    assert h[5] & 0x40 and h[7] == now + 1000
    assert [(r.offset, r.key, r.value) for _, r in records(log)] == [
        (1, b"0", None),
        (2, b"1", b"1"),
    ]
    # the records' timestamps are unchanged (their deltas now count from the horizon)
    assert {r.timestamp for _, r in records(log)} == {now}
    clean(cleaner, log, 0, now=now + 999)
    assert offsets_in_log(log) == [2]
    assert [r.offset for _, r in records(log)] == [1, 2]
    clean(cleaner, log, 0, now=now + 1000)
    assert [r.offset for _, r in records(log)] == [2]
    log.close()


def test_cleaning_beyond_missing_offsets(tmp_path: Path) -> None:
    cleaner = make_cleaner(INT_MAX)
    log = make_log(tmp_path, name="a-0", segment_bytes=1024 * 1024)
    for i in range(10):
        append_record(log, i, i)
    log.roll(11)
    append_records(log, [(1015, 1015)], offsets=[11])
    end, _ = clean(cleaner, log, 0, need_compaction_now=True)
    assert end == log.active_segment.base_offset, "Cleaning point should pass offset gap"
    log.close()

    log = make_log(tmp_path, name="b-0", segment_bytes=1024 * 1024)
    for i in range(10):
        append_record(log, i, i)
    log.roll(15)
    append_records(log, [(i, i) for i in range(15, 25)], offsets=list(range(15, 25)))
    log.roll(30)
    append_records(log, [(1015, 1015)], offsets=[30])
    end, _ = clean(cleaner, log, 0, need_compaction_now=True)
    assert end == log.active_segment.base_offset
    log.close()


def big_log(tmp_path: Path) -> UnifiedLog:
    """``createLogWithMessagesLargerThanMaxSize`` (100 KiB records, max.message.bytes halved after)."""
    large = 100 * 1024
    log = make_log(tmp_path, segment_bytes=large * 16, max_message_bytes=large * 2)
    while log.number_of_segments < 2:
        append_record(log, log.log_end_offset, b"\0" * large)
    import dataclasses

    log.config = dataclasses.replace(log.config, max_message_bytes=large // 2)
    return log


def test_large_message(tmp_path: Path) -> None:
    log = big_log(tmp_path)
    cleaner = make_cleaner(INT_MAX, max_message_size=1024)
    for k in (1, 3, 5, 7, 9):
        cleaner.offset_map.put(key(k), LONG_MAX)
    should_remain = [k for k in keys_in_log(log) if k not in (1, 3, 5, 7, 9)]
    clean_segments(cleaner, log, 1)
    assert keys_in_log(log) == should_remain
    log.close()


def test_message_larger_than_max_message_size_with_corrupt_header(tmp_path: Path) -> None:
    log = big_log(tmp_path)
    with open(log.segments[0].log.path, "r+b") as f:
        f.seek(16)  # the magic byte
        f.write(b"\xff")
    cleaner = make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        clean_segments(cleaner, log, 1)
    log.close()


def test_corrupt_message_size_larger_than_bytes_available(tmp_path: Path) -> None:
    log = big_log(tmp_path)
    first = log.segments[0]
    os.truncate(first.log.path, 1024)
    first.log.size = 1024
    cleaner = make_cleaner(INT_MAX, max_message_size=1024)
    with pytest.raises(CorruptRecordError):
        clean_segments(cleaner, log, 1)
    log.close()


def test_crc_mismatch_is_corrupt(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    fill_until(log, 2)
    with open(log.segments[0].log.path, "r+b") as f:
        f.seek(30)  # the first batch's base timestamp, inside the CRC
        byte = f.read(1)
        f.seek(30)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(CorruptRecordError, match="CRC-32C"):
        clean(make_cleaner(100), log, 0)
    assert not [p for p in log.dir.iterdir() if p.name.endswith(files.CLEANED_FILE_SUFFIX)]
    log.close()


@pytest.mark.parametrize(
    "codec",
    [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
)
def test_compressed_batches_are_rebuilt_with_their_codec(tmp_path: Path, codec: int) -> None:
    log = make_log(tmp_path, segment_bytes=4096)
    append_records(log, [(k % 5, k) for k in range(20)], compression=codec)
    append_records(log, [(k, 100 + k) for k in range(3)], compression=codec)
    append_records(log, [(7, 7)], compression=codec)  # all kept: copied as it is
    log.roll()
    before = [b.header() for b in batches(log)]
    clean(make_cleaner(100), log, 0)
    after = [b.header() for b in batches(log)]
    assert [h.compression_type for h in after] == [codec] * 3
    assert after[2] == before[2]
    assert after[0].last_offset == 19 and after[0].records_count == 2
    assert [(r.offset, int(r.key), int(r.value)) for _, r in records(log)] == [
        (18, 3, 18),
        (19, 4, 19),
        (20, 0, 100),
        (21, 1, 101),
        (22, 2, 102),
        (23, 7, 7),
    ]
    log.close()


def test_log_append_time_batches_keep_their_timestamp(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    append_records(log, [(1, 1), (2, 2), (1, 3)], timestamp=12345,
                   timestamp_type=TimestampType.LOG_APPEND_TIME)  # fmt: skip
    log.roll()
    clean(make_cleaner(100), log, 0)
    (h,) = headers(log)
    assert h[5] & 0x08 and h[7] == 12345 and h[8] == 12345 and h[12] == 2
    assert [(r.offset, r.timestamp) for _, r in records(log)] == [(1, 12345), (2, 12345)]
    log.close()


def test_transactional_and_control_batches_are_kept_whole(tmp_path: Path) -> None:
    """No transaction coordinator here: every transactional batch and every
    marker stays as it is, and transactional records do not enter the map
    (a later transactional value never removes an earlier committed one); the
    aborted transactions' .txnindex entries go with them into the cleaned segment."""
    log = make_log(tmp_path)
    append_record(log, 1, 1)
    append_records(log, [(1, 2), (1, 3)], producer_id=9, producer_epoch=0, sequence=0,
                   transactional=True)  # fmt: skip
    append_marker(log, 9, 0, commit=False)
    append_record(log, 2, 2)
    append_record(log, 2, 3)
    log.roll()
    raw = [bytes(b.buf[b.position : b.position + b.size_in_bytes]) for b in batches(log)]
    clean(make_cleaner(100), log, 0)
    kept = [bytes(b.buf[b.position : b.position + b.size_in_bytes]) for b in batches(log)]
    assert kept == [raw[0], raw[1], raw[2], raw[4]]
    # the aborted transaction's .txnindex entry moves to the cleaned segment
    (cleaned, _active) = log.segments
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in
            cleaned.txn_index.all_aborted_txns()] == [(9, 1, 3)]  # fmt: skip
    assert [(t.producer_id, t.first_offset) for t in log.collect_aborted_transactions(0, 10)] == [
        (9, 1)
    ]
    log = reopen(log)
    assert [t.producer_id for t in log.segments[0].txn_index.all_aborted_txns()] == [9]
    log.close()


def test_legacy_entries_are_cleaned_keeping_their_offsets(tmp_path: Path) -> None:
    """v0/v1 messages (and their tombstones, by the legacy horizon) are cleaned
    like v2 records; compressed wrappers are rebuilt (Kafka's testCleanerWithMessageFormatV0)."""
    from broker.records.legacy_builder import build_legacy
    from broker.records.record import SimpleRecord

    log = make_log(tmp_path, segment_bytes=4096)
    data = b"".join(
        legacy_entry(i, i % 2, b"%d" % i, key=b"%d" % (i % 3), timestamp=5) for i in range(6)
    )
    log.append(data)
    wrapper = build_legacy(
        [SimpleRecord(5, b"%d" % (k % 3), b"w%d" % k) for k in range(4)],
        magic=1,
        base_offset=6,
        compression_type=CompressionType.GZIP,
    )
    log.append(wrapper.buffer)
    log.roll()
    clean(make_cleaner(100), log, 0)
    assert [(r.offset, r.key, r.value) for _, r in records(log)] == [
        (7, b"1", b"w1"),
        (8, b"2", b"w2"),
        (9, b"0", b"w3"),
    ]
    (entry,) = batches(log)
    assert entry.magic == 1 and entry.legacy_header().offset == 9
    log.close()
