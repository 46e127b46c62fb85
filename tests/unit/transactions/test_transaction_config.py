"""The transaction coordinator's keys: Kafka 3.9's names, defaults and validators."""

from __future__ import annotations

import pytest

from broker.config import BROKER_KEY_OWNERS, BROKER_KEYS, BrokerConfig
from broker.coordinator.transaction.config import TransactionConfig
from broker.errors import InvalidConfigError
from broker.transaction_config_keys import KEYS

# TransactionLogConfigs / TransactionStateManagerConfigs
KAFKA_DEFAULTS = {
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.segment.bytes": 104857600,
    "transaction.state.log.load.buffer.size": 5242880,
    "transaction.state.log.min.isr": 2,
    "transaction.partition.verification.enable": True,
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
}


def test_keys_and_defaults_are_kafkas() -> None:
    assert {k.name: k.default for k in KEYS} == KAFKA_DEFAULTS
    assert BROKER_KEY_OWNERS["broker.transaction_config_keys"] == KEYS
    config = BrokerConfig.from_properties({})
    for name, default in KAFKA_DEFAULTS.items():
        assert BROKER_KEYS[name] in KEYS
        assert config.get(name) == default


@pytest.mark.parametrize("name", [n for n in KAFKA_DEFAULTS if not n.endswith(".enable")])
def test_every_number_is_at_least_one(name: str) -> None:
    assert BrokerConfig.from_properties({name: "1"}).get(name) == 1
    with pytest.raises(InvalidConfigError, match=name):
        BrokerConfig.from_properties({name: "0"})


def test_replication_factor_is_a_short() -> None:
    with pytest.raises(InvalidConfigError):
        BrokerConfig.from_properties({"transaction.state.log.replication.factor": "32768"})


def test_transaction_config_reads_the_keys() -> None:
    assert TransactionConfig.from_broker(BrokerConfig.from_properties({})) == TransactionConfig()
    config = BrokerConfig.from_properties(
        {
            "transaction.state.log.num.partitions": "3",
            "transaction.max.timeout.ms": "60000",
            "transaction.partition.verification.enable": "false",
            "transactional.id.expiration.ms": "1000",
        }
    )
    read = TransactionConfig.from_broker(config)
    assert read.transaction_log_num_partitions == 3
    assert read.transaction_max_timeout_ms == 60000
    assert read.partition_verification_enable is False
    assert read.transactional_id_expiration_ms == 1000
