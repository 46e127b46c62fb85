"""``TransactionCoordinator.handle_init_producer_id``: the InitProducerId cases of Kafka 3.9's
``TransactionCoordinatorTest.scala``.

Kafka mocks its ``TransactionStateManager``; :class:`FakeStateManager` stands in
for it the same way (a dict of metadata, an append that completes the
transition or answers the error it is told to), so each case checks the
coordinator alone. ``tests/unit/transactions/test_transaction_state_manager.py``
tests the real manager over real logs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.coordinator.transaction.coordinator import (
    InitProducerIdResult,
    ProducerIdAndEpoch,
    TransactionCoordinator,
)
from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from broker.coordinator.transaction.state_manager import (
    CoordinatorEpochAndTxnMetadata,
    append_error_to_coordinator_error,
)
from broker.errors import ErrorCode
from broker.log.files import TopicPartition

S = TransactionState
TRANSACTIONAL_ID = "known"
PRODUCER_ID = 10
PRODUCER_EPOCH = 1
TXN_TIMEOUT_MS = 1
COORDINATOR_EPOCH = 0
NOW = 1_700_000_000_000
PARTITIONS = {TopicPartition("topic1", 0)}


class PidGenerator:
    def __init__(self, first: int = 0) -> None:
        self.next = first
        self.calls = 0

    def next_producer_id(self) -> int:
        self.calls += 1
        self.next += 1
        return self.next - 1


class FakeStateManager:
    """What the coordinator calls of ``TransactionStateManager``, as Kafka's test mocks it."""

    def __init__(self) -> None:
        self.metadata: dict[str, TransactionMetadata] = {}
        self.lookup_error: ErrorCode | None = None
        self.append_error = ErrorCode.NONE
        self.appended: list[TxnTransitMetadata] = []
        self.lookups = 0
        self.now = NOW

    def time_ms(self) -> int:
        return self.now

    def ensure_topic(self) -> None:
        return None

    def partition_for(self, transactional_id: str) -> int:
        return 0

    def validate_transaction_timeout_ms(self, txn_timeout_ms: int) -> bool:
        return 0 < txn_timeout_ms <= 15 * 60 * 1000

    def get_transaction_state(
        self, transactional_id: str
    ) -> ErrorCode | CoordinatorEpochAndTxnMetadata | None:
        self.lookups += 1
        if self.lookup_error is not None:
            return self.lookup_error
        found = self.metadata.get(transactional_id)
        return None if found is None else CoordinatorEpochAndTxnMetadata(COORDINATOR_EPOCH, found)

    def put_transaction_state_if_not_exists(
        self, metadata: TransactionMetadata
    ) -> CoordinatorEpochAndTxnMetadata:
        found = self.metadata.setdefault(metadata.transactional_id, metadata)
        return CoordinatorEpochAndTxnMetadata(COORDINATOR_EPOCH, found)

    def append_transaction_to_log(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        new_metadata: TxnTransitMetadata,
        response_callback: Callable[[ErrorCode], None],
    ) -> None:
        assert coordinator_epoch == COORDINATOR_EPOCH
        self.appended.append(new_metadata)
        metadata = self.metadata[transactional_id]
        if self.append_error is ErrorCode.NONE:
            metadata.complete_transition_to(new_metadata)
        else:
            metadata.pending_state = None
        response_callback(append_error_to_coordinator_error(self.append_error))


def metadata(
    producer_id: int,
    last_producer_id: int,
    producer_epoch: int,
    last_producer_epoch: int,
    state: TransactionState,
    partitions: set[TopicPartition] | None = None,
    txn_timeout_ms: int = TXN_TIMEOUT_MS,
) -> TransactionMetadata:
    return TransactionMetadata(
        TRANSACTIONAL_ID,
        producer_id=producer_id,
        last_producer_id=last_producer_id,
        producer_epoch=producer_epoch,
        last_producer_epoch=last_producer_epoch,
        txn_timeout_ms=txn_timeout_ms,
        state=state,
        topic_partitions=partitions if partitions is not None else set(PARTITIONS),
        txn_start_timestamp=NOW,
        txn_last_update_timestamp=NOW,
    )


@pytest.fixture
def manager() -> FakeStateManager:
    return FakeStateManager()


@pytest.fixture
def pids() -> PidGenerator:
    return PidGenerator()


@pytest.fixture
def coordinator(manager: FakeStateManager, pids: PidGenerator) -> TransactionCoordinator:
    return TransactionCoordinator(manager, pids)  # type: ignore[arg-type]


def init(
    coordinator: TransactionCoordinator,
    transactional_id: str | None = TRANSACTIONAL_ID,
    timeout_ms: int = TXN_TIMEOUT_MS,
    expected: tuple[int, int] | None = None,
) -> InitProducerIdResult:
    reply = coordinator.handle_init_producer_id(
        transactional_id, timeout_ms, None if expected is None else ProducerIdAndEpoch(*expected)
    )
    assert reply.done()
    return reply.value


