"""Transactions in the log: markers, the first unstable and last stable
offsets, the ``.txnindex`` at append and recovery (Kafka 3.9's
``UnifiedLogTest`` and ``LogLoaderTest`` transaction cases, one broker: the
high watermark is the log end offset, so Kafka's ``updateHighWatermark``
steps are implied by every append)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.errors import InvalidProducerEpochError, TransactionCoordinatorFencedError
from broker.log import files
from broker.log.producer_state import list_snapshot_offsets
from broker.log.results import LogAppendResult
from broker.log.segment import LogSegment
from broker.log.transaction_index import AbortedTxn, TxnIndexSearchResult
from broker.log.unified_log import UnifiedLog
from broker.records.batch import TRANSACTIONAL_FLAG_MASK
from broker.records.control import ControlRecordType, EndTransactionMarker, end_txn_marker_batch
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

COMMIT = ControlRecordType.COMMIT
ABORT = ControlRecordType.ABORT
EPOCH = 0


def create_log(
    log_dir: Path,
    clock: MockTime,
    *,
    segment_bytes: int = 1024 * 1024 * 5,
    clean: bool = True,
    recovery_point: int = 0,
) -> UnifiedLog:
    return UnifiedLog.open(
        log_dir,
        TopicConfig(segment_bytes=segment_bytes),
        log_start_offset=0,
        recovery_point=recovery_point,
        had_clean_shutdown=clean,
        time_ms=clock,
    )


def transactional(
    offset: int, pid: int, epoch: int, seq: int, values: list[bytes], now: int
) -> bytes:
    return v2_batch(
        offset,
        values,
        base_timestamp=now,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        attributes=TRANSACTIONAL_FLAG_MASK,
    )


def append_transactional_as_leader(
    log: UnifiedLog, pid: int, epoch: int, clock: MockTime
) -> Callable[[int], LogAppendResult]:
    """``LogTestUtils.appendTransactionalAsLeader``: n records in one batch,
    the producer's sequence carried on."""
    sequence = 0

    def append(n: int) -> LogAppendResult:
        nonlocal sequence
        values = [b"v%d" % i for i in range(n)]
        result = log.append(
            transactional(log.log_end_offset, pid, epoch, sequence, values, clock())
        )
        sequence += n
        return result

    return append


def append_non_transactional_as_leader(log: UnifiedLog, n: int, clock: MockTime) -> None:
    values = [b"n%d" % i for i in range(n)]
    log.append(v2_batch(log.log_end_offset, values, base_timestamp=clock()))


def append_end_txn_marker_as_leader(
    log: UnifiedLog,
    pid: int,
    epoch: int,
    control_type: ControlRecordType,
    *,
    coordinator_epoch: int = 0,
    leader_epoch: int = 0,
) -> LogAppendResult:
    """``LogTestUtils.appendEndTxnMarkerAsLeader`` (origin COORDINATOR)."""
    marker = EndTransactionMarker(control_type, coordinator_epoch)
    return log.append_end_txn_marker(pid, epoch, marker, leader_epoch=leader_epoch)


def all_aborted_transactions(log: UnifiedLog) -> list[AbortedTxn]:
    """``LogTestUtils.allAbortedTransactions``."""
    return [txn for segment in log.segments for txn in segment.txn_index.all_aborted_txns()]


