"""One partition led by this broker: validate, then append (``Partition.appendRecordsToLeader``).

A produce request's partition first passes the partition's own checks
(:meth:`Partition.check_produce`: an internal topic, ``ProduceRequest.validateRecords``;
:meth:`Partition.check_min_isr` for acks=-1), then appends.

The produce path of one partition of one request, in ``UnifiedLog.append``'s order::

    validate_records(records, topic config, next offset = LEO, now)   # validator
      -> log.prepare_append(validated, batches)  # leader epochs, segment.bytes check, maybe_roll
      -> check_producer_batches(...)             # ProducerAppendInfo: duplicate / epoch / sequence
      -> log.commit_append(pending)              # bytes to the active segment, LEO, producer state

Nothing in between awaits or yields to the event loop, so offsets are
assigned exactly once and in the order requests arrived: the next offset
the validator is given is the LEO the log commits at.

Appends that do not run inline (:meth:`Partition.append`): a validation that
would cost more than its inline budget (``validator/inline.py``: a batch that
inflates to megabytes, a recompression) or that the request's handler defers
(its time on the loop is used up) runs on a worker thread instead. Such an
append is queued on the partition: it starts when every append queued before
it has finished, reads the LEO then, validates on the worker (the log is not
touched there: the validator works on the request's bytes only) and appends
back on the event loop. While anything is queued, later appends to the
partition queue behind it, also ones that would fit inline, so the order of
appends per partition stays the order in which requests arrived::

    inline:  [validate -> append]                          one loop step
    queued:  wait for the partition's previous queued append
             -> validate on a worker thread (loop serves others)
             -> append on the loop                         one loop step

This broker is the only replica: the partition leader epoch is fixed (0,
what a KRaft cluster gives a new partition) and the high watermark is the
log end offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, TypeVar, cast

from broker.config import TopicConfig
from broker.errors import (
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    NotEnoughReplicasError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
)
from broker.log.unified_log import UnifiedLog
from broker.partition.internal_topics import is_internal_topic
from broker.partition.producer_append import check_producer_batches
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.records.stats import EMPTY_STATS
from broker.validator import (
    BatchInfo,
    DeferredRecorder,
    MetricsRecorder,
    OffloadRequired,
    RecordValidationStats,
    ValidationResult,
    validate_records,
)
from broker.validator.analysis import check_request_records

#: the leader epoch of every partition (one broker, never re-elected)
LEADER_EPOCH = 0

T = TypeVar("T")
#: runs a function on a worker thread; the app passes ``loop.run_in_executor``
#: with its validation pool
Offload = Callable[[Callable[[], T]], Awaitable[T]]
#: what an offloaded validation returns: its result, or the client's error
OffloadResult = ValidationResult | KafkaError


async def run_here(fn: Callable[[], T]) -> T:
    """An :data:`Offload` that runs ``fn`` on the event loop itself (tools, tests)."""
    return fn()


def _without_traceback(
    validation: Callable[[], ValidationResult],
) -> ValidationResult | KafkaError:
    """Run ``validation``; a client's error comes back as a value, without its
    traceback. The traceback's frames hold what the validator was working on
    (up to a 64 MiB decompression and its rewrite), and an exception that
    crossed threads sits in a reference cycle of the executor's futures until
    the cyclic GC runs, which a broker allocating few objects does rarely: a
    run of decompression bombs kept a large amount of memory alive before this
    (docs/performance.md). (A bug's exception keeps its traceback for the log.)"""
    try:
        return validation()
    except KafkaError as exc:
        exc.__traceback__ = None
        return exc


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
        offload: Offload[OffloadResult] = run_here,
        inline_budget: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.log = log
        self.leader_epoch = LEADER_EPOCH
        #: a topic clients may not produce to (``Topic.isInternal``)
        self.internal = is_internal_topic(topic)
        self._recorder = recorder
        self._time_ms = time_ms
        self._max_decompressed_bytes = max_decompressed_bytes
        self._offload = offload
        self._inline_budget = inline_budget
        #: the last queued append (None: nothing queued, appends may run inline)
        self._queue_tail: asyncio.Future[AppendOutcome] | None = None
        #: set when the partition's topic is deleted (queued appends then fail)
        self.removed = False
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

    # ---- produce: the request's checks --------------------------------------------------------

    def check_produce(self, records: memoryview | None, produce_version: int) -> memoryview:
        """The checks a produce request's partition passes before it counts in
        TotalProduceRequests, in Kafka's order: an internal topic is refused
        (``ReplicaManager.appendToLocalLog`` with ``internalTopicsAllowed =
        false``), then ``ProduceRequest.validateRecords`` (magic 2 and one batch
        for v3+, zstd only from v7). Returns the records; raises the
        ``broker.errors`` exception the partition is answered with."""
        if self.internal:
            raise InvalidTopicError(f"Cannot append to internal topic {self.topic}")
        if records is None:
            raise InvalidRecordError("records must not be null")
        check_request_records(records, produce_version)
        return records

    def check_min_isr(self, node_id: int) -> None:
        """``Partition.appendRecordsToLeader`` with acks=-1: the ISR (this broker,
        ``node_id``, alone) must hold min.insync.replicas, else NOT_ENOUGH_REPLICAS."""
        min_isr = self.log.config.min_insync_replicas
        if min_isr > 1:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {{{node_id}}} is insufficient to satisfy the "
                f"min.isr requirement of {min_isr} for partition {self._name}"
            )

    # ---- append -----------------------------------------------------------------------------

    def append_records_as_leader(self, records: memoryview, produce_version: int) -> AppendOutcome:
        """Validate and append ``records`` (a writable view into the request)
        on the caller's thread, whatever it costs (tools and tests; the
        produce handler uses :meth:`append`).

        Raises the ``broker.errors`` exception of the first failing step.
        """
        validation = self._validation(records, produce_version, None, None, request_checked=False)
        return self._append_validated(validation())

    def append_built_batch(self, records: Sequence[SimpleRecord]) -> int:
        """Append one uncompressed v2 batch of ``records`` that this broker builds
        itself (a coordinator's state, Kafka's ``AppendOrigin.COORDINATOR``):
        its offsets start at the LEO and it carries the leader epoch, so it is
        written as built, without the validator's pass over bytes it made.
        Returns the batch's last offset (event loop only; nothing may be queued)."""
        if self._queue_tail is not None:
            raise RuntimeError(f"{self._name} has a queued append")
        self._check_not_removed()
        log = self.log
        built = build_v2_batch(
            records,
            base_offset=log.log_end_offset,
            partition_leader_epoch=self.leader_epoch,
        )
        limit = log.config.max_message_bytes
        if len(built.buffer) > limit:
            # the validator's check (LogValidator / UnifiedLog.analyzeAndValidateRecords)
            raise RecordTooLargeError(
                f"The batch of {len(built.buffer)} bytes for {self._name} is larger than "
                f"max.message.bytes ({limit})"
            )
        appended = log.append(built.buffer)
        if self._append_listeners:
            self._notify_appended()
        return appended.last_offset

    def append(
        self, records: memoryview, produce_version: int, *, inline: bool = True
    ) -> AppendOutcome | asyncio.Future[AppendOutcome]:
        """Validate and append ``records``: at once when nothing is queued on
        the partition, ``inline`` is true and the validation fits the inline
        budget; else queued (see the module docstring), and the future's
        result (or exception) is the append's. The caller (the produce
        handler) made the request-level checks of ``ProduceRequest``. Raises or fails with the
        ``broker.errors`` exception of the first failing step.

        ``inline`` false (the request used up its time on the loop): the
        validation runs on a worker thread whatever it costs."""
        previous = self._queue_tail
        if previous is not None and previous.done():
            previous = None  # ended; its done callback has not run yet
        if inline and previous is None:
            done = self._append_within_budget(records, produce_version)
            if done is not None:
                return done
        queued = asyncio.ensure_future(
            self._append_queued(records, produce_version, previous, worker_only=not inline)
        )
        self._queue_tail = queued
        queued.add_done_callback(self._queued_done)
        return queued

    @property
    def queued_append(self) -> asyncio.Future[AppendOutcome] | None:
        """The last append queued on the partition, None when nothing is queued."""
        return self._queue_tail

    def _queued_done(self, queued: asyncio.Future[AppendOutcome]) -> None:
        if self._queue_tail is queued:
            self._queue_tail = None
        if not queued.cancelled():
            queued.exception()  # the handler reports it; never "exception never retrieved"

    async def _append_queued(
        self,
        records: memoryview,
        produce_version: int,
        previous: asyncio.Future[AppendOutcome] | None,
        *,
        worker_only: bool,
    ) -> AppendOutcome:
        if previous is not None:
            # its outcome is its own request's; only its end matters here
            await asyncio.wait((previous,))
        self._check_not_removed()
        if not worker_only:
            # queued only to keep the order: a cheap one is validated here, so a
            # partition under steady load does not send every append through
            # the worker pool while its queue never quite drains
            done = self._append_within_budget(records, produce_version)
            if done is not None:
                return done
        deferred = DeferredRecorder()
        try:
            result = await self._offload(
                functools.partial(
                    _without_traceback, self._validation(records, produce_version, deferred, None)
                )
            )
        finally:
            deferred.replay(self._recorder)
        if isinstance(result, KafkaError):
            raise result
        self._check_not_removed()
        return self._append_validated(result)

    def _check_not_removed(self) -> None:
        if self.removed:
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition: {self._name}"
            )

    def _append_within_budget(
        self, records: memoryview, produce_version: int
    ) -> AppendOutcome | None:
        """Validate on the event loop within the inline budget and append; None
        (nothing changed) when the validation would cost more."""
        log = self.log
        try:
            # what self._validation(...)() calls, without the partial (the hot path)
            result = self._validate(
                records, produce_version=produce_version, config=log.config,
                next_offset=log.log_end_offset, now_ms=self._time_ms(), recorder=self._recorder,
                inline_budget=self._inline_budget, request_checked=True,
            )  # fmt: skip
        except OffloadRequired:
            return None
        return self._append_validated(result)

    def _validation(
        self,
        records: memoryview,
        produce_version: int,
        recorder: MetricsRecorder | None,
        inline_budget: int | None,
        *,
        request_checked: bool = True,
    ) -> Callable[[], ValidationResult]:
        """The validator call with the partition's settings, read now on the
        event loop (the call itself may run on a worker thread): the next
        offset is the LEO now, and nothing may append to the log until this
        call's result is appended."""
        log = self.log
        return functools.partial(
            self._validate, records, produce_version=produce_version, config=log.config,
            next_offset=log.log_end_offset, now_ms=self._time_ms(),
            recorder=self._recorder if recorder is None else recorder,
            inline_budget=inline_budget, request_checked=request_checked,
        )  # fmt: skip

    def _validate(
        self,
        records: memoryview,
        *,
        produce_version: int,
        config: TopicConfig,
        next_offset: int,
        now_ms: int,
        recorder: MetricsRecorder,
        inline_budget: int | None,
        request_checked: bool,
    ) -> ValidationResult:
        """``validate_records`` with this partition's fixed settings."""
        return validate_records(
            records,
            topic=self.topic,
            partition=self.partition,
            config=config,
            next_offset=next_offset,
            partition_leader_epoch=self.leader_epoch,
            now_ms=now_ms,
            produce_version=produce_version,
            recorder=recorder,
            max_decompressed_bytes=self._max_decompressed_bytes,
            inline_budget=inline_budget,
            request_checked=request_checked,
        )

    def _append_validated(self, result: ValidationResult) -> AppendOutcome:
        """The log side of an append (event loop only)."""
        log = self.log
        if result.valid_bytes == 0:
            # nothing but a partial batch: Kafka appends nothing and answers with
            # LogAppendInfo.UNKNOWN_LOG_APPEND_INFO (offsets -1, error NONE)
            return AppendOutcome(-1, -1, -1, log.log_start_offset, 0, EMPTY_STATS)
        # a memoryview of the request (in place) or new bytes (rebuilt)
        validated = cast("memoryview | bytes", result.validated_records)
        if not _any_producer_id(result.batches):
            appended = log.append(validated, result.batches)
        else:
            pending = log.prepare_append(validated, result.batches)
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


def _any_producer_id(batches: Sequence[BatchInfo]) -> bool:
    """A batch of the validated records carries a producer id (idempotent).
    A loop, not ``any()`` over a generator: this runs for every produce."""
    for batch in batches:  # noqa: SIM110
        if batch.producer_id != -1:
            return True
    return False