def result(producer_id: int, epoch: int, error: ErrorCode = ErrorCode.NONE) -> InitProducerIdResult:
    return InitProducerIdResult(producer_id, epoch, error)


FENCED = result(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
CONCURRENT = result(-1, -1, ErrorCode.CONCURRENT_TRANSACTIONS)


def test_should_return_invalid_request_when_transactional_id_is_empty(coordinator):
    assert init(coordinator, "") == result(-1, -1, ErrorCode.INVALID_REQUEST)
    assert init(coordinator, "") == result(-1, -1, ErrorCode.INVALID_REQUEST)


def test_should_accept_init_pid_and_return_next_pid_when_transactional_id_is_null(coordinator):
    assert init(coordinator, None) == result(0, 0)
    assert init(coordinator, None) == result(1, 0)


def test_should_init_pid_with_epoch_zero_for_new_transactional_id(coordinator, manager, pids):
    assert init(coordinator) == result(pids.next - 1, 0)
    (written,) = manager.appended
    assert (written.txn_state, written.producer_epoch) == (S.Empty, 0)
    assert manager.metadata[TRANSACTIONAL_ID].producer_epoch == 0


def test_should_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided(
    coordinator, pids
):
    assert init(coordinator, expected=(PRODUCER_ID, PRODUCER_EPOCH)) == result(pids.next - 1, 0)


def test_should_generate_new_producer_id_if_epochs_exhausted(coordinator, manager):
    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, S.Empty, set()
    )
    got = init(coordinator)
    assert got.producer_id != PRODUCER_ID
    assert (got.producer_epoch, got.error) == (0, ErrorCode.NONE)


def test_should_respond_with_not_coordinator_on_init_pid_when_not_coordinator(coordinator, manager):
    manager.lookup_error = ErrorCode.NOT_COORDINATOR
    assert init(coordinator) == result(-1, -1, ErrorCode.NOT_COORDINATOR)


def test_should_respond_with_coordinator_load_in_progress_on_init_pid_when_coordinator_loading(
    coordinator, manager
):
    manager.lookup_error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert init(coordinator) == result(-1, -1, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


@pytest.mark.parametrize("timeout_ms", [0, -1, 15 * 60 * 1000 + 1])
def test_invalid_transaction_timeout(coordinator, manager, timeout_ms):
    """``validateTransactionTimeoutMs`` (TransactionStateManagerTest's
    ``testValidateTransactionTimeout``, through the coordinator)."""
    assert init(coordinator, timeout_ms=timeout_ms) == result(
        -1, -1, ErrorCode.INVALID_TRANSACTION_TIMEOUT
    )
    assert manager.lookups == 0


@pytest.mark.parametrize("state", [S.Empty, S.CompleteAbort, S.CompleteCommit])
def test_should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_state(
    coordinator, manager, state
):
    """``shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExisting{Empty,Complete,
    CompleteCommit}Transaction`` (``validateIncrementEpochAndUpdateMetadata``)."""
    md = metadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, state, set())
    manager.metadata[TRANSACTIONAL_ID] = md
    manager.now = NOW + 5
    assert init(coordinator, timeout_ms=10) == result(PRODUCER_ID, PRODUCER_EPOCH + 1)
    assert md.txn_timeout_ms == 10
    assert md.txn_last_update_timestamp == NOW + 5
    assert (md.producer_epoch, md.producer_id, md.state) == (
        PRODUCER_EPOCH + 1,
        PRODUCER_ID,
        S.Empty,
    )


@pytest.mark.parametrize("state", [S.PrepareCommit, S.PrepareAbort])
def test_should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_state(
    coordinator, manager, state
):
    """``shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepare{Commit,
    Abort}State``."""
    manager.metadata[TRANSACTIONAL_ID] = TransactionMetadata(
        TRANSACTIONAL_ID,
        producer_id=0,
        last_producer_id=0,
        producer_epoch=0,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=0,
        state=state,
        topic_partitions={TopicPartition("topic", 1)},
        txn_start_timestamp=0,
        txn_last_update_timestamp=0,
    )
    assert init(coordinator, timeout_ms=10) == CONCURRENT
    assert manager.appended == []


def test_should_abort_transaction_on_handle_init_pid_when_existing_transaction_in_ongoing_state(
    coordinator, manager
):
    """Kafka fences, writes PrepareAbort and sends the markers, answering
    CONCURRENT_TRANSACTIONS; without markers (not built yet) this coordinator answers
    CONCURRENT_TRANSACTIONS and leaves the transaction as it is (the coordinator's docstring)."""
    md = metadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, S.Ongoing)
    manager.metadata[TRANSACTIONAL_ID] = md
    assert init(coordinator) == CONCURRENT
    assert manager.appended == []
    assert (md.state, md.producer_epoch, md.pending_state) == (S.Ongoing, PRODUCER_EPOCH, None)
    assert not md.has_failed_epoch_fence