def write_mixed_log(log: UnifiedLog, clock: MockTime) -> None:
    """The log of ``testTransactionIndexUpdated`` / ``testFullTransactionIndexRecovery``."""
    pid1, pid2, pid3, pid4 = (
        append_transactional_as_leader(log, p, EPOCH, clock) for p in range(1, 5)
    )
    pid1(5)  # 0-4
    append_non_transactional_as_leader(log, 3, clock)  # 5-7
    pid2(2)  # 8-9
    pid1(4)  # 10-13
    pid3(3)  # 14-16
    append_non_transactional_as_leader(log, 2, clock)  # 17-18
    pid1(10)  # 19-28
    append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT)  # 29
    assert log.first_unstable_offset == 8
    pid2(6)  # 30-35
    pid4(3)  # 36-38
    append_non_transactional_as_leader(log, 10, clock)  # 39-48
    pid3(9)  # 49-57
    append_end_txn_marker_as_leader(log, 3, EPOCH, COMMIT)  # 58
    pid4(8)  # 59-66
    pid2(7)  # 67-73
    append_end_txn_marker_as_leader(log, 2, EPOCH, ABORT)  # 74
    assert log.first_unstable_offset == 36
    append_non_transactional_as_leader(log, 10, clock)  # 75-84
    pid4(4)  # 85-88
    append_end_txn_marker_as_leader(log, 4, EPOCH, COMMIT)  # 89
    assert log.log_end_offset == 90


EXPECTED_ABORTED = [AbortedTxn(1, 0, 29, 8), AbortedTxn(2, 8, 74, 36)]


@pytest.fixture
def clock() -> MockTime:
    return MockTime()


# ---- UnifiedLogTest ---------------------------------------------------------------------


def test_first_unstable_offset_no_transactional_data(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    log.append(v2_batch(0, [b"foo", b"bar", b"baz"], base_timestamp=clock()))
    assert log.first_unstable_offset is None
    assert log.last_stable_offset == log.high_watermark == 3
    log.close()


def test_first_unstable_offset_with_transactional_data(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    pid, epoch = 137, 5
    first = log.append(transactional(0, pid, epoch, 0, [b"foo", b"bar", b"baz"], clock()))
    assert log.first_unstable_offset == first.first_offset
    log.append(transactional(3, pid, epoch, 3, [b"blah"], clock()))
    assert log.first_unstable_offset == first.first_offset
    assert log.last_stable_offset == first.first_offset
    append_end_txn_marker_as_leader(log, pid, epoch, COMMIT)
    # one broker: the marker is below the high watermark at once
    assert log.first_unstable_offset is None
    assert log.last_stable_offset == log.log_end_offset == 5
    log.close()


def _assert_valid_log_offset_metadata(log: UnifiedLog, expected_offset: int) -> None:
    """``assertCachedFirstUnstableOffset``: the oldest transaction's position is
    known and points at its batch."""
    first = log.producer_state.first_unstable_offset()
    assert first is not None and first.message_offset == expected_offset
    assert not first.message_offset_only
    (segment,) = log.log_segments(first.segment_base_offset, first.segment_base_offset + 1)
    assert segment.base_offset == first.segment_base_offset
    info = segment.read(first.message_offset, 2048, segment.size)
    assert info is not None
    assert info.fetch_offset_metadata == first
    assert log.fetch_last_stable_offset_metadata() == first


def test_transaction_index_updated(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    pid1, pid2 = (append_transactional_as_leader(log, p, EPOCH, clock) for p in (1, 2))
    pid1(5)
    append_non_transactional_as_leader(log, 3, clock)
    pid2(2)
    append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT)
    _assert_valid_log_offset_metadata(log, 8)
    log.close()
    log = create_log(tmp_path / "u-0", clock)
    write_mixed_log(log, clock)
    assert all_aborted_transactions(log) == EXPECTED_ABORTED
    assert log.first_unstable_offset is None
    assert log.fetch_last_stable_offset_metadata() == log.log_end_offset_metadata
    log.close()


def _mixed_log_bytes(now: int) -> bytes:
    """``testTransactionIndexUpdatedThroughReplication``'s buffer: the batches
    of the mixed log, offsets assigned, in one piece."""
    parts: list[bytes] = []
    seqs = {1: 0, 2: 0, 3: 0, 4: 0}

    def txn(pid: int, offset: int, n: int) -> None:
        parts.append(transactional(offset, pid, EPOCH, seqs[pid], [b"t"] * n, now))
        seqs[pid] += n

    def plain(offset: int, n: int) -> None:
        parts.append(v2_batch(offset, [b"n"] * n, base_timestamp=now))

    def marker(pid: int, offset: int, control_type: ControlRecordType) -> None:
        parts.append(
            bytes(
                end_txn_marker_batch(
                    EndTransactionMarker(control_type, 0),
                    base_offset=offset,
                    timestamp=now,
                    partition_leader_epoch=0,
                    producer_id=pid,
                    producer_epoch=EPOCH,
                )
            )
        )

    txn(1, 0, 5)
    plain(5, 3)
    txn(2, 8, 2)
    txn(1, 10, 4)
    txn(3, 14, 3)
    plain(17, 2)
    txn(1, 19, 10)
    marker(1, 29, ABORT)
    txn(2, 30, 6)
    txn(4, 36, 3)
    plain(39, 10)
    txn(3, 49, 9)
    marker(3, 58, COMMIT)
    txn(4, 59, 8)
    txn(2, 67, 7)
    marker(2, 74, ABORT)
    plain(75, 10)
    txn(4, 85, 4)
    marker(4, 89, COMMIT)
    return b"".join(parts)


def test_transaction_index_updated_through_replication(tmp_path: Path, clock: MockTime) -> None:
    """All the batches in one append (as a follower's fetch brings them): the
    completed transactions take their LSOs after the whole append's producer
    state is applied, as ``UnifiedLog.append`` does."""
    log = create_log(tmp_path / "t-0", clock)
    log.append(_mixed_log_bytes(clock()))
    assert log.log_end_offset == 90
    assert all_aborted_transactions(log) == EXPECTED_ABORTED
    assert log.first_unstable_offset is None
    log.close()


def test_zombie_coordinator_fenced(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    append = append_transactional_as_leader(log, 1, EPOCH, clock)
    append(10)
    append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=1)
    append(5)
    append_end_txn_marker_as_leader(log, 1, EPOCH, COMMIT, coordinator_epoch=2)
    end = log.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError):
        append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=1)
    assert log.log_end_offset == end  # refused before anything was written
    log.close()


