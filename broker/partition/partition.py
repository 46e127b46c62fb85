"""One partition led by this broker: validate, then append (``Partition.appendRecordsToLeader``).

The produce path of one partition of one request, reference §4.4::

    validate_records(records, topic config, next offset = LEO, now)   # validator
      -> log.prepare_append(validated)     # leader epochs, segment.bytes check, maybe_roll
      -> check_producer_batches(...)       # §4.6: duplicate / epoch / sequence
      -> log.commit_append(pending)        # bytes to the active segment, LEO, producer state

Nothing in between awaits or yields to the event loop, so offsets are
assigned exactly once and in the order requests arrived: the next offset
the validator is given is the LEO the log commits at.

This broker is the only replica: the partition leader epoch is fixed (0,
what a KRaft cluster gives a new partition) and the high watermark is the
log end offset.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import NamedTuple, cast

from broker.log.unified_log import UnifiedLog
from broker.partition.producer_append import check_producer_batches
from broker.records.stats import EMPTY_STATS
from broker.validator import MetricsRecorder, RecordValidationStats, validate_records

#: the leader epoch of every partition (one broker, never re-elected)
LEADER_EPOCH = 0


class AppendOutcome(NamedTuple):
    """What the produce response and the meters need from one partition append."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    #: last - first + 1, also for duplicates (MessagesInPerSec)
    num_records: int
    stats: RecordValidationStats
    duplicate: bool = False


class Partition:
    """One partition: its log and the append path (see the module docstring).

    Used from one thread at a time (the event loop thread), like its log.
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        log: UnifiedLog,
        *,
        recorder: MetricsRecorder,
        time_ms: Callable[[], int],
        max_decompressed_bytes: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.log = log
        self.leader_epoch = LEADER_EPOCH
        self._recorder = recorder
        self._time_ms = time_ms
        self._max_decompressed_bytes = max_decompressed_bytes
        self._name = f"{topic}-{partition}"
        #: one-shot callbacks run after the next successful append (long-poll fetches)
        self._append_listeners: list[Callable[[], None]] = []
        # Partition.makeLeader: a new leader's epoch starts at its log end offset
        # (UnifiedLog.maybeAssignEpochStartOffset), so OffsetForLeaderEpoch and
        # ListOffsets know epoch 0 before the first append, as on Kafka. A cache
        # that already holds this epoch (or a later one) is left as it is.
        cache = log.leader_epoch_cache
        latest = cache.latest_epoch
        if latest is None or latest < LEADER_EPOCH:
            cache.assign(LEADER_EPOCH, log.log_end_offset)

    def __repr__(self) -> str:
        return f"Partition({self._name})"

    # ---- watchers -----------------------------------------------------------------------------

    def add_append_listener(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once, after the next append that adds records
        (Kafka's delayed-fetch purgatory is keyed the same way)."""
        self._append_listeners.append(callback)

    def remove_append_listener(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):  # already fired
            self._append_listeners.remove(callback)

    def _notify_appended(self) -> None:
        listeners, self._append_listeners = self._append_listeners, []
        for callback in listeners:
            callback()

    # ---- append -----------------------------------------------------------------------------

    def append_records_as_leader(self, records: memoryview, produce_version: int) -> AppendOutcome:
        """Validate and append ``records`` (a writable view into the request).

        Raises the ``broker.errors`` exception of the first failing step.
        """
        log = self.log
        result = validate_records(
            records,
            topic=self.topic,
            partition=self.partition,
            config=log.config,
            next_offset=log.log_end_offset,
            partition_leader_epoch=self.leader_epoch,
            now_ms=self._time_ms(),
            produce_version=produce_version,
            recorder=self._recorder,
            max_decompressed_bytes=self._max_decompressed_bytes,
        )
        if result.valid_bytes == 0:
            # nothing but a partial batch: Kafka appends nothing and answers with
            # LogAppendInfo.UNKNOWN_LOG_APPEND_INFO (offsets -1, error NONE)
            return AppendOutcome(-1, -1, -1, log.log_start_offset, 0, EMPTY_STATS)
        # a memoryview of the request (in place) or new bytes (rebuilt)
        validated = cast("memoryview | bytes", result.validated_records)
        if not any(b.producer_id != -1 for b in result.batches):
            appended = log.append(validated)
        else:
            pending = log.prepare_append(validated)
            duplicate = check_producer_batches(log.producer_state, pending.batches, self._name)
            if duplicate is not None:
                return AppendOutcome(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    duplicate.max_timestamp,
                    log.log_start_offset,
                    duplicate.last_offset - duplicate.first_offset + 1,
                    result.stats,
                    duplicate=True,
                )
            appended = log.commit_append(pending)
        if self._append_listeners:
            self._notify_appended()
        return AppendOutcome(
            appended.first_offset,
            appended.last_offset,
            result.log_append_time_ms,
            appended.log_start_offset,
            appended.last_offset - appended.first_offset + 1,
            result.stats,
        )
