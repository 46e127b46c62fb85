"""One transactional id's state and its state machine (``TransactionMetadata.scala``).

The coordinator keeps a :class:`TransactionMetadata` per transactional id and
changes it in two steps: a ``prepare_*`` method checks the move and returns a
:class:`TxnTransitMetadata` (the target, written to ``__transaction_state``
as a ``TransactionLogValue``) and sets ``pending_state``; once the record is
durable, :meth:`TransactionMetadata.complete_transition_to` checks the target
again and applies it. The states, with Kafka's ids and valid previous states::

    id  state              valid previous states
     0  Empty              Empty, CompleteCommit, CompleteAbort
     1  Ongoing            Ongoing, Empty, CompleteCommit, CompleteAbort
     2  PrepareCommit      Ongoing
     3  PrepareAbort       Ongoing, PrepareEpochFence
     4  CompleteCommit     PrepareCommit
     5  CompleteAbort      PrepareAbort
     6  Dead               Empty, CompleteAbort, CompleteCommit
     7  PrepareEpochFence  Ongoing

Errors, as Kafka raises them: its ``IllegalStateException`` (a move the state
machine does not allow, an exhausted epoch, an unknown state id) is
:class:`IllegalTransactionStateError`, a ``ValueError``; its
``IllegalArgumentException`` (a negative producer id or epoch) is a plain
``ValueError``. A fenced producer is no exception but the answer
``ErrorCode.PRODUCER_FENCED`` of :meth:`prepare_increment_producer_epoch`.
The error codes the coordinator answers its clients with are its own concern.

The partitions of one transaction are a set of :class:`TopicPartition`; this
module does not bound it: the coordinator will, when it handles
AddPartitionsToTxn (each partition added must exist, which bounds the set by
the partitions of the cluster). Everything runs on the event loop thread: no
lock (Kafka's ``inLock``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from broker.errors import ErrorCode
from broker.log.files import TopicPartition

#: ``RecordBatch.NO_PRODUCER_ID`` / ``NO_PRODUCER_EPOCH``
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


class IllegalTransactionStateError(ValueError):
    """Kafka's ``IllegalStateException`` in the transaction state machine."""


class TransactionState(enum.Enum):
    """``TransactionState``: the member's name is Kafka's ``name`` (``DescribeTransactions``)."""

    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7

    @property
    def id(self) -> int:
        return int(self.value)

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """Whether the id may expire in this state (``isExpirationAllowed``)."""
        return self in _EXPIRATION_ALLOWED

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        try:
            return cls(state_id)
        except ValueError:
            raise IllegalTransactionStateError(
                f"Unknown transaction state id {state_id} from the transaction status message"
            ) from None

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return cls.__members__.get(name)

    def __str__(self) -> str:
        return self.name


