"""Transactions in the producer state: Kafka's ``ProducerStateManagerTest``
transactional cases, in snake_case.

Kafka's test appends through a ``ProducerAppendInfo``; here a client append
runs the partition layer's checks (``check_producer_batches``) and then
``update_data_batch``, a replication append only the latter, and a marker
``append_end_txn_marker`` followed by ``complete_txn``. One broker: the high
watermark is the log end offset, so Kafka's ``onHighWatermarkUpdated`` steps
are gone and a completed transaction leaves the first unstable offset at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from broker.log.producer_state import (
    LATE_TRANSACTION_BUFFER_MS,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
    TxnMetadata,
    encode_snapshot,
    read_snapshot,
)
from broker.log.segment import LogOffsetMetadata
from broker.log.transaction_index import CompletedTxn
from broker.partition.producer_append import check_producer_batches
from broker.records.batch import NO_SEQUENCE, NO_TIMESTAMP, TRANSACTIONAL_FLAG_MASK
from broker.records.batch_info import BatchInfo
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.origin import AppendOrigin
from tests.unit.log.helpers import MockTime

PRODUCER_ID = 1
EPOCH = 0
DEFAULT_SEQUENCE = 0
EXPIRATION_MS = 86_400_000
MAX_TRANSACTION_TIMEOUT_MS = 5 * 60 * 1000
LATE_TRANSACTION_TIMEOUT_MS = MAX_TRANSACTION_TIMEOUT_MS + LATE_TRANSACTION_BUFFER_MS
COMMIT = ControlRecordType.COMMIT
ABORT = ControlRecordType.ABORT


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    path = tmp_path / "test-0"
    path.mkdir()
    return path


@pytest.fixture
def time() -> MockTime:
    return MockTime()


def new_state(log_dir: Path) -> ProducerStateManager:
    return ProducerStateManager(log_dir, EXPIRATION_MS, MAX_TRANSACTION_TIMEOUT_MS)


@pytest.fixture
def state(log_dir: Path) -> ProducerStateManager:
    return new_state(log_dir)


def append_entry(
    state: ProducerStateManager,
    producer_id: int,
    producer_epoch: int,
    seq: int,
    offset: int,
    timestamp: int,
    is_transactional: bool,
    origin: AppendOrigin = AppendOrigin.CLIENT,
) -> None:
    if origin is AppendOrigin.CLIENT:
        attributes = TRANSACTIONAL_FLAG_MASK if is_transactional else 0
        batch = BatchInfo(
            0, 70, 2, offset, offset, timestamp, 0, producer_id, producer_epoch, seq, attributes
        )
        assert check_producer_batches(state, [batch], "test-0") is None
    state.update_data_batch(
        producer_id,
        producer_epoch=producer_epoch,
        first_seq=seq,
        last_seq=seq,
        first_offset=offset,
        last_offset=offset,
        max_timestamp=timestamp,
        is_transactional=is_transactional,
    )
    state.update_map_end_offset(offset + 1)


def append_end_txn_marker(
    state: ProducerStateManager,
    producer_id: int,
    producer_epoch: int,
    control_type: ControlRecordType,
    offset: int,
    timestamp: int,
    coordinator_epoch: int = 0,
) -> CompletedTxn | None:
    completed = state.append_end_txn_marker(
        producer_id,
        EndTransactionMarker(control_type, coordinator_epoch),
        producer_epoch,
        offset,
        timestamp,
    )
    if completed is not None:
        state.complete_txn(completed)
    state.update_map_end_offset(offset + 1)
    return completed


def first_unstable(state: ProducerStateManager) -> int | None:
    fuo = state.first_unstable_offset()
    return None if fuo is None else fuo.message_offset


def test_append_txn_marker_with_no_producer_state(
    state: ProducerStateManager, time: MockTime
) -> None:
    producer_epoch = 2
    assert append_end_txn_marker(state, PRODUCER_ID, producer_epoch, COMMIT, 27, time()) is None
    first = state.last_entry(PRODUCER_ID)
    assert first is not None
    assert (first.producer_epoch, first.producer_id, first.last_seq) == (
        producer_epoch,
        PRODUCER_ID,
        NO_SEQUENCE,
    )
    # fencing still works when the marker is the only thing left
    with pytest.raises(InvalidProducerEpochError):
        append_entry(state, PRODUCER_ID, 0, DEFAULT_SEQUENCE, 4, 0, False)
    # a non-zero sequence after a lone marker: the producer must reset
    with pytest.raises(OutOfOrderSequenceError):
        append_entry(state, PRODUCER_ID, producer_epoch, 17, 4, 0, False)
    append_entry(state, PRODUCER_ID, producer_epoch, DEFAULT_SEQUENCE, 4, 39, False)
    second = state.last_entry(PRODUCER_ID)
    assert second is not None
    assert (second.producer_epoch, second.last_seq) == (producer_epoch, 0)


def test_control_record_bumps_producer_epoch(state: ProducerStateManager, time: MockTime) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, time(), False)
    bumped = 1
    append_end_txn_marker(state, PRODUCER_ID, bumped, ABORT, 1, time())
    entry = state.last_entry(PRODUCER_ID)
    assert entry is not None
    assert entry.producer_epoch == bumped
    assert entry.current_txn_first_offset is None
    assert entry.first_seq == NO_SEQUENCE
    assert entry.last_seq == NO_SEQUENCE
    # the new epoch starts at sequence 0
    append_entry(state, PRODUCER_ID, bumped, 0, 2, time(), False)
    assert state.last_entry(PRODUCER_ID).first_seq == DEFAULT_SEQUENCE  # type: ignore[union-attr]


def test_txn_first_offset_metadata_cached(state: ProducerStateManager, time: MockTime) -> None:
    offset = 992342
    metadata = LogOffsetMetadata(offset, 990000, 234224)
    state.update_data_batch(
        PRODUCER_ID,
        producer_epoch=EPOCH,
        first_seq=DEFAULT_SEQUENCE,
        last_seq=DEFAULT_SEQUENCE,
        first_offset=offset,
        last_offset=offset,
        max_timestamp=time(),
        is_transactional=True,
        first_offset_metadata=metadata,
    )
    assert state.first_unstable_offset() == metadata


def test_has_late_transaction(state: ProducerStateManager, time: MockTime) -> None:
    pid1, epoch1, pid2, epoch2 = 39, 2, 57, 9
    append_entry(state, pid1, epoch1, DEFAULT_SEQUENCE, 100, time(), True)
    assert not state.has_late_transaction(time())
    time.sleep(500)
    append_entry(state, pid2, epoch2, DEFAULT_SEQUENCE, 150, time(), True)
    assert not state.has_late_transaction(time())
    # only the first transaction is late
    time.sleep(LATE_TRANSACTION_TIMEOUT_MS - 500 + 1)
    assert state.has_late_transaction(time())
    # both are late
    time.sleep(500)
    assert state.has_late_transaction(time())
    append_end_txn_marker(state, pid1, epoch1, COMMIT, 200, time())
    assert state.has_late_transaction(time())
    append_end_txn_marker(state, pid2, epoch2, COMMIT, 250, time())
    assert not state.has_late_transaction(time())


def test_has_late_transaction_initialized_after_reload(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    pid1, epoch1, pid2, epoch2 = 39, 2, 57, 9
    append_entry(state, pid1, epoch1, DEFAULT_SEQUENCE, 100, time(), True)
    time.sleep(500)
    append_entry(state, pid2, epoch2, DEFAULT_SEQUENCE, 150, time(), True)
    assert not state.has_late_transaction(time())
    state.take_snapshot()
    time.sleep(LATE_TRANSACTION_TIMEOUT_MS - 500 + 1)
    assert state.has_late_transaction(time())
    reloaded = new_state(log_dir)
    reloaded.truncate_and_reload(0, state.map_end_offset, time())
    assert reloaded.has_late_transaction(time())


def test_has_late_transaction_updated_after_partial_truncation(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, 39, 2, DEFAULT_SEQUENCE, 100, time(), True)
    time.sleep(LATE_TRANSACTION_TIMEOUT_MS + 1)
    assert state.has_late_transaction(time())
    state.truncate_and_reload(0, 80, time())
    assert not state.has_late_transaction(time())


def test_has_late_transaction_updated_after_full_truncation(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, 39, 2, DEFAULT_SEQUENCE, 100, time(), True)
    time.sleep(LATE_TRANSACTION_TIMEOUT_MS + 1)
    assert state.has_late_transaction(time())
    state.truncate_fully_and_start_at(150)
    assert not state.has_late_transaction(time())


def test_out_of_sequence_after_control_record_epoch_bump(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, time(), True)
    append_entry(state, PRODUCER_ID, EPOCH, 1, 1, time(), True)
    bumped = 1
    append_end_txn_marker(state, PRODUCER_ID, bumped, ABORT, 1, time())
    # the sequence must restart at 0
    with pytest.raises(OutOfOrderSequenceError):
        append_entry(state, PRODUCER_ID, bumped, 2, 2, time(), True)
    with pytest.raises(OutOfOrderSequenceError):
        append_entry(state, PRODUCER_ID, bumped + 1, 2, 2, time(), True)
    append_entry(state, PRODUCER_ID, bumped, DEFAULT_SEQUENCE, 0, time(), True)
    entry = state.last_entry(PRODUCER_ID)
    assert entry is not None
    assert (entry.producer_epoch, entry.last_seq) == (bumped, 0)


def test_non_transactional_append_with_ongoing_transaction(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, time(), True)
    before = state.last_entry(PRODUCER_ID).copy()  # type: ignore[union-attr]
    with pytest.raises(InvalidTxnStateError, match="Expected transactional write"):
        append_entry(state, PRODUCER_ID, EPOCH, 1, 1, time(), False)
    # refused before any effect
    assert state.last_entry(PRODUCER_ID) == before


def test_a_non_transactional_batch_after_a_transactional_one_in_one_append_is_refused(
    state: ProducerStateManager, time: MockTime
) -> None:
    """The partition's checks see the transaction the append's earlier batch
    opens (Kafka's updatedEntry), so nothing of the append is written."""
    txn = BatchInfo(0, 70, 2, 0, 0, time(), 0, PRODUCER_ID, EPOCH, 0, TRANSACTIONAL_FLAG_MASK)
    plain = BatchInfo(70, 70, 2, 1, 1, time(), 0, PRODUCER_ID, EPOCH, 1, 0)
    with pytest.raises(InvalidTxnStateError, match="Expected transactional write"):
        check_producer_batches(state, [txn, plain], "test-0")
    assert check_producer_batches(state, [txn], "test-0") is None
    assert state.last_entry(PRODUCER_ID) is None


def test_truncate_and_reload_removes_out_of_range_snapshots(
    state: ProducerStateManager, time: MockTime
) -> None:
    """With a transaction begun at offset 1: the reloaded state has it ongoing."""
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, time(), False)
    state.take_snapshot()
    for seq in range(1, 5):
        append_entry(state, PRODUCER_ID, EPOCH, seq, seq, time(), True)
        state.take_snapshot()
    state.truncate_and_reload(1, 3, time())
    assert state.oldest_snapshot_offset == 2
    assert state.latest_snapshot_offset == 3
    assert list(state.ongoing_txns) == [1]
    assert state.first_undecided_offset() == 1


