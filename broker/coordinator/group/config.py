"""The group coordinator's configuration keys (Kafka's names and defaults) and GroupConfig.

Declared here with ``register_broker_key`` so they exist wherever the
coordinator is imported (the app, the handlers). Sources: Kafka 3.9's
``GroupCoordinatorConfig.java`` and ``OffsetConfig.java``.

``__consumer_offsets`` is created with Kafka's topic configs
(``GroupCoordinatorService.groupMetadataTopicConfigs``): cleanup.policy
compact, compression.type producer, segment.bytes = offsets.topic.segment.bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.config import BrokerConfig, register_broker_key
from broker.config_key import ConfigKey, ConfigType, in_range
from broker.errors import InvalidConfigError

INT_MAX = 2**31 - 1
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
#: ``GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`` (not configurable in Kafka)
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
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


_KEYS = (
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

for _key in _KEYS:
    register_broker_key(_key)


@dataclass(frozen=True)
class GroupConfig:
    """The values the coordinator reads (``GroupCoordinatorConfig``)."""

    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_load_buffer_size: int = 5 * 1024 * 1024
    offset_commit_timeout_ms: int = 5000
    offset_commit_required_acks: int = -1
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_size: int = 4096
    classic_group_initial_rebalance_delay_ms: int = 3000
    classic_group_min_session_timeout_ms: int = 6000
    classic_group_max_session_timeout_ms: int = 1_800_000
    classic_group_max_size: int = INT_MAX
    classic_group_new_member_join_timeout_ms: int = CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5000
    consumer_group_max_size: int = INT_MAX
    #: short names, the default first
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    #: ``group.consumer.migration.policy``: disabled, upgrade, downgrade or bidirectional
    consumer_group_migration_policy: str = "bidirectional"
    #: acks=all waits for an fsync (the broker's acks.all.fsync)
    durable_fsync: bool = True

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> GroupConfig:
        def get(name: str) -> int:
            return int(config.get(name))

        return cls(
            offsets_topic_num_partitions=get("offsets.topic.num.partitions"),
            offsets_topic_segment_bytes=get("offsets.topic.segment.bytes"),
            offsets_load_buffer_size=get("offsets.load.buffer.size"),
            offset_commit_timeout_ms=get("offsets.commit.timeout.ms"),
            offset_commit_required_acks=get("offsets.commit.required.acks"),
            offsets_retention_ms=get("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=get("offsets.retention.check.interval.ms"),
            offset_metadata_max_size=get("offset.metadata.max.bytes"),
            classic_group_initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms"),
            classic_group_min_session_timeout_ms=get("group.min.session.timeout.ms"),
            classic_group_max_session_timeout_ms=get("group.max.session.timeout.ms"),
            classic_group_max_size=get("group.max.size"),
            consumer_group_session_timeout_ms=get("group.consumer.session.timeout.ms"),
            consumer_group_heartbeat_interval_ms=get("group.consumer.heartbeat.interval.ms"),
            consumer_group_max_size=get("group.consumer.max.size"),
            consumer_group_assignors=tuple(
                dict.fromkeys(
                    CONSUMER_GROUP_ASSIGNORS[a] for a in config.get("group.consumer.assignors")
                )
            ),
            consumer_group_migration_policy=migration_policy(
                config.get("group.consumer.migration.policy")
            ),
            durable_fsync=bool(config.get("acks.all.fsync")),
        ).checked()

    @property
    def upgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.consumer_group_migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
        return self.consumer_group_migration_policy in ("downgrade", "bidirectional")

    def checked(self) -> GroupConfig:
        """``GroupCoordinatorConfig``'s cross-key rule: the heartbeat interval of consumer
        groups must be shorter than their session timeout."""
        if self.consumer_group_heartbeat_interval_ms >= self.consumer_group_session_timeout_ms:
            raise InvalidConfigError(
                "group.consumer.heartbeat.interval.ms must be less than "
                "group.consumer.session.timeout.ms"
            )
        return self

    def topic_configs(self) -> dict[str, object]:
        """``groupMetadataTopicConfigs``."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": self.offsets_topic_segment_bytes,
        }
