"""TransactionConfig: the values the transaction coordinator reads from its keys.

The keys are declared in ``broker/transaction_config_keys.py`` (below
``broker.config``, which builds its table of broker keys from them); this
module reads them (Kafka 3.9's ``TransactionConfig`` in
``TransactionStateManager.scala``, filled in ``TransactionCoordinator.apply``).
The replication factor and min ISR are not read: one broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.config import BrokerConfig


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id_expiration_ms: int = 7 * 24 * 60 * 60 * 1000
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    transaction_log_num_partitions: int = 50
    transaction_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_log_load_buffer_size: int = 5 * 1024 * 1024
    abort_timed_out_transactions_interval_ms: int = 10 * 1000
    remove_expired_transactional_ids_interval_ms: int = 60 * 60 * 1000
    #: ``transaction.partition.verification.enable``
    partition_verification_enable: bool = True

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> TransactionConfig:
        def get(name: str) -> int:
            return int(config.get(name))

        return cls(
            transactional_id_expiration_ms=get("transactional.id.expiration.ms"),
            transaction_max_timeout_ms=get("transaction.max.timeout.ms"),
            transaction_log_num_partitions=get("transaction.state.log.num.partitions"),
            transaction_log_segment_bytes=get("transaction.state.log.segment.bytes"),
            transaction_log_load_buffer_size=get("transaction.state.log.load.buffer.size"),
            abort_timed_out_transactions_interval_ms=get(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"
            ),
            remove_expired_transactional_ids_interval_ms=get(
                "transaction.remove.expired.transaction.cleanup.interval.ms"
            ),
            partition_verification_enable=bool(
                config.get("transaction.partition.verification.enable")
            ),
        )
