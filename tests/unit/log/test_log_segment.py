"""Ports of Kafka's ``LogSegmentTest`` (``storage/src/test/.../log/LogSegmentTest.java``),
names in snake_case.

Left out (the product refuses transactional produce and does not split
segments): testRecoverTransactionIndex (transaction index, aborted
transactions), testAppendFromFile (segment splitting), and
testDeleteIfExistsWithGetParentIsNull (a mocked transaction index whose
file has no parent: Java ``File`` specific, and we keep no transaction index).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log.checkpoints import EpochEntry
from broker.log.errors import LogSegmentOffsetOverflowError
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.producer_state import ProducerStateManager
from broker.log.segment import LogSegment
from broker.records.batch import NO_TIMESTAMP
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import (
    RANDOM,
    MockTime,
    batch_offsets,
    create_segment,
    entry_offsets,
    file_size,
    v1_records,
    write_nonsense,
)

INT_MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("base_offset", "largest_offset"),
    [
        (0, -2147483648),
        (0, 2147483648),
        (1, 0),
        (100, 10),
        (2147483648, 0),
        (-2147483648, 0),
        (2147483648, 4294967296),
    ],
)
def test_append_for_log_segment_offset_overflow_exception(
    tmp_path: Path, base_offset: int, largest_offset: int
) -> None:
    seg = create_segment(tmp_path, base_offset)
    with pytest.raises(LogSegmentOffsetOverflowError):
        seg.append(largest_offset, 0, largest_offset, v1_records(0, "hello"))
    seg.close()


def test_read_on_empty_segment(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    assert seg.read(40, 300) is None


def test_read_before_first_offset(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    ms = v1_records(50, "hello", "there", "little", "bee")
    seg.append(53, NO_TIMESTAMP, -1, ms)
    read = seg.read(41, 300)
    assert read is not None and read.records is not None
    assert read.records.read() == ms


def test_read_after_last(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    seg.append(51, NO_TIMESTAMP, -1, v1_records(50, "hello", "there"))
    assert seg.read(52, 200) is None


def test_read_from_gap(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    seg.append(51, NO_TIMESTAMP, -1, v1_records(50, "hello", "there"))
    ms2 = v1_records(60, "alpha", "beta")
    seg.append(61, NO_TIMESTAMP, -1, ms2)
    read = seg.read(55, 200)
    assert read is not None and read.records is not None
    assert read.records.read() == ms2


@pytest.mark.parametrize("min_one_message", [True, False])
def test_read_when_no_max_position(tmp_path: Path, min_one_message: bool) -> None:
    seg = create_segment(tmp_path, 40)
    ms = v1_records(50, "hello", "there")
    seg.append(51, NO_TIMESTAMP, -1, ms)
    # with no max position: the metadata, never bytes
    for start, expected_position in ((48, 0), (50, 0), (51, 39)):
        read = seg.read(start, 1, None, min_one_message)
        assert read is not None
        assert read.fetch_offset_metadata == (start, 40, expected_position)
        assert read.records is None
    # at or after the end: None
    assert seg.read(52, 1, None, min_one_message) is None
    assert seg.read(53, 1, None, min_one_message) is None
    assert len(ms) == 2 * 39


def test_truncate(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    offset = 40
    for _ in range(30):
        ms1 = v1_records(offset, "hello")
        seg.append(offset, NO_TIMESTAMP, -1, ms1)
        ms2 = v1_records(offset + 1, "hello")
        seg.append(offset + 1, NO_TIMESTAMP, -1, ms2)
        read = seg.read(offset, 10000)
        assert read is not None and read.records is not None
        assert read.records.read() == ms1 + ms2
        seg.truncate_to(offset + 1)
        read2 = seg.read(offset, 10000)
        assert read2 is not None and read2.records is not None
        assert read2.records.read() == ms1
        offset += 1


def _should_roll(segment: LogSegment, max_segment_ms: int, last_offset: int, now: int) -> bool:
    """``shouldRoll`` for a 1 KB append, no timestamp, no size limit (LogSegmentTest's call)."""
    return segment.should_roll(
        max_segment_ms=max_segment_ms,
        max_segment_bytes=INT_MAX,
        max_timestamp_in_messages=NO_TIMESTAMP,
        max_offset_in_messages=last_offset,
        messages_size=1024,
        now=now,
    )


def test_truncate_empty_segment(tmp_path: Path) -> None:
    max_segment_ms = 300000
    time = MockTime()
    seg = create_segment(tmp_path, 0, time_ms=time)
    seg.time_index  # noqa: B018 -- force the indexes to load before closing
    seg.offset_index  # noqa: B018
    seg.close()
    reopened = create_segment(tmp_path, 0, time_ms=time)
    assert seg.time_index.size_in_bytes() == 0
    assert seg.offset_index.size_in_bytes() == 0
    time.sleep(500)
    reopened.truncate_to(57)
    assert reopened.time_waited_for_roll(time(), NO_TIMESTAMP) == 0
    assert not reopened.time_index.is_full()
    assert not reopened.offset_index.is_full()
    assert not _should_roll(reopened, max_segment_ms, 100, time())
    time.sleep(max_segment_ms + 1)
    assert reopened.time_waited_for_roll(time(), NO_TIMESTAMP) == max_segment_ms + 1
    assert not _should_roll(reopened, max_segment_ms, 100, time())
    assert _should_roll(reopened, max_segment_ms, INT_MAX + 200, time())
    reopened.close()


def test_reload_largest_timestamp_and_next_offset_after_truncation(tmp_path: Path) -> None:
    num_messages = 30
    seg = create_segment(tmp_path, 40, 2 * len(v1_records(0, "hello")) - 1)
    offset = 40
    for _ in range(num_messages):
        seg.append(offset, offset, offset, v1_records(offset, "hello"))
        offset += 1
    assert seg.read_next_offset() == offset
    assert seg.time_index.entries == num_messages // 2 - 1
    seg.truncate_to(41)
    assert seg.time_index.entries == 0
    assert seg.largest_timestamp() == 400
    assert seg.read_next_offset() == 41


def test_truncate_full(tmp_path: Path) -> None:
    time = MockTime()
    seg = create_segment(tmp_path, 40, time_ms=time)
    seg.append(41, NO_TIMESTAMP, -1, v1_records(40, "hello", "there"))
    time.sleep(500)
    assert seg.time_waited_for_roll(time(), NO_TIMESTAMP) == 500
    seg.truncate_to(0)
    assert seg.time_waited_for_roll(time(), NO_TIMESTAMP) == 0
    assert not seg.time_index.is_full()
    assert not seg.offset_index.is_full()
    assert seg.read(0, 1024) is None
    seg.append(41, NO_TIMESTAMP, -1, v1_records(40, "hello", "there"))
    assert seg.read_next_offset() == 42


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    message_size = len(v1_records(0, "msg00"))
    seg = create_segment(tmp_path, 40, message_size * 2 - 1)
    for i in range(40, 50):
        seg.append(i, i * 10, i, v1_records(i, f"msg{i}"))
    assert seg.largest_timestamp() == 490

    def found(ts: int) -> int | None:
        result = seg.find_offset_by_timestamp(ts, 0)
        return None if result is None else result.offset

    assert found(420) == 42
    assert found(421) == 43
    assert found(430) == 43
    assert found(431) == 44
    assert found(491) is None
    assert found(401) == 41
    assert found(399) == 40


def test_next_offset_calculation(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    assert seg.read_next_offset() == 40
    seg.append(52, NO_TIMESTAMP, -1, v1_records(50, "hello", "there", "you"))
    assert seg.read_next_offset() == 53


def test_change_file_suffixes(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    log_file = seg.log.path
    index_file = seg.offset_index_path
    time_index_file = seg.time_index_path
    assert not index_file.exists()
    assert not time_index_file.exists()
    seg.change_file_suffixes("", ".deleted")
    assert not seg.offset_index_path.exists()
    assert not seg.time_index_path.exists()
    assert str(seg.log.path) == str(log_file) + ".deleted"
    assert str(seg.offset_index_path) == str(index_file) + ".deleted"
    assert str(seg.time_index_path) == str(time_index_file) + ".deleted"
    assert seg.log.path.exists()
    seg.offset_index  # noqa: B018 -- lazily created on access
    assert seg.offset_index_path.exists()
    seg.time_index  # noqa: B018
    assert seg.time_index_path.exists()


def test_recovery_fixes_corrupt_index(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 0)
    for i in range(100):
        seg.append(i, NO_TIMESTAMP, -1, v1_records(i, str(i)))
    index_file = seg.offset_index_path
    write_nonsense(index_file, 5, file_size(index_file) - 5)
    seg.recover(ProducerStateManager(tmp_path), None)
    for i in range(100):
        read = seg.read(i, 1, seg.size, True)
        assert read is not None and read.records is not None
        assert entry_offsets(read.records.read())[0] == i


def test_recovery_rebuilds_epoch_cache(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 0)
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    cache = LeaderEpochCache(cache_dir)
    for base, epoch in ((104, 0), (106, 1), (108, 1), (110, 2)):
        seg.append(
            base + 1, NO_TIMESTAMP, base, v2_batch(base, [b"a", b"b"], partition_leader_epoch=epoch)
        )
    seg.recover(ProducerStateManager(tmp_path), cache)
    assert cache.entries() == [EpochEntry(0, 104), EpochEntry(1, 106), EpochEntry(2, 110)]


def test_recovery_fixes_corrupt_time_index(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 0)
    for i in range(100):
        seg.append(i, i * 10, i, v1_records(i, str(i)))
    time_index_file = seg.time_index_path
    write_nonsense(time_index_file, 5, file_size(time_index_file) - 5)
    seg.recover(ProducerStateManager(tmp_path), None)
    for i in range(100):
        result = seg.find_offset_by_timestamp(i * 10, 0)
        assert result is not None and result.offset == i
        if i < 99:
            result = seg.find_offset_by_timestamp(i * 10 + 1, 0)
            assert result is not None and result.offset == i + 1


def test_recovery_with_corrupt_message(tmp_path: Path) -> None:
    messages_appended = 20
    for _ in range(10):
        seg = create_segment(tmp_path, 0)
        for i in range(messages_appended):
            seg.append(i, NO_TIMESTAMP, -1, v1_records(i, str(i)))
        offset_to_begin_corruption = RANDOM.randrange(messages_appended)
        found = seg.log.search_for_offset_with_size(offset_to_begin_corruption, 0)
        assert found is not None
        position = found.position + RANDOM.randrange(15)
        write_nonsense(seg.log.path, position, file_size(seg.log.path) - position)
        seg.recover(ProducerStateManager(tmp_path), None)
        assert batch_offsets(seg.log) == list(range(offset_to_begin_corruption))
        seg.delete_if_exists()


def _preallocated_config() -> TopicConfig:
    return TopicConfig(index_interval_bytes=10, segment_index_bytes=1000, segment_jitter_ms=0)


def test_create_with_init_file_size_append_message(tmp_path: Path) -> None:
    seg = LogSegment.open(
        tmp_path,
        40,
        _preallocated_config(),
        time_ms=MockTime(),
        file_already_exists=False,
        init_file_size=512 * 1024 * 1024,
        preallocate=True,
    )
    seg.append(51, NO_TIMESTAMP, -1, v1_records(50, "hello", "there"))
    ms2 = v1_records(60, "alpha", "beta")
    seg.append(61, NO_TIMESTAMP, -1, ms2)
    read = seg.read(55, 200)
    assert read is not None and read.records is not None
    assert read.records.read() == ms2
    seg.close()


def test_create_with_init_file_size_clear_shutdown(tmp_path: Path) -> None:
    config = _preallocated_config()
    seg = LogSegment.open(
        tmp_path, 40, config, time_ms=MockTime(), init_file_size=512 * 1024 * 1024, preallocate=True
    )
    seg.append(51, NO_TIMESTAMP, -1, v1_records(50, "hello", "there"))
    ms2 = v1_records(60, "alpha", "beta")
    seg.append(61, NO_TIMESTAMP, -1, ms2)
    read = seg.read(55, 200)
    assert read is not None and read.records is not None
    assert read.records.read() == ms2
    old_size = seg.log.size
    assert file_size(seg.log.path) == 512 * 1024 * 1024
    seg.close()
    assert file_size(seg.log.path) == old_size
    reopened = LogSegment.open(
        tmp_path,
        40,
        config,
        time_ms=MockTime(),
        file_already_exists=True,
        init_file_size=512 * 1024 * 1024,
        preallocate=True,
    )
    read_again = reopened.read(55, 200)
    assert read_again is not None and read_again.records is not None
    assert read_again.records.read() == ms2
    assert reopened.log.size == old_size
    assert file_size(reopened.log.path) == old_size
    reopened.close()


def test_should_truncate_even_if_offset_points_to_a_gap_in_the_log(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 40)
    offset = 40
    seg.append(
        offset, NO_TIMESTAMP, -1, v2_batch(offset, [b"first message"], base_timestamp=offset * 1000)
    )
    seg.append(offset + 3, NO_TIMESTAMP, -1, v2_batch(offset + 3, [b"message after gap"]))
    seg.truncate_to(offset + 1)
    read = seg.read(offset, 10000)
    assert read is not None and read.records is not None
    assert [b.summary.base_offset for b in seg.log.iter_batches()] == [offset]


def test_get_first_batch_timestamp(tmp_path: Path) -> None:
    seg = create_segment(tmp_path, 1)
    assert seg.get_first_batch_timestamp() == 2**63 - 1
    seg.append(1, 1000, 1, v2_batch(1, [b"one"], base_timestamp=1000))
    assert seg.get_first_batch_timestamp() == 1000