def test_recover_from_snapshot_unfinished_transaction(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, 0, 0, time(), True)
    append_entry(state, PRODUCER_ID, EPOCH, 1, 1, time(), True)
    state.take_snapshot()
    recovered = new_state(log_dir)
    recovered.truncate_and_reload(0, 3, time())
    entry = recovered.last_entry(PRODUCER_ID)
    assert entry is not None
    # the snapshot keeps the last batch only
    assert (entry.first_data_offset, entry.first_seq, entry.last_data_offset, entry.last_seq) == (
        1,
        1,
        1,
        1,
    )
    assert entry.current_txn_first_offset == 0
    assert recovered.ongoing_txns == {0: TxnMetadata(PRODUCER_ID, LogOffsetMetadata(0))}
    # appending after recovery continues the transaction
    append_entry(recovered, PRODUCER_ID, EPOCH, 2, 2, time(), True)
    assert list(recovered.ongoing_txns) == [0]


def test_recover_from_snapshot_finished_transaction(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, 0, 0, time(), True)
    append_entry(state, PRODUCER_ID, EPOCH, 1, 1, time(), True)
    assert append_end_txn_marker(state, PRODUCER_ID, EPOCH, ABORT, 2, time()) == CompletedTxn(
        PRODUCER_ID, 0, 2, True
    )
    state.take_snapshot()
    recovered = new_state(log_dir)
    recovered.truncate_and_reload(0, 3, time())
    entry = recovered.last_entry(PRODUCER_ID)
    assert entry is not None
    assert (entry.first_data_offset, entry.first_seq, entry.last_data_offset, entry.last_seq) == (
        1,
        1,
        1,
        1,
    )
    assert entry.current_txn_first_offset is None
    assert recovered.ongoing_txns == {}


