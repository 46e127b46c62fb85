"""TransactionCoordinator: InitProducerId for transactional ids (Kafka 3.9's
``TransactionCoordinator.handleInitProducerId``), over :class:`TransactionStateManager`.

The answer is ``InitProducerIdResult`` (error, producer id, epoch; -1/-1 on
an error), given once the transition is durable in ``__transaction_state``::

    transactional id    state                          answer
    null                -                              a new producer id, epoch 0 (not written)
    ""                  -                              INVALID_REQUEST
    timeout <= 0 or > transaction.max.timeout.ms       INVALID_TRANSACTION_TIMEOUT
    partition loading                                  COORDINATOR_LOAD_IN_PROGRESS
    any                 a transition pending           CONCURRENT_TRANSACTIONS
    any                 expected id/epoch not valid    PRODUCER_FENCED
    new                 Empty, a new producer id       epoch 0
    Empty/Complete*     epoch exhausted (and expected  a new producer id, epoch 0
                        epoch = current)               (KIP-360 rotation)
    Empty/Complete*     otherwise                      epoch + 1 (or the current one for the
                                                       retry of a bump, KIP-360), or
                                                       PRODUCER_FENCED
    PrepareCommit/Abort                                CONCURRENT_TRANSACTIONS
    Ongoing                                            CONCURRENT_TRANSACTIONS (see below)
    Dead/PrepareEpochFence                             IllegalTransactionStateError (never reached)

An Ongoing transaction: Kafka fences its epoch (``prepareFenceProducerEpoch``),
aborts it (``endTransaction`` with ``isFromClient = false``: PrepareAbort in
the log, then the abort markers to every partition of the transaction) and
answers CONCURRENT_TRANSACTIONS, so the client retries until the markers are
written and the state is CompleteAbort. Writing markers to the data
partitions is not built yet (the log side of the markers is being built), so
this coordinator answers CONCURRENT_TRANSACTIONS for an Ongoing transaction
without moving it, what Kafka answers while its markers are pending; the
states that need no markers (new, Empty, CompleteCommit, CompleteAbort)
work fully. Nothing of this broker starts a transaction yet (AddPartitionsToTxn
and transactional produce are refused), so an id is Ongoing only in a log
another broker wrote.

The handler turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH before v4
(``KafkaApis.handleInitProducerIdRequest``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from broker.coordinator.transaction.state_manager import TransactionStateManager
from broker.coordinator.transaction.state_topic import TRANSACTION_STATE_TOPIC_NAME
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)


class ProducerIdAllocator(Protocol):
    """The broker's producer ids (``broker/partition/producer_ids.py``)."""

    def next_producer_id(self) -> int: ...


@dataclass(frozen=True)
class InitProducerIdResult:
    producer_id: int
    producer_epoch: int
    error: ErrorCode


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


def init_transaction_error(error: ErrorCode) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, error)


