"""TransactionStateManager over real ``__transaction_state`` logs: Kafka 3.9's
``TransactionStateManagerTest.scala`` (loading, appending, expiring), names in snake_case.

Kafka mocks its ``ReplicaManager``; here the logs are real (the app's request
path of ``tests/unit/handlers/conftest.py``) and only the durability (the
group commit) is a fake the test answers, or a failure is injected into the
partition's append. The partition-emigration cases of Kafka's test
(``removeTransactionsForTxnTopicPartition``) have no counterpart: one broker
leads every partition for good.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
)
from broker.coordinator.transaction.records import (
    key_to_bytes,
    read_txn_record_key,
    read_value_message,
    value_to_bytes,
)
from broker.coordinator.transaction.state_manager import (
    CoordinatorEpochAndTxnMetadata,
    PartitionLoadState,
    TransactionStateManager,
)
from broker.coordinator.transaction.state_topic import TRANSACTION_STATE_TOPIC_NAME
from broker.errors import ErrorCode, KafkaError
from broker.log.files import TopicPartition
from broker.records.iterate import iter_batches
from broker.records.record import SimpleRecord
from tests.aio import run
from tests.unit.groups.context import Clock, ManualTimer
from tests.unit.handlers.conftest import InProcessBroker

S = TransactionState
NUM_PARTITIONS = 2
TRANSACTIONAL_ID_1 = "one"
TRANSACTIONAL_ID_2 = "two"
NOW = 1_700_000_000_000
EXPIRATION_MS = 60_000


class FakeDurability:
    """Keeps each write's callback for the test to answer; ``durable`` answers at once."""

    def __init__(self, *, durable: bool = True) -> None:
        self.durable = durable
        self.waiting: list[Callable[[Any], None]] = []

    def when_flushed(self, targets: Any, timeout_s: float, on_done: Any) -> bool:
        if self.durable:
            return False
        self.waiting.append(on_done)
        return True

    def answer(self, outcome: Any) -> None:
        self.waiting.pop(0)(outcome)


class Failure(KafkaError):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self._code = code

    @property
    def code(self) -> ErrorCode:
        return self._code


class Harness:
    def __init__(self, data_dir: Path) -> None:
        self.broker = InProcessBroker(data_dir)
        self.durability = FakeDurability()
        self.now = NOW
        self.manager = self.new_manager()

    def new_manager(self, **config: Any) -> TransactionStateManager:
        return TransactionStateManager(
            TransactionConfig(
                transaction_log_num_partitions=NUM_PARTITIONS,
                transactional_id_expiration_ms=EXPIRATION_MS,
                **config,
            ),
            self.broker.replica_manager,
            self.durability,
            lambda: self.now,
        )

    def partition(self, transactional_id: str) -> Any:
        index = self.manager.partition_for(transactional_id)
        return self.broker.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)

    def fail_appends(self, transactional_id: str, code: ErrorCode) -> None:
        partition = self.partition(transactional_id)

        def fail(records: Any) -> int:
            raise Failure(code)

        partition.append_built_batch = fail

    def records(self, index: int) -> list[tuple[bytes | None, bytes | None]]:
        partition = self.broker.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)
        info = partition.log.read(0, 1 << 30, min_one_message=True)
        data = info.records.read() if info.records is not None else b""
        return [
            (r.key, r.value)
            for b in iter_batches(data, 0, len(data), file=True)
            for r in b.records()
        ]


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path / "data")
    harness.manager.ensure_topic()
    yield harness
    harness.broker.close()


def txn_metadata(transactional_id: str, producer_id: int) -> TransactionMetadata:
    """``transactionMetadata`` of Kafka's test: Empty, epoch 0, no partitions."""
    return TransactionMetadata(
        transactional_id,
        producer_id=producer_id,
        last_producer_id=producer_id,
        producer_epoch=0,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=100,
        state=S.Empty,
        txn_start_timestamp=NOW,
        txn_last_update_timestamp=NOW,
    )


def in_loop(fn: Callable[[], Any]) -> Any:
    async def body() -> Any:
        return fn()

    return run(body())