def test_zombie_coordinator_fenced_empty_transaction(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    now = clock()
    follower_bytes = transactional(0, 1, EPOCH, 0, [b"t"] * 10, now) + bytes(
        end_txn_marker_batch(
            EndTransactionMarker(COMMIT, 0),
            base_offset=10,
            timestamp=now,
            partition_leader_epoch=1,
            producer_id=1,
            producer_epoch=EPOCH,
        )
    )
    log.append(follower_bytes)  # appendAsFollower: applied unchecked
    append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=2, leader_epoch=1)
    append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=2, leader_epoch=1)
    with pytest.raises(TransactionCoordinatorFencedError):
        append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=1, leader_epoch=1)
    assert all_aborted_transactions(log) == []  # the empty transactions index nothing
    log.close()


def test_end_txn_with_fenced_producer_epoch(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    append_end_txn_marker_as_leader(log, 1, 5, ABORT, coordinator_epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        append_end_txn_marker_as_leader(log, 1, 4, ABORT, coordinator_epoch=1)
    log.close()


def test_last_stable_offset_does_not_exceed_log_start_offset_mid_segment(
    tmp_path: Path, clock: MockTime
) -> None:
    log = create_log(tmp_path / "t-0", clock)
    append_pid = append_transactional_as_leader(log, 1, EPOCH, clock)
    append_pid(5)
    append_non_transactional_as_leader(log, 3, clock)
    assert log.log_end_offset == 8
    log.roll()
    assert log.number_of_segments == 2
    append_pid(5)
    assert log.first_unstable_offset == 0
    log.maybe_increment_log_start_offset(5)
    # the first unstable offset is bounded below by the log start offset
    assert log.first_unstable_offset == 5
    assert log.last_stable_offset == 5
    assert log.fetch_last_stable_offset_metadata().message_offset == 5
    log.close()


def test_last_stable_offset_does_not_exceed_log_start_offset_after_segment_deletion(
    tmp_path: Path, clock: MockTime
) -> None:
    log = create_log(tmp_path / "t-0", clock)
    append_pid = append_transactional_as_leader(log, 1, EPOCH, clock)
    append_pid(5)
    append_non_transactional_as_leader(log, 3, clock)
    log.roll()
    append_pid(5)
    assert log.first_unstable_offset == 0
    log.maybe_increment_log_start_offset(8)
    log.delete_old_segments()
    assert log.number_of_segments == 1
    assert log.first_unstable_offset == 8
    log.close()


def test_append_to_transaction_index_failure(tmp_path: Path, clock: MockTime) -> None:
    """The marker is written but its ``.txnindex`` entry cannot be: the append
    fails, the transaction stays open (the LSO does not move); an unclean
    reopen rebuilds the entry from the marker. (Kafka then marks the log dir
    failed; that is the log manager's part and not repeated here.)"""
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock)
    append = append_transactional_as_leader(log, 1, EPOCH, clock)
    append(10)
    # a directory where the index file should be makes the index write fail
    log.active_segment.txn_index.rename_to(log.dir)
    with pytest.raises(OSError):
        append_end_txn_marker_as_leader(log, 1, EPOCH, ABORT, coordinator_epoch=1)
    assert log.log_end_offset == 11
    assert log.last_stable_offset == 0
    log.close_handlers()
    reopened = create_log(log_dir, clock, clean=False)
    assert reopened.log_end_offset == 11
    assert reopened.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 10, 11)]
    assert reopened.first_unstable_offset is None
    reopened.close()


