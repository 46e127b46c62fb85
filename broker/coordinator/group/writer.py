"""Appends a shard's records to its ``__consumer_offsets`` partition, then says when they hold.

One write is one v2 batch (uncompressed, CreateTime = now) that the
partition builds at its log end offset and appends
(``Partition.append_built_batch``, Kafka's coordinator-origin append). With
``offsets.commit.required.acks`` -1 (Kafka's default) the write holds once
an fsync covers it, through the
broker's group commit as acks=all produce requests (and, like them, at once
with ``acks.all.fsync=false``); with 1 once appended. The callback gets
NONE, or the error Kafka's coordinator would see: the append's, or
REQUEST_TIMED_OUT after ``offsets.commit.timeout.ms``, or KAFKA_STORAGE_ERROR
when the fsync failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from broker.coordinator.group.config import GROUP_METADATA_TOPIC_NAME, GroupConfig
from broker.coordinator.group.rebalance import OnWritten
from broker.coordinator.group.records import Record
from broker.errors import ErrorCode, KafkaError
from broker.log.unified_log import UnifiedLog
from broker.partition.replica_manager import ReplicaManager
from broker.records.record import SimpleRecord

log = logging.getLogger(__name__)


class Durability(Protocol):
    """The broker's group commit (``handlers.context.Durability``)."""

    def wait_flushed(
        self, targets: Sequence[tuple[UnifiedLog, int]], timeout_s: float
    ) -> Awaitable[bool]: ...


class RecordWriter:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        durability: Durability,
        config: GroupConfig,
        time_ms: Callable[[], int],
    ) -> None:
        self._rm = replica_manager
        self._durability = durability
        self._config = config
        self._time_ms = time_ms
        self._waits: set[asyncio.Task[None]] = set()
        #: batches appended (tests and the benchmark read it)
        self.appends = 0

    def max_batch_bytes(self, partition_index: int) -> int:
        """The largest batch the partition takes (its ``max.message.bytes``)."""
        partition = self._rm.get_partition(GROUP_METADATA_TOPIC_NAME, partition_index)
        return 2**31 - 1 if partition is None else int(partition.log.config.max_message_bytes)

    def write(self, partition_index: int, records: list[Record], on_done: OnWritten | None) -> None:
        done = on_done or _ignore
        partition = self._rm.get_partition(GROUP_METADATA_TOPIC_NAME, partition_index)
        if partition is None:
            done(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
        now = self._time_ms()
        try:
            last_offset = partition.append_built_batch(
                [SimpleRecord(timestamp=now, key=k, value=v) for k, v in records]
            )
        except KafkaError as exc:
            log.warning("appending to %s failed: %s", partition, exc)
            done(exc.code)
            return
        except OSError as exc:
            log.error("I/O error appending to %s: %s", partition, exc)
            done(ErrorCode.KAFKA_STORAGE_ERROR)
            return
        self.appends += 1
        if self._config.offset_commit_required_acks != -1 or not self._config.durable_fsync:
            done(ErrorCode.NONE)
            return
        waiting = self._durability.wait_flushed(
            [(partition.log, last_offset + 1)], self._config.offset_commit_timeout_ms / 1000
        )
        task = asyncio.ensure_future(self._after_flush(waiting, done))
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    @staticmethod
    async def _after_flush(waiting: Awaitable[bool], done: OnWritten) -> None:
        try:
            durable = await waiting
        except OSError as exc:
            log.error("fsync of __consumer_offsets failed: %s", exc)
            done(ErrorCode.KAFKA_STORAGE_ERROR)
            return
        done(ErrorCode.NONE if durable else ErrorCode.REQUEST_TIMED_OUT)

    async def drain(self) -> None:
        """Until every write waiting for its flush is answered (shutdown)."""
        while self._waits:
            await asyncio.wait(list(self._waits))


def _ignore(_: ErrorCode) -> None:
    return None