class TransactionCoordinator:
    def __init__(
        self, txn_manager: TransactionStateManager, producer_id_manager: ProducerIdAllocator
    ) -> None:
        self.txn_manager = txn_manager
        self.producer_id_manager = producer_id_manager

    def startup(self, enable_transactional_id_expiration: bool = True) -> None:
        self.txn_manager.startup(enable_transactional_id_expiration)

    async def shutdown(self) -> None:
        await self.txn_manager.shutdown()

    def _generate_producer_id(self) -> int | ErrorCode:
        try:
            return self.producer_id_manager.next_producer_id()
        except KafkaError as exc:
            return exc.code
        except OSError as exc:
            log.error("allocating a producer id failed: %s", exc)
            return ErrorCode.UNKNOWN_SERVER_ERROR

    def handle_init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        expected_producer_id_and_epoch: ProducerIdAndEpoch | None = None,
    ) -> DelayedReply[InitProducerIdResult]:
        """``handleInitProducerId``: answered now, or once the new state is durable."""
        if transactional_id is None:
            pid = self._generate_producer_id()
            if isinstance(pid, ErrorCode):
                return DelayedReply.of(init_transaction_error(pid))
            return DelayedReply.of(InitProducerIdResult(pid, 0, ErrorCode.NONE))
        if not transactional_id:
            return DelayedReply.of(init_transaction_error(ErrorCode.INVALID_REQUEST))
        manager = self.txn_manager
        if not manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            return DelayedReply.of(init_transaction_error(ErrorCode.INVALID_TRANSACTION_TIMEOUT))
        try:
            manager.ensure_topic()
        except KafkaError as exc:
            log.warning("creating %s failed: %s", TRANSACTION_STATE_TOPIC_NAME, exc)
            return DelayedReply.of(init_transaction_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        found = manager.get_transaction_state(transactional_id)
        if found is None:
            pid = self._generate_producer_id()
            if isinstance(pid, ErrorCode):
                return DelayedReply.of(init_transaction_error(pid))
            created = TransactionMetadata(
                transactional_id,
                producer_id=pid,
                last_producer_id=NO_PRODUCER_ID,
                producer_epoch=NO_PRODUCER_EPOCH,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                txn_timeout_ms=transaction_timeout_ms,
                state=TransactionState.Empty,
                txn_last_update_timestamp=manager.time_ms(),
            )
            found = manager.put_transaction_state_if_not_exists(created)
        if isinstance(found, ErrorCode):
            return DelayedReply.of(init_transaction_error(found))
        coordinator_epoch = found.coordinator_epoch
        prepared = self._prepare_init_producer_id_transit(
            transactional_id,
            transaction_timeout_ms,
            found.transaction_metadata,
            expected_producer_id_and_epoch,
        )
        if isinstance(prepared, ErrorCode):
            return DelayedReply.of(init_transaction_error(prepared))
        reply: DelayedReply[InitProducerIdResult] = DelayedReply()

        def send_pid_response(error: ErrorCode) -> None:
            if error is ErrorCode.NONE:
                log.info(
                    "Initialized transactionalId %s with producerId %d and producer epoch %d on "
                    "partition %s-%d",
                    transactional_id,
                    prepared.producer_id,
                    prepared.producer_epoch,
                    TRANSACTION_STATE_TOPIC_NAME,
                    manager.partition_for(transactional_id),
                )
                reply.resolve(
                    InitProducerIdResult(
                        prepared.producer_id, prepared.producer_epoch, ErrorCode.NONE
                    )
                )
            else:
                log.info(
                    "Returning %s error code to client for %s's InitProducerId request",
                    error.name,
                    transactional_id,
                )
                reply.resolve(init_transaction_error(error))

        manager.append_transaction_to_log(
            transactional_id, coordinator_epoch, prepared, send_pid_response
        )
        return reply

    def _prepare_init_producer_id_transit(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        metadata: TransactionMetadata,
        expected: ProducerIdAndEpoch | None,
    ) -> ErrorCode | TxnTransitMetadata:
        """``prepareInitProducerIdTransit``: the target state, or the error to answer."""

        def is_valid_producer_id(expected: ProducerIdAndEpoch) -> bool:
            # a just-created id (a producer recovering from UNKNOWN_PRODUCER_ID), the current
            # producer id, or the previous one with an exhausted epoch (the retry of a bump
            # whose answer was lost)
            return (
                metadata.producer_epoch == NO_PRODUCER_EPOCH
                or expected.producer_id == metadata.producer_id
                or (
                    expected.producer_id == metadata.last_producer_id
                    and is_epoch_exhausted(expected.epoch)
                )
            )

        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not is_valid_producer_id(expected):
            return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (TransactionState.PrepareAbort, TransactionState.PrepareCommit):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state in (
            TransactionState.CompleteAbort,
            TransactionState.CompleteCommit,
            TransactionState.Empty,
        ):
            now = self.txn_manager.time_ms()
            if metadata.is_producer_epoch_exhausted and (
                expected is None or expected.epoch == metadata.producer_epoch
            ):
                pid = self._generate_producer_id()
                if isinstance(pid, ErrorCode):
                    return pid
                return metadata.prepare_producer_id_rotation(
                    pid, transaction_timeout_ms, now, expected is not None
                )
            return metadata.prepare_increment_producer_epoch(
                transaction_timeout_ms, None if expected is None else expected.epoch, now
            )
        if state is TransactionState.Ongoing:
            # Kafka fences and aborts here, answering CONCURRENT_TRANSACTIONS until the abort's
            # markers are written; markers are not built yet (module docstring)
            return ErrorCode.CONCURRENT_TRANSACTIONS
        message = (
            f"Found transactionalId {transactional_id} with state {state}. This is illegal as "
            "we should never have transitioned to this state."
        )
        log.critical(message)
        raise IllegalTransactionStateError(message)