def test_last_stable_offset_with_mixed_producer_data(tmp_path: Path, clock: MockTime) -> None:
    log = create_log(tmp_path / "t-0", clock)
    epoch, pid1, pid2 = 5, 137, 983
    first = log.append(transactional(0, pid1, epoch, 0, [b"a", b"b", b"c"], clock()))
    assert log.first_unstable_offset == first.first_offset
    log.append(v2_batch(3, [b"g", b"h", b"i"], base_timestamp=clock()))
    second = log.append(transactional(6, pid2, epoch, 0, [b"d", b"e", b"f"], clock()))
    assert log.first_unstable_offset == first.first_offset
    append_end_txn_marker_as_leader(log, pid1, epoch, ABORT)
    assert log.first_unstable_offset == second.first_offset
    assert all_aborted_transactions(log) == [AbortedTxn(pid1, 0, 9, 6)]
    append_end_txn_marker_as_leader(log, pid2, epoch, COMMIT)
    assert log.first_unstable_offset is None
    log.close()


def test_aborted_transaction_spanning_multiple_segments(tmp_path: Path, clock: MockTime) -> None:
    pid, epoch = 137, 5
    records = transactional(0, pid, epoch, 0, [b"a", b"b", b"c"], clock())
    log = create_log(tmp_path / "t-0", clock, segment_bytes=len(records))
    first = log.append(records)
    assert log.first_unstable_offset == first.first_offset
    log.append(transactional(3, pid, epoch, 3, [b"d", b"e", b"f"], clock()))
    assert log.first_unstable_offset == first.first_offset
    assert log.log_end_offset_metadata.segment_base_offset == 3
    append_end_txn_marker_as_leader(log, pid, epoch, ABORT)
    assert log.first_unstable_offset is None
    aborted = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(pid, 0)]
    log.close()


def test_load_partition_dir_with_no_segments_should_not_throw(
    tmp_path: Path, clock: MockTime
) -> None:
    log_dir = tmp_path / files.log_delete_dir_name(files.TopicPartition("foo", 3))
    log_dir.mkdir()
    log = create_log(log_dir, clock)
    assert log.number_of_segments == 1
    log.close()


