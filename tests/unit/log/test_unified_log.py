"""The partition log's API as the partition and server layers use it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.errors import OffsetOutOfRangeError, RecordBatchTooLargeError
from broker.log import active_segment, files
from broker.log.unified_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    UnifiedLog,
)
from tests.unit.log.batches import legacy_entry, v2_batch
from tests.unit.log.helpers import MockTime


def open_log(
    path: Path, config: TopicConfig | None = None, clock: MockTime | None = None
) -> UnifiedLog:
    return UnifiedLog.open(path / "t-0", config or TopicConfig(), time_ms=clock or MockTime())


class Recorder:
    def __init__(self) -> None:
        self.samples: list[float] = []

    def record_flush(self, seconds: float) -> None:
        self.samples.append(seconds)


def test_fast_and_two_step_appends_write_the_same_files(tmp_path: Path) -> None:
    config = TopicConfig(segment_bytes=700, index_interval_bytes=50)
    fast = UnifiedLog.open(tmp_path / "a-0", config, time_ms=MockTime())
    slow = UnifiedLog.open(tmp_path / "b-0", config, time_ms=MockTime())
    for i in range(40):
        data = v2_batch(
            fast.log_end_offset,
            [b"x" * (i * 7 % 90)] * (1 + i % 3),
            base_timestamp=1000 + (i * 37) % 500,
            partition_leader_epoch=i // 10,
        )
        r1 = fast.append(data)
        r2 = slow.commit_append(slow.prepare_append(data))
        assert r1 == r2
    fast.close()
    slow.close()
    names = sorted(p.name for p in (tmp_path / "a-0").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b-0").iterdir())
    for name in names:
        assert (tmp_path / "a-0" / name).read_bytes() == (tmp_path / "b-0" / name).read_bytes(), (
            name
        )


def test_append_result_and_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    result = log.append(v2_batch(0, [b"a", b"b", b"c"], timestamps=[5, 9, 7]))
    assert (result.first_offset, result.last_offset, result.max_timestamp) == (0, 2, 9)
    assert result.shallow_offset_of_max_timestamp == 2  # the batch's last offset (3.8+)
    assert log.log_end_offset == 3
    assert log.high_watermark == 3
    log.close()


def test_append_larger_than_segment_bytes_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, TopicConfig(segment_bytes=100))
    with pytest.raises(RecordBatchTooLargeError):
        log.append(v2_batch(0, [b"x" * 200]))
    assert log.log_end_offset == 0
    log.close()


def test_idempotent_producer_state_and_duplicates(tmp_path: Path) -> None:
    clock = MockTime()
    log = open_log(tmp_path, clock=clock)
    for seq in range(0, 12, 2):
        pending = log.prepare_append(
            v2_batch(
                log.log_end_offset,
                [b"a", b"b"],
                producer_id=9,
                producer_epoch=3,
                base_sequence=seq,
                base_timestamp=clock() + seq,
            )
        )
        batch = pending.batches[0]
        assert (batch.producer_id, batch.base_sequence, batch.last_sequence) == (9, seq, seq + 1)
        log.commit_append(pending)
    entry = log.producer_state.last_entry(9)
    assert entry is not None
    assert entry.producer_epoch == 3
    assert len(entry.batch_metadata) == 5  # only the last five are kept
    assert entry.find_duplicate_batch(3, 0, 1) is None  # evicted
    dup = entry.find_duplicate_batch(3, 6, 7)
    assert dup is not None and (dup.first_offset, dup.last_offset, dup.timestamp) == (
        6,
        7,
        clock() + 6,
    )
    assert entry.find_duplicate_batch(4, 6, 7) is None  # other epoch
    log.close()
    reopened = open_log(tmp_path, clock=clock)
    again = reopened.producer_state.last_entry(9)
    assert again is not None and again.last_seq == 11
    reopened.close()


def test_read_respects_max_offset_and_min_one_message(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batches = [v2_batch(i * 2, [b"%d" % i] * 2) for i in range(5)]
    for b in batches:
        log.append(b)
    info = log.read(0, 10_000, max_offset=4)
    assert info.records is not None and info.records.read() == batches[0] + batches[1]
    info = log.read(3, 1, min_one_message=False)
    assert info.records is not None and info.records.read() == batches[1][:1]
    info = log.read(3, 1, min_one_message=True)
    assert info.records is not None and info.records.read() == batches[1]
    assert info.fetch_offset_metadata.relative_position_in_segment == len(batches[0])
    empty = log.read(10, 100)
    assert empty.records is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)
    log.close()


def test_list_offsets_special_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(v2_batch(0, [b"a", b"b"], timestamps=[10, 30], partition_leader_epoch=2))
    log.append(v2_batch(2, [b"c"], timestamps=[20], partition_leader_epoch=2))
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)
    max_ts = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert earliest is not None and (earliest.offset, earliest.leader_epoch) == (0, 2)
    assert latest is not None and (latest.offset, latest.leader_epoch) == (3, 2)
    assert max_ts is not None and (max_ts.timestamp, max_ts.offset) == (30, 1)
    by_ts = log.fetch_offset_by_timestamp(15)
    assert by_ts is not None and (by_ts.timestamp, by_ts.offset) == (30, 1)
    assert log.fetch_offset_by_timestamp(31) is None
    log.close()


def test_legacy_batches_are_appended_and_read(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    data = legacy_entry(0, 1, b"v1", timestamp=5) + legacy_entry(1, 1, b"v1b", timestamp=6)
    result = log.append(data)
    assert (result.first_offset, result.last_offset, result.max_timestamp) == (0, 1, 6)
    log.append(legacy_entry(2, 0, b"v0"))
    info = log.read(0, 1000)
    assert info.records is not None and info.records.read().startswith(data)
    log.close()


def test_retention_ms_deletes_old_segments_and_moves_log_start(tmp_path: Path) -> None:
    clock = MockTime()
    config = TopicConfig(segment_bytes=200, retention_ms=1000, file_delete_delay_ms=500)
    log = open_log(tmp_path, config, clock)
    for i in range(10):
        log.append(v2_batch(log.log_end_offset, [b"x" * 50], base_timestamp=clock() - 5000 + i))
    assert log.number_of_segments > 2
    active_base = log.active_segment.base_offset
    deleted = log.delete_old_segments()
    assert deleted >= 1
    assert log.log_start_offset == log.segments[0].base_offset
    assert log.active_segment.base_offset >= active_base
    part = tmp_path / "t-0"
    assert any(p.name.endswith(files.DELETED_FILE_SUFFIX) for p in part.iterdir())
    clock.sleep(500)
    log.delete_expired_files()
    assert not any(p.name.endswith(files.DELETED_FILE_SUFFIX) for p in part.iterdir())
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    log.close()


def test_retention_bytes_never_deletes_the_active_segment(tmp_path: Path) -> None:
    config = TopicConfig(segment_bytes=10_000, retention_bytes=0, retention_ms=-1)
    log = open_log(tmp_path, config)
    log.append(v2_batch(0, [b"x" * 50]))
    assert log.delete_old_segments() == 1  # the only segment: a roll first, then it goes
    assert log.number_of_segments == 1
    assert log.active_segment.size == 0
    assert log.log_start_offset == 1 == log.log_end_offset
    assert log.delete_old_segments() == 0  # an empty active segment stays
    log.close()


def test_flush_from_another_thread_while_appending(tmp_path: Path) -> None:
    recorder = Recorder()
    log = UnifiedLog.open(
        tmp_path / "t-0", TopicConfig(segment_bytes=5000), flush_recorder=recorder
    )
    stop = threading.Event()
    flushed: list[int] = []

    def flusher() -> None:
        while not stop.is_set():
            target = log.log_end_offset
            log.flush(target)
            assert log.recovery_point >= target
            flushed.append(target)

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for _ in range(400):
            log.append(v2_batch(log.log_end_offset, [b"y" * 100]))
    finally:
        stop.set()
        thread.join()
    log.flush()
    assert log.recovery_point == log.log_end_offset == 400
    assert flushed and recorder.samples
    log.close()


def test_group_commit_second_flush_is_free(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(v2_batch(0, [b"a"]))
    log.append(v2_batch(1, [b"b"]))
    assert log.flush(1) is True  # flushes up to the LEO, not just 1
    assert log.recovery_point == 2
    assert log.flush(2) is False  # already durable: no fsync
    log.close()


def test_flush_messages_flushes_on_append(tmp_path: Path) -> None:
    log = open_log(tmp_path, TopicConfig(flush_messages=3))
    log.append(v2_batch(0, [b"a"]))
    log.append(v2_batch(1, [b"b"]))
    assert log.recovery_point == 0
    log.append(v2_batch(2, [b"c"]))
    assert log.recovery_point == 3
    log.close()


def test_roll_writes_a_producer_snapshot_and_asks_for_a_flush(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(v2_batch(0, [b"a"]))
    log.roll()
    assert files.producer_snapshot_file(tmp_path / "t-0", 1).exists()
    assert log.pending_roll_flush_offset == 1
    assert log.maybe_flush_after_roll()
    assert log.recovery_point == 1
    assert log.pending_roll_flush_offset == 0
    log.close()


def test_time_based_roll_uses_record_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, TopicConfig(segment_ms=1000))
    log.append(v2_batch(0, [b"a"], base_timestamp=10_000))
    log.append(v2_batch(1, [b"b"], base_timestamp=10_500))
    assert log.number_of_segments == 1
    log.append(v2_batch(2, [b"c"], base_timestamp=11_001))
    assert log.number_of_segments == 2
    assert log.active_segment.base_offset == 2
    log.close()


def test_config_change_takes_effect_on_next_append(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(v2_batch(0, [b"x" * 100]))
    log.config = TopicConfig(segment_bytes=250)
    log.append(v2_batch(1, [b"x" * 100]))
    assert log.number_of_segments == 2
    log.close()


def test_partition_metadata_holds_the_topic_id(tmp_path: Path) -> None:
    topic_id = bytes(range(16))
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), topic_id=topic_id)
    text = (tmp_path / "t-0" / "partition.metadata").read_text()
    assert text == "version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    log.close()
    assert UnifiedLog.open(tmp_path / "t-0", TopicConfig()).topic_id == topic_id


def test_producers_expire_after_producer_id_expiration_ms(tmp_path: Path) -> None:
    clock = MockTime()
    log = UnifiedLog.open(
        tmp_path / "t-0", TopicConfig(), time_ms=clock, producer_id_expiration_ms=1000
    )
    log.append(
        v2_batch(
            0, [b"a"], producer_id=5, producer_epoch=0, base_sequence=0, base_timestamp=clock()
        )
    )
    assert log.remove_expired_producers(clock() + 999) == 0
    assert log.remove_expired_producers(clock() + 1000) == 1
    assert log.producer_state.last_entry(5) is None
    log.close()


_APPEND_TWINS = ["broker.log._active_segment_py"] + (
    ["broker.log._active_segment_c"] if active_segment.IMPLEMENTATION == "compiled" else []
)


@pytest.mark.parametrize("twin", _APPEND_TWINS)
def test_the_one_call_append_writes_what_the_two_step_path_writes(
    tmp_path: Path, twin: str
) -> None:
    import importlib

    from broker.log import local_log, segment

    module = importlib.import_module(twin)
    config = TopicConfig(segment_bytes=900, index_interval_bytes=40, segment_ms=5000)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local_log, "ActiveSegment", module.ActiveSegment)
        mp.setattr(segment, "ActiveSegment", module.ActiveSegment)
        fast = UnifiedLog.open(tmp_path / "a-0", config, time_ms=MockTime())
        slow = UnifiedLog.open(tmp_path / "b-0", config, time_ms=MockTime())
        assert type(fast.local_log.appender) is module.ActiveSegment
        taken = 0
        for i in range(120):
            ts = 1000 + (i * 53) % 700 + (4000 if i == 90 else 0)  # one time-based roll
            data = v2_batch(
                fast.log_end_offset,
                [b"v" * (i * 11 % 120)] * (1 + i % 4),
                base_timestamp=ts,
                partition_leader_epoch=i // 30,
            )
            # a roll due: the two steps
            if fast.local_log.appender.append_batch(fast, data) is None:
                fast.commit_append(fast.prepare_append(data))
            else:
                taken += 1
            slow.commit_append(slow.prepare_append(data))
        assert 60 < taken < 120  # both paths were exercised
        fast.close()
        slow.close()
    names = sorted(p.name for p in (tmp_path / "a-0").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b-0").iterdir())
    for name in names:
        assert (tmp_path / "a-0" / name).read_bytes() == (tmp_path / "b-0" / name).read_bytes(), (
            name
        )


def _fsynced_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the file name behind every os.fsync the log makes."""
    import os

    from broker.log import local_log

    names: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        names.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real(fd)

    monkeypatch.setattr(local_log.os, "fsync", recording)
    return names


