"""Loading a log written by Kafka with transactions rebuilds the ongoing and
completed transactions as Kafka's ``LogLoader`` does (``LogLoaderTest``'s
``testFullTransactionIndexRecovery``, checked on what recovery hands to the
``.txnindex``: each completed transaction with its last stable offset)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import recovery
from broker.log.producer_state import (
    ProducerStateManager,
    TxnMetadata,
    list_snapshot_offsets,
)
from broker.log.segment import LogOffsetMetadata
from broker.log.transaction_index import CompletedTxn
from broker.log.unified_log import UnifiedLog
from broker.records.batch import (
    CONTROL_FLAG_MASK,
    RECORDS_COUNT_OFFSET,
    RECORDS_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
)
from broker.records.builder import build_v2_batch
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.record import SimpleRecord
from tests.unit.log.batches import v2_batch
from tests.unit.log.cleaner_helpers import append_marker
from tests.unit.log.helpers import MockTime

EPOCH = 0


def open_log(
    log_dir: Path, clock: MockTime, *, clean: bool = True, segment_bytes: int = 640
) -> UnifiedLog:
    return UnifiedLog.open(
        log_dir,
        TopicConfig(segment_bytes=segment_bytes),
        log_start_offset=0,
        recovery_point=0,
        had_clean_shutdown=clean,
        time_ms=clock,
    )


def transactional_appender(log: UnifiedLog, producer_id: int) -> Callable[[int], None]:
    """``LogTestUtils.appendTransactionalAsLeader``: n records in one batch,
    the producer's sequence carried on."""
    sequence = 0

    def append(n: int) -> None:
        nonlocal sequence
        log.append(
            v2_batch(
                log.log_end_offset,
                [b"v%d" % i for i in range(n)],
                producer_id=producer_id,
                producer_epoch=EPOCH,
                base_sequence=sequence,
                attributes=TRANSACTIONAL_FLAG_MASK,
            )
        )
        sequence += n

    return append


def append_non_transactional(log: UnifiedLog, n: int) -> None:
    log.append(v2_batch(log.log_end_offset, [b"n%d" % i for i in range(n)]))


def reopen_collecting(
    log_dir: Path, clock: MockTime, mp: pytest.MonkeyPatch
) -> tuple[UnifiedLog, list[tuple[CompletedTxn, int]]]:
    """Reopen after a crash with no snapshots left: every segment is
    recovered; returns what the recoveries completed."""
    for offset in list_snapshot_offsets(log_dir):
        (log_dir / f"{offset:020d}.snapshot").unlink()
    completed: list[tuple[CompletedTxn, int]] = []
    real = recovery.recover_segment

    def spy(*args: object, **kwargs: object) -> recovery.RecoverResult:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        completed.extend(result.completed_txns)
        return result

    mp.setattr(recovery, "recover_segment", spy)
    return open_log(log_dir, clock, clean=False, segment_bytes=1024 * 5), completed


def write_kafka_log(log_dir: Path, clock: MockTime, *, last_marker: bool = True) -> int:
    """The log of ``testFullTransactionIndexRecovery``; returns its end offset."""
    log = open_log(log_dir, clock)
    pid1, pid2, pid3, pid4 = (transactional_appender(log, pid) for pid in (1, 2, 3, 4))
    pid1(5)  # 0-4
    append_non_transactional(log, 3)  # 5-7
    pid2(2)  # 8-9
    pid1(4)  # 10-13
    pid3(3)  # 14-16
    append_non_transactional(log, 2)  # 17-18
    pid1(10)  # 19-28
    append_marker(log, 1, EPOCH, commit=False)  # 29
    pid2(6)  # 30-35
    pid4(3)  # 36-38
    append_non_transactional(log, 10)  # 39-48
    pid3(9)  # 49-57
    append_marker(log, 3, EPOCH, commit=True)  # 58
    pid4(8)  # 59-66
    pid2(7)  # 67-73
    append_marker(log, 2, EPOCH, commit=False)  # 74
    append_non_transactional(log, 10)  # 75-84
    pid4(4)  # 85-88
    if last_marker:
        append_marker(log, 4, EPOCH, commit=True)  # 89
    assert log.number_of_segments > 3
    end = log.log_end_offset
    log.close()
    return end


def test_full_transaction_index_recovery(tmp_path: Path) -> None:
    log_dir = tmp_path / "txn-0"
    clock = MockTime()
    assert write_kafka_log(log_dir, clock) == 90
    with pytest.MonkeyPatch.context() as mp:
        log, completed = reopen_collecting(log_dir, clock, mp)
    try:
        assert completed == [
            (CompletedTxn(1, 0, 29, True), 8),
            (CompletedTxn(3, 14, 58, False), 8),
            (CompletedTxn(2, 8, 74, True), 36),
            (CompletedTxn(4, 36, 89, False), 90),
        ]
        # Kafka's AbortedTxn(pid1, 0, 29, 8), AbortedTxn(pid2, 8, 74, 36)
        assert [(t.producer_id, t.first_offset, t.last_offset, lso) for t, lso in completed if
                t.is_aborted] == [(1, 0, 29, 8), (2, 8, 74, 36)]  # fmt: skip
        assert log.producer_state.ongoing_txns == {}
        assert log.producer_state.first_unstable_offset() is None
        for pid in (1, 2, 3, 4):
            entry = log.producer_state.last_entry(pid)
            assert entry is not None and entry.current_txn_first_offset is None
    finally:
        log.close()