def test_truncate_below_first_unstable_offset(tmp_path: Path, clock: MockTime) -> None:
    _truncate_below_first_unstable_offset(tmp_path, clock, lambda log: log.truncate_to(0))


def test_truncate_fully_and_start_below_first_unstable_offset(
    tmp_path: Path, clock: MockTime
) -> None:
    _truncate_below_first_unstable_offset(
        tmp_path, clock, lambda log: log.truncate_fully_and_start_at(0)
    )


def _truncate_below_first_unstable_offset(
    tmp_path: Path, clock: MockTime, truncate: Callable[[UnifiedLog], object]
) -> None:
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock)
    log.append(v2_batch(0, [b"0", b"1", b"2"], base_timestamp=clock()))
    log.append(transactional(3, 17, 10, 0, [b"3", b"4"], clock()))
    assert log.first_unstable_offset == 3
    log.close()
    reopened = create_log(log_dir, clock)
    first = reopened.producer_state.first_unstable_offset()
    assert first is not None and first.message_offset == 3 and first.message_offset_only
    assert reopened.fetch_last_stable_offset_metadata().message_offset == 3
    truncate(reopened)
    assert reopened.first_unstable_offset is None
    assert reopened.producer_state.active_producers == {}
    reopened.close()


def test_collect_aborted_transactions_stops_at_the_upper_bound(
    tmp_path: Path, clock: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segment by segment from the one holding the start offset, until an
    entry's LSO reaches the upper bound (``LocalLog.collectAbortedTransactions``);
    the segments after it are not asked."""
    log = create_log(tmp_path / "t-0", clock)
    write_mixed_log(log, clock)  # aborted: (1, 0-29, LSO 8), (2, 8-74, LSO 36)
    log.roll()
    pid5 = append_transactional_as_leader(log, 5, EPOCH, clock)
    pid5(2)  # 90-91
    append_end_txn_marker_as_leader(log, 5, EPOCH, ABORT)  # 92
    assert log.collect_aborted_transactions(0, 8) == [EXPECTED_ABORTED[0]]
    assert log.collect_aborted_transactions(0, 30) == EXPECTED_ABORTED
    assert log.collect_aborted_transactions(90, 93) == [AbortedTxn(5, 90, 92, 93)]
    assert log.collect_aborted_transactions(0, 93) == [*EXPECTED_ABORTED, AbortedTxn(5, 90, 92, 93)]
    asked: list[int] = []
    real = LogSegment.collect_aborted_txns

    def spy(segment: LogSegment, fetch: int, upper: int) -> TxnIndexSearchResult:
        asked.append(segment.base_offset)
        return real(segment, fetch, upper)

    monkeypatch.setattr(LogSegment, "collect_aborted_txns", spy)
    assert log.collect_aborted_transactions(0, 20) == EXPECTED_ABORTED
    assert asked == [0]  # the second entry's LSO 36 >= 20 ends the search
    log.close()


# ---- LogLoaderTest ----------------------------------------------------------------------


def _delete_snapshots(log_dir: Path) -> None:
    for offset in list_snapshot_offsets(log_dir):
        files.producer_snapshot_file(log_dir, offset).unlink()


def test_full_transaction_index_recovery(tmp_path: Path, clock: MockTime) -> None:
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    assert log.number_of_segments > 3
    assert all_aborted_transactions(log) == EXPECTED_ABORTED
    # delete all the offset and transaction index files to force recovery
    for segment in log.segments:
        segment.offset_index.delete_if_exists()
        segment.txn_index.delete_if_exists()
    log.close()
    reloaded = create_log(log_dir, clock, segment_bytes=1024 * 5, clean=False)
    assert all_aborted_transactions(reloaded) == EXPECTED_ABORTED
    reloaded.close()


def test_recover_only_last_segment(tmp_path: Path, clock: MockTime) -> None:
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    last = log.segments[-1]
    recovery_point = last.base_offset
    last.offset_index.delete_if_exists()
    last.txn_index.delete_if_exists()
    log.close()
    reloaded = create_log(
        log_dir, clock, segment_bytes=1024 * 5, clean=False, recovery_point=recovery_point
    )
    assert all_aborted_transactions(reloaded) == EXPECTED_ABORTED
    reloaded.close()


def test_recover_last_segment_with_no_snapshots(tmp_path: Path, clock: MockTime) -> None:
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    _delete_snapshots(log_dir)
    last = log.segments[-1]
    recovery_point = last.base_offset
    last.offset_index.delete_if_exists()
    last.txn_index.delete_if_exists()
    log.close_handlers()
    _delete_snapshots(log_dir)
    reloaded = create_log(
        log_dir, clock, segment_bytes=1024 * 5, clean=False, recovery_point=recovery_point
    )
    assert all_aborted_transactions(reloaded) == EXPECTED_ABORTED
    reloaded.close()


def test_truncated_txn_indexes_are_rebuilt_by_an_unclean_start(
    tmp_path: Path, clock: MockTime
) -> None:
    """Crash test without a crash: the ``.txnindex`` files cut to half an entry
    or emptied, the snapshots gone, the log reopened unclean -> the same
    entries; a clean start after that keeps them."""
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    paths = [s.txn_index_path for s in log.segments if s.txn_index.file_exists]
    assert len(paths) == 2
    log.close()
    with open(paths[0], "r+b") as f:
        f.truncate(17)
    paths[1].write_bytes(b"")
    _delete_snapshots(log_dir)
    reloaded = create_log(log_dir, clock, clean=False)
    assert all_aborted_transactions(reloaded) == EXPECTED_ABORTED
    reloaded.close()
    again = create_log(log_dir, clock, clean=True)
    assert all_aborted_transactions(again) == EXPECTED_ABORTED
    assert again.first_unstable_offset is None
    again.close()


def test_an_open_transaction_gives_the_last_stable_offset_after_load(
    tmp_path: Path, clock: MockTime
) -> None:
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    pid6 = append_transactional_as_leader(log, 6, EPOCH, clock)
    pid6(3)  # 90-92
    append_non_transactional_as_leader(log, 2, clock)  # 93-94
    log.close()
    for clean in (True, False):
        reopened = create_log(log_dir, clock, clean=clean)
        assert reopened.first_unstable_offset == 90
        assert reopened.last_stable_offset == 90
        assert reopened.fetch_last_stable_offset_metadata().message_offset == 90
        reopened.close()


def test_rebuilding_a_segment_with_a_missing_index_keeps_the_producer_state(
    tmp_path: Path, clock: MockTime, caplog: pytest.LogCaptureFixture
) -> None:
    """A clean start that recovers the first segment (its ``.index`` is gone)
    rebuilds the producer state at that segment's base, which drops the later
    snapshots (``LogLoader.recoverSegment``); the snapshot taken after the
    segment keeps the open transactions and the producers for the final load."""
    log_dir = tmp_path / "t-0"
    log = create_log(log_dir, clock, segment_bytes=128 * 5)
    write_mixed_log(log, clock)
    pid6 = append_transactional_as_leader(log, 6, EPOCH, clock)
    pid6(3)  # 90-92
    entry = log.producer_state.last_entry(6)
    assert entry is not None
    last_seq = entry.last_seq
    log.close()
    files.offset_index_file(log_dir, 0).unlink()
    with caplog.at_level("WARNING", logger="broker.log.recovery"):
        reopened = create_log(log_dir, clock, clean=True)
    assert any("Rebuilding the indexes" in r.getMessage() for r in caplog.records)
    assert reopened.first_unstable_offset == 90
    entry = reopened.producer_state.last_entry(6)
    assert entry is not None and entry.last_seq == last_seq
    assert all_aborted_transactions(reopened) == EXPECTED_ABORTED
    reopened.close()
