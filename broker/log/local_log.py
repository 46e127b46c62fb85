"""Segments of one partition on local disk (``LocalLog.scala``).

Owns the segment list, the log end offset (LEO), the recovery point, rolls,
reads, truncation, segment deletion (rename to ``.deleted``, delete after
``file.delete.delay.ms``) and the mechanics of flushing.

Threading contract (the one place it is enforced):

* One partition's log is used from **one thread at a time** (the server's
  event-loop thread): append, roll, read, truncate, retention, close.
* :meth:`LocalLog.flush` may run **concurrently** from a flusher thread,
  because it never touches a mapping or a Python object the owner thread
  mutates without the lock: under ``_lock`` (held for microseconds) it
  copies the list of segments to flush and takes *its own* descriptors
  (``os.dup`` of each ``.log`` descriptor, ``os.open`` of each index file
  by path); the fsyncs run outside the lock on those descriptors, so a
  concurrent append (``os.pwrite`` on the original descriptor), roll
  (trimming, new files), rename or delete cannot invalidate them. Every
  mutation of the segment list, of a segment's file names and of the
  recovery point happens under ``_lock``. Appends themselves take no lock:
  the bytes of an offset are written before the LEO that covers it is
  published, so a flusher that reads the LEO finds the bytes in the page
  cache.
* Concurrent flushes serialise on ``_flush_mutex``: a flush that waited
  finds the recovery point already past its offset and returns without an
  fsync, which is the group commit (one fsync covers every append made
  before it started).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from broker.errors import KafkaStorageError, OffsetOutOfRangeError
from broker.log import files
from broker.log.active_segment import ActiveSegment
from broker.log.checkpoints import fsync_dir
from broker.log.cleaner_faults import maybe_crash
from broker.log.errors import LogClosedError
from broker.log.file_records import FileSlice
from broker.log.log_segments import LogSegments
from broker.log.segment import FetchDataInfo, LogOffsetMetadata, LogSegment, TimeMs
from broker.log.transaction_index import AbortedTxn

if TYPE_CHECKING:
    from broker.config import TopicConfig

logger = logging.getLogger(__name__)


class FlushRecorder(Protocol):
    """Receives one sample per segment flush (Kafka's ``LogFlushRateAndTimeMs``)."""

    def record_flush(self, seconds: float) -> None: ...


class NullFlushRecorder:
    def record_flush(self, seconds: float) -> None:
        return None


class LocalLog:
    """Segments and offsets of one partition. See the module docstring for threads.

    The log end offset, the recovery point, the closed flag and the config
    (with the roll limits taken from it) are held by :attr:`appender`, the
    append owner of the active segment (``broker.log.active_segment``), for
    the log's life: the log reads and writes them there (``config`` through
    a property, which sets the roll limits too)."""

    __slots__ = (
        "_delete_scheduler",
        "_flush_mutex",
        "_last_flush_time",
        "_lock",
        "_new_files_since_flush",
        "_pending_deletes",
        "_time_ms",
        "_truncations",
        "_unsynced_index_segment",
        "_unsynced_snapshots",
        "appender",
        "device",
        "directory",
        "flush_recorder",
        "segments",
        "topic_partition",
    )

    def __init__(
        self,
        directory: Path,
        config: TopicConfig,
        segments: LogSegments,
        *,
        recovery_point: int,
        next_offset: int,
        time_ms: TimeMs,
        flush_recorder: FlushRecorder | None = None,
        delete_scheduler: Callable[[int, list[LogSegment]], None] | None = None,
    ) -> None:
        #: the append owner: the LEO as a plain int on the append path (its
        #: metadata -- segment, position -- is derived on demand: the active
        #: segment's size is always the position of the LEO), the recovery
        #: point, the closed flag, the config, and the active segment's state
        self.appender = ActiveSegment(next_offset, recovery_point)
        self.appender.configure(config)
        self.directory = directory
        self.segments = segments
        segments.follow(self.appender)
        self._time_ms = time_ms
        self.flush_recorder: FlushRecorder = flush_recorder or NullFlushRecorder()
        self._lock = threading.Lock()
        self._flush_mutex = threading.Lock()
        self._truncations = 0
        self._last_flush_time = time_ms()
        self._pending_deletes: list[tuple[int, list[LogSegment]]] = []
        self._delete_scheduler = delete_scheduler
        self._unsynced_snapshots: list[Path] = []
        #: the segment whose index files the last flush left unsynced because
        #: recovery would rescan it (see flush); only flush reads and writes this
        self._unsynced_index_segment: LogSegment | None = None
        self._new_files_since_flush = True
        self.topic_partition = files.parse_topic_partition_name(directory.name)
        #: the file system the log lives on (a rename for deletion stays on it)
        self.device = os.stat(directory).st_dev

    # ---- state held by the append owner --------------------------------------------

    @property
    def config(self) -> TopicConfig:
        config = self.appender.config
        assert config is not None
        return config

    @config.setter
    def config(self, config: TopicConfig) -> None:
        self.appender.configure(config)

    # ---- offsets -------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.appender.log_end_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._leo

    @property
    def _leo(self) -> LogOffsetMetadata:
        active = self.segments.active_segment
        return LogOffsetMetadata(self.appender.log_end_offset, active.base_offset, active.log.size)

    @property
    def recovery_point(self) -> int:
        return self.appender.recovery_point

    @property
    def last_flush_time(self) -> int:
        return self._last_flush_time

    @property
    def unflushed_messages(self) -> int:
        appender = self.appender
        return appender.log_end_offset - appender.recovery_point

    def update_log_end_offset(self, end_offset: int) -> None:
        appender = self.appender
        appender.log_end_offset = end_offset
        if appender.recovery_point > end_offset:
            with self._lock:
                appender.recovery_point = end_offset

    def check_open(self) -> None:
        if self.appender.closed:
            raise LogClosedError(f"The log of {self.topic_partition} is closed")

    # ---- appends and rolls -------------------------------------------------------------

    def append(
        self,
        last_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        records: memoryview | bytes | bytearray,
    ) -> None:
        self.appender.append(
            last_offset, largest_timestamp, shallow_offset_of_max_timestamp, records
        )

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected, LEO) (``LocalLog.roll``)."""
        self.check_open()
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.segments.active_segment
        config = self.config
        with self._lock:
            if new_offset in self.segments:
                if active.base_offset == new_offset and active.size == 0:
                    # KAFKA-6388: an empty active segment whose index reports full
                    logger.warning(
                        "Trying to roll a new log segment with start offset %d while it already "
                        "exists and is active with size 0",
                        new_offset,
                    )
                    self.segments.remove(new_offset)
                    active.close_handlers()
                    active.delete_if_exists()
                else:
                    raise KafkaStorageError(
                        f"Trying to roll a new log segment for {self.topic_partition} with start "
                        f"offset {new_offset} while it already exists."
                    )
            elif new_offset < active.base_offset:
                raise KafkaStorageError(
                    f"Trying to roll a new log segment for {self.topic_partition} with start "
                    f"offset {new_offset} lower than start offset of the active segment {active}"
                )
            else:
                for path in (
                    files.log_file(self.directory, new_offset),
                    files.offset_index_file(self.directory, new_offset),
                    files.time_index_file(self.directory, new_offset),
                    files.txn_index_file(self.directory, new_offset),
                ):
                    if path.exists():
                        logger.warning(
                            "Newly rolled segment file %s already exists; deleting it first", path
                        )
                        path.unlink()
                active.on_become_inactive_segment()
            segment = LogSegment.open(
                self.directory,
                new_offset,
                config,
                time_ms=self._time_ms,
                init_file_size=config.segment_bytes if config.preallocate else 0,
                preallocate=config.preallocate,
            )
            self.segments.add(segment)
            self._new_files_since_flush = True
        self.update_log_end_offset(self.log_end_offset)
        return segment

    def add_unsynced_snapshot(self, path: Path) -> None:
        with self._lock:
            self._unsynced_snapshots.append(path)

    # ---- reads ---------------------------------------------------------------------------

    def collect_aborted_transactions(
        self, log_start_offset: int, base_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """``LocalLog.collectAbortedTransactions``: from the segment holding
        ``base_offset`` on, each segment's aborted transactions overlapping
        ``[log_start_offset, upper_bound_offset)`` (``LogSegment.collectAbortedTxns``),
        until one says the search is complete (an entry's last stable offset
        reached the upper bound). A segment without a ``.txnindex`` costs no
        read; one with entries is read a chunk at a time and not past the
        entry that completes the search."""
        segments = self.segments
        segment = segments.floor_segment(base_offset)
        found: list[AbortedTxn] = []
        while segment is not None:
            result = segment.collect_aborted_txns(log_start_offset, upper_bound_offset)
            found.extend(result.aborted_transactions)
            if result.is_complete:
                break
            segment = segments.higher_segment(segment.base_offset)
        return found

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Segment and position of the batch holding ``offset``
        (``convertToOffsetMetadataOrThrow``)."""
        info = self.read(offset, 1, False, self._leo)
        return info.fetch_offset_metadata

    def read(
        self,
        start_offset: int,
        max_length: int,
        min_one_message: bool,
        max_offset_metadata: LogOffsetMetadata,
    ) -> FetchDataInfo:
        """``LocalLog.read``: batches from ``start_offset`` as a file slice."""
        self.check_open()
        end_offset = self.appender.log_end_offset
        segment = self.segments.floor_segment(start_offset)
        if start_offset > end_offset or segment is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition "
                f"{self.topic_partition}, but we only have log segments upto {end_offset}."
            )
        if start_offset == max_offset_metadata.message_offset:
            return FetchDataInfo(max_offset_metadata, None)
        if start_offset > max_offset_metadata.message_offset:
            return FetchDataInfo(self.offset_metadata(start_offset), None)
        while segment is not None:
            if segment.base_offset < max_offset_metadata.segment_base_offset:
                max_position: int | None = segment.size
            elif (
                segment.base_offset == max_offset_metadata.segment_base_offset
                and not max_offset_metadata.message_offset_only
            ):
                max_position = max_offset_metadata.relative_position_in_segment
            else:
                max_position = None
            info = segment.read(start_offset, max_length, max_position, min_one_message)
            if info is not None:
                return info
            segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo(self._leo, None)

    # ---- truncation and deletion ----------------------------------------------------------

    def truncate_to(self, target_offset: int) -> list[LogSegment]:
        """Remove segments above ``target_offset``, cut the new active one."""
        with self._lock:
            self._truncations += 1
            deletable = [s for s in self.segments if s.base_offset > target_offset]
            self._remove_segments(deletable)
            self.segments.active_segment.truncate_to(target_offset)
            self.appender.recovery_point = min(self.appender.recovery_point, target_offset)
        self.update_log_end_offset(target_offset)
        return deletable

    def truncate_fully_and_start_at(self, new_offset: int) -> list[LogSegment]:
        self.check_open()
        with self._lock:
            self._truncations += 1
            removed = list(self.segments)
            self._remove_segments(removed)
            config = self.config
            for path in (
                files.log_file(self.directory, new_offset),
                files.offset_index_file(self.directory, new_offset),
                files.time_index_file(self.directory, new_offset),
            ):
                path.unlink(missing_ok=True)
            self.segments.add(
                LogSegment.open(
                    self.directory,
                    new_offset,
                    config,
                    time_ms=self._time_ms,
                    init_file_size=config.segment_bytes if config.preallocate else 0,
                    preallocate=config.preallocate,
                )
            )
            self.appender.recovery_point = min(self.appender.recovery_point, new_offset)
            self._new_files_since_flush = True
        self.update_log_end_offset(new_offset)
        return removed

    def remove_and_delete_segments(self, to_delete: Iterable[LogSegment]) -> None:
        """Take segments out of the log and schedule their files for deletion."""
        with self._lock:
            self._remove_segments(list(to_delete))

    def _remove_segments(self, to_delete: list[LogSegment]) -> None:
        """Under ``_lock``: out of the list, renamed ``.deleted``, deleted after
        ``file.delete.delay.ms`` (a fetch may still be sending their bytes)."""
        if not to_delete:
            return
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
            if not segment.has_suffix(files.DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", files.DELETED_FILE_SUFFIX)
        self._schedule_delete(to_delete)

    def _schedule_delete(self, to_delete: list[LogSegment]) -> None:
        """Under ``_lock``: delete ``.deleted`` segments after ``file.delete.delay.ms``."""
        deadline = self._time_ms() + self.config.file_delete_delay_ms
        if self._delete_scheduler is not None:
            self._delete_scheduler(deadline, list(to_delete))
        else:
            self._pending_deletes.append((deadline, list(to_delete)))

    def delete_expired_files(self, now_ms: int | None = None, *, all_now: bool = False) -> int:
        """Delete ``.deleted`` segment files whose delay has passed; returns how many segments."""
        now = self._time_ms() if now_ms is None else now_ms
        due: list[LogSegment] = []
        with self._lock:
            keep = []
            for deadline, segments in self._pending_deletes:
                if all_now or deadline <= now:
                    due.extend(segments)
                else:
                    keep.append((deadline, segments))
            self._pending_deletes = keep
        for segment in due:
            segment.delete_if_exists()
        return len(due)

    @property
    def pending_deletes(self) -> int:
        return sum(len(s) for _, s in self._pending_deletes)

    # ---- the log cleaner ----------------------------------------------------------------------

    def open_reader(self, segment: LogSegment) -> int:
        """A descriptor of the caller's own on a segment's ``.log`` (``os.dup``),
        for a thread that reads sealed segments (the log cleaner). Taken under
        ``_lock``, so the segment's descriptor cannot be closed meanwhile:
        LogClosedError when the log is closed or the segment no longer in it."""
        with self._lock:
            if self.appender.closed:
                raise LogClosedError(f"The log of {self.topic_partition} is closed")
            if self.segments.get(segment.base_offset) is not segment:
                raise LogClosedError(f"{segment} is no longer a segment of {self.topic_partition}")
            return os.dup(segment.log.fd)

    def replace_segments(
        self, new: LogSegment, old: list[LogSegment], placeholder: LogSegment | None = None
    ) -> list[LogSegment] | None:
        """The cleaner's swap (``LocalLog.replaceSegments``), on the owner thread.

        ``new`` (and the ``placeholder``, an empty segment at the last old
        base, see ``cleaner.py``) are ``.cleaned`` files; ``old`` the sealed
        segments they replace. None, with nothing changed, when the log is
        closed or the old segments are no longer all in it. Otherwise:

        1. new segments ``.cleaned`` -> ``.swap``, newest first;
        2. ``new`` takes the place of ``old`` in the segment list; every old
           segment is renamed ``.deleted`` (oldest first) and deleted after
           ``file.delete.delay.ms``, its descriptors open until then (a fetch
           may be sending its bytes);
        3. ``.swap`` -> final names, oldest first; the placeholder's files,
           which took the last old segment's names, are deleted.

        A crash anywhere in between is finished or undone by the next start
        (``recovery._remove_temp_files_and_swap``). Returns the old segments
        whose base offset no new segment took (their producer snapshots go).
        """
        news = [new] if placeholder is None else [new, placeholder]
        with self._lock:
            if self.appender.closed or any(self.segments.get(s.base_offset) is not s for s in old):
                return None
            for segment in reversed(news):
                segment.change_file_suffixes(files.CLEANED_FILE_SUFFIX, files.SWAP_FILE_SUFFIX)
            maybe_crash("swap")
            self.segments.add(new)
            gone = []
            for i, segment in enumerate(old):
                if segment.base_offset != new.base_offset:
                    self.segments.remove(segment.base_offset)
                    gone.append(segment)
                segment.change_file_suffixes("", files.DELETED_FILE_SUFFIX)
                if i == 0:
                    maybe_crash("delete")
            self._schedule_delete(old)
            new.change_file_suffixes(files.SWAP_FILE_SUFFIX, "")
            maybe_crash("rename")
            if placeholder is not None:
                placeholder.change_file_suffixes(files.SWAP_FILE_SUFFIX, "")
                placeholder.close_handlers()
                placeholder.delete_if_exists()
            self._new_files_since_flush = True
        return gone

    # ---- flushing ---------------------------------------------------------------------------

    def start_writeback(self) -> bool:
        """Owner thread: start write-out of the active segment's new bytes
        without waiting (``broker/log/writeback.py``); a flush must still
        follow for durability. Pages of a segment rolled since the last call
        are left to that flush."""
        if self.appender.closed:
            return False
        return self.segments.active().log.start_writeback()

    def flush(self, offset: int, *, include_empty_active: bool = False) -> bool:
        """Make every offset < ``offset`` durable; returns True if it fsynced.

        Safe from a flusher thread (module docstring). Flushes up to the LEO
        seen when it starts, which may cover more than asked (group commit).
        """
        with self._flush_mutex:
            with self._lock:
                if self.appender.closed:
                    return False
                start = self.appender.recovery_point
                target = self.appender.log_end_offset
                if offset <= start and not include_empty_active:
                    return False
                end = target + 1 if include_empty_active else target
                segments = self.segments.values(start, end) if start < end else []
                if include_empty_active:
                    # like Kafka's segment flush, which opens (creates) lazy indexes;
                    # only the owner thread asks for this (shutdown)
                    for segment in segments:
                        segment.offset_index.flush()
                        segment.time_index.flush()
                # The segment the new recovery point falls in is scanned again, and
                # its indexes rebuilt, by any unclean-shutdown recovery (LogLoader
                # recovers from the floor segment of the recovery point), so fsyncing
                # its index files now would buy nothing. Kafka (LogSegment.flush)
                # fsyncs them on every flush, which costs each acks=all round two
                # more device flushes. The skipped segment is remembered: the next
                # flush fsyncs its indexes once the recovery point has moved to a
                # later segment (after a roll), before recovery would trust them.
                # Not at shutdown: a clean start trusts every index.
                rescanned = None if include_empty_active else self.segments.floor_segment(end)
                owed = self._unsynced_index_segment
                owed_fds: list[int] = []  # its indexes, if recovery would trust them now
                plan: list[tuple[int, list[int]]] = []  # per segment: .log, index files
                try:
                    if owed is not None and owed is not rescanned and owed not in segments:
                        owed_fds = _open_all(owed.flush_paths())
                    for segment in segments:
                        # the .log's fd joins the plan before its index files are
                        # opened, so a failed open still closes it
                        index_fds: list[int] = []
                        plan.append((os.dup(segment.log.fd), index_fds))
                        if segment is not rescanned:
                            index_fds.extend(_open_all(segment.flush_paths()))
                    snapshots = self._unsynced_snapshots
                    self._unsynced_snapshots = []
                    sync_dir = self._new_files_since_flush
                    self._new_files_since_flush = False
                    generation = self._truncations
                except BaseException:
                    _close_all(owed_fds, plan)
                    raise
            try:
                for fd in owed_fds:
                    os.fsync(fd)
                for log_fd, index_fds in plan:
                    began = time.perf_counter()
                    os.fsync(log_fd)
                    for fd in index_fds:
                        os.fsync(fd)
                    self.flush_recorder.record_flush(time.perf_counter() - began)
                for path in snapshots:
                    try:
                        fd = os.open(path, os.O_RDONLY)
                    except FileNotFoundError:
                        continue
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                if sync_dir:
                    fsync_dir(self.directory)
            finally:
                _close_all(owed_fds, plan)
            self._unsynced_index_segment = rescanned
            self._advance_recovery_point(target, generation)
            return True

    def _advance_recovery_point(self, target: int, generation: int) -> None:
        """After a flush up to ``target``: move the recovery point, unless a
        truncation (``generation`` changed) made the flushed offsets stale."""
        with self._lock:
            if generation == self._truncations:
                appender = self.appender
                new_point = min(target, appender.log_end_offset)
                appender.recovery_point = max(appender.recovery_point, new_point)
            self._last_flush_time = self._time_ms()

    def _claim_synced_flush(self, offset: int) -> tuple[int, int] | None:
        """First half of a flush done by a file-system-wide sync
        (:func:`flush_together`; the caller holds ``_flush_mutex``): the LEO
        and truncation generation the sync will cover, or None if nothing
        below ``offset`` is left to flush. The sync covers every file of the
        log, so the snapshots and directory entries owed are taken too."""
        with self._lock:
            if self.appender.closed or offset <= self.appender.recovery_point:
                return None
            self._unsynced_snapshots = []
            self._new_files_since_flush = False
            return self.appender.log_end_offset, self._truncations

    def _settle_synced_flush(self, claim: tuple[int, int], seconds: float) -> None:
        """Second half of :meth:`_claim_synced_flush`, once the sync returned."""
        # the sync covered the index files a per-file flush left owed
        self._unsynced_index_segment = None
        self.flush_recorder.record_flush(seconds)
        target, generation = claim
        self._advance_recovery_point(target, generation)

    # ---- lifecycle ----------------------------------------------------------------------------

    def file_slice_of(self, segment: LogSegment, position: int, size: int) -> FileSlice:
        return segment.log.slice(position, size)

    def close(self) -> None:
        with self._lock:
            if self.appender.closed:
                return
            self.appender.closed = True
            for segment in self.segments:
                segment.close()
        self.delete_expired_files(all_now=True)

    def close_handlers(self) -> None:
        with self._lock:
            self.appender.closed = True
            for segment in self.segments:
                if not segment.log.is_closed:
                    segment.close_handlers()
            pending = [s for _, group in self._pending_deletes for s in group]
            self._pending_deletes = []
        for segment in pending:
            segment.close_handlers()

    def mark_closed(self) -> None:
        """Refuse appends and reads from now on, keep the descriptors."""
        with self._lock:
            self.appender.closed = True

    @property
    def is_closed(self) -> bool:
        return self.appender.closed

    def delete_all_segments(self) -> None:
        """Close and delete every segment file now (partition deletion)."""
        with self._lock:
            self.appender.closed = True
            for segment in list(self.segments):
                self.segments.remove(segment.base_offset)
                segment.close_handlers()
                segment.delete_if_exists()
            pending = [s for _, group in self._pending_deletes for s in group]
            self._pending_deletes = []
        for segment in pending:
            segment.delete_if_exists()

    def rename_dir(self, new_dir: Path) -> None:
        """Move the partition folder (deletion); segment paths follow."""
        with self._lock:
            os.replace(self.directory, new_dir)
            self.directory = new_dir
            for segment in self.segments:
                segment.update_parent_dir(new_dir)


def flush_together(logs: Sequence[tuple[LocalLog, int]], sync: Callable[[], None]) -> int:
    """Flush several logs of one file system with a single ``sync`` (a syncfs of
    it: ``broker/log/syncfs.py``): each ``(log, offset)`` becomes durable below
    ``offset`` (and up to the LEO seen before the sync, like :meth:`LocalLog.flush`).
    Returns how many logs needed it; ``sync`` is not called when none did.

    Each log's ``_flush_mutex`` is held from the claim to the settle, so no
    per-file flush of the same log interleaves (it would otherwise record
    index files as owed while this settles them). The mutexes are taken in
    one global order (``id``), so two callers cannot deadlock."""
    ordered = sorted(logs, key=lambda item: id(item[0]))
    with contextlib.ExitStack() as held:
        for local, _ in ordered:
            held.enter_context(local._flush_mutex)
        claims: list[tuple[LocalLog, tuple[int, int]]] = []
        for local, offset in ordered:
            claim = local._claim_synced_flush(offset)
            if claim is not None:
                claims.append((local, claim))
        if not claims:
            return 0
        began = time.perf_counter()
        sync()
        seconds = time.perf_counter() - began
        for local, claim in claims:
            local._settle_synced_flush(claim, seconds)
        return len(claims)


def _open_all(paths: Iterable[Path]) -> list[int]:
    """Read-only descriptors of the files that exist (for fsync from a flusher)."""
    fds: list[int] = []
    try:
        for path in paths:
            try:
                fds.append(os.open(path, os.O_RDONLY))
            except FileNotFoundError:
                continue
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _close_all(fds: list[int], plan: list[tuple[int, list[int]]]) -> None:
    for fd in fds:
        os.close(fd)
    for log_fd, index_fds in plan:
        os.close(log_fd)
        for fd in index_fds:
            os.close(fd)
