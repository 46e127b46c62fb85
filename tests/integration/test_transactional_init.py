"""InitProducerId with a transactional.id through real clients against the broker as a
subprocess: confluent-kafka's ``init_transactions()``, kafka-python's and aiokafka's.

Transactional produce is still refused, so what is checked is what an init alone
shows: it succeeds; a second producer of the same id gets the same producer id
and the next epoch; the first producer's epoch is then fenced (its KIP-360
re-init with its old epoch answers PRODUCER_FENCED, sent here on the wire as
the client would); the state survives a restart of the broker. Every wait is
bounded (the clients' timeouts, ``TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import warnings

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer

from broker.errors import ErrorCode
from broker.protocol.messages import InitProducerIdRequest
from tests.integration.harness import BrokerProcess
from tests.integration.wire import RawClient

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

TIMEOUT = 30
SETTINGS = {"transaction.state.log.num.partitions": "3"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("txn-init") / "data"
    data.mkdir()
    with BrokerProcess(data, **SETTINGS) as b:
        yield b


def raw_init(port: int, transactional_id: str, producer_id: int = -1, epoch: int = -1):
    with RawClient(port) as client:
        return client.call(
            InitProducerIdRequest(
                transactional_id=transactional_id,
                transaction_timeout_ms=60_000,
                producer_id=producer_id,
                producer_epoch=epoch,
            ),
            4,
        )


def confluent_init(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def test_confluent_init_transactions_and_a_second_producer_fences_the_first(broker):
    first = confluent_init(broker.bootstrap, "tx-confluent")
    second = confluent_init(broker.bootstrap, "tx-confluent")
    # the two inits gave epochs 0 and 1; this third one (as a new producer) gets 2
    now = raw_init(broker.port, "tx-confluent")
    assert (now.error_code, now.producer_epoch) == (ErrorCode.NONE, 2)
    pid = now.producer_id
    # the first producer continuing from epoch 0 (KIP-360) is fenced, as is the second's 1
    for stale in (0, 1):
        fenced = raw_init(broker.port, "tx-confluent", pid, stale)
        assert fenced.error_code == ErrorCode.PRODUCER_FENCED
    # the holder of the current epoch bumps it
    assert raw_init(broker.port, "tx-confluent", pid, 2).producer_epoch == 3
    for producer in (first, second):
        assert producer.flush(1) == 0


def test_kafka_python_init_transactions(broker):
    first = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="tx-kafka-python")
    second = None
    try:
        first.init_transactions()
        one = first._transaction_manager.producer_id_and_epoch
        second = KafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id="tx-kafka-python"
        )
        second.init_transactions()
        two = second._transaction_manager.producer_id_and_epoch
        assert (two.producer_id, two.epoch) == (one.producer_id, one.epoch + 1)
        fenced = raw_init(broker.port, "tx-kafka-python", one.producer_id, one.epoch)
        assert fenced.error_code == ErrorCode.PRODUCER_FENCED
    finally:
        first.close(timeout=5)
        if second is not None:
            second.close(timeout=5)


def test_aiokafka_start_initializes_the_transactional_id(broker):
    async def scenario() -> list[tuple[int, int]]:
        got = []
        for _ in range(2):
            producer = AIOKafkaProducer(
                bootstrap_servers=broker.bootstrap, transactional_id="tx-aiokafka"
            )
            await asyncio.wait_for(producer.start(), TIMEOUT)
            try:
                got.append(
                    (producer._txn_manager.producer_id, producer._txn_manager.producer_epoch)
                )
            finally:
                await asyncio.wait_for(producer.stop(), TIMEOUT)
        return got

    (pid1, epoch1), (pid2, epoch2) = asyncio.run(scenario())
    assert pid1 == pid2 and epoch2 == epoch1 + 1


def test_the_epoch_survives_a_broker_restart(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with BrokerProcess(data, **SETTINGS) as b:
        confluent_init(b.bootstrap, "tx-restart").flush(1)
        before = raw_init(b.port, "tx-restart")
        assert before.producer_epoch == 1
        b.stop()
        b.start()
        after = raw_init(b.port, "tx-restart")
        assert (after.error_code, after.producer_id, after.producer_epoch) == (
            ErrorCode.NONE,
            before.producer_id,
            2,
        )
        confluent_init(b.bootstrap, "tx-restart").flush(1)
        assert raw_init(b.port, "tx-restart").producer_epoch == 4