def _log_of_two_batches(tmp_path: Path) -> UnifiedLog:
    """Offsets 0 and 1 in segment 0, an index entry for each append after the first."""
    log = open_log(tmp_path, TopicConfig(index_interval_bytes=1))
    log.append(v2_batch(0, [b"a"]))
    log.append(v2_batch(1, [b"b"]))
    return log


def test_flush_skips_the_indexes_of_the_segment_recovery_rescans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log_of_two_batches(tmp_path)
    names = _fsynced_names(monkeypatch)
    assert log.flush() is True
    # recovery scans from the floor segment of the recovery point (2): segment 0
    assert "00000000000000000000.log" in names
    assert not [n for n in names if n.endswith(("index", "timeindex"))]
    log.roll()  # segment 0 becomes inactive; its indexes are now trusted
    log.append(v2_batch(2, [b"c"]))
    names.clear()
    assert log.flush() is True
    # segment 0's bytes were durable already: only the indexes the first flush
    # skipped, which recovery (now starting at segment 2) would trust
    assert "00000000000000000002.log" in names
    assert "00000000000000000000.log" not in names
    assert sorted(n for n in names if n.endswith(("index", "timeindex"))) == [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ]
    log.close()


def test_flush_right_after_a_roll_syncs_the_indexes_of_the_old_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log_of_two_batches(tmp_path)
    log.roll()  # new empty active segment at 2 = the recovery point after the flush
    names = _fsynced_names(monkeypatch)
    assert log.flush() is True
    assert "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names
    log.close()


def test_unclean_open_rebuilds_the_indexes_a_flush_left_unsynced(tmp_path: Path) -> None:
    """What a power cut can do to index pages nobody fsynced: they are lost.
    Zero the active segment's index files after a flush, open without the clean
    shutdown marker: every offset is still found through rebuilt indexes."""
    config = TopicConfig(index_interval_bytes=1)
    log = open_log(tmp_path, config)
    for i in range(30):
        log.append(v2_batch(i, [b"v%d" % i]))
    positions = [log.read(i, 1_000_000).fetch_offset_metadata for i in range(30)]
    log.flush()
    point = log.recovery_point
    log.close_handlers()  # crash: no clean shutdown marker
    directory = tmp_path / "t-0"
    for path in (files.offset_index_file(directory, 0), files.time_index_file(directory, 0)):
        path.write_bytes(bytes(path.stat().st_size))
    log = UnifiedLog.open(directory, config, time_ms=MockTime(), recovery_point=point)
    assert log.log_end_offset == 30
    assert log.recovered_segments == 1
    segment = log.active_segment
    segment.sanity_check(False)
    assert segment.offset_index.entries == 29  # one per append but the first
    assert [log.read(i, 1_000_000).fetch_offset_metadata for i in range(30)] == positions
    log.close()
