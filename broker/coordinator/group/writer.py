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
import functools
import logging
from collections.abc import Callable, Sequence
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

    def when_flushed(
        self,
        targets: Sequence[tuple[UnifiedLog, int]],
        timeout_s: float,
        on_done: Callable[[bool | BaseException], None],
    ) -> bool: ...


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
        #: writes waiting for their fsync round; set while ``drain`` waits for them
        self._waiting = 0
        self._drained: asyncio.Future[None] | None = None
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
        # answered from the round's callback, as acks=all produce requests: no task
        if not self._durability.when_flushed(
            [(partition.log, last_offset + 1)],
            self._config.offset_commit_timeout_ms / 1000,
            functools.partial(self._flushed, done),
        ):
            done(ErrorCode.NONE)  # durable already
            return
        self._waiting += 1

    def _flushed(self, done: OnWritten, outcome: bool | BaseException) -> None:
        self._waiting -= 1
        if isinstance(outcome, OSError):
            log.error("fsync of __consumer_offsets failed: %s", outcome)
            code = ErrorCode.KAFKA_STORAGE_ERROR
        elif isinstance(outcome, BaseException):
            log.error("waiting for __consumer_offsets to be durable failed", exc_info=outcome)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        else:
            code = ErrorCode.NONE if outcome else ErrorCode.REQUEST_TIMED_OUT
        try:
            done(code)
        finally:
            drained = self._drained
            if not self._waiting and drained is not None and not drained.done():
                drained.set_result(None)

    async def drain(self) -> None:
        """Until every write waiting for its flush is answered (shutdown)."""
        while self._waiting:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        self._drained = None


def _ignore(_: ErrorCode) -> None:
    return None