def test_recover_from_snapshot_empty_transaction(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    append_timestamp = time()
    assert append_end_txn_marker(state, PRODUCER_ID, EPOCH, ABORT, 0, append_timestamp) is None
    state.take_snapshot()
    recovered = new_state(log_dir)
    recovered.truncate_and_reload(0, 1, time())
    entry = recovered.last_entry(PRODUCER_ID)
    assert entry is not None
    assert entry.last_timestamp == append_timestamp
    assert entry.current_txn_first_offset is None


def test_producer_state_after_fencing_abort_marker(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, time(), True)
    append_end_txn_marker(state, PRODUCER_ID, EPOCH + 1, ABORT, 1, time())
    entry = state.last_entry(PRODUCER_ID)
    assert entry is not None
    assert entry.current_txn_first_offset is None
    assert (entry.last_data_offset, entry.first_data_offset) == (-1, -1)
    # kept: the fencing epoch must survive
    state.remove_expired_producers(time())
    assert state.last_entry(PRODUCER_ID) is not None


def test_remove_expired_pids_on_reload(state: ProducerStateManager, log_dir: Path) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, 0, False)
    append_entry(state, PRODUCER_ID, EPOCH, 1, 1, 1, False)
    state.take_snapshot()
    recovered = new_state(log_dir)
    recovered.truncate_and_reload(0, 1, 70_000)
    # the pid is gone: its next append is accepted and adds it back
    append_entry(recovered, PRODUCER_ID, EPOCH, 2, 2, 70_001, False)
    assert len(recovered.active_producers) == 1
    assert next(iter(recovered.active_producers.values())).last_seq == 2
    assert recovered.map_end_offset == 3