def append(
    h: Harness,
    metadata: TransactionMetadata,
    transit: Any,
    coordinator_epoch: int = 0,
    retry_on_error: Callable[[ErrorCode], bool] = lambda _: False,
) -> list[ErrorCode]:
    got: list[ErrorCode] = []

    def go() -> None:
        h.manager.append_transaction_to_log(
            metadata.transactional_id, coordinator_epoch, transit, got.append, retry_on_error
        )

    in_loop(go)
    return got


def add_partitions_transit(metadata: TransactionMetadata, *partitions: TopicPartition) -> Any:
    return metadata.prepare_add_partitions(set(partitions), NOW)


def cached(h: Harness, transactional_id: str) -> TransactionMetadata | None:
    found = h.manager.get_transaction_state(transactional_id)
    assert not isinstance(found, ErrorCode), found
    return None if found is None else found.transaction_metadata


# ---- lookups ---------------------------------------------------------------------------------


def test_validate_transaction_timeout(h):
    manager = h.manager
    assert manager.validate_transaction_timeout_ms(1)
    assert not manager.validate_transaction_timeout_ms(-1)
    assert not manager.validate_transaction_timeout_ms(0)
    assert manager.validate_transaction_timeout_ms(manager.config.transaction_max_timeout_ms)
    assert not manager.validate_transaction_timeout_ms(
        manager.config.transaction_max_timeout_ms + 1
    )


def test_add_get_pids(h):
    md1, md2 = txn_metadata(TRANSACTIONAL_ID_1, 1), txn_metadata(TRANSACTIONAL_ID_1, 2)
    assert h.manager.get_transaction_state(TRANSACTIONAL_ID_1) is None
    assert h.manager.put_transaction_state_if_not_exists(md1) == CoordinatorEpochAndTxnMetadata(
        0, md1
    )
    assert h.manager.get_transaction_state(TRANSACTIONAL_ID_1) == CoordinatorEpochAndTxnMetadata(
        0, md1
    )
    # an id already cached keeps its metadata (Kafka's test expects md2 by value equality)
    found = h.manager.put_transaction_state_if_not_exists(md2)
    assert isinstance(found, CoordinatorEpochAndTxnMetadata)
    assert found.transaction_metadata is md1


def test_should_return_not_coordinator_error_if_transaction_id_partition_not_owned(tmp_path):
    harness = Harness(tmp_path / "data")
    try:
        # no __transaction_state yet: nothing is owned
        assert harness.manager.get_transaction_state(TRANSACTIONAL_ID_1) == (
            ErrorCode.NOT_COORDINATOR
        )
    finally:
        harness.broker.close()


# ---- loading ---------------------------------------------------------------------------------


def write_raw(h: Harness, index: int, records: list[tuple[bytes, bytes | None]]) -> None:
    partition = h.broker.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, index)
    partition.append_built_batch([SimpleRecord(timestamp=NOW, key=k, value=v) for k, v in records])


def reload(h: Harness, **config: Any) -> TransactionStateManager:
    """A new manager over the same logs, loaded as at start."""
    manager = h.new_manager(**config)

    async def body() -> None:
        manager.startup(enable_transactional_id_expiration=False)
        assert manager.is_loading()
        await manager.wait_loaded()

    run(body())
    return manager