def test_init_producer_id_with_no_last_producer_data(coordinator, manager):
    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID, NO_PRODUCER_ID, PRODUCER_EPOCH + 1, NO_PRODUCER_EPOCH, S.Empty
    )
    # a producer trying to continue after a new producer was initialized
    assert init(coordinator, expected=(PRODUCER_ID, PRODUCER_EPOCH)) == FENCED


def test_fence_producer_when_mapping_exists_with_different_producer_id(coordinator, manager):
    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID + 1, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, S.Empty
    )
    assert init(coordinator, expected=(PRODUCER_ID, PRODUCER_EPOCH)) == FENCED


def test_init_producer_id_with_current_epoch_provided(coordinator, manager):
    manager.metadata[TRANSACTIONAL_ID] = metadata(PRODUCER_ID, PRODUCER_ID, 10, 9, S.Empty)
    # re-initialization bumps the epoch
    assert init(coordinator, expected=(PRODUCER_ID, 10)) == result(PRODUCER_ID, 11)
    # the retry of a bump whose answer was lost gets the same epoch again
    assert init(coordinator, expected=(PRODUCER_ID, 10)) == result(PRODUCER_ID, 11)


def test_init_producer_id_stale_current_epoch_provided(coordinator, manager):
    manager.metadata[TRANSACTIONAL_ID] = metadata(PRODUCER_ID, PRODUCER_ID, 10, 9, S.Empty)
    # a new producer gets epoch 11
    assert init(coordinator) == result(PRODUCER_ID, 11)
    # the old producer continuing from epoch 10 is fenced
    assert init(coordinator, expected=(PRODUCER_ID, 10)) == FENCED


def test_retry_init_producer_id_after_producer_id_rotation(coordinator, manager, pids):
    pids.next = PRODUCER_ID + 1
    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, S.Empty
    )
    # the bump rotates the producer id
    assert init(coordinator, expected=(PRODUCER_ID, SHORT_MAX - 1)) == result(PRODUCER_ID + 1, 0)
    md = manager.metadata[TRANSACTIONAL_ID]
    assert (md.producer_id, md.last_producer_id, md.last_producer_epoch) == (
        PRODUCER_ID + 1,
        PRODUCER_ID,
        SHORT_MAX - 1,
    )
    # the retry of the old request gets the same answer
    assert init(coordinator, expected=(PRODUCER_ID, SHORT_MAX - 1)) == result(PRODUCER_ID + 1, 0)


def test_init_producer_id_with_invalid_epoch_after_producer_id_rotation(coordinator, manager, pids):
    pids.next = PRODUCER_ID + 1
    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, S.Empty
    )
    assert init(coordinator, expected=(PRODUCER_ID, SHORT_MAX - 1)) == result(PRODUCER_ID + 1, 0)
    # the old producer id with a stale epoch is fenced
    assert init(coordinator, expected=(PRODUCER_ID, SHORT_MAX - 2)) == FENCED


def test_should_not_bump_epoch_with_pending_transaction(coordinator, manager):
    md = metadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, S.Ongoing)
    md.prepare_abort_or_commit(S.PrepareCommit, NOW)
    manager.metadata[TRANSACTIONAL_ID] = md
    assert init(coordinator, expected=(PRODUCER_ID, 10)) == CONCURRENT
    assert manager.lookups == 1


def test_a_failed_append_answers_the_coordinator_error_and_keeps_the_epoch(coordinator, manager):
    """``appendTransactionToLog``'s error mapping reaches the client; the next init works."""
    md = metadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, S.Empty, set())
    manager.metadata[TRANSACTIONAL_ID] = md
    manager.append_error = ErrorCode.NOT_ENOUGH_REPLICAS
    assert init(coordinator) == result(-1, -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert (md.producer_epoch, md.pending_state) == (PRODUCER_EPOCH, None)
    manager.append_error = ErrorCode.NONE
    assert init(coordinator) == result(PRODUCER_ID, PRODUCER_EPOCH + 1)


def test_a_pending_transition_answers_concurrent_transactions(coordinator, manager):
    md = metadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, S.Empty, set())
    md.prepare_increment_producer_epoch(TXN_TIMEOUT_MS, None, NOW)
    manager.metadata[TRANSACTIONAL_ID] = md
    assert init(coordinator) == CONCURRENT


@pytest.mark.parametrize("state", [S.Dead, S.PrepareEpochFence])
def test_a_state_never_reached_raises(coordinator, manager, state):
    from broker.coordinator.transaction.metadata import IllegalTransactionStateError

    manager.metadata[TRANSACTIONAL_ID] = metadata(
        PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, state
    )
    with pytest.raises(IllegalTransactionStateError, match="should never have transitioned"):
        init(coordinator)