def test_remove_expired_pids_on_reload_keeps_ongoing_txn(
    state: ProducerStateManager, log_dir: Path
) -> None:
    """``isProducerExpired``: a producer with an open transaction never expires."""
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, 0, False)
    append_entry(state, 2, EPOCH, DEFAULT_SEQUENCE, 1, 1, True)
    state.take_snapshot()
    recovered = ProducerStateManager(log_dir, 60_000, MAX_TRANSACTION_TIMEOUT_MS)
    recovered.truncate_and_reload(0, 2, 70_000)
    assert set(recovered.active_producers) == {2}
    assert recovered.ongoing_txns == {1: TxnMetadata(2, LogOffsetMetadata(1))}
    assert recovered.remove_expired_producers(10**12) == 0


def test_first_unstable_offset_after_truncation(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 99, time(), True)
    assert first_unstable(state) == 99
    state.take_snapshot()
    append_end_txn_marker(state, PRODUCER_ID, EPOCH, COMMIT, 105, time())
    assert first_unstable(state) is None
    state.take_snapshot()
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE + 1, 106, time(), False)
    state.truncate_and_reload(0, 106, time())
    assert first_unstable(state) is None
    state.truncate_and_reload(0, 100, time())
    assert first_unstable(state) == 99


def test_load_from_snapshot_retains_non_expired_producers(
    state: ProducerStateManager, time: MockTime
) -> None:
    """With pid2's batch transactional: its transaction comes back ongoing."""
    pid1, pid2 = 1, 2
    append_entry(state, pid1, EPOCH, DEFAULT_SEQUENCE, 0, time(), False)
    append_entry(state, pid2, EPOCH, DEFAULT_SEQUENCE, 1, time(), True)
    state.take_snapshot()
    assert len(state.active_producers) == 2
    state.truncate_and_reload(1, 2, time())
    assert len(state.active_producers) == 2
    entry1 = state.last_entry(pid1)
    entry2 = state.last_entry(pid2)
    assert entry1 is not None and entry2 is not None
    assert (entry1.last_seq, entry1.last_data_offset) == (0, 0)
    assert (entry2.last_seq, entry2.last_data_offset) == (0, 1)
    assert state.ongoing_txns == {1: TxnMetadata(pid2, LogOffsetMetadata(1))}


