"""The append owner of one log (pure-Python reference of ``_active_segment_c.pyx``).

:class:`ActiveSegment` is the one object that a log (``LocalLog``) holds for
its active segment. It owns the mutable state an append reads and writes and
carries the one implementation of the append's rules:

* :meth:`ActiveSegment.should_roll` -- ``LogSegment.shouldRoll`` (asked by
  ``UnifiedLog.maybeRoll``);
* :meth:`ActiveSegment.append_to_segment` -- ``LogSegment.append`` with its
  index entries (``OffsetIndex.append``, ``TimeIndex.maybeAppend``);
* :meth:`ActiveSegment.append` -- that, then the log end offset moved
  (``LocalLog.append``);
* :meth:`ActiveSegment.flush_due` -- ``flush.messages`` reached;
* :meth:`ActiveSegment.append_batch` -- the common produce request (one v2
  batch without producer id at the log end offset, no roll due) from header
  to result through the rules above; None, before any effect, for anything
  else, which then takes ``UnifiedLog.prepare_append`` + ``commit_append``
  (which call the same methods).

State, by whose field it is. ``LocalLog`` and ``UnifiedLog`` read and write
theirs here for the log's life; the ``ProducerStateManager`` once :meth:`bind`
took it, and the active segment, its ``.log`` and its indexes while they are
attached, through held fields (``broker.log.held_field``), owning their
fields again when detached (:meth:`attach`, :meth:`detach`; ``LogSegments``
calls :meth:`attach` whenever its last segment changes)::

    UnifiedLog    log_start_offset
    ProducerStateManager  map_end_offset
    LocalLog      log_end_offset, recovery_point, closed, config
                  (+ the roll limits taken from it: max_segment_ms,
                  segment_bytes, flush_messages)
    FileRecords   size (fd copied: it never changes)
    OffsetIndex   oi_mm, oi_entries, oi_max_entries, oi_last_offset
    TimeIndex     ti_mm, ti_entries, ti_max_entries, ti_last
    LogSegment    bytes_since_last_index_entry, rolling_based_timestamp,
                  max_timestamp_and_offset, created
                  (base_offset, index_interval_bytes, roll_jitter_ms copied)

What the entries written into the index mappings look like::

    .index      RelativeOffset => Int32, Position => Int32           (8 bytes)
    .timeindex  Timestamp => Int64, RelativeOffset => Int32          (12 bytes)

The v2 batch header fields :meth:`append_batch` reads (``DefaultRecordBatch``)::

    BaseOffset => Int64 (0), Length => Int32 (8), PartitionLeaderEpoch =>
    Int32 (12), Magic => Int8 (16), CRC => Uint32, Attributes => Int16,
    LastOffsetDelta => Int32 (23), BaseTimestamp => Int64, MaxTimestamp =>
    Int64 (35), ProducerId => Int64 (43), ProducerEpoch => Int16,
    BaseSequence => Int32, RecordsCount => Int32  (61 bytes)

Typed as the compiled twin stores them: ``fd`` a C int, the counters and
offsets C int64, ``closed`` a C bint, everything else a Python object.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.log.errors import LogSegmentOffsetOverflowError
from broker.log.results import LogAppendResult, TimestampOffset
from broker.records.batch import (
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_PRODUCER_ID,
    RECORDS_OFFSET,
)

if TYPE_CHECKING:
    from broker.config import TopicConfig
    from broker.log.file_records import FileRecords
    from broker.log.leader_epoch import LeaderEpochCache
    from broker.log.offset_index import OffsetIndex
    from broker.log.producer_state import ProducerStateManager
    from broker.log.segment import LogSegment
    from broker.log.time_index import TimeIndex

INT_MAX = 2**31 - 1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class ActiveSegment:
    """The append state of a log's active segment and the append's rules."""

    __slots__ = (
        "base_offset",
        "bytes_since_last_index_entry",
        "closed",
        "config",
        "created",
        "fd",
        "flush_messages",
        "index_interval_bytes",
        "leader_epoch_cache",
        "log_end_offset",
        "log_file",
        "log_start_offset",
        "map_end_offset",
        "max_segment_ms",
        "max_timestamp_and_offset",
        "offset_index",
        "oi_entries",
        "oi_last_offset",
        "oi_max_entries",
        "oi_mm",
        "producer_state",
        "recovery_point",
        "roll_jitter_ms",
        "rolling_based_timestamp",
        "segment",
        "segment_bytes",
        "size",
        "ti_entries",
        "ti_last",
        "ti_max_entries",
        "ti_mm",
        "time_index",
        "time_ms",
    )

    def __init__(self, log_end_offset: int = 0, recovery_point: int = 0) -> None:
        self.log_end_offset = log_end_offset
        self.recovery_point = recovery_point
        self.log_start_offset = 0
        self.closed = False
        self.config: TopicConfig | None = None
        self.max_segment_ms = 0
        self.segment_bytes = 0
        self.flush_messages = 0
        self.producer_state: ProducerStateManager | None = None
        self.leader_epoch_cache: LeaderEpochCache | None = None
        self.map_end_offset = 0
        self.time_ms: Callable[[], int] | None = None
        self.segment: LogSegment | None = None
        self.log_file: FileRecords | None = None
        self.fd = -1
        self.size = 0
        self.offset_index: OffsetIndex | None = None
        self.oi_mm: mmap.mmap | None = None
        self.oi_entries = 0
        self.oi_max_entries = 0
        self.oi_last_offset = 0
        self.time_index: TimeIndex | None = None
        self.ti_mm: mmap.mmap | None = None
        self.ti_entries = 0
        self.ti_max_entries = 0
        self.ti_last: TimestampOffset = TimestampOffset(-1, 0)
        self.base_offset = 0
        self.index_interval_bytes = 0
        self.roll_jitter_ms = 0
        self.created = 0
        self.bytes_since_last_index_entry = 0
        self.rolling_based_timestamp: int | None = None
        self.max_timestamp_and_offset: TimestampOffset | None = None

    # ---- configuration ------------------------------------------------------------------

    def configure(self, config: TopicConfig) -> None:
        """The log's config and the roll limits taken from it (``TopicConfig.max_segment_ms``
        is computed: once per config, not per append)."""
        self.config = config
        self.max_segment_ms = config.max_segment_ms
        self.segment_bytes = config.segment_bytes
        self.flush_messages = config.flush_messages

    def bind(
        self,
        producer_state: ProducerStateManager,
        leader_epoch_cache: LeaderEpochCache,
        time_ms: Callable[[], int],
    ) -> None:
        """The partition state :meth:`append_batch` updates, and the clock
        (``UnifiedLog``): from now on this holds the producer state's map end
        offset."""
        self.map_end_offset = producer_state._last_map_offset
        producer_state._active = self
        self.producer_state = producer_state
        self.leader_epoch_cache = leader_epoch_cache
        self.time_ms = time_ms

    # ---- which segment ----------------------------------------------------------------------

    def attach(self, segment: LogSegment | None) -> None:
        """Take over the append state of ``segment`` (None: of no segment)."""
        if segment is self.segment:
            return
        self.detach()
        if segment is None:
            return
        if segment._active is not None:  # a segment has one owner at a time
            segment._active.detach()
        log = segment.log
        self.size = log.size
        self.fd = log.fd
        self.base_offset = segment.base_offset
        self.index_interval_bytes = segment.index_interval_bytes
        self.roll_jitter_ms = segment.roll_jitter_ms
        self.created = segment.created
        self.bytes_since_last_index_entry = segment._bytes_since_last_index_entry
        self.rolling_based_timestamp = segment._rolling_based_timestamp
        self.max_timestamp_and_offset = segment._max_timestamp_and_offset
        self.log_file = log
        self.segment = segment
        log._active = self
        segment._active = self
        self._attach_indexes(segment)

    def _attach_indexes(self, segment: LogSegment) -> None:
        """Take over the indexes of ``segment`` that are open (lazy: see ``LazyIndex``)."""
        if self.offset_index is None:
            offset_index = segment._offset_index._index
            if offset_index is not None:
                self.oi_mm = offset_index._mm
                self.oi_entries = offset_index._entries
                self.oi_max_entries = offset_index._max_entries
                self.oi_last_offset = offset_index._last_offset
                self.offset_index = offset_index
                offset_index._active = self
        if self.time_index is None:
            time_index = segment._time_index._index
            if time_index is not None:
                self.ti_mm = time_index._mm
                self.ti_entries = time_index._entries
                self.ti_max_entries = time_index._max_entries
                self.ti_last = time_index._last
                self.time_index = time_index
                time_index._active = self

    def _open_indexes(self, segment: LogSegment) -> None:
        """Open (create) both indexes of the attached segment and take them over."""
        segment._offset_index.get()
        segment._time_index.get()
        self._attach_indexes(segment)

    def detach(self) -> None:
        """Hand the state back to the segment, its ``.log`` and its indexes."""
        segment = self.segment
        if segment is None:
            return
        offset_index = self.offset_index
        if offset_index is not None:
            offset_index._active = None
            offset_index._mm = self.oi_mm
            offset_index._entries = self.oi_entries
            offset_index._max_entries = self.oi_max_entries
            offset_index._last_offset = self.oi_last_offset
        time_index = self.time_index
        if time_index is not None:
            time_index._active = None
            time_index._mm = self.ti_mm
            time_index._entries = self.ti_entries
            time_index._max_entries = self.ti_max_entries
            time_index._last = self.ti_last
        log = segment.log
        log._active = None
        log.size = self.size
        segment._active = None
        segment.created = self.created
        segment._bytes_since_last_index_entry = self.bytes_since_last_index_entry
        segment._rolling_based_timestamp = self.rolling_based_timestamp
        segment._max_timestamp_and_offset = self.max_timestamp_and_offset
        self.segment = None
        self.log_file = None
        self.fd = -1
        self.offset_index = None
        self.time_index = None
        self.oi_mm = None
        self.ti_mm = None

    # ---- the rules ---------------------------------------------------------------------------

    def should_roll(
        self,
        *,
        max_segment_ms: int,
        max_segment_bytes: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        messages_size: int,
        time_ms: Callable[[], int],
    ) -> bool:
        """``LogSegment.shouldRoll``: the segment is full for these messages, or
        older than ``segment.ms`` less its jitter (by the first batch's
        timestamp, else by the wall clock since it was created), or an index
        is full, or the last offset does not fit a relative offset."""
        segment = self.segment
        assert segment is not None
        size = self.size
        if size > max_segment_bytes - messages_size:
            return True
        if size > 0:
            first = self.rolling_based_timestamp
            if first is None:
                segment._load_first_batch_timestamp()
                first = self.rolling_based_timestamp
            if first is not None and first >= 0:
                waited = max_timestamp_in_messages - first
            else:
                waited = time_ms() - self.created
            if waited > max_segment_ms - self.roll_jitter_ms:
                return True
        if self.offset_index is None or self.time_index is None:
            self._open_indexes(segment)
        relative = max_offset_in_messages - self.base_offset
        return (
            self.oi_entries >= self.oi_max_entries
            or self.ti_entries >= self.ti_max_entries - 1
            or relative < 0
            or relative > INT_MAX
        )

    def append_to_segment(
        self,
        largest_offset: int,
        largest_timestamp_ms: int,
        shallow_offset_of_max_timestamp: int,
        records: Any,
    ) -> None:
        """``LogSegment.append`` (the steps are in ``segment.py``'s docstring)."""
        view = records if isinstance(records, memoryview) else memoryview(records)
        size = view.nbytes
        if size == 0:
            return
        segment = self.segment
        log = self.log_file
        assert segment is not None and log is not None
        if self.offset_index is None or self.time_index is None:
            self._open_indexes(segment)
        position = self.size
        if position == 0:
            self.rolling_based_timestamp = largest_timestamp_ms
        relative = largest_offset - self.base_offset
        if relative < 0 or relative > INT_MAX:
            raise LogSegmentOffsetOverflowError(self.base_offset, largest_offset)
        written = os.pwrite(self.fd, view, position)
        if written != size:
            log.finish_short_write(view, position, written)
        self.size = position + size
        max_so_far = self.max_timestamp_and_offset
        if max_so_far is None:
            max_so_far = segment.read_max_timestamp_and_offset_so_far()
        if largest_timestamp_ms > max_so_far.timestamp:
            max_so_far = TimestampOffset(largest_timestamp_ms, shallow_offset_of_max_timestamp)
            self.max_timestamp_and_offset = max_so_far
        since = self.bytes_since_last_index_entry
        if since > self.index_interval_bytes:
            self._index_entries(largest_offset, relative, position, max_so_far)
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry = since + size

    def _index_entries(
        self, largest_offset: int, relative: int, position: int, max_so_far: TimestampOffset
    ) -> None:
        """Offset-index entry (largest offset, position), time-index entry of the
        max timestamp so far when it is greater than the last one."""
        offset_index = self.offset_index
        time_index = self.time_index
        assert offset_index is not None and time_index is not None
        entries = self.oi_entries
        mm = self.oi_mm
        if (
            mm is not None
            and entries < self.oi_max_entries
            and (entries == 0 or largest_offset > self.oi_last_offset)
        ):
            _OFFSET_ENTRY.pack_into(mm, entries * 8, relative, position)
            self.oi_entries = entries + 1
            self.oi_last_offset = largest_offset
        else:  # full, closed or out of order: the index says which
            offset_index.append(largest_offset, position)
        last = self.ti_last
        ts = max_so_far.timestamp
        entries = self.ti_entries
        mm = self.ti_mm
        if (
            mm is not None
            and ts > last.timestamp
            and max_so_far.offset >= last.offset
            and entries < self.ti_max_entries - 1
        ):
            _TIME_ENTRY.pack_into(mm, entries * 12, ts, max_so_far.offset - self.base_offset)
            self.ti_entries = entries + 1
            self.ti_last = max_so_far
        elif ts > last.timestamp or entries == 0:
            time_index.maybe_append(ts, max_so_far.offset)

    def append(
        self,
        largest_offset: int,
        largest_timestamp_ms: int,
        shallow_offset_of_max_timestamp: int,
        records: Any,
    ) -> None:
        """``LocalLog.append``: the segment append, then the log end offset."""
        self.append_to_segment(
            largest_offset, largest_timestamp_ms, shallow_offset_of_max_timestamp, records
        )
        self.log_end_offset = largest_offset + 1

    def flush_due(self) -> bool:
        """``flush.messages`` appended since the recovery point (``UnifiedLog.append``
        flushes then)."""
        return self.log_end_offset - self.recovery_point >= self.flush_messages

    def append_batch(self, log: Any, records: Any) -> LogAppendResult | None:
        """``UnifiedLog.append`` of one v2 batch without producer id at the log end
        offset when no roll is due; None before any effect otherwise."""
        view = records if isinstance(records, memoryview) else memoryview(records)
        size = view.nbytes
        if size < RECORDS_OFFSET or view[MAGIC_OFFSET] != MAGIC_V2:
            return None
        if self.closed or self.segment is None:
            return None
        header = HEADER_STRUCT.unpack_from(view, 0)
        (base, length, epoch, _magic, _crc, _attributes, last_delta, _base_ts, max_ts,
         producer_id, _producer_epoch, _base_sequence, _count) = header  # fmt: skip
        if (
            length + LOG_OVERHEAD != size
            or producer_id != NO_PRODUCER_ID
            or base != self.log_end_offset
            or size > self.segment_bytes
            or self.producer_state is None
            or self.leader_epoch_cache is None
            or self.time_ms is None
        ):
            return None
        last = base + last_delta
        if self.should_roll(
            max_segment_ms=self.max_segment_ms,
            max_segment_bytes=self.segment_bytes,
            max_timestamp_in_messages=max_ts,
            max_offset_in_messages=last,
            messages_size=size,
            time_ms=self.time_ms,
        ):
            return None
        if epoch >= 0:  # UnifiedLog.maybeAssignEpochStartOffset
            self.leader_epoch_cache.assign(epoch, base)
        self.append_to_segment(last, max_ts, last, view)
        self.log_end_offset = last + 1
        self.map_end_offset = last + 1  # ProducerStateManager.update_map_end_offset
        if self.flush_due():
            log.flush()
        return LogAppendResult(base, last, max_ts, last, self.log_start_offset)
