"""The group coordinator's configuration keys: Kafka's names, defaults and checks.

Declared here, below ``broker.config`` in the layers, rather than beside the
coordinator (``broker/coordinator/group/config.py``, which reads them into its
``GroupConfig``): the one table of broker keys in ``broker.config`` is built
from this tuple, so a key is known whether or not the coordinator was
imported. Sources: Kafka 3.9's ``GroupCoordinatorConfig.java`` and
``OffsetConfig.java``.
"""

from __future__ import annotations

from typing import Any

from broker.config_key import INT_MAX, ConfigKey, ConfigType, in_range
from broker.errors import InvalidConfigError

#: the server assignors, by Kafka's short name and class name (``group.consumer.assignors``)
CONSUMER_GROUP_ASSIGNORS = {
    "uniform": "uniform",
    "range": "range",
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
#: ``group.consumer.migration.policy`` (Kafka's ``ConsumerGroupMigrationPolicy``, case-insensitive)
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def _known_assignors(name: str, value: Any) -> None:
    if not value:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: empty list")
    for item in value:
        if item not in CONSUMER_GROUP_ASSIGNORS:
            raise InvalidConfigError(
                f"Invalid value {item} for configuration {name}: this broker has the uniform "
                "and range assignors (names or Kafka's class names)"
            )


def _migration_policy(name: str, value: Any) -> None:
    if str(value).strip().lower() not in MIGRATION_POLICIES:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: String must be one of (case "
            f"insensitive): {', '.join(p.upper() for p in MIGRATION_POLICIES)}"
        )


def migration_policy(value: Any) -> str:
    """The policy's canonical (lower case) name."""
    return str(value).strip().lower()


#: the group coordinator's keys (``broker.config`` puts them in its table of broker keys)
KEYS = (
    ConfigKey(
        "offsets.topic.num.partitions",
        ConfigType.INT,
        50,
        "Partitions of __consumer_offsets (fixed once the topic exists).",
        in_range(1),
    ),
    ConfigKey(
        "offsets.topic.segment.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        "segment.bytes of __consumer_offsets.",
        in_range(1),
    ),
    ConfigKey(
        "offsets.topic.replication.factor",
        ConfigType.INT,
        3,
        "Replication factor of __consumer_offsets (one broker: always 1 here).",
        in_range(1),
        inert=True,
    ),
    ConfigKey(
        "offsets.topic.compression.codec",
        ConfigType.INT,
        0,
        "Compression of the coordinator's batches (0 none; others are not used here).",
        in_range(0, 4),
        inert=True,
    ),
    ConfigKey(
        "offsets.load.buffer.size",
        ConfigType.INT,
        5 * 1024 * 1024,
        "Bytes read from __consumer_offsets per slice when loading.",
        in_range(1),
    ),
    ConfigKey(
        "offsets.commit.timeout.ms",
        ConfigType.INT,
        5000,
        "How long a commit (and a group write) may wait to be durable.",
        in_range(1),
    ),
    ConfigKey(
        "offsets.commit.required.acks",
        ConfigType.INT,
        -1,
        "-1: a commit is answered once its record is durable (as acks=all); 1: once appended.",
        in_range(-1, 1),
    ),
    ConfigKey(
        "offsets.retention.minutes",
        ConfigType.INT,
        7 * 24 * 60,
        "Committed offsets of an empty group expire after this long.",
        in_range(1),
    ),
    ConfigKey(
        "offsets.retention.check.interval.ms",
        ConfigType.LONG,
        600_000,
        "How often expired offsets are removed.",
        in_range(1),
    ),
    ConfigKey(
        "offset.metadata.max.bytes",
        ConfigType.INT,
        4096,
        "Longest metadata string of a committed offset.",
    ),
    ConfigKey(
        "group.initial.rebalance.delay.ms",
        ConfigType.INT,
        3000,
        "How long the first rebalance of an empty group waits for more members.",
    ),
    ConfigKey(
        "group.min.session.timeout.ms",
        ConfigType.INT,
        6000,
        "Smallest session timeout a classic member may ask for.",
    ),
    ConfigKey(
        "group.max.session.timeout.ms",
        ConfigType.INT,
        1_800_000,
        "Largest session timeout a classic member may ask for.",
    ),
    ConfigKey(
        "group.max.size",
        ConfigType.INT,
        INT_MAX,
        "Most members of a classic group.",
        in_range(1),
    ),
    ConfigKey(
        "group.consumer.session.timeout.ms",
        ConfigType.INT,
        45_000,
        "How long a member of a consumer group (KIP-848) lives without a heartbeat.",
        in_range(1),
    ),
    ConfigKey(
        "group.consumer.heartbeat.interval.ms",
        ConfigType.INT,
        5000,
        "The heartbeat interval given to the members of a consumer group.",
        in_range(1),
    ),
    ConfigKey(
        "group.consumer.max.size",
        ConfigType.INT,
        INT_MAX,
        "Most members of a consumer group.",
        in_range(1),
    ),
    ConfigKey(
        "group.consumer.assignors",
        ConfigType.LIST,
        ("uniform", "range"),
        "The server-side assignors of consumer groups; the first is the default.",
        _known_assignors,
    ),
    ConfigKey(
        "group.consumer.migration.policy",
        ConfigType.STRING,
        "bidirectional",
        "Online conversion between classic and consumer groups: disabled, upgrade (classic "
        "to consumer), downgrade (consumer to classic) or bidirectional.",
        _migration_policy,
    ),
)