def test_load_and_remove_transactions_for_partition(h):
    """Loading (the removal is emigration: not on one broker): the last record of an id
    wins, across every state a transaction goes through."""
    md1 = txn_metadata(TRANSACTIONAL_ID_1, 1)
    md2 = txn_metadata(TRANSACTIONAL_ID_2, 2)
    key1, key2 = key_to_bytes(TRANSACTIONAL_ID_1), key_to_bytes(TRANSACTIONAL_ID_2)
    records: dict[int, list[tuple[bytes, bytes | None]]] = {0: [], 1: []}
    i1 = h.manager.partition_for(TRANSACTIONAL_ID_1)
    i2 = h.manager.partition_for(TRANSACTIONAL_ID_2)

    def value(md: TransactionMetadata) -> bytes:
        return value_to_bytes(md.prepare_no_transit(), True)

    # id 1's transaction starts with two partitions, adds three, prepares to commit
    md1.state = S.Ongoing
    md1.add_partitions({TopicPartition("topic1", 0), TopicPartition("topic1", 1)})
    records[i1].append((key1, value(md1)))
    md1.add_partitions({TopicPartition("topic2", p) for p in range(3)})
    records[i1].append((key1, value(md1)))
    md1.state = S.PrepareCommit
    records[i1].append((key1, value(md1)))
    # id 2's starts with three partitions, prepares to abort, aborts, bumps its epoch
    md2.state = S.Ongoing
    md2.add_partitions({TopicPartition("topic3", p) for p in range(3)})
    records[i2].append((key2, value(md2)))
    md2.state = S.PrepareAbort
    records[i2].append((key2, value(md2)))
    md2.state = S.CompleteAbort
    records[i2].append((key2, value(md2)))
    md2.state = S.Empty
    md2.topic_partitions.clear()
    records[i2].append((key2, value(md2)))
    for index, recs in records.items():
        for rec in recs:  # one batch per record, as the coordinator writes them
            write_raw(h, index, [rec])

    manager = reload(h)
    loaded1 = manager.get_transaction_state(TRANSACTIONAL_ID_1)
    loaded2 = manager.get_transaction_state(TRANSACTIONAL_ID_2)
    assert isinstance(loaded1, CoordinatorEpochAndTxnMetadata)
    assert isinstance(loaded2, CoordinatorEpochAndTxnMetadata)
    assert loaded1.transaction_metadata == md1
    assert loaded2.transaction_metadata == md2


def test_a_tombstone_removes_the_id_when_loading(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    index = h.manager.partition_for(TRANSACTIONAL_ID_1)
    key = key_to_bytes(TRANSACTIONAL_ID_1)
    write_raw(h, index, [(key, value_to_bytes(md.prepare_no_transit(), False)), (key, None)])
    assert reload(h).get_transaction_state(TRANSACTIONAL_ID_1) is None


def test_loading_answers_coordinator_load_in_progress(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    index = h.manager.partition_for(TRANSACTIONAL_ID_1)
    write_raw(
        h,
        index,
        [(key_to_bytes(TRANSACTIONAL_ID_1), value_to_bytes(md.prepare_no_transit(), False))],
    )
    manager = h.new_manager()
    got: list[Any] = []

    async def body() -> None:
        manager.startup(enable_transactional_id_expiration=False)
        got.append(manager.get_transaction_state(TRANSACTIONAL_ID_1))
        transit = md.prepare_increment_producer_epoch(100, None, NOW)
        manager.append_transaction_to_log(TRANSACTIONAL_ID_1, 0, transit, got.append)
        await manager.wait_loaded()
        found = manager.get_transaction_state(TRANSACTIONAL_ID_1)
        assert isinstance(found, CoordinatorEpochAndTxnMetadata)
        got.append(found.transaction_metadata)

    run(body())
    assert got[:2] == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2
    assert got[2].producer_id == 1


def test_loading_reads_in_slices_of_the_load_buffer_size(h):
    index = h.manager.partition_for(TRANSACTIONAL_ID_1)
    ids = [f"id-{n}" for n in range(200) if h.manager.partition_for(f"id-{n}") == index]
    for tid in ids:
        md = txn_metadata(tid, 7)
        write_raw(h, index, [(key_to_bytes(tid), value_to_bytes(md.prepare_no_transit(), False))])
    manager = reload(h, transaction_log_load_buffer_size=1)  # one batch per read (minOneMessage)
    assert {m.transactional_id for m in manager.transactional_ids()} == set(ids)


def test_load_transaction_metadata_with_corrupted_log(h):
    """A value that does not decode fails the partition: COORDINATOR_NOT_AVAILABLE (Kafka
    logs it and serves what it read before; the module docstring says why not here)."""
    index = h.manager.partition_for(TRANSACTIONAL_ID_1)
    write_raw(h, index, [(key_to_bytes(TRANSACTIONAL_ID_1), b"\x00\x00\x01")])
    manager = reload(h)
    assert manager.states[index] is PartitionLoadState.FAILED
    assert manager.get_transaction_state(TRANSACTIONAL_ID_1) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    other = 1 - index
    assert manager.states[other] is PartitionLoadState.ACTIVE


def test_ignore_unknown_record_type(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    md.state = S.PrepareCommit
    md.add_partitions({TopicPartition("topic1", 0), TopicPartition("topic1", 1)})
    index = h.manager.partition_for(TRANSACTIONAL_ID_1)
    unknown = (0x7FFF).to_bytes(2, "big") + b"\x00\x00"  # a key of version Short.MaxValue
    write_raw(
        h,
        index,
        [
            (unknown, unknown),
            (key_to_bytes(TRANSACTIONAL_ID_1), value_to_bytes(md.prepare_no_transit(), True)),
        ],
    )
    manager = reload(h)
    loaded = manager.get_transaction_state(TRANSACTIONAL_ID_1)
    assert isinstance(loaded, CoordinatorEpochAndTxnMetadata)
    assert loaded.transaction_metadata == md
    assert not manager.is_loading()


# ---- appending -------------------------------------------------------------------------------


def test_complete_transition_when_append_succeeded(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    transit = add_partitions_transit(md, TopicPartition("topic1", 0), TopicPartition("topic1", 1))
    assert append(h, md, transit) == [ErrorCode.NONE]
    assert cached(h, TRANSACTIONAL_ID_1) is md
    assert md.pending_state is None and md.state is S.Ongoing
    # the record is in the log: key and value as records.py writes them
    ((key, value),) = h.records(h.manager.partition_for(TRANSACTIONAL_ID_1))
    assert read_txn_record_key(key).transactional_id == TRANSACTIONAL_ID_1  # type: ignore[union-attr]
    assert value == value_to_bytes(transit, False)


def test_an_append_is_answered_once_durable(h):
    h.durability.durable = False
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    transit = md.prepare_increment_producer_epoch(100, None, NOW)
    got = append(h, md, transit)
    assert got == [] and md.pending_state is S.Empty and md.producer_epoch == 0
    in_loop(lambda: h.durability.answer(True))
    assert got == [ErrorCode.NONE] and md.pending_state is None and md.producer_epoch == 1


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ],
)
def test_append_fail_to_coordinator_not_available_error(h, code):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    h.fail_appends(TRANSACTIONAL_ID_1, code)
    transit = add_partitions_transit(md, TopicPartition("topic2", 0))
    assert append(h, md, transit) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert cached(h, TRANSACTIONAL_ID_1) is md
    assert md.pending_state is None and md.state is S.Empty


def test_append_fail_to_coordinator_not_available_error_on_a_timeout(h):
    """REQUEST_TIMED_OUT (the fsync round did not end within the timeout) is retriable."""
    h.durability.durable = False
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    got = append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0)))
    in_loop(lambda: h.durability.answer(False))
    assert got == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert md.pending_state is None and md.state is S.Empty