def test_truncate_and_reload_drops_txn_begun_after_snapshot(
    state: ProducerStateManager, time: MockTime
) -> None:
    pid1, pid2, pid3 = 1, 2, 3
    append_entry(state, pid1, EPOCH, DEFAULT_SEQUENCE, 0, time(), False)
    append_entry(state, pid2, EPOCH, DEFAULT_SEQUENCE, 1, time(), False)
    state.take_snapshot()
    append_entry(state, pid3, EPOCH, DEFAULT_SEQUENCE, 2, time(), True)
    assert len(state.active_producers) == 3
    state.truncate_and_reload(1, 2, time())
    assert len(state.active_producers) == 2
    entry1 = state.last_entry(pid1)
    entry2 = state.last_entry(pid2)
    assert entry1 is not None and entry2 is not None
    assert (entry1.last_seq, entry1.last_data_offset) == (0, 0)
    assert (entry2.last_seq, entry2.last_data_offset) == (0, 1)
    # the transaction of pid3 began after the snapshot: truncated away
    assert state.ongoing_txns == {}
    assert first_unstable(state) is None


def test_skip_snapshot_if_offset_unchanged(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 0, 0, True)
    assert state.take_snapshot() is not None
    assert state.snapshot_offsets() == [1]
    # nothing changed: no new snapshot
    assert state.take_snapshot() is None
    assert sorted(p.name for p in log_dir.iterdir()) == ["00000000000000000001.snapshot"]


def test_first_unstable_offset(state: ProducerStateManager, time: MockTime) -> None:
    epoch = 5
    assert state.first_undecided_offset() is None
    append_entry(state, PRODUCER_ID, epoch, DEFAULT_SEQUENCE, 99, time(), True)
    assert state.first_undecided_offset() == 99
    assert first_unstable(state) == 99
    another_pid = 2
    append_entry(state, another_pid, epoch, DEFAULT_SEQUENCE, 105, time(), True)
    assert state.first_undecided_offset() == 99
    assert first_unstable(state) == 99
    # Kafka keeps 99 until the high watermark passes the marker; here it is at once
    append_end_txn_marker(state, PRODUCER_ID, epoch, COMMIT, 109, time())
    assert state.first_undecided_offset() == 105
    assert first_unstable(state) == 105
    append_end_txn_marker(state, another_pid, epoch, ABORT, 112, time())
    assert state.first_undecided_offset() is None
    assert first_unstable(state) is None


def test_producers_with_ongoing_transactions_dont_expire(
    state: ProducerStateManager, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, 5, DEFAULT_SEQUENCE, 99, time(), True)
    assert state.first_undecided_offset() == 99
    time.sleep(EXPIRATION_MS + 1)
    assert state.remove_expired_producers(time()) == 0
    assert state.last_entry(PRODUCER_ID) is not None
    assert state.first_undecided_offset() == 99
    state.remove_expired_producers(time())
    assert state.last_entry(PRODUCER_ID) is not None


def test_sequence_not_validated_for_group_metadata_topic(tmp_path: Path, time: MockTime) -> None:
    """COORDINATOR appends (the offsets topic) take no sequence checks."""
    directory = tmp_path / "__consumer_offsets-0"
    directory.mkdir()
    state = new_state(directory)
    append_entry(state, PRODUCER_ID, EPOCH, NO_SEQUENCE, 99, time(), True, AppendOrigin.COORDINATOR)
    append_entry(
        state, PRODUCER_ID, EPOCH, NO_SEQUENCE, 100, time(), True, AppendOrigin.COORDINATOR
    )
    assert list(state.ongoing_txns) == [99]


def test_old_epoch_for_control_record(state: ProducerStateManager, time: MockTime) -> None:
    epoch = 5
    assert state.first_undecided_offset() is None
    append_entry(state, PRODUCER_ID, epoch, DEFAULT_SEQUENCE, 99, time(), True)
    with pytest.raises(InvalidProducerEpochError, match="smaller than the last seen epoch 5"):
        append_end_txn_marker(state, PRODUCER_ID, 3, COMMIT, 100, time())
    # refused before any effect
    assert state.first_undecided_offset() == 99
    assert state.last_entry(PRODUCER_ID).current_txn_first_offset == 99  # type: ignore[union-attr]


def test_old_epoch_for_control_record_on_replication(
    state: ProducerStateManager, time: MockTime
) -> None:
    """REPLICATION (replaying a log) takes an old-epoch marker as written."""
    append_entry(state, PRODUCER_ID, 5, DEFAULT_SEQUENCE, 99, time(), True)
    completed = state.append_end_txn_marker(
        PRODUCER_ID,
        EndTransactionMarker(COMMIT, 0),
        3,
        100,
        time(),
        origin=AppendOrigin.REPLICATION,
    )
    assert completed == CompletedTxn(PRODUCER_ID, 99, 100, False)


