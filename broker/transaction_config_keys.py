"""The transaction coordinator's configuration keys: Kafka's names, defaults and checks.

Declared here, below ``broker.config`` in the layers, as the group
coordinator's are (``broker/group_config_keys.py``): ``broker.config`` builds
its one table of broker keys from this tuple, so a key is known whether or not
the coordinator was imported. Sources: Kafka 3.9's ``TransactionLogConfigs.java``
(``transaction.state.log.*``, ``transaction.partition.verification.enable``)
and ``TransactionStateManagerConfigs.java`` (``transaction.*``,
``transactional.id.expiration.ms``). Kafka's SHORT replication factor is an
INT here, bounded to a short.
"""

from __future__ import annotations

from broker.config_key import ConfigKey, ConfigType, in_range

#: the transaction coordinator's keys (``broker.config`` puts them in its table of broker keys)
KEYS = (
    ConfigKey(
        "transaction.state.log.num.partitions",
        ConfigType.INT,
        50,
        "Partitions of __transaction_state (should not change after deployment).",
        in_range(1),
    ),
    ConfigKey(
        "transaction.state.log.replication.factor",
        ConfigType.INT,
        3,
        "Replication factor of __transaction_state (one broker: always 1 here).",
        in_range(1, 32767),
        inert=True,
    ),
    ConfigKey(
        "transaction.state.log.segment.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        "segment.bytes of __transaction_state (small, for fast compaction and loads).",
        in_range(1),
    ),
    ConfigKey(
        "transaction.state.log.load.buffer.size",
        ConfigType.INT,
        5 * 1024 * 1024,
        "Bytes read from __transaction_state per slice when loading (a soft limit).",
        in_range(1),
    ),
    ConfigKey(
        "transaction.state.log.min.isr",
        ConfigType.INT,
        2,
        "min.insync.replicas of __transaction_state (one broker: always 1 here).",
        in_range(1),
        inert=True,
    ),
    ConfigKey(
        "transaction.partition.verification.enable",
        ConfigType.BOOLEAN,
        True,
        "Check that a partition was added to the transaction before transactional records "
        "are written to it.",
    ),
    ConfigKey(
        "transaction.max.timeout.ms",
        ConfigType.INT,
        15 * 60 * 1000,
        "Largest transaction timeout a producer may ask for in InitProducerId.",
        in_range(1),
    ),
    ConfigKey(
        "transactional.id.expiration.ms",
        ConfigType.INT,
        7 * 24 * 60 * 60 * 1000,
        "A transactional id without a status update for this long expires (not while its "
        "transaction is ongoing).",
        in_range(1),
    ),
    ConfigKey(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        ConfigType.INT,
        10 * 1000,
        "How often transactions that timed out are rolled back.",
        in_range(1),
    ),
    ConfigKey(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        ConfigType.INT,
        60 * 60 * 1000,
        "How often expired transactional ids are removed.",
        in_range(1),
    ),
)