def test_append_fail_to_not_coordinator_error(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    h.fail_appends(TRANSACTIONAL_ID_1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0))) == [
        ErrorCode.NOT_COORDINATOR
    ]
    assert md.pending_state is None
    # an fsync that failed: KAFKA_STORAGE_ERROR, the same answer
    h.durability.durable = False
    del h.partition(TRANSACTIONAL_ID_1).append_built_batch
    got = append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0)))
    in_loop(lambda: h.durability.answer(OSError("fsync failed")))
    assert got == [ErrorCode.NOT_COORDINATOR] and md.pending_state is None
    # a coordinator epoch that is not the cache's
    got = append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0)), 10)
    assert got == [ErrorCode.NOT_COORDINATOR]


def test_append_fail_to_coordinator_loading_error(h):
    h.durability.durable = False
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    got = append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0)))
    # the partition is being loaded again when the write becomes durable
    h.manager.states[h.manager.partition_for(TRANSACTIONAL_ID_1)] = PartitionLoadState.LOADING
    in_loop(lambda: h.durability.answer(True))
    assert got == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]


@pytest.mark.parametrize("code", [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE])
def test_append_fail_to_unknown_error(h, code):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    h.fail_appends(TRANSACTIONAL_ID_1, code)
    assert append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0))) == [
        ErrorCode.UNKNOWN_SERVER_ERROR
    ]
    assert md.pending_state is None


