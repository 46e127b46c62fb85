"""One ``__consumer_offsets`` partition's state (``GroupCoordinatorShard``).

A shard owns the groups that hash to its partition and their offsets, writes
their records to that partition, and rebuilds both from it at start
(``replay``: OffsetCommit records into the offsets, GroupMetadata records
into the groups; KIP-848 records are recognised and skipped, as this
coordinator serves classic groups only).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from broker.coordinator.group.classic import ClassicGroupManager
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.offsets import OffsetManager
from broker.coordinator.group.rebalance import GroupMeters, OnWritten
from broker.coordinator.group.records import Record
from broker.coordinator.group.timer import CoordinatorTimer
from broker.group_records.messages import GROUP_METADATA_TYPE, decode_record
from broker.group_records.schema import GroupRecordError

ShardWriter = Callable[[int, list[Record], OnWritten | None], None]


class ShardState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


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
    ) -> None:
        self.index = index
        self.state = ShardState.LOADING
        self._writer = writer
        self.classic = ClassicGroupManager(config, timer, time_ms, self._write, meters)
        self.offsets = OffsetManager(
            self.classic,
            self._write,
            time_ms,
            config.offset_metadata_max_size,
            config.offsets_retention_ms,
        )
        #: records replayed while loading (skipped KIP-848 ones included)
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
        record = decode_record(key, value)
        self.loaded_records += 1
        if record.record_type in (0, 1):
            k = record.key
            self.offsets.replay(
                record_offset, str(k["group"]), str(k["topic"]), int(k["partition"]), record.value
            )
        elif record.record_type == GROUP_METADATA_TYPE:
            self.classic.replay_group_metadata(str(record.key["group"]), record.value)

    def on_loaded(self) -> None:
        self.state = ShardState.ACTIVE
        self.classic.on_loaded()
