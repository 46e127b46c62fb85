"""InitProducerId with a transactional id and FindCoordinator for transactional ids,
through the app's request path (``InProcessBroker``: real logs, the real dispatcher).

What the coordinator decides is tested in ``tests/unit/transactions``; these check the
handlers' part (ACLs, the request's checks, PRODUCER_FENCED by version, the batched
FindCoordinator) and what survives a restart: the epoch of an id keeps growing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.coordinator.transaction.state_topic import TRANSACTION_STATE_TOPIC_NAME
from broker.errors import ErrorCode
from broker.protocol.messages import (
    FindCoordinatorRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
)
from broker.records.iterate import iter_batches
from broker.security.acl import AclOperation
from tests.aio import run
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_authorization_matrix import ALICE, AUTHORIZER, TXN, acl, grant

Op = AclOperation
PARTITIONS = {"transaction_state_log_num_partitions": "3"}


@pytest.fixture
def txn_broker(make_broker: Any) -> InProcessBroker:
    b: InProcessBroker = make_broker(**PARTITIONS)
    return b


def init(
    b: InProcessBroker,
    transactional_id: str | None = "tx",
    version: int = 4,
    timeout_ms: int = 60_000,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> InitProducerIdResponse:
    request = InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout_ms=timeout_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
    resp: InitProducerIdResponse = b.call(request, version)
    return resp


def answer(resp: InitProducerIdResponse) -> tuple[int, int, int]:
    return resp.error_code, resp.producer_id, resp.producer_epoch


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_a_new_transactional_id_gets_epoch_0_then_each_init_bumps_it(txn_broker, version):
    first = init(txn_broker, version=version)
    assert (first.error_code, first.producer_epoch) == (ErrorCode.NONE, 0)
    second = init(txn_broker, version=version)
    assert answer(second) == (ErrorCode.NONE, first.producer_id, 1)
    # an idempotent producer's id comes from the same allocator: never the same id
    assert init(txn_broker, None, version=version).producer_id != first.producer_id


def test_the_first_init_creates_the_internal_compacted_topic(txn_broker):
    assert txn_broker.replica_manager.partition_count(TRANSACTION_STATE_TOPIC_NAME) is None
    init(txn_broker)
    assert txn_broker.replica_manager.partition_count(TRANSACTION_STATE_TOPIC_NAME) == 3
    config = txn_broker.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, 0).log.config
    assert config.cleanup_policy == ("compact",)
    assert config.compression_type == "uncompressed"
    assert config.segment_bytes == 100 * 1024 * 1024  # transaction.state.log.segment.bytes
    assert config.min_insync_replicas == 1
    assert config.unclean_leader_election_enable is False
    topics = txn_broker.call(MetadataRequest(topics=None), 12).topics
    (state,) = [t for t in topics if t.name == TRANSACTION_STATE_TOPIC_NAME]
    assert state.is_internal


@pytest.mark.parametrize(
    ("version", "fenced"),
    [(3, "INVALID_PRODUCER_EPOCH"), (4, "PRODUCER_FENCED"), (5, "PRODUCER_FENCED")],
)
def test_a_stale_epoch_is_fenced_by_version(txn_broker, version, fenced):
    first = init(txn_broker, version=version)
    init(txn_broker, version=version)  # a second producer instance: epoch 1
    # the first one continuing from epoch 0 (KIP-360) is fenced
    stale = init(txn_broker, version=version, producer_id=first.producer_id, producer_epoch=0)
    assert answer(stale) == (ErrorCode[fenced], -1, -1)


def test_the_current_epoch_continues_with_a_bump(txn_broker):
    """KIP-360: the producer that holds the current epoch bumps it (and a retry of that
    bump gets the same epoch)."""
    first = init(txn_broker, version=3)
    pid = first.producer_id
    assert answer(init(txn_broker, version=3, producer_id=pid, producer_epoch=0)) == (0, pid, 1)
    assert answer(init(txn_broker, version=3, producer_id=pid, producer_epoch=0)) == (0, pid, 1)


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(-1, 3), (7, -1)])
def test_a_producer_id_without_an_epoch_is_an_invalid_request(
    txn_broker, producer_id, producer_epoch
):
    got = init(txn_broker, version=3, producer_id=producer_id, producer_epoch=producer_epoch)
    assert answer(got) == (ErrorCode.INVALID_REQUEST, -1, -1)


def test_an_empty_transactional_id_is_an_invalid_request(txn_broker):
    assert init(txn_broker, "").error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("timeout_ms", [0, -5, 15 * 60 * 1000 + 1])
def test_a_timeout_out_of_bounds_is_invalid_transaction_timeout(txn_broker, timeout_ms):
    got = init(txn_broker, timeout_ms=timeout_ms)
    assert answer(got) == (ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1)


def test_transaction_max_timeout_ms_bounds_the_timeout(make_broker):
    b = make_broker(transaction_max_timeout_ms="1000", **PARTITIONS)
    assert init(b, timeout_ms=1000).error_code == ErrorCode.NONE
    assert init(b, timeout_ms=1001).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_a_node_without_the_coordinator_answers_not_coordinator(txn_broker):
    txn_broker.context.transactions = None
    assert answer(init(txn_broker)) == (ErrorCode.NOT_COORDINATOR, -1, -1)


def test_init_needs_write_on_the_transactional_id(make_broker):
    b: InProcessBroker = make_broker(
        authorizer_class_name=AUTHORIZER, super_users="User:admin", **PARTITIONS
    )
    b.conn.principal = ALICE
    assert init(b, "tx1").error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(b, acl(TXN, "tx1", Op.DESCRIBE))
    assert init(b, "tx1").error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(b, acl(TXN, "tx1", Op.WRITE))
    assert init(b, "tx1").error_code == ErrorCode.NONE
    assert init(b, "tx2").error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", [1, 2, 3])
def test_find_coordinator_of_a_transactional_id_is_this_broker(txn_broker, version):
    resp = txn_broker.call(FindCoordinatorRequest(key="tx", key_type=1), version)
    assert (resp.error_code, resp.node_id, resp.host, resp.port) == (
        ErrorCode.NONE,
        0,
        "127.0.0.1",
        9092,
    )
    assert txn_broker.replica_manager.partition_count(TRANSACTION_STATE_TOPIC_NAME) == 3


def test_find_coordinator_batches_transactional_ids_with_their_acls(make_broker):
    b: InProcessBroker = make_broker(
        authorizer_class_name=AUTHORIZER, super_users="User:admin", **PARTITIONS
    )
    b.conn.principal = ALICE
    grant(b, acl(TXN, "mine", Op.DESCRIBE))
    resp = b.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["mine", "theirs"]), 4)
    assert [(c.key, c.error_code, c.node_id) for c in resp.coordinators] == [
        ("mine", ErrorCode.NONE, 0),
        ("theirs", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1),
    ]


def restarted(data_dir: Path) -> InProcessBroker:
    b = InProcessBroker(data_dir, **PARTITIONS)
    assert b.core.transactions is not None
    coordinator = b.core.transactions

    async def start() -> None:
        coordinator.startup()
        await coordinator.txn_manager.wait_loaded()

    run(start())
    return b


def stop(b: InProcessBroker) -> None:
    assert b.core.transactions is not None
    run(b.core.transactions.shutdown())
    b.close()


def test_the_state_survives_a_restart_and_the_epoch_keeps_growing(tmp_path):
    data = tmp_path / "data"
    b = restarted(data)
    first = init(b, "tx")
    assert init(b, "tx").producer_epoch == 1
    other = init(b, "other")
    stop(b)
    for expected in (2, 3):
        b = restarted(data)
        assert answer(init(b, "tx")) == (ErrorCode.NONE, first.producer_id, expected)
        stop(b)
    b = restarted(data)
    # the second id too, and a producer fenced before the restart stays fenced
    assert answer(init(b, "other")) == (ErrorCode.NONE, other.producer_id, 1)
    stale = init(b, "tx", producer_id=first.producer_id, producer_epoch=1)
    assert stale.error_code == ErrorCode.PRODUCER_FENCED
    # a new id gets a producer id no other id had
    assert init(b, "new").producer_id not in (first.producer_id, other.producer_id)
    stop(b)


def test_the_record_of_a_new_transactional_id_in_golden_bytes(txn_broker):
    """The record the first InitProducerId writes (tests/golden/VECTORS.md), worked out
    field by field from Kafka 3.9's TransactionLogKey.json v0 and TransactionLogValue.json
    v0 (the value version Kafka writes while transaction.version is 0), not by this
    broker's encoder."""
    first = init(txn_broker, "tx")
    assert (first.producer_id, first.producer_epoch) == (0, 0)
    manager = txn_broker.core.transactions.txn_manager
    partition = txn_broker.replica_manager.get_partition(
        TRANSACTION_STATE_TOPIC_NAME, manager.partition_for("tx")
    )
    info = partition.log.read(0, 1 << 20, min_one_message=True)
    data = info.records.read()
    ((batch,),) = [list(iter_batches(data, 0, len(data), file=True))]
    (record,) = batch.records()
    key = bytes.fromhex(
        "0000"  # key version 0
        "0002" + b"tx".hex()  # transactionalId: INT16 length, UTF-8
    )
    value = bytes.fromhex(
        "0000"  # value version 0
        "0000000000000000"  # producerId 0 (the broker's first)
        "0000"  # producerEpoch 0
        "0000ea60"  # transactionTimeoutMs 60000
        "00"  # transactionStatus 0 (Empty)
        "ffffffff"  # transactionPartitions: null (Empty writes none)
        "0000018bcfe56800"  # transactionLastUpdateTimestampMs 1_700_000_000_000
        "ffffffffffffffff"  # transactionStartTimestampMs -1 (no transaction)
    )
    assert (record.key, record.value) == (key, value)
    header = batch.header()
    assert (header.producer_id, header.is_control_batch, header.is_transactional) == (
        -1,
        False,
        False,
    )


def test_metadata_asking_for_the_state_topic_creates_it_as_the_coordinator_does(txn_broker):
    topics = txn_broker.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=TRANSACTION_STATE_TOPIC_NAME)],
            allow_auto_topic_creation=True,
        ),
        12,
    ).topics
    ((name, internal, count),) = [(t.name, t.is_internal, len(t.partitions)) for t in topics]
    assert (name, internal, count) == (TRANSACTION_STATE_TOPIC_NAME, True, 3)
    assert txn_broker.replica_manager.partition_count("__consumer_offsets") is None
    # and the coordinator serves it at once
    assert init(txn_broker).error_code == ErrorCode.NONE