def test_coordinator_fencing(state: ProducerStateManager, time: MockTime) -> None:
    epoch = 5
    append_entry(state, PRODUCER_ID, epoch, DEFAULT_SEQUENCE, 99, time(), True)
    append_end_txn_marker(state, PRODUCER_ID, epoch, COMMIT, 100, time(), coordinator_epoch=1)
    assert state.last_entry(PRODUCER_ID).coordinator_epoch == 1  # type: ignore[union-attr]
    # the current coordinator epoch is allowed
    append_end_txn_marker(state, PRODUCER_ID, epoch, COMMIT, 101, time(), coordinator_epoch=1)
    # a bumped one too
    append_end_txn_marker(state, PRODUCER_ID, epoch, COMMIT, 102, time(), coordinator_epoch=2)
    # an older one is not
    with pytest.raises(TransactionCoordinatorFencedError, match="1 \\(zombie\\), 2 \\(current\\)"):
        append_end_txn_marker(state, PRODUCER_ID, epoch, COMMIT, 103, time(), coordinator_epoch=1)
    assert TransactionCoordinatorFencedError("x").code == 52
    # REPLICATION takes it (Kafka logs it)
    state.append_end_txn_marker(
        PRODUCER_ID,
        EndTransactionMarker(COMMIT, 1),
        epoch,
        103,
        time(),
        origin=AppendOrigin.REPLICATION,
    )
    assert state.last_entry(PRODUCER_ID).coordinator_epoch == 1  # type: ignore[union-attr]