def test_pending_state_not_reset_on_retry_append(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    h.fail_appends(TRANSACTIONAL_ID_1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    got = append(h, md, add_partitions_transit(md, TopicPartition("topic2", 0)), 0, lambda _: True)
    assert got == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert md.pending_state is S.Ongoing


def test_append_transaction_to_log_while_producer_fenced(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    transit = add_partitions_transit(md, TopicPartition("topic1", 0), TopicPartition("topic1", 1))
    md.producer_epoch += 1  # the cache changes while the new metadata is being appended
    assert append(h, md, transit, 10) == [ErrorCode.NOT_COORDINATOR]


def test_append_transaction_to_log_while_pending_state_changed(h):
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    h.manager.put_transaction_state_if_not_exists(md)
    transit = add_partitions_transit(md, TopicPartition("topic1", 0), TopicPartition("topic1", 1))
    md.pending_state = None  # the cache changes while the new metadata is being appended
    # Kafka's completeTransitionTo throws (IllegalStateException) in the append's callback,
    # which leaves the request unanswered; here it is logged and answered
    with pytest.raises(IllegalTransactionStateError):
        md.complete_transition_to(transit)
    assert append(h, md, transit) == [ErrorCode.UNKNOWN_SERVER_ERROR]
    assert md.state is S.Empty


def test_uses_flexible_records(h):
    for flexible in (False, True):
        h.manager.uses_flexible_records = flexible
        tid = f"flex-{flexible}"
        md = txn_metadata(tid, 3)
        h.manager.put_transaction_state_if_not_exists(md)
        assert append(h, md, md.prepare_increment_producer_epoch(100, None, NOW)) == [
            ErrorCode.NONE
        ]
        _, value = h.records(h.manager.partition_for(tid))[-1]
        assert value is not None
        assert read_value_message(value)[0] == (1 if flexible else 0)


# ---- expiring --------------------------------------------------------------------------------


def setup_and_run_transactional_id_expiration(
    h: Harness, code: ErrorCode, state: TransactionState
) -> tuple[TransactionMetadata, TransactionMetadata]:
    """``setupAndRunTransactionalIdExpiration``: id 1 idle past the expiration in ``state``,
    id 2 recent; then one expiration round whose tombstone write answers ``code``."""
    md1, md2 = txn_metadata(TRANSACTIONAL_ID_1, 1), txn_metadata(TRANSACTIONAL_ID_2, 2)
    md1.state = state
    md1.txn_last_update_timestamp = NOW - EXPIRATION_MS - 1
    if state is not S.Empty:
        md1.add_partitions({TopicPartition("topic1", 0)})
    h.manager.put_transaction_state_if_not_exists(md1)
    h.manager.put_transaction_state_if_not_exists(md2)
    if code is not ErrorCode.NONE:
        h.fail_appends(TRANSACTIONAL_ID_1, code)
    in_loop(h.manager.remove_expired_transactional_ids)
    return md1, md2


def verify_metadata_does_exist_and_is_usable(h: Harness, transactional_id: str) -> None:
    md = cached(h, transactional_id)
    assert md is not None and md.pending_state is None


@pytest.mark.parametrize("state", [S.CompleteCommit, S.CompleteAbort, S.Empty])
def test_should_remove_expired_transactional_ids(h, state):
    """``shouldRemove{CompleteCommit,CompleteAbort,Empty}ExpiredTransactionalIds``."""
    setup_and_run_transactional_id_expiration(h, ErrorCode.NONE, state)
    assert cached(h, TRANSACTIONAL_ID_1) is None
    verify_metadata_does_exist_and_is_usable(h, TRANSACTIONAL_ID_2)
    # the tombstone is in the log, and a reload forgets the id too
    key, value = h.records(h.manager.partition_for(TRANSACTIONAL_ID_1))[-1]
    assert (key, value) == (key_to_bytes(TRANSACTIONAL_ID_1), None)
    assert h.manager.expired == 1
    reloaded = reload(h)
    assert reloaded.get_transaction_state(TRANSACTIONAL_ID_1) is None


def test_should_not_remove_expired_transactional_ids_if_log_append_fails(h):
    setup_and_run_transactional_id_expiration(h, ErrorCode.NOT_ENOUGH_REPLICAS, S.CompleteAbort)
    verify_metadata_does_exist_and_is_usable(h, TRANSACTIONAL_ID_1)
    verify_metadata_does_exist_and_is_usable(h, TRANSACTIONAL_ID_2)


@pytest.mark.parametrize("state", [S.Ongoing, S.PrepareAbort, S.PrepareCommit])
def test_should_not_remove_transactional_ids_in_state(h, state):
    """``shouldNotRemove{Ongoing,PrepareAbort,PrepareCommit}TransactionalIds``."""
    setup_and_run_transactional_id_expiration(h, ErrorCode.NONE, state)
    verify_metadata_does_exist_and_is_usable(h, TRANSACTIONAL_ID_1)
    verify_metadata_does_exist_and_is_usable(h, TRANSACTIONAL_ID_2)


def test_an_id_with_a_pending_transition_does_not_expire(h):
    setup_and_run_transactional_id_expiration(h, ErrorCode.NONE, S.Ongoing)
    md = txn_metadata("pending", 9)
    md.txn_last_update_timestamp = NOW - EXPIRATION_MS - 1
    h.manager.put_transaction_state_if_not_exists(md)
    md.prepare_increment_producer_epoch(100, None, NOW)
    in_loop(h.manager.remove_expired_transactional_ids)
    assert cached(h, "pending") is md and md.pending_state is S.Empty


def expire_many(h: Harness, count: int) -> set[str]:
    ids = {f"expired-{n}" for n in range(count)}
    for tid in ids:
        md = txn_metadata(tid, 5)
        md.txn_last_update_timestamp = NOW - EXPIRATION_MS - 1
        h.manager.put_transaction_state_if_not_exists(md)
    return ids


def small_batches(tmp_path: Path, max_message_bytes: int) -> Harness:
    harness = Harness(tmp_path / "small")
    configs = harness.manager.transaction_topic_configs()
    harness.manager.transaction_topic_configs = lambda: {  # type: ignore[method-assign]
        **configs,
        "max.message.bytes": max_message_bytes,
    }
    harness.manager.ensure_topic()
    return harness


def test_transaction_expiration_should_respect_batch_size(tmp_path):
    harness = small_batches(tmp_path, 512)
    try:
        ids = expire_many(harness, 1000)
        in_loop(harness.manager.remove_expired_transactional_ids)
        assert list(harness.manager.transactional_ids()) == []
        tombstoned: set[str] = set()
        for index in range(NUM_PARTITIONS):
            partition = harness.broker.replica_manager.get_partition(
                TRANSACTION_STATE_TOPIC_NAME, index
            )
            info = partition.log.read(0, 1 << 30, min_one_message=True)
            data = info.records.read()
            batches = list(iter_batches(data, 0, len(data), file=True))
            assert len(batches) > 1  # a non-trivial case
            for batch in batches:
                assert batch.size_in_bytes < 512
                for record in batch.records():
                    assert record.value is None
                    tombstoned.add(read_txn_record_key(record.key).transactional_id)  # type: ignore[union-attr]
        assert tombstoned == ids
    finally:
        harness.broker.close()


def test_transactional_expiration_with_too_small_batch_size(tmp_path):
    """A tombstone larger than a batch may be: the write fails, the ids stay (usable), and
    the round ends instead of getting stuck."""
    harness = small_batches(tmp_path, 16)
    try:
        ids = expire_many(harness, 10)
        in_loop(harness.manager.remove_expired_transactional_ids)
        assert {m.transactional_id for m in harness.manager.transactional_ids()} == ids
        assert all(m.pending_state is None for m in harness.manager.transactional_ids())
    finally:
        harness.broker.close()


def test_the_expiration_is_scheduled_every_cleanup_interval(h):
    clock = Clock()
    clock.now = NOW
    timer = ManualTimer(clock)
    manager = TransactionStateManager(
        TransactionConfig(
            transaction_log_num_partitions=NUM_PARTITIONS,
            transactional_id_expiration_ms=EXPIRATION_MS,
            remove_expired_transactional_ids_interval_ms=1000,
        ),
        h.broker.replica_manager,
        h.durability,
        clock,
        timer=timer,
    )
    in_loop(manager.startup)
    manager.ensure_topic()
    md = txn_metadata(TRANSACTIONAL_ID_1, 1)
    manager.put_transaction_state_if_not_exists(md)
    in_loop(lambda: timer.advance(1000))
    assert manager.get_transaction_state(TRANSACTIONAL_ID_1) is not None
    in_loop(lambda: timer.advance(EXPIRATION_MS))
    assert manager.get_transaction_state(TRANSACTIONAL_ID_1) is None
    assert timer.is_scheduled("transactionalId-expiration")
    run(manager.shutdown())
    assert not timer.is_scheduled("transactionalId-expiration")
