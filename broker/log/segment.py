"""A log segment: a ``.log`` with its offset, time and transaction indexes (``LogSegment.java``).

Append (``LogSegment.append``), for an append whose last offset is ``largest_offset``
and whose bytes start at ``physical_position``:

1. empty records: nothing;
2. first bytes of the segment: remember ``largest_timestamp`` for time-based rolls;
3. ``largest_offset - base_offset`` must fit an Int32, else
   :class:`LogSegmentOffsetOverflowError`;
4. write the bytes;
5. a greater max timestamp replaces (max timestamp, its shallow offset);
6. **if more than index.interval.bytes were appended since the last index
   entry** (checked before counting this append; the first append of a
   segment never adds one): offset-index entry (largest_offset,
   physical_position) and time-index ``maybe_append`` of the max so far;
7. count this append's bytes.

When the segment stops being active (roll, close) the time index gets one
final (max timestamp, offset) entry if new, and both indexes and a
preallocated ``.log`` are trimmed.

Index files are opened lazily (:class:`broker.log.index.LazyIndex`): a
freshly rolled segment has none until an append or a read touches them. The
``.txnindex`` (:class:`broker.log.transaction_index.TransactionIndex`) is
created by the first aborted transaction written to it
(:meth:`LogSegment.update_txn_index`); the produce append never touches it.
Wherever the segment renames, moves, truncates, flushes, closes or deletes
its index files it does the same with that file when there is one.

The append and the roll check (``shouldRoll``) are implemented once, by the
append owner (``broker.log.active_segment``), which the log holds for its
active segment and which holds that segment's append state meanwhile (the
``created``/``_bytes_since_last_index_entry``/... held fields read it there);
:meth:`LogSegment.append` and :meth:`LogSegment.should_roll` run the owner's
rule, on a segment that is not active with an owner taken for the call.

Threading: a segment belongs to its log's owner thread; the flusher only
fsyncs its files through descriptors of its own.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.log import files
from broker.log.active_segment import ActiveSegment
from broker.log.errors import LogSegmentOffsetOverflowError
from broker.log.file_records import FileRecords, FileSlice, LogOffsetPosition, TimestampAndOffset
from broker.log.held_field import HeldField
from broker.log.index import LazyIndex
from broker.log.offset_index import OffsetIndex, OffsetPosition, check_offset_index_file
from broker.log.record_times import search_for_timestamp
from broker.log.results import TimestampOffset
from broker.log.time_index import NO_TIMESTAMP, TimeIndex, check_time_index_file
from broker.log.transaction_index import (
    AbortedTxn,
    CompletedTxn,
    TransactionIndex,
    TxnIndexSearchResult,
)

if TYPE_CHECKING:
    from broker.config import TopicConfig
    from broker.log.leader_epoch import LeaderEpochCache
    from broker.log.producer_state import ProducerStateManager

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
UNKNOWN_OFFSET = -1

TimeMs = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogOffsetMetadata(NamedTuple):
    """An offset and, when known, where its batch lies (``LogOffsetMetadata``)."""

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET


class FetchDataInfo(NamedTuple):
    """What a read found: where the fetch starts and the bytes, as a file slice."""

    fetch_offset_metadata: LogOffsetMetadata
    records: FileSlice | None
    first_entry_incomplete: bool = False

    @property
    def size(self) -> int:
        return 0 if self.records is None else self.records.size


def random_segment_jitter(config: TopicConfig, rng: random.Random | None = None) -> int:
    """``LogConfig.randomSegmentJitter``: ``abs(randomInt) % min(jitter, segment.ms)``."""
    if config.segment_jitter_ms == 0:
        return 0
    value: int = (rng or random).randint(-(2**31), 2**31 - 1)
    return abs(value) % min(config.segment_jitter_ms, config.segment_ms)


class LogSegment:
    """One segment. Not thread-safe: used by its log's owner thread.

    ``created``, ``_bytes_since_last_index_entry``, ``_rolling_based_timestamp``
    and ``_max_timestamp_and_offset`` are held fields (``broker.log.held_field``):
    while this is the active segment its log's append owner (``_active``,
    ``broker.log.active_segment``) holds them, the ``_own_*`` fields otherwise."""

    __slots__ = (
        "_active",
        "_offset_index",
        "_own_bytes_since_last_index_entry",
        "_own_created",
        "_own_max_timestamp_and_offset",
        "_own_rolling_based_timestamp",
        "_time_index",
        "_time_ms",
        "_txn_index",
        "base_offset",
        "index_interval_bytes",
        "log",
        "roll_jitter_ms",
    )

    def __init__(
        self,
        log: FileRecords,
        offset_index: LazyIndex[OffsetIndex],
        time_index: LazyIndex[TimeIndex],
        *,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        time_ms: TimeMs = wall_clock_ms,
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self._active: ActiveSegment | None = None
        self.log = log
        self._offset_index = offset_index
        self._time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._time_ms = time_ms
        self._own_created = time_ms()
        if txn_index is None:
            # beside the .log, with its suffix: 00000000000000000040.log.swap ->
            # 00000000000000000040.txnindex.swap
            name = log.path.name
            at = name.index(files.LOG_FILE_SUFFIX)
            txn_index = TransactionIndex(
                base_offset,
                log.path.with_name(
                    name[:at]
                    + files.TXN_INDEX_FILE_SUFFIX
                    + name[at + len(files.LOG_FILE_SUFFIX) :]
                ),
            )
        self._txn_index = txn_index
        self._own_rolling_based_timestamp: int | None = None
        self._own_max_timestamp_and_offset: TimestampOffset | None = None
        self._own_bytes_since_last_index_entry = 0

    # ---- append state (held by the log's append owner while this is active) ----------
    created = HeldField[int]("_own_created", "created")
    _bytes_since_last_index_entry = HeldField[int](
        "_own_bytes_since_last_index_entry", "bytes_since_last_index_entry"
    )
    _rolling_based_timestamp = HeldField[int | None](
        "_own_rolling_based_timestamp", "rolling_based_timestamp"
    )
    _max_timestamp_and_offset = HeldField[TimestampOffset | None](
        "_own_max_timestamp_and_offset", "max_timestamp_and_offset"
    )

    def _owner(self) -> tuple[ActiveSegment, bool]:
        """The append owner to run a rule on, and whether it was taken for this
        call only (a segment that is not its log's active one: tests, tools)."""
        active = self._active
        if active is not None:
            return active, False
        active = ActiveSegment()
        active.attach(self)
        return active, True

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        config: TopicConfig,
        *,
        time_ms: TimeMs = wall_clock_ms,
        file_already_exists: bool = False,
        init_file_size: int = 0,
        preallocate: bool = False,
        file_suffix: str = "",
        rng: random.Random | None = None,
    ) -> LogSegment:
        max_index_size = config.segment_index_bytes
        return cls(
            FileRecords.open(
                files.log_file(directory, base_offset, file_suffix),
                file_already_exists,
                init_file_size,
                preallocate,
            ),
            LazyIndex(
                files.offset_index_file(directory, base_offset, file_suffix),
                base_offset,
                max_index_size,
                OffsetIndex,
            ),
            LazyIndex(
                files.time_index_file(directory, base_offset, file_suffix),
                base_offset,
                max_index_size,
                TimeIndex,
            ),
            base_offset=base_offset,
            index_interval_bytes=config.index_interval_bytes,
            roll_jitter_ms=random_segment_jitter(config, rng),
            time_ms=time_ms,
            txn_index=TransactionIndex(
                base_offset, files.txn_index_file(directory, base_offset, file_suffix)
            ),
        )

    # ---- accessors ------------------------------------------------------------------

    @property
    def offset_index(self) -> OffsetIndex:
        return self._offset_index.get()

    @property
    def time_index(self) -> TimeIndex:
        return self._time_index.get()

    @property
    def offset_index_path(self) -> Path:
        return self._offset_index.path

    @property
    def time_index_path(self) -> Path:
        return self._time_index.path

    @property
    def txn_index(self) -> TransactionIndex:
        return self._txn_index

    @property
    def txn_index_path(self) -> Path:
        return self._txn_index.path

    @property
    def indexes_loaded(self) -> tuple[bool, bool]:
        return self._offset_index.is_loaded, self._time_index.is_loaded

    @property
    def size(self) -> int:
        return self.log.size

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return self.offset_index.can_append_offset(offset)

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise LogSegmentOffsetOverflowError(self.base_offset, offset)

    # ---- max timestamp ---------------------------------------------------------------

    def read_max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        """Lazily taken from the time index's last entry."""
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry()
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().timestamp

    @property
    def shallow_offset_of_max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().offset

    # ---- rolling -----------------------------------------------------------------------

    def should_roll(
        self,
        *,
        max_segment_ms: int,
        max_segment_bytes: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        messages_size: int,
        now: int,
    ) -> bool:
        """``LogSegment.shouldRoll`` (the rule: ``ActiveSegment.should_roll``)."""
        owner, borrowed = self._owner()
        try:
            return owner.should_roll(
                max_segment_ms=max_segment_ms,
                max_segment_bytes=max_segment_bytes,
                max_timestamp_in_messages=max_timestamp_in_messages,
                max_offset_in_messages=max_offset_in_messages,
                messages_size=messages_size,
                time_ms=lambda: now,
            )
        finally:
            if borrowed:
                owner.detach()

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            first = self.log.first_batch()
            if first is not None:
                self._rolling_based_timestamp = first.max_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Record time since the first batch if it had a timestamp, else wall-clock
        time since the segment object was created."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    def get_first_batch_timestamp(self) -> int:
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return ts
        return LONG_MAX

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive_segment(self) -> None:
        """Final time-index entry, indexes and a preallocated ``.log`` trimmed."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    # ---- append -------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp_ms: int,
        shallow_offset_of_max_timestamp: int,
        records: memoryview | bytes | bytearray,
    ) -> None:
        """Append validated batches (offsets assigned). See the module docstring;
        the rule: ``ActiveSegment.append_to_segment``."""
        owner, borrowed = self._owner()
        try:
            owner.append_to_segment(
                largest_offset, largest_timestamp_ms, shallow_offset_of_max_timestamp, records
            )
        finally:
            if borrowed:
                owner.detach()

    # ---- reads ---------------------------------------------------------------------------

    def translate_offset(
        self, offset: int, starting_file_position: int = 0
    ) -> LogOffsetPosition | None:
        """Position and size of the first batch whose last offset >= ``offset``."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(
            offset, max(mapping.position, starting_file_position)
        )

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = -1,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Batches from the first one holding an offset >= ``start_offset``.

        ``max_position`` bounds the bytes exposed (``-1``: the segment size;
        ``None``: unknown, so nothing is returned). With ``min_one_message``
        the first batch is returned whole even past ``max_size``. None when
        ``start_offset`` is past the last offset of this segment.
        """
        if max_size < 0:
            raise ValueError(
                f"Invalid max size {max_size} for log read from segment {self.log.path}"
            )
        if max_position == -1:
            max_position = self.log.size
        start = self.translate_offset(start_offset)
        if start is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start.position)
        adjusted_max_size = max(max_size, start.size) if min_one_message else max_size
        if adjusted_max_size == 0 or max_position is None:
            return FetchDataInfo(metadata, None)
        fetch_size = min(max_position - start.position, adjusted_max_size)
        return FetchDataInfo(
            metadata,
            self.log.slice(start.position, fetch_size),
            adjusted_max_size < start.size,
        )

    def fetch_upper_bound_offset(
        self, start_offset_position: OffsetPosition, fetch_size: int
    ) -> int | None:
        found = self.offset_index.fetch_upper_bound_offset(start_offset_position, fetch_size)
        return None if found is None else found.offset

    def read_next_offset(self) -> int:
        """The offset after the last batch (base offset when empty)."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        last = self.log.last_batch(start)
        return self.base_offset if last is None else last.last_offset + 1

    def find_offset_by_timestamp(
        self, timestamp_ms: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """``LogSegment.findOffsetByTimestamp``: first record with timestamp >=
        target and offset >= ``starting_offset``."""
        entry = self.time_index.lookup(timestamp_ms)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return search_for_timestamp(self.log, timestamp_ms, position, starting_offset)

    # ---- transactions ------------------------------------------------------------------

    def update_txn_index(self, completed_txn: CompletedTxn, last_stable_offset: int) -> None:
        """``LogSegment.updateTxnIndex``: an aborted transaction whose marker is in
        this segment gets its ``.txnindex`` entry (the file is created by the
        first one); a committed one leaves no trace."""
        if completed_txn.is_aborted:
            self._txn_index.append(AbortedTxn.of_completed(completed_txn, last_stable_offset))

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """``LogSegment.collectAbortedTxns``: see
        :meth:`TransactionIndex.collect_aborted_txns`."""
        return self._txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    # ---- truncation and recovery -------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop everything from the first batch holding an offset >= ``offset``;
        returns the bytes removed from the ``.log``."""
        mapping = self.translate_offset(offset)
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.truncate_to(offset)
        time_index.truncate_to(offset)
        self._txn_index.truncate_to(offset)
        # the segment may be active again: give it room
        offset_index.resize(offset_index.max_index_size)
        time_index.resize(time_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self._time_ms()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_timestamp_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last_entry = self.time_index.last_entry()
        position = self.offset_index.lookup(last_entry.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > last_entry.timestamp:
            return TimestampOffset(after.timestamp, after.offset)
        return last_entry

    def recover(
        self,
        producer_state: ProducerStateManager | None = None,
        leader_epoch_cache: LeaderEpochCache | None = None,
    ) -> int:
        """Rebuild the indexes from the ``.log`` and cut it at the first invalid
        byte (``LogSegment.recover``); returns the bytes removed."""
        from broker.log.recovery import recover_segment

        return recover_segment(self, producer_state, leader_epoch_cache).truncated_bytes

    def has_overflow(self) -> bool:
        next_offset = self.read_next_offset()
        return next_offset > self.base_offset and not self.can_convert_to_relative_offset(
            next_offset - 1
        )

    # ---- bookkeeping used by recovery ------------------------------------------------------

    def set_max_timestamp_and_offset(self, value: TimestampOffset | None) -> None:
        self._max_timestamp_and_offset = value

    def reset_index_counter(self) -> None:
        self._bytes_since_last_index_entry = 0

    # ---- files ---------------------------------------------------------------------------------

    def sanity_check(self, time_index_newly_created: bool) -> None:
        """FileNotFoundError when the offset index is missing; CorruptIndexError
        when an index fails Kafka's O(1) checks (plus: the offset index's last
        position lies within the ``.log``). Reads the files' first and last
        entries without mapping them, so loading stays lazy."""
        if not self._offset_index.path.exists():
            raise FileNotFoundError(f"Offset index file {self._offset_index.path} does not exist")
        if time_index_newly_created:
            self.time_index.resize(0)
        check_offset_index_file(self._offset_index.path, self.base_offset, self.log.size)
        if self._time_index.path.exists():
            check_time_index_file(self._time_index.path, self.base_offset)
        self._txn_index.sanity_check()

    def flush(self) -> None:
        """fsync the ``.log`` and the materialised indexes (owner thread)."""
        self.log.flush()
        if self._offset_index.is_loaded:
            self.offset_index.flush()
        if self._time_index.is_loaded:
            self.time_index.flush()
        self._txn_index.flush()

    def flush_paths(self) -> list[Path]:
        """Index files to fsync by path from another thread (existing ones; the
        ``.txnindex`` only when there is one, known without a ``stat``)."""
        paths = [p for p in (self._offset_index.path, self._time_index.path) if p.exists()]
        if self._txn_index.file_exists:
            paths.append(self._txn_index.path)
        return paths

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        def renamed(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        self.log.rename_to(renamed(self.log.path))
        self._offset_index.rename_to(renamed(self._offset_index.path))
        self._time_index.rename_to(renamed(self._time_index.path))
        self._txn_index.rename_to(renamed(self._txn_index.path))

    def update_parent_dir(self, directory: Path) -> None:
        """Paths follow a renamed partition folder (descriptors stay valid)."""
        self.log.path = directory / self.log.path.name
        self._offset_index.update_parent_dir(directory)
        self._time_index.update_parent_dir(directory)
        self._txn_index.update_parent_dir(directory)

    def has_suffix(self, suffix: str) -> bool:
        return (
            self.log.path.name.endswith(suffix)
            and self._offset_index.path.name.endswith(suffix)
            and self._time_index.path.name.endswith(suffix)
            and self._txn_index.path.name.endswith(suffix)
        )

    def close(self) -> None:
        if self._max_timestamp_and_offset is not None and not self.time_index.is_closed:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, True
            )
        self._offset_index.close()
        self._time_index.close()
        self._txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        self._offset_index.close_handler()
        self._time_index.close_handler()
        self._txn_index.close()
        self.log.close_handlers()

    def delete_if_exists(self) -> None:
        self.log.delete_if_exists()
        self._offset_index.delete_if_exists()
        self._time_index.delete_if_exists()
        self._txn_index.delete_if_exists()

    def deleted(self) -> bool:
        return not (
            self.log.path.exists()
            or self._offset_index.path.exists()
            or self._time_index.path.exists()
            or self._txn_index.path.exists()
        )

    def last_modified(self) -> int:
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    def set_last_modified(self, ms: int) -> None:
        ns = ms * 1_000_000
        for path in (self.log.path, self._offset_index.path, self._time_index.path):
            if path.exists():
                os.utime(path, ns=(ns, ns))

    def largest_record_timestamp(self) -> int | None:
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else None

    def largest_timestamp(self) -> int:
        """Max record timestamp, or the ``.log``'s mtime when there is none."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified()

    def __repr__(self) -> str:
        ts = (
            NO_TIMESTAMP
            if self._max_timestamp_and_offset is None
            else self._max_timestamp_and_offset.timestamp
        )
        return (
            f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
            f"largestRecordTimestamp={ts})"
        )
