"""TransactionStateManager: the transactional ids of ``__transaction_state`` (Kafka 3.9's
``TransactionStateManager.scala``, for one broker that leads every partition).

One record per transition, key and value as ``records.py`` lays them out,
one uncompressed v2 batch per write (``Partition.append_built_batch``)::

    key   => version:INT16 (0) transactionalId:STRING
    value => version:INT16 TransactionLogValue (v0; v1 flexible) | null (a tombstone)

The cache: per partition of the topic, a dict ``transactional id ->
TransactionMetadata``, and the partition's coordinator epoch (its leader
epoch when loaded). A partition is in one of three states::

    loading   read back from its log: every lookup answers COORDINATOR_LOAD_IN_PROGRESS
    active    the cache answers
    failed    its log did not decode: COORDINATOR_NOT_AVAILABLE (Kafka logs the error and
              serves what it read before it; a half-read partition could forget a fence)

``__transaction_state`` is created the first time the coordinator needs it
(:meth:`ensure_topic`, as Kafka's ``KafkaApis.getCoordinator`` creates it on
the first FindCoordinator of a transactional id), with
``transaction.state.log.num.partitions`` partitions and Kafka's topic configs
(``transactionTopicConfigs``); an existing one keeps its partition count and
is loaded at start (:meth:`startup`), one partition after another, in slices
of ``transaction.state.log.load.buffer.size`` bytes between which the event
loop serves other work (the group coordinator's loader). Loading replays the
records in offset order: the last record of an id wins, a tombstone removes
it, a key of an unknown version is logged and skipped.

A write (:meth:`append_transaction_to_log`) is answered once the record is
durable: acks=all (``TransactionLog.EnforcedRequiredAcks``), which here is the
broker's group commit (an fsync round; at once with ``acks.all.fsync=false``),
waited for up to the transaction's timeout as Kafka's ``appendRecords``. Then
the metadata completes its transition (``complete_transition_to``); a failed
write clears the pending state and answers the coordinator's error for it
(:func:`append_error_to_coordinator_error`).

Expiration (``removeExpiredTransactionalIds``): every
``transaction.remove.expired.transaction.cleanup.interval.ms``, the ids in a
state that allows it (Empty, CompleteCommit, CompleteAbort) with no pending
transition, not updated for ``transactional.id.expiration.ms``, are prepared
Dead and written as tombstones (batches up to the partition's
``max.message.bytes``); once durable they leave the cache, on a failure they
stay (their pending state cleared) for the next round.

The bound: the cache holds one TransactionMetadata per transactional id
written and not yet expired, so its size is the number of distinct ids
initialized within ``transactional.id.expiration.ms`` (plus those with a
transaction still open). There is no cap past that, as in Kafka: a client
that initializes new ids without end grows it until expiration catches up;
the operator's lever is ``transactional.id.expiration.ms`` (and the
TRANSACTIONAL_ID ACLs, WRITE). An id costs its metadata object (12 slots),
its id string and its partition set (empty outside a transaction): about
half a kilobyte (docs/performance.md, "Figures moved from the code").
Everything runs on the event loop thread (Kafka's ``stateLock`` and
``inLock`` are not needed).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from broker.coordinator.group.loader import load_partition
from broker.coordinator.group.rebalance import OnWritten
from broker.coordinator.group.timer import CoordinatorTimer, LoopTimer
from broker.coordinator.group.writer import Durability, RecordWriter
from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.metadata import (
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from broker.coordinator.transaction.records import (
    TransactionLogRecordError,
    UnknownKey,
    key_to_bytes,
    read_txn_record_key,
    read_txn_record_value,
    value_to_bytes,
)
from broker.coordinator.transaction.state_topic import (
    TRANSACTION_STATE_TOPIC_NAME,
    partition_for,
)
from broker.errors import ErrorCode, KafkaError
from broker.partition.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

EXPIRATION_KEY = "transactionalId-expiration"
#: Kafka's ``request.timeout.ms`` default, the timeout of a tombstone write
#: (``TransactionConfig.requestTimeoutMs``)
TOMBSTONE_TIMEOUT_MS = 30_000


class PartitionLoadState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


@dataclass
class TxnMetadataCacheEntry:
    """``TxnMetadataCacheEntry``: one partition's ids and the epoch it was loaded at."""

    coordinator_epoch: int
    metadata_per_transactional_id: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinatorEpochAndTxnMetadata:
    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