def test_coordinator_fenced_after_reload(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    append_entry(state, PRODUCER_ID, EPOCH, DEFAULT_SEQUENCE, 99, time(), True)
    append_end_txn_marker(state, PRODUCER_ID, EPOCH, COMMIT, 100, time(), coordinator_epoch=1)
    state.take_snapshot()
    recovered = new_state(log_dir)
    recovered.truncate_and_reload(0, 101, 70_000)
    # a marker from the old coordinator is refused, by the reloaded state too
    # (Kafka's test reloads to (0, 2], which drops the snapshot at 101, and then
    # checks the first state only)
    for mapping in (state, recovered):
        with pytest.raises(TransactionCoordinatorFencedError):
            append_end_txn_marker(mapping, PRODUCER_ID, EPOCH, COMMIT, 101, time())


def test_complete_txn_not_started(state: ProducerStateManager) -> None:
    with pytest.raises(ValueError, match="which was not started"):
        state.complete_txn(CompletedTxn(PRODUCER_ID, 5, 9, False))


def begin_transaction(
    state: ProducerStateManager,
    producer_id: int,
    start_offset: int,
    segment_base_offset: int,
    time: MockTime,
) -> None:
    state.update_data_batch(
        producer_id,
        producer_epoch=EPOCH,
        first_seq=0,
        last_seq=0,
        first_offset=start_offset,
        last_offset=start_offset,
        max_timestamp=time(),
        is_transactional=True,
        first_offset_metadata=LogOffsetMetadata(
            start_offset, segment_base_offset, 50 * (start_offset - segment_base_offset)
        ),
    )


def test_last_stable_offset_completed_txn(state: ProducerStateManager, time: MockTime) -> None:
    segment_base_offset = 990000
    pid1, start1 = PRODUCER_ID, 992342
    begin_transaction(state, pid1, start1, segment_base_offset, time)
    pid2, start2 = PRODUCER_ID + 1, start1 + 25
    begin_transaction(state, pid2, start2, segment_base_offset, time)
    pid3, start3 = PRODUCER_ID + 2, start1 + 57
    begin_transaction(state, pid3, start3, segment_base_offset, time)

    last1 = start3 + 15
    txn1 = CompletedTxn(pid1, start1, last1, False)
    assert state.last_stable_offset(txn1) == start2
    state.complete_txn(txn1)
    assert first_unstable(state) == start2

    last3 = last1 + 20
    txn3 = CompletedTxn(pid3, start3, last3, False)
    assert state.last_stable_offset(txn3) == start2
    state.complete_txn(txn3)
    assert first_unstable(state) == start2

    last2 = last3 + 78
    txn2 = CompletedTxn(pid2, start2, last2, False)
    assert state.last_stable_offset(txn2) == last2 + 1
    state.complete_txn(txn2)
    assert state.first_unstable_offset() is None


def test_skip_empty_transactions(state: ProducerStateManager, time: MockTime) -> None:
    seq = DEFAULT_SEQUENCE

    def append_data(start: int, end: int) -> None:
        nonlocal seq
        count = end - start
        state.update_data_batch(
            PRODUCER_ID,
            producer_epoch=EPOCH,
            first_seq=seq,
            last_seq=seq + count,
            first_offset=start,
            last_offset=end,
            max_timestamp=time(),
            is_transactional=True,
        )
        seq += count + 1

    def end_txn(control_type: ControlRecordType, offset: int) -> CompletedTxn | None:
        marker = EndTransactionMarker(control_type, 27)
        return state.append_end_txn_marker(PRODUCER_ID, marker, EPOCH, offset, time())

    append_data(16, 20)
    assert state.ongoing_txns == {16: TxnMetadata(PRODUCER_ID, LogOffsetMetadata(16))}
    assert state.first_unstable_offset() == LogOffsetMetadata(16)
    # the old transaction ends; empty transactions; one complete, one left open
    first_completed = end_txn(COMMIT, 21)
    assert first_completed == CompletedTxn(PRODUCER_ID, 16, 21, False)
    assert end_txn(COMMIT, 22) is None
    assert end_txn(ABORT, 23) is None
    append_data(24, 27)
    second_completed = end_txn(ABORT, 28)
    assert second_completed == CompletedTxn(PRODUCER_ID, 24, 28, True)
    assert end_txn(ABORT, 29) is None
    append_data(30, 31)
    assert list(state.ongoing_txns) == [16, 24, 30]
    state.complete_txn(first_completed)
    state.complete_txn(second_completed)
    assert state.first_unstable_offset() == LogOffsetMetadata(30)


def test_load_from_snapshot_keeps_first_offset_order(
    state: ProducerStateManager, log_dir: Path, time: MockTime
) -> None:
    """A snapshot lists producers by id; the ongoing txns load in offset order."""
    for pid, offset in ((2, 10), (3, 20), (1, 30)):
        append_entry(state, pid, EPOCH, 0, offset, time(), True)
    state.take_snapshot()
    reloaded = new_state(log_dir)
    reloaded.truncate_and_reload(0, 31, time())
    assert list(reloaded.ongoing_txns) == [10, 20, 30]
    assert reloaded.first_undecided_offset() == 10
    append_end_txn_marker(reloaded, 2, EPOCH, COMMIT, 40, time())
    assert list(reloaded.ongoing_txns) == [20, 30]


def test_read_write_snapshot(state: ProducerStateManager, log_dir: Path) -> None:
    """Kafka's two entries, one with an open transaction, in exact bytes.

    Provenance: laid out by hand from ``ProducerStateManager.java``'s schema
    (version int16, crc uint32, array int32 count, then per entry producer_id
    int64, epoch int16, last_sequence int32, last_offset int64, offset_delta
    int32, timestamp int64, coordinator_epoch int32, current_txn_first_offset
    int64); the CRC-32C of everything after the crc field was computed with a
    bit-by-bit Castagnoli loop (poly 0x82F63B78), independent of the code.
    """
    first = ProducerStateEntry(1, 2, 3, NO_TIMESTAMP, 100)
    first.batch_metadata.append(BatchMetadata(1, 2, 3, NO_TIMESTAMP))
    second = ProducerStateEntry(11, 12, 13, 123456, None)
    golden = bytes.fromhex(
        "0001 FEDF4E50 00000002"
        " 0000000000000001 0002 00000001 0000000000000002 00000003 FFFFFFFFFFFFFFFF"
        " 00000003 0000000000000064"
        " 000000000000000B 000C FFFFFFFF FFFFFFFFFFFFFFFF 00000000 000000000001E240"
        " 0000000D FFFFFFFFFFFFFFFF"
    )
    assert encode_snapshot([first, second]) == golden
    path = log_dir / "00000000000000000003.snapshot"
    path.write_bytes(golden)
    assert read_snapshot(path) == [first, second]
    # loading it reopens the transaction of producer 1 only
    reloaded = new_state(log_dir)
    reloaded.truncate_and_reload(0, 3, 0)
    assert reloaded.ongoing_txns == {100: TxnMetadata(1, LogOffsetMetadata(100))}
