"""The log of one partition: what the partition layer appends to and reads from
(``UnifiedLog.scala`` without replication or tiered storage).

Append order (the second half of ``UnifiedLog.append``, from the leader-epoch
cache to the segment append), split in two so the partition layer can run
the producer-state checks where Kafka runs them:

* :meth:`UnifiedLog.prepare_append` -- the facts of every batch (the
  validator's ``BatchInfo`` list, or read from the headers when not given); leader
  epoch cache assigned for each v2 batch (a v0/v1 batch clears it); the
  whole append larger than ``segment.bytes`` -> RecordBatchTooLargeError;
  then ``maybe_roll`` (so a request later refused for its sequence numbers,
  or answered as a duplicate, may still have rolled a segment, as in Kafka);
* the caller checks epochs and sequences against :attr:`producer_state`
  (``last_entry(pid)``, ``entry.find_duplicate_batch(...)``) and either stops
  (error or duplicate) or goes on with
* :meth:`UnifiedLog.commit_append` -- bytes to the active segment, LEO
  advanced, producer state updated for every batch with a producer id,
  producer-state end offset moved, flush when ``flush.messages`` is reached.

:meth:`append` does both for callers without producer checks.

Transactions (``UnifiedLog.append``'s completed transactions,
``lastStableOffset``, ``collectAbortedTransactions``): an end-transaction
marker (a COMMIT/ABORT control batch) appended by the coordinator through
:meth:`UnifiedLog.append_end_txn_marker` is checked against the producer
state first (producer epoch, coordinator epoch; ``AppendOrigin.COORDINATOR``),
then written like any batch; :meth:`UnifiedLog.commit_append` ends the
producer's transaction: for each completed transaction, in log order, the
last stable offset after it, an ABORT's entry in the active segment's
``.txnindex`` (``LogSegment.updateTxnIndex``; COMMITs are not indexed),
then ``complete_txn``. The first unstable offset is the oldest ongoing
transaction's first offset, never below the log start offset; the last
stable offset is it, else the high watermark (the LEO on one broker). A
control batch reaching :meth:`commit_append` by another way (a caller's
bytes) is applied unchecked, as a follower's append is. Batches without a
producer id never reach this code (the append owner's one-call path).

Threading: see ``local_log.py``. One thread at a time uses a partition's
log; :meth:`flush` may run concurrently from a flusher thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.errors import (
    CorruptRecordError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnknownServerError,
)
from broker.log import files
from broker.log.checkpoints import PartitionMetadataFile
from broker.log.file_records import TimestampAndOffset
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.local_log import FlushRecorder, LocalLog
from broker.log.producer_state import ProducerStateManager
from broker.log.producer_tail import NOTHING_READ
from broker.log.record_times import offset_of_max_timestamp, parse_end_txn_marker
from broker.log.recovery import load_log, rebuild_producer_state
from broker.log.recovery_report import RecoveryRecorder
from broker.log.results import LogAppendResult
from broker.log.segment import FetchDataInfo, LogOffsetMetadata, LogSegment, TimeMs, wall_clock_ms
from broker.log.transaction_index import AbortedTxn, CompletedTxn
from broker.records.batch import (
    CONTROL_FLAG_MASK,
    MAGIC_V2,
    NO_TIMESTAMP,
    TRANSACTIONAL_FLAG_MASK,
)
from broker.records.batch_info import BatchInfo, parse_batch_infos
from broker.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    end_txn_marker_batch,
)
from broker.records.origin import AppendOrigin

if TYPE_CHECKING:
    from broker.config import TopicConfig

INT_MAX = 2**31 - 1

#: ListOffsets special timestamps (``ListOffsetsRequest``)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


class PendingAppend(NamedTuple):
    """An append that passed the size check and the roll, waiting for commit."""

    records: memoryview
    batches: Sequence[BatchInfo]
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    segment_base_offset: int
    position: int  # where the bytes will start in the active segment


class UnifiedLog:
    """The log of one partition (see the module docstring)."""

    __slots__ = (
        "_append_batch",
        "_appender",
        "_local",
        "_pending_roll_flush",
        "_time_ms",
        "leader_epoch_cache",
        "producer_state",
        "recovered_segments",
        "tail_scan",
        "topic_id",
        "truncated_bytes",
    )

    def __init__(
        self,
        local: LocalLog,
        *,
        log_start_offset: int,
        producer_state: ProducerStateManager,
        leader_epoch_cache: LeaderEpochCache,
        time_ms: TimeMs,
        topic_id: bytes | None = None,
    ) -> None:
        self._local = local
        #: the append owner of the active segment (held by the local log)
        self._appender = local.appender
        self._appender.bind(producer_state, leader_epoch_cache, time_ms)
        self._append_batch = self._appender.append_batch
        self.log_start_offset = log_start_offset
        self.producer_state = producer_state
        self.leader_epoch_cache = leader_epoch_cache
        self._time_ms = time_ms
        self._pending_roll_flush = 0
        self.topic_id = topic_id
        #: what opening found (set by ``open`` after recovery)
        self.recovered_segments = 0
        self.truncated_bytes = 0
        #: what reading back the producers' last batches at open read (producer_tail.py)
        self.tail_scan = NOTHING_READ

    @classmethod
    def open(
        cls,
        directory: Path,
        config: TopicConfig,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = False,
        time_ms: TimeMs = wall_clock_ms,
        producer_id_expiration_ms: int = 86_400_000,
        flush_recorder: FlushRecorder | None = None,
        topic_id: bytes | None = None,
        delete_scheduler: Callable[[int, list[LogSegment]], None] | None = None,
        recovery_recorder: RecoveryRecorder | None = None,
    ) -> UnifiedLog:
        """Create or load the log in ``directory`` (``<topic>-<partition>``);
        what recovery cuts goes to ``recovery_recorder`` (and the log)."""
        directory.mkdir(parents=True, exist_ok=True)
        loaded = load_log(
            directory,
            config,
            log_start_offset_checkpoint=log_start_offset,
            recovery_point_checkpoint=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            time_ms=time_ms,
            producer_id_expiration_ms=producer_id_expiration_ms,
            recovery_recorder=recovery_recorder,
        )
        local = LocalLog(
            directory,
            config,
            loaded.segments,
            recovery_point=loaded.recovery_point,
            next_offset=loaded.next_offset,
            time_ms=time_ms,
            flush_recorder=flush_recorder,
            delete_scheduler=delete_scheduler,
        )
        metadata = PartitionMetadataFile(directory)
        if metadata.exists():
            stored = metadata.read()
            if topic_id is not None and stored != topic_id:
                raise UnknownServerError(
                    f"Topic id of {directory} is {stored.hex()}, expected {topic_id.hex()}"
                )
            topic_id = stored
        elif topic_id is not None:
            metadata.write(topic_id)
        log = cls(
            local,
            log_start_offset=loaded.log_start_offset,
            producer_state=loaded.producer_state,
            leader_epoch_cache=loaded.leader_epoch_cache,
            time_ms=time_ms,
            topic_id=topic_id,
        )
        log.recovered_segments = loaded.recovered_segments
        log.truncated_bytes = loaded.truncated_bytes
        log.tail_scan = loaded.tail_scan
        return log

    # ---- properties -------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset a read may ask for (held by the append owner: every
        append's result carries it)."""
        return self._appender.log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        self._appender.log_start_offset = offset

    @property
    def local_log(self) -> LocalLog:
        return self._local

    @property
    def dir(self) -> Path:
        return self._local.directory

    @property
    def topic_partition(self) -> files.TopicPartition:
        return self._local.topic_partition

    @property
    def config(self) -> TopicConfig:
        return self._local.config

    @config.setter
    def config(self, config: TopicConfig) -> None:
        """A new topic config takes effect from the next append (AlterConfigs)."""
        self._local.config = config

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._local.log_end_offset_metadata

    @property
    def high_watermark(self) -> int:
        """One replica: every appended offset is committed."""
        return self._local.log_end_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """``UnifiedLog.firstUnstableOffset``: the first offset of the oldest
        ongoing transaction, never below the log start offset; None when no
        transaction is open."""
        first = self.producer_state.first_undecided_offset()
        if first is None:
            return None
        start = self.log_start_offset
        return first if first >= start else start

    @property
    def last_stable_offset(self) -> int:
        """``UnifiedLog.lastStableOffset``: every offset below it is decided
        (the first unstable offset, else the high watermark)."""
        return self.high_watermark_and_last_stable_offset()[1]

    def high_watermark_and_last_stable_offset(self) -> tuple[int, int]:
        """Both, in one call: what Fetch answers each partition with (and reads
        up to). Without an open transaction (the common case) the last stable
        offset is the high watermark, known from one call."""
        high_watermark = self._local.log_end_offset
        if self.producer_state.first_undecided_offset() is None:
            return high_watermark, high_watermark
        first = self.first_unstable_offset
        assert first is not None
        return high_watermark, min(first, high_watermark)

    @property
    def last_stable_offset_lag(self) -> int:
        """``UnifiedLog.lastStableOffsetLag``."""
        return self.high_watermark - self.last_stable_offset

    def fetch_last_stable_offset_metadata(self) -> LogOffsetMetadata:
        """``UnifiedLog.fetchLastStableOffsetMetadata``: the last stable offset
        with its segment and position (what a READ_COMMITTED read is bounded
        by); the oldest transaction's position when the append knew it, else
        looked up."""
        first = self.first_unstable_offset
        if first is None or first >= self.high_watermark:
            return self._local.log_end_offset_metadata
        for txn in self.producer_state.ongoing_txns.values():
            metadata = txn.first_offset
            if metadata.message_offset == first and not metadata.message_offset_only:
                return metadata
            break
        return self._local.offset_metadata(first)

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """``UnifiedLog.collectAbortedTransactions``: the aborted transactions
        of the segments from the one holding ``start_offset`` that end at or
        after the log start offset and begin below ``upper_bound_offset``
        (Kafka filters with the log start offset, not ``start_offset``)."""
        return self._local.collect_aborted_transactions(
            self.log_start_offset, start_offset, upper_bound_offset
        )

    def fetch_aborted_transactions(self, fetch_offset: int) -> list[AbortedTxn]:
        """The aborted transactions a READ_COMMITTED fetch from ``fetch_offset``
        returns (``LocalLog.addAbortedTransactions``): those ending at or after
        ``fetch_offset`` (a consumer would otherwise drop a later, committed
        transaction of the same producer) and beginning below the end of the
        segment the read starts in (the next segment's base offset, or the log
        end offset), Kafka's upper bound when the offset index gives none tighter."""
        local = self._local
        segments = local.segments
        following = segments.higher_segment(fetch_offset)
        upper = following.base_offset if following is not None else local.log_end_offset
        return local.collect_aborted_transactions(fetch_offset, fetch_offset, upper)

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def last_flush_time(self) -> int:
        return self._local.last_flush_time

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._local.segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._local.segments.active_segment

    def log_segments(self, start: int, end: int) -> list[LogSegment]:
        """Segments that may hold offsets in [start, end) (``logSegments(from, to)``)."""
        return self._local.segments.values(start, end)

    def non_active_log_segments_from(self, start: int) -> list[LogSegment]:
        """Sealed segments from the one holding ``start`` (``nonActiveLogSegmentsFrom``)."""
        active = self._local.segments.active_segment
        if start > active.base_offset:
            return []
        return self._local.segments.values(start, active.base_offset)

    @property
    def number_of_segments(self) -> int:
        return len(self._local.segments)

    @property
    def size(self) -> int:
        """Bytes of all segments (Kafka's ``Size`` gauge)."""
        return self._local.segments.size_in_bytes()

    @property
    def pending_roll_flush_offset(self) -> int:
        """Offset below which a roll asked for a flush not yet done (0: none)."""
        return self._pending_roll_flush if self._pending_roll_flush > self.recovery_point else 0

    # ---- append -------------------------------------------------------------------------------

    def prepare_append(
        self,
        records: memoryview | bytes | bytearray,
        batches: Sequence[BatchInfo] | None = None,
    ) -> PendingAppend:
        """Steps 6-8 of ``UnifiedLog.append`` for validated ``records``.

        ``batches`` are the records' batch facts as the validator returned them
        (``ValidationResult.batches``); without them the headers are read here.
        """
        local = self._local
        local.check_open()
        view = records if isinstance(records, memoryview) else memoryview(records)
        if batches is None:
            batches = parse_batch_infos(view)
        if not batches:
            raise CorruptRecordError("no batch to append")
        first_offset = local.log_end_offset
        first = batches[0]
        if (
            first.base_offset if first.base_offset is not None else first.last_offset
        ) < first_offset:
            raise UnknownServerError(
                f"Unexpected offset in append to {self.topic_partition}: first offset "
                f"{first.base_offset} is less than the next offset {first_offset}"
            )
        cache = self.leader_epoch_cache
        max_ts = NO_TIMESTAMP
        shallow = -1
        for batch in batches:
            if batch.magic >= MAGIC_V2:
                # UnifiedLog.maybeAssignEpochStartOffset; Kafka's assign throws for a
                # negative epoch, we skip it (no leader epoch known)
                if batch.partition_leader_epoch >= 0:
                    cache.assign(batch.partition_leader_epoch, batch.base_offset or 0)
            elif cache.non_empty:
                # a message-format regression clears the cache (UnifiedLog.append)
                cache.clear_and_flush()
            if batch.max_timestamp > max_ts:
                max_ts = batch.max_timestamp
                shallow = batch.last_offset
        last_offset = batches[-1].last_offset
        if shallow < 0:
            shallow = last_offset
        size = view.nbytes
        config = local.config
        if size > config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {size} bytes in append to partition "
                f"{self.topic_partition}, which exceeds the maximum configured segment size of "
                f"{config.segment_bytes}."
            )
        appender = self._appender
        if appender.should_roll(
            max_segment_ms=appender.max_segment_ms,
            max_segment_bytes=config.segment_bytes,
            max_timestamp_in_messages=max_ts,
            max_offset_in_messages=last_offset,
            messages_size=size,
            time_ms=self._time_ms,
        ):
            # UnifiedLog.maybeRoll: the first offset when the batch header has it (v2),
            # else last offset - Int.MAX (a lower bound for v0/v1 wrappers); the roll
            # itself never goes below the LEO
            roll_offset = first.base_offset if first.magic >= MAGIC_V2 else last_offset - INT_MAX
            self.roll(roll_offset)
        segment = local.segments.active()
        return PendingAppend(
            view,
            batches,
            first_offset,
            last_offset,
            max_ts,
            shallow,
            segment.base_offset,
            segment.size,
        )

    def commit_append(self, pending: PendingAppend) -> LogAppendResult:
        """Step 10: write the bytes, advance the LEO, update producer state."""
        local = self._local
        local.check_open()
        if pending.first_offset != local.log_end_offset:
            raise UnknownServerError(
                f"append prepared at offset {pending.first_offset} but the log end offset is "
                f"{local.log_end_offset}"
            )
        # LocalLog.append: the segment append and the LEO, by the append owner
        self._appender.append(
            pending.last_offset,
            pending.max_timestamp,
            pending.shallow_offset_of_max_timestamp,
            pending.records,
        )
        state = self.producer_state
        completed_txns: list[CompletedTxn] | None = None
        for batch in pending.batches:
            if batch.producer_id != -1 and batch.base_offset is not None:
                attributes = batch.attributes
                if attributes & CONTROL_FLAG_MASK:
                    completed = self._apply_control_batch(pending.records, batch)
                    if completed is not None:
                        if completed_txns is None:
                            completed_txns = []
                        completed_txns.append(completed)
                    continue
                is_transactional = bool(attributes & TRANSACTIONAL_FLAG_MASK)
                state.update_data_batch(
                    batch.producer_id,
                    producer_epoch=batch.producer_epoch,
                    first_seq=batch.base_sequence,
                    last_seq=batch.last_sequence,
                    first_offset=batch.base_offset,
                    last_offset=batch.last_offset,
                    max_timestamp=batch.max_timestamp,
                    is_transactional=is_transactional,
                    first_offset_metadata=LogOffsetMetadata(
                        batch.base_offset,
                        pending.segment_base_offset,
                        pending.position + batch.position,
                    )
                    if is_transactional
                    else None,
                )
        state.update_map_end_offset(pending.last_offset + 1)
        if completed_txns is not None:
            self._complete_txns(completed_txns)
        if self._appender.flush_due():
            self.flush()
        return LogAppendResult(
            pending.first_offset,
            pending.last_offset,
            pending.max_timestamp,
            pending.shallow_offset_of_max_timestamp,
            self.log_start_offset,
        )

    def _apply_control_batch(self, records: memoryview, batch: BatchInfo) -> CompletedTxn | None:
        """``ProducerAppendInfo.append`` of a control batch (origin REPLICATION:
        :meth:`append_end_txn_marker` checked it before the write): its marker
        ends the producer's transaction; an empty control batch (what the
        cleaner leaves of a marker) ends nothing."""
        start = batch.position
        marker = parse_end_txn_marker(bytes(records[start : start + batch.size_in_bytes]))
        if marker is None:
            return None
        commit, coordinator_epoch, _timestamp = marker
        assert batch.base_offset is not None
        return self.producer_state.append_end_txn_marker(
            batch.producer_id,
            EndTransactionMarker(
                ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                coordinator_epoch,
            ),
            batch.producer_epoch,
            batch.base_offset,
            batch.max_timestamp,
            origin=AppendOrigin.REPLICATION,
        )

    def _complete_txns(self, completed_txns: list[CompletedTxn]) -> None:
        """``UnifiedLog.append`` after the segment append: each completed
        transaction gets the last stable offset after it, an aborted one its
        ``.txnindex`` entry in the segment its marker went to (the active
        one), then it is no longer ongoing. A failed index write leaves it
        ongoing (the last stable offset stays below it, as in Kafka)."""
        state = self.producer_state
        segment = self._local.segments.active()
        for completed in completed_txns:
            last_stable_offset = state.last_stable_offset(completed)
            segment.update_txn_index(completed, last_stable_offset)
            state.complete_txn(completed)

    def append_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTransactionMarker,
        *,
        leader_epoch: int,
        timestamp: int | None = None,
        origin: AppendOrigin = AppendOrigin.COORDINATOR,
    ) -> LogAppendResult:
        """Append the end-transaction ``marker`` of ``producer_id`` at the LEO
        (``UnifiedLog.appendAsLeader`` of ``MemoryRecords.withEndTransactionMarker``,
        what the coordinator's WriteTxnMarkers makes the partition do).
        Checked before anything is written: an older producer epoch is
        InvalidProducerEpochError, an older coordinator epoch
        TransactionCoordinatorFencedError. ``timestamp`` defaults to the log's clock."""
        offset = self._local.log_end_offset
        self.producer_state.check_end_txn_marker(
            producer_id, marker, producer_epoch, offset, origin=origin
        )
        records = end_txn_marker_batch(
            marker,
            base_offset=offset,
            timestamp=self._time_ms() if timestamp is None else timestamp,
            partition_leader_epoch=leader_epoch,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        return self.commit_append(self.prepare_append(records))

    def append(
        self,
        records: memoryview | bytes | bytearray,
        batches: Sequence[BatchInfo] | None = None,
    ) -> LogAppendResult:
        """prepare + commit, for callers without producer-state checks
        (``batches`` as for :meth:`prepare_append`).

        The common case -- one v2 batch starting at the LEO, no producer id,
        no roll -- is taken by the append owner in one call
        (``ActiveSegment.append_batch``, compiled in its twin), through the
        same roll check and segment append as the two steps; everything else
        goes through the two steps.
        """
        result = self._append_batch(self, records)
        if result is not None:
            return result
        return self.commit_append(self.prepare_append(records, batches))

    # ---- roll and flush -------------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """New active segment; a producer snapshot at its base offset (not
        fsynced: the next flush does that, with the segments below it)."""
        segment = self._local.roll(expected_next_offset)
        self.producer_state.update_map_end_offset(segment.base_offset)
        snapshot = self.producer_state.take_snapshot(sync=False)
        if snapshot is not None:
            self._local.add_unsynced_snapshot(snapshot)
        self._pending_roll_flush = max(self._pending_roll_flush, segment.base_offset)
        return segment

    def flush(self, offset: int | None = None, *, include_empty_active: bool = False) -> bool:
        """Make every offset < ``offset`` (default: the LEO) durable and move the
        recovery point. Thread-safe against the owner thread (``local_log.py``):
        the server runs it in a worker thread for acks=all; concurrent calls
        share fsyncs. Returns True when it fsynced."""
        target = self._local.log_end_offset if offset is None else offset
        return self._local.flush(target, include_empty_active=include_empty_active)

    def start_writeback(self) -> bool:
        """Start write-out of what was appended, without waiting: an fsync that
        follows (acks=all) then mostly waits for pages already on their way
        (``broker/log/writeback.py``). Owner thread only."""
        return self._local.start_writeback()

    def maybe_flush_after_roll(self) -> bool:
        """The flush Kafka schedules after a roll (everything below the new segment)."""
        pending = self.pending_roll_flush_offset
        if pending:
            return self.flush(pending)
        return False

    # ---- reads ----------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_length: int,
        min_one_message: bool = False,
        max_offset: int | None = None,
    ) -> FetchDataInfo:
        """Batches from ``start_offset`` as a file slice (``UnifiedLog.read``).

        ``max_offset`` (exclusive; e.g. the high watermark) bounds what is
        exposed; default the LEO. OffsetOutOfRangeError below the log start
        offset or past the LEO.
        """
        if start_offset < self.log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition "
                f"{self.topic_partition}, but we only have log segments starting from offset: "
                f"{self.log_start_offset}."
            )
        local = self._local
        if max_offset is None or max_offset >= local.log_end_offset:
            max_metadata = local.log_end_offset_metadata
        else:
            max_metadata = local.offset_metadata(max_offset)
        return local.read(start_offset, max_length, min_one_message, max_metadata)

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None:
        """``UnifiedLog.fetchOffsetByTimestamp`` (ListOffsets)."""
        cache = self.leader_epoch_cache
        if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            earliest = cache.earliest_entry()
            epoch = (
                earliest.epoch
                if earliest and earliest.start_offset <= self.log_start_offset
                else None
            )
            return TimestampAndOffset(NO_TIMESTAMP, self.log_start_offset, epoch)
        if target_timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self.log_end_offset, cache.latest_epoch)
        if target_timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, -1, -1)
        segments = self.segments
        if target_timestamp == MAX_TIMESTAMP:
            best = max(segments, key=lambda s: s.max_timestamp_so_far)
            max_so_far = best.read_max_timestamp_and_offset_so_far()
            position = best.offset_index.lookup(max_so_far.offset).position
            for batch in best.log.iter_batches(position):
                if batch.max_timestamp == max_so_far.timestamp:
                    offset = offset_of_max_timestamp(best.log, batch)
                    if offset is None:
                        return None
                    epoch = batch.summary.partition_leader_epoch
                    return TimestampAndOffset(
                        batch.max_timestamp, offset, epoch if epoch >= 0 else None
                    )
            return None
        for segment in segments:
            if segment.largest_timestamp() >= target_timestamp:
                return segment.find_offset_by_timestamp(target_timestamp, self.log_start_offset)
        return None

    # ---- truncation, retention, log start ----------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Keep offsets < ``target_offset``; True if anything was removed."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic_partition} to {target_offset}")
        if target_offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        first = self._local.segments.first_segment
        if first is not None and first.base_offset > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        removed = self._local.truncate_to(target_offset)
        for segment in removed:
            self.producer_state.delete_snapshot(segment.base_offset)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self.log_start_offset = min(target_offset, self.log_start_offset)
        self._rebuild_producer_state(target_offset)
        return True

    def truncate_fully_and_start_at(
        self, new_offset: int, log_start_offset: int | None = None
    ) -> None:
        self._local.truncate_fully_and_start_at(new_offset)
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = new_offset if log_start_offset is None else log_start_offset
        self._rebuild_producer_state(new_offset)

    def _rebuild_producer_state(self, last_offset: int) -> None:
        rebuild_producer_state(
            self.producer_state,
            self._local.segments,
            log_start_offset=self.log_start_offset,
            last_offset=last_offset,
            reload_from_clean_shutdown=False,
            now_ms=self._time_ms(),
        )

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Move the log start offset forward (DeleteRecords, retention)."""
        if new_log_start_offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                f"{self.topic_partition} since it is larger than the high watermark "
                f"{self.high_watermark}"
            )
        if new_log_start_offset <= self.log_start_offset:
            return False
        self.log_start_offset = new_log_start_offset
        self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
        self.producer_state.on_log_start_offset_incremented(new_log_start_offset)
        return True

    def deletable_segments(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool]
    ) -> list[LogSegment]:
        """Oldest segments while ``predicate`` holds; never an empty last
        segment, never past the high watermark (``deletableSegments``)."""
        segments = self.segments
        out = []
        for i, segment in enumerate(segments):
            following = segments[i + 1] if i + 1 < len(segments) else None
            upper = following.base_offset if following is not None else self.log_end_offset
            is_last_and_empty = following is None and segment.size == 0
            if (
                self.high_watermark >= upper
                and predicate(segment, following)
                and not is_last_and_empty
            ):
                out.append(segment)
            else:
                break
        return out

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        if not deletable:
            return 0
        local = self._local
        to_delete = deletable
        if len(local.segments) == len(deletable):
            # always keep one segment: roll first; an empty active one is recreated
            new_segment = self.roll()
            if deletable[-1].base_offset == new_segment.base_offset:
                to_delete = deletable[:-1]
        if to_delete:
            higher = local.segments.higher_segment(to_delete[-1].base_offset)
            assert higher is not None
            self.maybe_increment_log_start_offset(higher.base_offset)
            local.remove_and_delete_segments(to_delete)
        for segment in deletable:
            self.producer_state.delete_snapshot(segment.base_offset)
        return len(deletable)

    def delete_old_segments(self) -> int:
        """Retention (``deleteOldSegments``): segments before the log start offset,
        then ``retention.bytes``, then ``retention.ms`` (``cleanup.policy=delete``).
        Never the active segment: a segment must be followed by another or by
        the LEO to go."""
        deleted = self._delete_log_start_offset_breached()
        if "delete" in (p.lower() for p in self.config.cleanup_policy):
            deleted += self._delete_retention_size_breached()
            deleted += self._delete_retention_ms_breached()
        return deleted

    def _delete_log_start_offset_breached(self) -> int:
        start = self.log_start_offset
        return self._delete_segments(
            self.deletable_segments(lambda s, nxt: nxt is not None and nxt.base_offset <= start)
        )

    def _delete_retention_size_breached(self) -> int:
        retention = self.config.retention_bytes
        size = self.size
        if retention < 0 or size < retention:
            return 0
        diff = size - retention

        def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal diff
            if diff - segment.size >= 0:
                diff -= segment.size
                return True
            return False

        return self._delete_segments(self.deletable_segments(should_delete))

    def _delete_retention_ms_breached(self) -> int:
        retention = self.config.retention_ms
        if retention < 0:
            return 0
        now = self._time_ms()
        return self._delete_segments(
            self.deletable_segments(lambda s, _n: now - s.largest_timestamp() > retention)
        )

    def replace_segments(
        self, new: LogSegment, old: list[LogSegment], placeholder: LogSegment | None = None
    ) -> bool:
        """The log cleaner's swap, on the owner thread (``UnifiedLog.replaceSegments``,
        ``local_log.py`` says how); False when it cannot happen any more. The
        producer snapshots of the old segments no new segment replaced go too."""
        gone = self._local.replace_segments(new, old, placeholder)
        if gone is None:
            return False
        for segment in gone:
            self.producer_state.delete_snapshot(segment.base_offset)
        return True

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """Remove ``.deleted`` files whose ``file.delete.delay.ms`` has passed."""
        return self._local.delete_expired_files(now_ms)

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        return self.producer_state.remove_expired_producers(
            self._time_ms() if now_ms is None else now_ms
        )

    def take_producer_snapshot(self) -> None:
        self.producer_state.take_snapshot()

    # ---- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Snapshot of the producer state at the LEO, segments trimmed and closed."""
        if self._local.is_closed:
            return
        self.producer_state.update_map_end_offset(self.log_end_offset)
        self.producer_state.take_snapshot()
        self._local.close()

    def close_handlers(self) -> None:
        self._local.close_handlers()

    def mark_deleted(self) -> None:
        """No more appends or reads; descriptors stay open (see ``LogManager.delete_log``)."""
        self._local.mark_closed()

    def assign_topic_id(self, topic_id: bytes) -> None:
        metadata = PartitionMetadataFile(self.dir)
        if self.topic_id is None:
            self.topic_id = topic_id
            metadata.write(topic_id)
        elif self.topic_id != topic_id:
            raise UnknownServerError(
                f"Tried to assign topic ID {topic_id.hex()} to log for topic partition "
                f"{self.topic_partition}, but log already contained topic ID {self.topic_id.hex()}"
            )

    def rename_dir(self, new_dir: Path) -> None:
        self._local.rename_dir(new_dir)
        self.producer_state.directory = new_dir
        self.leader_epoch_cache.update_parent_dir(new_dir)

    def delete(self) -> None:
        """Delete all files of the partition and its folder, now."""
        self._local.delete_all_segments()
        for path in list(self.dir.iterdir()):
            if path.is_file():
                path.unlink(missing_ok=True)
        self.dir.rmdir()

    def __repr__(self) -> str:
        return (
            f"UnifiedLog({self.topic_partition}, logStartOffset={self.log_start_offset}, "
            f"logEndOffset={self.log_end_offset}, segments={self.number_of_segments})"
        )