def append_error_to_coordinator_error(code: ErrorCode) -> ErrorCode:
    """The error a failed ``__transaction_state`` write answers
    (``appendTransactionToLog``'s ``updateCacheCallback``)."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code


class TransactionStateManager:
    def __init__(
        self,
        config: TransactionConfig,
        replica_manager: ReplicaManager,
        durability: Durability,
        time_ms: Callable[[], int],
        *,
        durable_fsync: bool = True,
        timer: CoordinatorTimer | None = None,
        uses_flexible_records: bool = False,
    ) -> None:
        self.config = config
        self.replica_manager = replica_manager
        self.time_ms = time_ms
        self.timer: CoordinatorTimer = timer if timer is not None else LoopTimer()
        #: ``usesFlexibleRecords``: value v1 once transaction.version >= 1 (0 here)
        self.uses_flexible_records = uses_flexible_records
        self.num_partitions = config.transaction_log_num_partitions
        #: ``transactionMetadataCache``
        self.cache: dict[int, TxnMetadataCacheEntry] = {}
        self.states: dict[int, PartitionLoadState] = {}
        self._load_task: asyncio.Task[None] | None = None
        #: each write names its own wait (the transaction's timeout, or the tombstones')
        self._writer = RecordWriter(
            replica_manager,
            durability,
            time_ms,
            topic=TRANSACTION_STATE_TOPIC_NAME,
            durable=durable_fsync,
            timeout_ms=TOMBSTONE_TIMEOUT_MS,
        )
        self._shutting_down = False
        #: transactional ids expired so far
        self.expired = 0

    # ---- start and stop ----------------------------------------------------------------------

    def startup(self, enable_transactional_id_expiration: bool = True) -> None:
        """Load an existing ``__transaction_state`` in the background (on the running loop)
        and schedule the expiration of idle transactional ids."""
        self._maybe_load_existing()
        if enable_transactional_id_expiration:
            self._schedule_expiration()

    def _maybe_load_existing(self) -> bool:
        count = self.replica_manager.partition_count(TRANSACTION_STATE_TOPIC_NAME)
        if count is None or self.states:
            return False
        self.num_partitions = count
        for index in range(count):
            self.states[index] = PartitionLoadState.LOADING
        self._load_task = asyncio.ensure_future(self._load_all())
        return True

    async def _load_all(self) -> None:
        for index in sorted(self.states):
            await self.load_transactions_for_txn_topic_partition(index)

    async def load_transactions_for_txn_topic_partition(self, index: int) -> None:
        """``loadTransactionsForTxnTopicPartition``: read the partition back into its cache."""
        self.states[index] = PartitionLoadState.LOADING
        partition = self.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)
        if partition is None:
            log.warning(
                "Attempted to load transaction metadata from %s-%d, but found no log",
                TRANSACTION_STATE_TOPIC_NAME,
                index,
            )
            self.cache[index] = TxnMetadataCacheEntry(0)
            self.states[index] = PartitionLoadState.ACTIVE
            return
        started = self.time_ms()
        loaded: dict[str, TransactionMetadata] = {}
        name = f"{TRANSACTION_STATE_TOPIC_NAME}-{index}"

        def replay(offset: int, key: bytes | None, value: bytes | None) -> None:
            if key is None:
                raise TransactionLogRecordError(
                    f"Transaction state log's key should not be null (offset {offset})"
                )
            txn_key = read_txn_record_key(key)
            if isinstance(txn_key, UnknownKey):
                log.warning(
                    "Unknown message key with version %d while loading transaction state from "
                    "%s. Ignoring it. It could be a left over from an aborted upgrade.",
                    txn_key.version,
                    name,
                )
                return
            metadata = read_txn_record_value(txn_key.transactional_id, value)
            if metadata is None:
                loaded.pop(txn_key.transactional_id, None)
            else:
                loaded[txn_key.transactional_id] = metadata

        try:
            count = await load_partition(
                partition.log, replay, self.config.transaction_log_load_buffer_size
            )
        except KafkaError as exc:
            log.error("Error loading transactions from transaction log %s: %s", name, exc)
            self.states[index] = PartitionLoadState.FAILED
            return
        # ``addLoadedTransactionsToCache``
        self.cache[index] = TxnMetadataCacheEntry(partition.leader_epoch, loaded)
        self.states[index] = PartitionLoadState.ACTIVE
        if count:
            log.info(
                "Finished loading %d transaction metadata from %s in %d milliseconds",
                len(loaded),
                name,
                self.time_ms() - started,
            )

    async def wait_loaded(self) -> None:
        if self._load_task is not None:
            await self._load_task

    async def shutdown(self) -> None:
        """Stop loading and expiring; answer the writes waiting for their flush."""
        self._shutting_down = True
        if self._load_task is not None and not self._load_task.done():
            self._load_task.cancel()
        self.timer.cancel(EXPIRATION_KEY)
        await self._writer.drain()
        cancel_all = getattr(self.timer, "cancel_all", None)
        if cancel_all is not None:
            cancel_all()

    def ensure_topic(self) -> None:
        """Create ``__transaction_state`` if it does not exist yet (its partitions start
        empty and active); one created behind this manager's back is loaded now."""
        rm = self.replica_manager
        if rm.partition_count(TRANSACTION_STATE_TOPIC_NAME) is not None:
            self._maybe_load_existing()
            return
        rm.create_topic(
            TRANSACTION_STATE_TOPIC_NAME,
            self.config.transaction_log_num_partitions,
            self.transaction_topic_configs(),
        )
        self.num_partitions = self.config.transaction_log_num_partitions
        for index in range(self.num_partitions):
            partition = rm.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)
            epoch = 0 if partition is None else partition.leader_epoch
            self.cache[index] = TxnMetadataCacheEntry(epoch)
            self.states[index] = PartitionLoadState.ACTIVE
        log.info("Created %s with %d partitions", TRANSACTION_STATE_TOPIC_NAME, self.num_partitions)

    def transaction_topic_configs(self) -> dict[str, object]:
        """``transactionTopicConfigs``: compacted, uncompressed, no unclean election; the
        min ISR is 1 on one broker (``transaction.state.log.min.isr`` is inert)."""
        return {
            "unclean.leader.election.enable": False,
            "compression.type": "uncompressed",
            "cleanup.policy": "compact",
            "min.insync.replicas": 1,
            "segment.bytes": self.config.transaction_log_segment_bytes,
        }

    # ---- lookups -----------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def validate_transaction_timeout_ms(self, txn_timeout_ms: int) -> bool:
        return 0 < txn_timeout_ms <= self.config.transaction_max_timeout_ms

    def is_loading(self) -> bool:
        return any(s is PartitionLoadState.LOADING for s in self.states.values())

    def get_transaction_state(
        self, transactional_id: str
    ) -> ErrorCode | CoordinatorEpochAndTxnMetadata | None:
        """``getTransactionState``: the id's metadata, None if unknown, or the error."""
        return self._get_and_maybe_add(transactional_id, None)

    def put_transaction_state_if_not_exists(
        self, metadata: TransactionMetadata
    ) -> ErrorCode | CoordinatorEpochAndTxnMetadata:
        """``putTransactionStateIfNotExists``: the cached metadata (``metadata`` if none was)."""
        found = self._get_and_maybe_add(metadata.transactional_id, metadata)
        assert found is not None
        return found

    def _get_and_maybe_add(
        self, transactional_id: str, created: TransactionMetadata | None
    ) -> ErrorCode | CoordinatorEpochAndTxnMetadata | None:
        index = self.partition_for(transactional_id)
        state = self.states.get(index)
        if state is PartitionLoadState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if state is PartitionLoadState.FAILED:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        entry = self.cache.get(index)
        if entry is None:
            return ErrorCode.NOT_COORDINATOR
        metadata = entry.metadata_per_transactional_id.get(transactional_id)
        if metadata is None:
            if created is None:
                return None
            metadata = entry.metadata_per_transactional_id.setdefault(transactional_id, created)
        return CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, metadata)

    def transactional_ids(self) -> Iterator[TransactionMetadata]:
        for entry in self.cache.values():
            yield from entry.metadata_per_transactional_id.values()

    # ---- writes ------------------------------------------------------------------------------

    def append_transaction_to_log(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        new_metadata: TxnTransitMetadata,
        response_callback: OnWritten,
        retry_on_error: Callable[[ErrorCode], bool] = lambda _: False,
    ) -> None:
        """``appendTransactionToLog``: write the transition, complete it once durable."""
        found = self.get_transaction_state(transactional_id)
        if isinstance(found, ErrorCode):
            response_callback(found)
            return
        if found is None or found.coordinator_epoch != coordinator_epoch:
            response_callback(ErrorCode.NOT_COORDINATOR)
            return
        key = key_to_bytes(transactional_id)
        value = value_to_bytes(new_metadata, self.uses_flexible_records)
        index = self.partition_for(transactional_id)

        def update_cache(append_error: ErrorCode) -> None:
            answer = self._update_cache(
                transactional_id,
                coordinator_epoch,
                new_metadata,
                retry_on_error,
                append_error_to_coordinator_error(append_error),
            )
            response_callback(answer)

        self._write(index, [(key, value)], new_metadata.txn_timeout_ms, update_cache)

    def _update_cache(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        new_metadata: TxnTransitMetadata,
        retry_on_error: Callable[[ErrorCode], bool],
        error: ErrorCode,
    ) -> ErrorCode:
        """``updateCacheCallback``: complete or revert the transition; the error to answer."""
        found = self.get_transaction_state(transactional_id)
        if error is ErrorCode.NONE:
            if isinstance(found, ErrorCode):
                return found
            if found is None or found.coordinator_epoch != coordinator_epoch:
                log.info(
                    "The cached metadata of %s changed while its new metadata %s was written; "
                    "answering NOT_COORDINATOR",
                    transactional_id,
                    new_metadata,
                )
                return ErrorCode.NOT_COORDINATOR
            try:
                found.transaction_metadata.complete_transition_to(new_metadata)
            except IllegalTransactionStateError:
                # Kafka throws in the append's callback and the client never hears back;
                # here it gets an answer (the metadata keeps its pending state, as Kafka's)
                log.exception("completing the transition of %s failed", transactional_id)
                return ErrorCode.UNKNOWN_SERVER_ERROR
            return error
        if isinstance(found, CoordinatorEpochAndTxnMetadata):
            metadata = found.transaction_metadata
            if found.coordinator_epoch == coordinator_epoch and not retry_on_error(error):
                log.info(
                    "TransactionalId %s append transaction log for %s transition failed due to "
                    "%s, resetting pending state from %s",
                    transactional_id,
                    new_metadata,
                    error.name,
                    metadata.pending_state,
                )
                metadata.pending_state = None
        return error

    @property
    def appends(self) -> int:
        """Batches written (tests read it)."""
        return self._writer.appends

    def _write(
        self,
        index: int,
        records: Sequence[tuple[bytes, bytes | None]],
        timeout_ms: int,
        done: OnWritten,
    ) -> None:
        """Append one batch to partition ``index``; ``done`` once durable (acks=all)."""
        self._writer.write(index, records, done, timeout_ms=timeout_ms)

    # ---- expiration --------------------------------------------------------------------------

    def _schedule_expiration(self) -> None:
        def run() -> None:
            self.remove_expired_transactional_ids()
            if not self._shutting_down:
                self._schedule_expiration()

        self.timer.schedule(
            EXPIRATION_KEY, self.config.remove_expired_transactional_ids_interval_ms, run
        )

    def _should_expire(self, metadata: TransactionMetadata, now: int) -> bool:
        return (
            metadata.state.is_expiration_allowed
            and metadata.txn_last_update_timestamp
            <= now - self.config.transactional_id_expiration_ms
        )

    def remove_expired_transactional_ids(self) -> None:
        """``removeExpiredTransactionalIds``: tombstones for the ids idle too long."""
        for index, entry in list(self.cache.items()):
            if self.states.get(index) is not PartitionLoadState.ACTIVE:
                continue
            partition = self.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)
            if partition is None:
                log.warning(
                    "Transaction expiration for partition %s-%d failed because the log is "
                    "not available",
                    TRANSACTION_STATE_TOPIC_NAME,
                    index,
                )
                continue
            max_batch = int(partition.log.config.max_message_bytes)
            now = self.time_ms()
            batch: list[tuple[str, TxnTransitMetadata]] = []
            size = 0
            for metadata in list(entry.metadata_per_transactional_id.values()):
                if metadata.pending_state is not None or not self._should_expire(metadata, now):
                    continue
                key_size = len(key_to_bytes(metadata.transactional_id))
                # a record's overhead in a v2 batch is under 32 bytes; the header is 61
                if batch and 61 + size + key_size + 32 > max_batch:
                    self._write_tombstones(index, entry.coordinator_epoch, batch)
                    batch, size = [], 0
                batch.append((metadata.transactional_id, metadata.prepare_dead()))
                size += key_size + 32
            if batch:
                self._write_tombstones(index, entry.coordinator_epoch, batch)

    def _write_tombstones(
        self, index: int, coordinator_epoch: int, expired: list[tuple[str, TxnTransitMetadata]]
    ) -> None:
        """``writeTombstonesForExpiredTransactionalIds``."""

        def remove_from_cache(code: ErrorCode) -> None:
            entry = self.cache.get(index)
            if entry is None:
                return
            for transactional_id, transit in expired:
                metadata = entry.metadata_per_transactional_id.get(transactional_id)
                if metadata is None:
                    continue
                if (
                    entry.coordinator_epoch == coordinator_epoch
                    and metadata.pending_state is TransactionState.Dead
                    and metadata.producer_epoch == transit.producer_epoch
                    and code is ErrorCode.NONE
                ):
                    del entry.metadata_per_transactional_id[transactional_id]
                    self.expired += 1
                else:
                    log.warning(
                        "Failed to remove expired transactionalId: %s from cache. Tombstone "
                        "append error code: %s, pendingState: %s",
                        transactional_id,
                        code.name,
                        metadata.pending_state,
                    )
                    metadata.pending_state = None

        records = [(key_to_bytes(tid), None) for tid, _ in expired]
        self._write(index, records, TOMBSTONE_TIMEOUT_MS, remove_from_cache)
