"""Appends a coordinator's records to a partition of its internal topic, then says when they hold.

Both coordinators write through it: the group coordinator to
``__consumer_offsets`` (:func:`group_record_writer`), the transaction
coordinator to ``__transaction_state``. One write is one v2 batch
(uncompressed, CreateTime = now) that the partition builds at its log end
offset and appends (``Partition.append_built_batch``, Kafka's
coordinator-origin append). A ``durable`` writer's write holds once an
fsync covers it, through the broker's group commit as acks=all produce
requests (for groups: ``offsets.commit.required.acks`` -1, Kafka's default,
and ``acks.all.fsync``); otherwise once appended. The callback gets NONE, or
the error Kafka's coordinator would see: the append's, or REQUEST_TIMED_OUT
after the write's timeout, or KAFKA_STORAGE_ERROR when the fsync failed.
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
    """Writes to the partitions of ``topic``; ``timeout_ms`` is a write's wait
    for its fsync unless the write names its own."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        durability: Durability,
        time_ms: Callable[[], int],
        *,
        topic: str,
        durable: bool,
        timeout_ms: int,
    ) -> None:
        self._rm = replica_manager
        self._durability = durability
        self._time_ms = time_ms
        self._topic = topic
        self._durable = durable
        self._timeout_ms = timeout_ms
        #: writes waiting for their fsync round; set while ``drain`` waits for them
        self._waiting = 0
        self._drained: asyncio.Future[None] | None = None
        #: batches appended (tests and the benchmark read it)
        self.appends = 0

    def max_batch_bytes(self, partition_index: int) -> int:
        """The largest batch the partition takes (its ``max.message.bytes``)."""
        partition = self._rm.get_partition(self._topic, partition_index)
        return 2**31 - 1 if partition is None else int(partition.log.config.max_message_bytes)

    def write(
        self,
        partition_index: int,
        records: Sequence[Record],
        on_done: OnWritten | None,
        *,
        timeout_ms: int | None = None,
    ) -> None:
        done = on_done or _ignore
        partition = self._rm.get_partition(self._topic, partition_index)
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
        if not self._durable:
            done(ErrorCode.NONE)
            return
        wait_ms = self._timeout_ms if timeout_ms is None else timeout_ms
        # answered from the round's callback, as acks=all produce requests: no task
        if not self._durability.when_flushed(
            [(partition.log, last_offset + 1)],
            wait_ms / 1000,
            functools.partial(self._flushed, done),
        ):
            done(ErrorCode.NONE)  # durable already
            return
        self._waiting += 1

    def _flushed(self, done: OnWritten, outcome: bool | BaseException) -> None:
        self._waiting -= 1
        if isinstance(outcome, OSError):
            log.error("fsync of %s failed: %s", self._topic, outcome)
            code = ErrorCode.KAFKA_STORAGE_ERROR
        elif isinstance(outcome, BaseException):
            log.error("waiting for %s to be durable failed", self._topic, exc_info=outcome)
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


def group_record_writer(
    replica_manager: ReplicaManager,
    durability: Durability,
    config: GroupConfig,
    time_ms: Callable[[], int],
) -> RecordWriter:
    """The group coordinator's writer to ``__consumer_offsets``."""
    return RecordWriter(
        replica_manager,
        durability,
        time_ms,
        topic=GROUP_METADATA_TOPIC_NAME,
        durable=config.offset_commit_required_acks == -1 and config.durable_fsync,
        timeout_ms=config.offset_commit_timeout_ms,
    )


def _ignore(_: ErrorCode) -> None:
    return None