def test_recovery_keeps_an_open_transaction(tmp_path: Path) -> None:
    """pid4's transaction has no marker: after a crash, and after the clean
    restart that follows (from the snapshot), it is ongoing from offset 36."""
    log_dir = tmp_path / "txn-0"
    clock = MockTime()
    assert write_kafka_log(log_dir, clock, last_marker=False) == 89
    with pytest.MonkeyPatch.context() as mp:
        log, completed = reopen_collecting(log_dir, clock, mp)
    try:
        assert [t for t, _ in completed] == [
            CompletedTxn(1, 0, 29, True),
            CompletedTxn(3, 14, 58, False),
            CompletedTxn(2, 8, 74, True),
        ]
        assert log.producer_state.ongoing_txns == {36: TxnMetadata(4, LogOffsetMetadata(36))}
        assert log.producer_state.first_undecided_offset() == 36
        entry = log.producer_state.last_entry(4)
        assert entry is not None and entry.current_txn_first_offset == 36
    finally:
        log.close()
    reopened = open_log(log_dir, clock)
    try:
        assert reopened.producer_state.ongoing_txns == {36: TxnMetadata(4, LogOffsetMetadata(36))}
    finally:
        reopened.close()


def test_rebuild_from_snapshot_then_log_completes_the_snapshot_txns(tmp_path: Path) -> None:
    """A snapshot taken with transactions open, then the rest of the log
    replayed (``rebuildProducerState``): the markers after the snapshot
    complete the transactions the snapshot reopened."""
    log_dir = tmp_path / "txn-0"
    clock = MockTime()
    log = open_log(log_dir, clock)
    pid1, pid2 = (transactional_appender(log, pid) for pid in (1, 2))
    pid1(2)  # 0-1
    pid2(2)  # 2-3
    log.producer_state.take_snapshot()  # at 4: both open
    assert list(log.producer_state.ongoing_txns) == [0, 2]
    assert list_snapshot_offsets(log_dir) == [4]
    append_marker(log, 1, EPOCH, commit=True)  # 4
    append_non_transactional(log, 2)  # 5-6
    log.close()
    for offset in list_snapshot_offsets(log_dir):
        if offset != 4:
            (log_dir / f"{offset:020d}.snapshot").unlink()
    reopened = open_log(log_dir, clock)
    try:
        assert reopened.producer_state.ongoing_txns == {2: TxnMetadata(2, LogOffsetMetadata(2))}
        assert reopened.producer_state.first_undecided_offset() == 2
        assert reopened.producer_state.last_entry(1).current_txn_first_offset is None  # type: ignore[union-attr]
    finally:
        reopened.close()


def _control_batch(producer_id: int, base_offset: int, *, empty: bool) -> bytes:
    marker = EndTransactionMarker(ControlRecordType.ABORT, 0)
    built = build_v2_batch(
        [SimpleRecord(5, marker.key(), marker.serialize_value())],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=EPOCH,
        is_transactional=True,
        is_control=True,
    )
    data = bytearray(built.buffer)
    if empty:  # what the cleaner leaves of a marker whose transaction is gone
        data[RECORDS_COUNT_OFFSET : RECORDS_COUNT_OFFSET + 4] = bytes(4)
        data = data[:RECORDS_OFFSET]
    return bytes(data)


def test_append_empty_control_batch(tmp_path: Path) -> None:
    """``testAppendEmptyControlBatch``: replaying an empty control batch starts
    and ends nothing (Kafka also adds an empty entry for an unknown producer;
    here the state is left as it is)."""
    state = ProducerStateManager(tmp_path)
    header = (23423, EPOCH, -1, 0, 15, 5, CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK, 0)
    assert (
        recovery.apply_producer_batch(state, header, _control_batch(23423, 15, empty=True)) is None
    )
    assert state.ongoing_txns == {}
    # a transaction open across it stays open; a real marker then ends it
    state.update_data_batch(
        23423, producer_epoch=EPOCH, first_seq=0, last_seq=0, first_offset=16, last_offset=16,
        max_timestamp=5, is_transactional=True,
    )  # fmt: skip
    assert (
        recovery.apply_producer_batch(state, header, _control_batch(23423, 15, empty=True)) is None
    )
    assert list(state.ongoing_txns) == [16]
    marker_header = (23423, EPOCH, -1, 0, 17, 5, CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK, 0)
    assert recovery.apply_producer_batch(
        state, marker_header, _control_batch(23423, 17, empty=False)
    ) == (CompletedTxn(23423, 16, 17, True), 18)
    assert state.ongoing_txns == {}
