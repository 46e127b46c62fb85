"""One ``__consumer_offsets`` partition's state (``GroupCoordinatorShard``).

A shard owns the groups that hash to its partition, classic and consumer
ones (one id namespace: a group is of one type), and their offsets; it
writes their records to that partition and rebuilds all of it from it at
start (``replay``)::

    types 0, 1   OffsetCommit                 -> offsets
    type 2       GroupMetadata                -> classic groups
    types 3-8    ConsumerGroup* (KIP-848)     -> consumer groups
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable

from broker.coordinator.group.classic import ClassicGroupManager
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer.classic_members import ClassicMembersManager
from broker.coordinator.group.consumer.groups import ConsumerGroupMeters, TopicsImage
from broker.coordinator.group.consumer.records import CONSUMER_RECORD_TYPES
from broker.coordinator.group.offsets import OffsetManager
from broker.coordinator.group.rebalance import GroupMeters, OnWritten
from broker.coordinator.group.records import Record
from broker.coordinator.group.timer import CoordinatorTimer
from broker.group_records.messages import GROUP_METADATA_TYPE, CoordinatorRecord, decode_record
from broker.group_records.schema import GroupRecordError

ShardWriter = Callable[[int, list[Record], OnWritten | None], None]


class ShardState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


class NoTopics:
    """A topics image without topics (shards built without a broker: tests, tools)."""

    version = 0

    def topic_id(self, name: str) -> uuid.UUID | None:
        return None

    def partition_count(self, name: str) -> int | None:
        return None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return None

    def topic_names(self) -> Iterable[str]:
        return ()


class Shard:
    def __init__(
        self,
        index: int,
        config: GroupConfig,
        *,
        timer: CoordinatorTimer,
        time_ms: Callable[[], int],
        writer: ShardWriter,
        meters: GroupMeters | None = None,
        topics: TopicsImage | None = None,
        consumer_meters: ConsumerGroupMeters | None = None,
        max_batch_bytes: Callable[[], int] | None = None,
    ) -> None:
        self.index = index
        self.state = ShardState.LOADING
        self._writer = writer
        self.classic = ClassicGroupManager(config, timer, time_ms, self._write, meters)
        self.consumer = ClassicMembersManager(
            config,
            timer=timer,
            time_ms=time_ms,
            write=self._write,
            topics=topics or NoTopics(),
            meters=consumer_meters,
        )
        # one id namespace: each manager sees the other's groups
        self.consumer.apply = self.apply
        self.consumer.classic_groups = self.classic.groups
        self.consumer.remove_classic_group = self.classic.remove_group
        self.classic.consumer_groups = self.consumer.groups
        self.classic.remove_consumer_group = self.consumer.remove_group
        # online migration: classic members of consumer groups, conversions both ways
        self.classic.consumer_side = self.consumer
        self.consumer.classic = self.classic
        if max_batch_bytes is not None:
            self.classic.max_batch_bytes = max_batch_bytes
        self.offsets = OffsetManager(
            self.classic,
            self.consumer,
            write=self._write,
            time_ms=time_ms,
            offset_metadata_max_size=config.offset_metadata_max_size,
            offsets_retention_ms=config.offsets_retention_ms,
        )
        #: records replayed while loading
        self.loaded_records = 0

    def _write(self, records: list[Record], on_done: OnWritten | None) -> None:
        self._writer(self.index, records, on_done)

    @property
    def active(self) -> bool:
        return self.state is ShardState.ACTIVE

    def replay(self, record_offset: int, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of the partition (GroupRecordError when it does not decode)."""
        if key is None:
            raise GroupRecordError(f"record at offset {record_offset} has no key")
        self.loaded_records += 1
        self._replay(record_offset, decode_record(key, value))

    def apply(self, records: list[Record]) -> None:
        """Apply records an operation just generated (before they are written)."""
        for key, value in records:
            self._replay(-1, decode_record(key, value))

    def _replay(self, record_offset: int, record: CoordinatorRecord) -> None:
        if record.record_type in (0, 1):
            k = record.key
            self.offsets.replay(
                record_offset, str(k["group"]), str(k["topic"]), int(k["partition"]), record.value
            )
        elif record.record_type == GROUP_METADATA_TYPE:
            self.classic.replay_group_metadata(str(record.key["group"]), record.value)
        elif record.record_type in CONSUMER_RECORD_TYPES:
            self.consumer.replay(record)

    def on_loaded(self) -> None:
        self.state = ShardState.ACTIVE
        self.classic.on_loaded()
        self.consumer.on_loaded()