_S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.Empty: frozenset({_S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
    _S.Ongoing: frozenset({_S.Ongoing, _S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
    _S.PrepareCommit: frozenset({_S.Ongoing}),
    _S.PrepareAbort: frozenset({_S.Ongoing, _S.PrepareEpochFence}),
    _S.CompleteCommit: frozenset({_S.PrepareCommit}),
    _S.CompleteAbort: frozenset({_S.PrepareAbort}),
    _S.Dead: frozenset({_S.Empty, _S.CompleteAbort, _S.CompleteCommit}),
    _S.PrepareEpochFence: frozenset({_S.Ongoing}),
}
_EXPIRATION_ALLOWED = frozenset({_S.Empty, _S.CompleteCommit, _S.CompleteAbort})
_PENDING_TRANSACTION = frozenset({_S.Ongoing, _S.PrepareAbort, _S.PrepareCommit})


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``: Short.MaxValue stays free for fencing."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The target of a transition (immutable): what ``__transaction_state`` records."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


class TransactionMetadata:
    """The coordinator's view of one transactional id (``TransactionMetadata``)."""

    __slots__ = (
        "has_failed_epoch_fence",
        "last_producer_epoch",
        "last_producer_id",
        "pending_state",
        "producer_epoch",
        "producer_id",
        "state",
        "topic_partitions",
        "transactional_id",
        "txn_last_update_timestamp",
        "txn_start_timestamp",
        "txn_timeout_ms",
    )

    def __init__(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        last_producer_id: int,
        producer_epoch: int,
        last_producer_epoch: int,
        txn_timeout_ms: int,
        state: TransactionState,
        topic_partitions: Iterable[TopicPartition] = (),
        txn_start_timestamp: int = -1,
        txn_last_update_timestamp: int = -1,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        #: the state a prepared transition goes to; blocks a second prepare until completed
        self.pending_state: TransactionState | None = None
        #: a fence whose bumped epoch may not be in the log: the next fence does not bump again
        self.has_failed_epoch_fence = False

    @classmethod
    def create(
        cls,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        txn_timeout_ms: int,
        timestamp: int,
        *,
        state: TransactionState = TransactionState.Empty,
        last_producer_id: int = NO_PRODUCER_ID,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> TransactionMetadata:
        """``TransactionMetadata.apply``: no partitions, both timestamps ``timestamp``."""
        return cls(
            transactional_id,
            producer_id=producer_id,
            last_producer_id=last_producer_id,
            producer_epoch=producer_epoch,
            last_producer_epoch=last_producer_epoch,
            txn_timeout_ms=txn_timeout_ms,
            state=state,
            txn_start_timestamp=timestamp,
            txn_last_update_timestamp=timestamp,
        )

    # ---- partitions ------------------------------------------------------------------------

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        self.topic_partitions.update(partitions)

    def remove_partition(self, topic_partition: TopicPartition) -> None:
        """Drop a partition whose marker was written (only while preparing to end)."""
        if self.state not in (TransactionState.PrepareCommit, TransactionState.PrepareAbort):
            raise IllegalTransactionStateError(
                f"Transaction metadata's current state is {self.state}, and its pending state is "
                f"{self.pending_state} while trying to remove partitions whose txn marker has "
                "been sent, this is not expected"
            )
        self.topic_partitions.discard(topic_partition)

    # ---- prepare ---------------------------------------------------------------------------

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current state as a target, without a pending state."""
        return TxnTransitMetadata(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransactionStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"
            )
        # a fence whose write failed already bumped: the client never saw that epoch
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(
            TransactionState.PrepareEpochFence,
            new_producer_id=self.producer_id,
            new_epoch=bumped,
            new_last_epoch=NO_PRODUCER_EPOCH,
            new_txn_timeout_ms=self.txn_timeout_ms,
            new_topic_partitions=frozenset(self.topic_partitions),
            new_txn_start_timestamp=self.txn_start_timestamp,
            update_timestamp=self.txn_last_update_timestamp,
        )

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, update_timestamp: int
    ) -> ErrorCode | TxnTransitMetadata:
        """InitProducerId's epoch bump: the target, or ``PRODUCER_FENCED``."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionStateError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}"
            )
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            # a new producer instance: bump, forget the last epoch
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch in (NO_PRODUCER_EPOCH, expected_producer_epoch):
            # the same producer continuing after an error (or a first epoch): bump both
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # a retry of a bump that succeeded: answer the current epoch again
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare_transition_to(
            TransactionState.Empty,
            new_producer_id=self.producer_id,
            new_epoch=next_epoch,
            new_last_epoch=last_epoch,
            new_txn_timeout_ms=new_txn_timeout_ms,
            new_topic_partitions=frozenset(),
            new_txn_start_timestamp=-1,
            update_timestamp=update_timestamp,
        )

    def prepare_producer_id_rotation(
        self,
        new_producer_id: int,
        new_txn_timeout_ms: int,
        update_timestamp: int,
        record_last_epoch: bool,
    ) -> TxnTransitMetadata:
        if self.state in _PENDING_TRANSACTION:
            raise IllegalTransactionStateError(
                "Cannot rotate producer ids while a transaction is still pending"
            )
        return self._prepare_transition_to(
            TransactionState.Empty,
            new_producer_id=new_producer_id,
            new_epoch=0,
            new_last_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            new_txn_timeout_ms=new_txn_timeout_ms,
            new_topic_partitions=frozenset(),
            new_txn_start_timestamp=-1,
            update_timestamp=update_timestamp,
        )

    def prepare_add_partitions(
        self, added_topic_partitions: Iterable[TopicPartition], update_timestamp: int
    ) -> TxnTransitMetadata:
        starts = self.state in (
            TransactionState.Empty,
            TransactionState.CompleteAbort,
            TransactionState.CompleteCommit,
        )
        return self._prepare_transition_to(
            TransactionState.Ongoing,
            new_producer_id=self.producer_id,
            new_epoch=self.producer_epoch,
            new_last_epoch=self.last_producer_epoch,
            new_txn_timeout_ms=self.txn_timeout_ms,
            new_topic_partitions=frozenset(self.topic_partitions).union(added_topic_partitions),
            new_txn_start_timestamp=update_timestamp if starts else self.txn_start_timestamp,
            update_timestamp=update_timestamp,
        )

    def prepare_abort_or_commit(
        self, new_state: TransactionState, update_timestamp: int
    ) -> TxnTransitMetadata:
        return self._prepare_transition_to(
            new_state,
            new_producer_id=self.producer_id,
            new_epoch=self.producer_epoch,
            new_last_epoch=self.last_producer_epoch,
            new_txn_timeout_ms=self.txn_timeout_ms,
            new_topic_partitions=frozenset(self.topic_partitions),
            new_txn_start_timestamp=self.txn_start_timestamp,
            update_timestamp=update_timestamp,
        )

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        new_state = (
            TransactionState.CompleteCommit
            if self.state is TransactionState.PrepareCommit
            else TransactionState.CompleteAbort
        )
        # the Prepare* record is in the log: a failed fence before it no longer matters
        self.has_failed_epoch_fence = False
        return self._prepare_transition_to(
            new_state,
            new_producer_id=self.producer_id,
            new_epoch=self.producer_epoch,
            new_last_epoch=self.last_producer_epoch,
            new_txn_timeout_ms=self.txn_timeout_ms,
            new_topic_partitions=frozenset(),
            new_txn_start_timestamp=self.txn_start_timestamp,
            update_timestamp=update_timestamp,
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare_transition_to(
            TransactionState.Dead,
            new_producer_id=self.producer_id,
            new_epoch=self.producer_epoch,
            new_last_epoch=self.last_producer_epoch,
            new_txn_timeout_ms=self.txn_timeout_ms,
            new_topic_partitions=frozenset(),
            new_txn_start_timestamp=self.txn_start_timestamp,
            update_timestamp=self.txn_last_update_timestamp,
        )

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    def _prepare_transition_to(
        self,
        new_state: TransactionState,
        *,
        new_producer_id: int,
        new_epoch: int,
        new_last_epoch: int,
        new_txn_timeout_ms: int,
        new_topic_partitions: frozenset[TopicPartition],
        new_txn_start_timestamp: int,
        update_timestamp: int,
    ) -> TxnTransitMetadata:
        """``prepareTransitionTo``: check the move, set the pending state, return the target."""
        if self.pending_state is not None:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state} while it already a "
                f"pending state {self.pending_state}"
            )
        if new_producer_id < 0:
            raise ValueError(f"Illegal new producer id {new_producer_id}")
        # the epoch is NO_PRODUCER_EPOCH until the first InitProducerId, possibly until Dead
        if new_state is not TransactionState.Dead and new_epoch < 0:
            raise ValueError(f"Illegal new producer epoch {new_epoch}")
        if self.state not in new_state.valid_previous_states:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state} failed since the "
                f"target state {new_state} is not a valid previous state of the current "
                f"state {self.state}"
            )
        target = TxnTransitMetadata(
            new_producer_id,
            self.producer_id,
            new_epoch,
            new_last_epoch,
            new_txn_timeout_ms,
            new_state,
            new_topic_partitions,
            new_txn_start_timestamp,
            update_timestamp,
        )
        self.pending_state = new_state
        return target

    # ---- complete --------------------------------------------------------------------------

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """``completeTransitionTo``: apply a prepared target once its record is in the log.

        Valid only when the target's state is the pending state, its epoch is the
        same (or, to Empty, bumped by one, or 0 with a new producer id), and the
        partitions and timestamps fit the move (Kafka's checks, per target state).
        """
        to_state = self.pending_state
        if to_state is None:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} completing transaction state "
                "transition while it does not have a pending state"
            )
        if to_state is not transit.txn_state:
            self._transition_failure(transit)
        if to_state is _S.Empty:  # InitProducerId
            if (
                (
                    self.producer_epoch != transit.producer_epoch
                    and not self._valid_producer_epoch_bump(transit)
                )
                or transit.topic_partitions
                or transit.txn_start_timestamp != -1
            ):
                self._transition_failure(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state is _S.Ongoing:  # AddPartitionsToTxn
            if (
                not self._valid_producer_epoch(transit)
                or not self.topic_partitions <= transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
            ):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.add_partitions(transit.topic_partitions)
        elif to_state in (_S.PrepareAbort, _S.PrepareCommit):  # EndTxn
            if (
                not self._valid_producer_epoch(transit)
                or self.topic_partitions != transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or self.txn_start_timestamp != transit.txn_start_timestamp
            ):
                self._transition_failure(transit)
        elif to_state in (_S.CompleteAbort, _S.CompleteCommit):  # the markers are written
            if (
                not self._valid_producer_epoch(transit)
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or transit.txn_start_timestamp == -1
            ):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        elif to_state is _S.PrepareEpochFence:
            # a fence is followed at once by PrepareAbort: never completed itself
            self._transition_failure(transit)
        else:  # Dead: an expired id leaves the cache; its tombstone is no transition
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} is trying to complete a transition "
                f"to {to_state}. This means that the transactionalId was being expired, and the "
                "only acceptable completion of this operation is to remove the transaction "
                f"metadata from the cache, not to persist the {to_state} in the log."
            )
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _transition_failure(self, transit: TxnTransitMetadata) -> NoReturn:
        raise IllegalTransactionStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} "
            "due to unexpected metadata"
        )

    # ---- value semantics (Kafka's equals: the last producer id is not compared) --------------

    def _identity(self) -> tuple[object, ...]:
        return (
            self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TransactionMetadata):
            return NotImplemented
        return self._identity() == other._identity()

    __hash__ = None  # type: ignore[assignment]  # mutable, as Kafka's (hashCode over vars)

    def __repr__(self) -> str:
        return (
            f"TransactionMetadata(transactionalId={self.transactional_id}, "
            f"producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"txnTimeoutMs={self.txn_timeout_ms}, state={self.state}, "
            f"pendingState={self.pending_state}, "
            f"topicPartitions={sorted(str(tp) for tp in self.topic_partitions)}, "
            f"txnStartTimestamp={self.txn_start_timestamp}, "
            f"txnLastUpdateTimestamp={self.txn_last_update_timestamp})"
        )
