"""Kafka 3.9's ``TransactionMetadataTest`` ported, and the checks of every transition."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from broker.errors import ErrorCode
from broker.log.files import TopicPartition

S = TransactionState
SHORT_MAX = 32767
NOW = 1_700_000_000_000
PRODUCER_ID = 23423
TRANSACTIONAL_ID = "txnlId"


def _metadata(
    producer_epoch: int,
    state: TransactionState = S.Empty,
    *,
    last_producer_id: int = NO_PRODUCER_ID,
    last_producer_epoch: int = NO_PRODUCER_EPOCH,
    txn_start_timestamp: int = -1,
    partitions: tuple[TopicPartition, ...] = (),
) -> TransactionMetadata:
    return TransactionMetadata(
        TRANSACTIONAL_ID,
        producer_id=PRODUCER_ID,
        last_producer_id=last_producer_id,
        producer_epoch=producer_epoch,
        last_producer_epoch=last_producer_epoch,
        txn_timeout_ms=30000,
        state=state,
        topic_partitions=partitions,
        txn_start_timestamp=txn_start_timestamp,
        txn_last_update_timestamp=NOW,
    )


def _successful_increment(
    metadata: TransactionMetadata, expected_epoch: int | None, now: int | None = None
) -> TxnTransitMetadata:
    result = metadata.prepare_increment_producer_epoch(
        30000, expected_epoch, NOW if now is None else now
    )
    assert isinstance(result, TxnTransitMetadata), result
    return result


# ---- TransactionMetadataTest ----------------------------------------------------------------


def test_initialize_epoch() -> None:
    metadata = _metadata(NO_PRODUCER_EPOCH)
    metadata.complete_transition_to(_successful_increment(metadata, None))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 0
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH


def test_normal_epoch_bump() -> None:
    metadata = _metadata(735)
    metadata.complete_transition_to(_successful_increment(metadata, None))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 736
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH


def test_bump_epoch_not_allowed_if_epochs_exhausted() -> None:
    metadata = _metadata(SHORT_MAX - 1)
    assert metadata.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransactionStateError):
        metadata.prepare_increment_producer_epoch(30000, None, NOW)


def test_tolerate_update_time_shift_during_epoch_bump() -> None:
    metadata = _metadata(1, txn_start_timestamp=1)
    # the new time is smaller
    metadata.complete_transition_to(_successful_increment(metadata, 1, NOW - 1))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 2
    assert metadata.last_producer_epoch == 1
    assert metadata.txn_start_timestamp == 1
    assert metadata.txn_last_update_timestamp == NOW - 1


def test_tolerate_update_time_reset_during_producer_id_rotation() -> None:
    metadata = _metadata(1, txn_start_timestamp=1)
    transit = metadata.prepare_producer_id_rotation(
        PRODUCER_ID + 1, 30000, NOW - 1, record_last_epoch=True
    )
    metadata.complete_transition_to(transit)
    assert metadata.producer_id == PRODUCER_ID + 1
    assert metadata.last_producer_epoch == 1
    assert metadata.producer_epoch == 0
    assert metadata.txn_start_timestamp == 1
    assert metadata.txn_last_update_timestamp == NOW - 1


def test_tolerate_time_shift_during_add_partitions() -> None:
    metadata = _metadata(1, txn_start_timestamp=NOW)
    # from Empty the start time becomes the update time, even a smaller one
    metadata.complete_transition_to(
        metadata.prepare_add_partitions({TopicPartition("topic1", 0)}, NOW - 1)
    )
    assert metadata.topic_partitions == {TopicPartition("topic1", 0)}
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH
    assert metadata.producer_epoch == 1
    assert metadata.txn_start_timestamp == NOW - 1
    assert metadata.txn_last_update_timestamp == NOW - 1

    # in Ongoing the start time stays
    metadata.complete_transition_to(
        metadata.prepare_add_partitions({TopicPartition("topic2", 0)}, NOW - 2)
    )
    assert metadata.topic_partitions == {TopicPartition("topic1", 0), TopicPartition("topic2", 0)}
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH
    assert metadata.producer_epoch == 1
    assert metadata.txn_start_timestamp == NOW - 1
    assert metadata.txn_last_update_timestamp == NOW - 2


@pytest.mark.parametrize("target", [S.PrepareCommit, S.PrepareAbort])
def test_tolerate_time_shift_during_prepare_commit_and_abort(target: TransactionState) -> None:
    """``testTolerateTimeShiftDuringPrepareCommit`` / ``...DuringPrepareAbort``."""
    metadata = _metadata(1, S.Ongoing, txn_start_timestamp=1)
    metadata.complete_transition_to(metadata.prepare_abort_or_commit(target, NOW - 1))
    assert metadata.state is target
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH
    assert metadata.producer_epoch == 1
    assert metadata.txn_start_timestamp == 1
    assert metadata.txn_last_update_timestamp == NOW - 1


@pytest.mark.parametrize(
    ("start", "end"),
    [(S.PrepareCommit, S.CompleteCommit), (S.PrepareAbort, S.CompleteAbort)],
)
def test_tolerate_time_shift_during_complete_commit_and_abort(
    start: TransactionState, end: TransactionState
) -> None:
    """``testTolerateTimeShiftDuringCompleteCommit`` / ``...DuringCompleteAbort``."""
    metadata = _metadata(1, start, txn_start_timestamp=1)
    metadata.complete_transition_to(metadata.prepare_complete(NOW - 1))
    assert metadata.state is end
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH
    assert metadata.producer_epoch == 1
    assert metadata.txn_start_timestamp == 1
    assert metadata.txn_last_update_timestamp == NOW - 1


def test_fence_producer_after_epochs_exhausted() -> None:
    metadata = _metadata(SHORT_MAX - 1, S.Ongoing)
    assert metadata.is_producer_epoch_exhausted
    fencing = metadata.prepare_fence_producer_epoch()
    assert fencing.producer_epoch == SHORT_MAX
    assert fencing.last_producer_epoch == NO_PRODUCER_EPOCH
    assert metadata.pending_state is S.PrepareEpochFence

    # the pending state is reset to make way for the abort
    metadata.pending_state = None
    transit = metadata.prepare_abort_or_commit(S.PrepareAbort, NOW)
    metadata.complete_transition_to(transit)
    assert transit.producer_id == PRODUCER_ID


def test_fence_producer_not_allowed_if_it_would_overflow() -> None:
    metadata = _metadata(SHORT_MAX, S.Ongoing)
    assert metadata.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransactionStateError):
        metadata.prepare_fence_producer_epoch()


def test_rotate_producer_id() -> None:
    metadata = _metadata(SHORT_MAX - 1)
    transit = metadata.prepare_producer_id_rotation(9893, 30000, NOW, record_last_epoch=True)
    metadata.complete_transition_to(transit)
    assert metadata.producer_id == 9893
    assert metadata.last_producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 0
    assert metadata.last_producer_epoch == SHORT_MAX - 1


@pytest.mark.parametrize("state", [S.Ongoing, S.PrepareAbort, S.PrepareCommit])
def test_rotate_producer_id_in_ongoing_state(state: TransactionState) -> None:
    """``testRotateProducerIdInOngoingState`` / ``...InPrepareAbortState`` /
    ``...InPrepareCommitState``."""
    metadata = _metadata(SHORT_MAX - 1, state, last_producer_id=PRODUCER_ID)
    with pytest.raises(IllegalTransactionStateError):
        metadata.prepare_producer_id_rotation(9893, 30000, NOW, record_last_epoch=False)


def test_attempted_epoch_bump_with_newly_created_metadata() -> None:
    metadata = _metadata(NO_PRODUCER_EPOCH)
    metadata.complete_transition_to(_successful_increment(metadata, 735))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 0
    assert metadata.last_producer_epoch == NO_PRODUCER_EPOCH


def test_epoch_bump_with_current_epoch_provided() -> None:
    metadata = _metadata(735)
    metadata.complete_transition_to(_successful_increment(metadata, 735))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 736
    assert metadata.last_producer_epoch == 735


def test_attempted_epoch_bump_with_last_epoch() -> None:
    metadata = _metadata(735, last_producer_epoch=734)
    metadata.complete_transition_to(_successful_increment(metadata, 734))
    assert metadata.producer_id == PRODUCER_ID
    assert metadata.producer_epoch == 735
    assert metadata.last_producer_epoch == 734


def test_attempted_epoch_bump_with_fenced_epoch() -> None:
    metadata = _metadata(735, last_producer_id=PRODUCER_ID, last_producer_epoch=734)
    result = metadata.prepare_increment_producer_epoch(30000, 733, NOW)
    assert result is ErrorCode.PRODUCER_FENCED
    assert metadata.pending_state is None


def test_transaction_state_id_and_name_mapping() -> None:
    # (Kafka also parses the name as the admin client's TransactionState: no client here)
    for state in TransactionState:
        assert TransactionState.from_id(state.id) is state
        assert TransactionState.from_name(state.name) is state
    assert TransactionState.from_name("Unknown") is None
    with pytest.raises(IllegalTransactionStateError):
        TransactionState.from_id(8)


def test_all_transaction_states_are_mapped() -> None:
    assert {s.name: s.id for s in TransactionState} == {
        "Empty": 0,
        "Ongoing": 1,
        "PrepareCommit": 2,
        "PrepareAbort": 3,
        "CompleteCommit": 4,
        "CompleteAbort": 5,
        "Dead": 6,
        "PrepareEpochFence": 7,
    }


# ---- the state table and the checks of every transition ------------------------------------


def test_valid_previous_states_are_kafkas() -> None:
    assert {s: s.valid_previous_states for s in TransactionState} == {
        S.Empty: {S.Empty, S.CompleteCommit, S.CompleteAbort},
        S.Ongoing: {S.Ongoing, S.Empty, S.CompleteCommit, S.CompleteAbort},
        S.PrepareCommit: {S.Ongoing},
        S.PrepareAbort: {S.Ongoing, S.PrepareEpochFence},
        S.CompleteCommit: {S.PrepareCommit},
        S.CompleteAbort: {S.PrepareAbort},
        S.Dead: {S.Empty, S.CompleteAbort, S.CompleteCommit},
        S.PrepareEpochFence: {S.Ongoing},
    }
    assert {s for s in TransactionState if s.is_expiration_allowed} == {
        S.Empty,
        S.CompleteCommit,
        S.CompleteAbort,
    }


@pytest.mark.parametrize("state", list(TransactionState))
@pytest.mark.parametrize("target", [S.PrepareCommit, S.PrepareAbort])
def test_prepare_abort_or_commit_only_from_valid_states(
    state: TransactionState, target: TransactionState
) -> None:
    metadata = _metadata(1, state)
    if state in target.valid_previous_states:
        assert metadata.prepare_abort_or_commit(target, NOW).txn_state is target
        assert metadata.pending_state is target
    else:
        with pytest.raises(IllegalTransactionStateError, match="not a valid previous state"):
            metadata.prepare_abort_or_commit(target, NOW)
        assert metadata.pending_state is None


def test_a_second_prepare_is_refused_while_one_is_pending() -> None:
    metadata = _metadata(1)
    metadata.prepare_add_partitions({TopicPartition("t", 0)}, NOW)
    with pytest.raises(IllegalTransactionStateError, match="already a pending state Ongoing"):
        metadata.prepare_add_partitions({TopicPartition("t", 1)}, NOW)
    assert metadata.pending_transition_in_progress


def test_negative_producer_id_or_epoch_is_an_illegal_argument() -> None:
    metadata = _metadata(1)
    with pytest.raises(ValueError, match="Illegal new producer id -1"):
        metadata.prepare_producer_id_rotation(-1, 30000, NOW, record_last_epoch=False)
    ongoing = _metadata(NO_PRODUCER_EPOCH, S.Ongoing)
    with pytest.raises(ValueError, match="Illegal new producer epoch -1"):
        ongoing.prepare_abort_or_commit(S.PrepareAbort, NOW)


def test_dead_allows_no_epoch_and_never_completes() -> None:
    metadata = _metadata(NO_PRODUCER_EPOCH, S.CompleteCommit, partitions=())
    transit = metadata.prepare_dead()
    assert transit.txn_state is S.Dead
    assert transit.topic_partitions == frozenset()
    assert transit.txn_last_update_timestamp == NOW
    with pytest.raises(
        IllegalTransactionStateError, match="trying to complete a transition to Dead"
    ):
        metadata.complete_transition_to(transit)


def test_complete_without_a_pending_state_fails() -> None:
    metadata = _metadata(1)
    with pytest.raises(IllegalTransactionStateError, match="does not have a pending state"):
        metadata.complete_transition_to(metadata.prepare_no_transit())
    assert metadata.pending_state is None  # prepare_no_transit sets none


def test_complete_with_another_state_than_the_pending_one_fails() -> None:
    metadata = _metadata(1, S.Ongoing)
    metadata.prepare_abort_or_commit(S.PrepareCommit, NOW)
    other = _metadata(1, S.Ongoing).prepare_abort_or_commit(S.PrepareAbort, NOW)
    with pytest.raises(IllegalTransactionStateError, match="due to unexpected metadata"):
        metadata.complete_transition_to(other)
    assert metadata.state is S.Ongoing


def _replace(transit: TxnTransitMetadata, **changes: Any) -> TxnTransitMetadata:
    return dataclasses.replace(transit, **changes)


def test_complete_to_empty_checks_epoch_partitions_and_start_time() -> None:
    base = _metadata(5)
    good = base.prepare_increment_producer_epoch(30000, None, NOW)
    assert isinstance(good, TxnTransitMetadata)
    for bad in (
        {"producer_epoch": 7},  # neither the same, +1, nor 0 with a new producer id
        {"topic_partitions": frozenset({TopicPartition("t", 0)})},
        {"txn_start_timestamp": 3},
    ):
        with pytest.raises(IllegalTransactionStateError):
            base.complete_transition_to(_replace(good, **bad))
    # 0 with a new producer id is a valid bump
    base.complete_transition_to(_replace(good, producer_epoch=0, producer_id=PRODUCER_ID + 1))
    assert (base.producer_id, base.producer_epoch) == (PRODUCER_ID + 1, 0)


def test_complete_to_ongoing_checks_epoch_subset_and_timeout() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    metadata = _metadata(1, S.Ongoing, partitions=(tp0,), txn_start_timestamp=1)
    good = metadata.prepare_add_partitions({tp1}, NOW)
    assert good.topic_partitions == {tp0, tp1}
    for bad in (
        {"producer_epoch": 2},
        {"producer_id": PRODUCER_ID + 1},
        {"topic_partitions": frozenset({tp1})},  # the old set is not a subset
        {"txn_timeout_ms": 1},
    ):
        with pytest.raises(IllegalTransactionStateError):
            metadata.complete_transition_to(_replace(good, **bad))
    metadata.complete_transition_to(good)
    assert metadata.topic_partitions == {tp0, tp1}
    assert metadata.state is S.Ongoing
    assert metadata.pending_state is None


def test_complete_to_prepare_checks_partitions_timeout_and_start_time() -> None:
    tp0 = TopicPartition("t", 0)
    metadata = _metadata(1, S.Ongoing, partitions=(tp0,), txn_start_timestamp=1)
    good = metadata.prepare_abort_or_commit(S.PrepareCommit, NOW)
    for bad in (
        {"producer_epoch": 2},
        {"topic_partitions": frozenset()},
        {"txn_timeout_ms": 1},
        {"txn_start_timestamp": 2},
    ):
        with pytest.raises(IllegalTransactionStateError):
            metadata.complete_transition_to(_replace(good, **bad))
    metadata.complete_transition_to(good)
    assert metadata.state is S.PrepareCommit
    assert metadata.topic_partitions == {tp0}


def test_complete_to_complete_clears_the_partitions() -> None:
    tp0 = TopicPartition("t", 0)
    metadata = _metadata(1, S.PrepareAbort, partitions=(tp0,), txn_start_timestamp=1)
    metadata.has_failed_epoch_fence = True
    good = metadata.prepare_complete(NOW)
    assert good.txn_state is S.CompleteAbort
    assert not metadata.has_failed_epoch_fence
    for bad in ({"producer_epoch": 2}, {"txn_timeout_ms": 1}, {"txn_start_timestamp": -1}):
        with pytest.raises(IllegalTransactionStateError):
            metadata.complete_transition_to(_replace(good, **bad))
    metadata.complete_transition_to(good)
    assert metadata.topic_partitions == set()
    assert metadata.state is S.CompleteAbort


def test_complete_to_prepare_epoch_fence_always_fails() -> None:
    metadata = _metadata(3, S.Ongoing)
    fence = metadata.prepare_fence_producer_epoch()
    assert fence.producer_epoch == 4
    with pytest.raises(IllegalTransactionStateError, match="due to unexpected metadata"):
        metadata.complete_transition_to(fence)


def test_a_failed_fence_does_not_bump_again() -> None:
    metadata = _metadata(3, S.Ongoing)
    metadata.has_failed_epoch_fence = True
    assert metadata.prepare_fence_producer_epoch().producer_epoch == 3


def test_remove_partition_only_while_preparing_to_end() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    metadata = _metadata(1, S.Ongoing, partitions=(tp0, tp1))
    with pytest.raises(IllegalTransactionStateError, match="current state is Ongoing"):
        metadata.remove_partition(tp0)
    metadata.state = S.PrepareCommit
    metadata.remove_partition(tp0)
    assert metadata.topic_partitions == {tp1}


def test_create_and_equality_as_kafkas() -> None:
    a = TransactionMetadata.create("id", 7, 1, 1000, NOW)
    assert (a.state, a.topic_partitions, a.txn_start_timestamp) == (S.Empty, set(), NOW)
    assert (a.last_producer_id, a.last_producer_epoch) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    b = TransactionMetadata.create("id", 7, 1, 1000, NOW, last_producer_id=3)
    assert a == b  # Kafka's equals leaves the last producer id out
    assert a != TransactionMetadata.create("id", 7, 1, 1000, NOW, state=S.Ongoing)
    assert "transactionalId=id" in repr(a)
