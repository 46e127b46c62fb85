"""GroupConfig: the values the group coordinator reads from its configuration keys.

The keys themselves are declared in ``broker/group_config_keys.py`` (below
``broker.config`` in the layers, which builds its table of broker keys from
them); this module reads them into ``GroupConfig``. Sources: Kafka 3.9's
``GroupCoordinatorConfig.java`` and ``OffsetConfig.java``.

``__consumer_offsets`` is created with Kafka's topic configs
(``GroupCoordinatorService.groupMetadataTopicConfigs``): cleanup.policy
compact, compression.type producer, segment.bytes = offsets.topic.segment.bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.config import BrokerConfig
from broker.config_key import INT_MAX
from broker.errors import InvalidConfigError
from broker.group_config_keys import CONSUMER_GROUP_ASSIGNORS, migration_policy
from broker.partition import internal_topics

GROUP_METADATA_TOPIC_NAME = internal_topics.GROUP_METADATA_TOPIC_NAME
#: ``GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`` (not configurable in Kafka)
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


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
