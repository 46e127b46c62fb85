"""Cleaning one log (Kafka's ``Cleaner`` in ``LogCleaner.scala``).

:meth:`Cleaner.clean` takes a :class:`~broker.log.cleaning_plan.CleaningJob`
(prepared on the thread that owns the log) and, on the cleaner's thread:

1. builds the offset map (key hash -> latest offset) over the cleanable dirty
   section, segment by segment from the first dirty offset, until the map
   holds ``slots x log.cleaner.io.buffer.load.factor`` keys; the map's last
   offset + 1 is where this cleaning ends (``end_offset``) and the next one
   starts;
2. groups the segments below ``end_offset`` (clean section included: it is
   re-copied, dropping what the new map supersedes) into runs of at most
   ``segment.bytes`` of log and ``segment.index.bytes`` of each index whose
   offsets fit one segment (``groupSegmentsBySize``);
3. cleans each group into one ``<first base>.log.cleaned`` segment: chunk by
   chunk (``log.cleaner.io.buffer.size`` / threads / 2 for reading and for
   writing, grown for a larger batch), every entry through the compiled
   filter (``clean_loops.filter_chunk``; compressed entries through
   ``cleaner_entries``), then the new segment's indexes are built by the
   recovery scan (which also checks every batch it wrote), the files trimmed,
   fsynced and given the last old segment's mtime (``setLastModified``);
4. hands the swap to the owner thread (``UnifiedLog.replace_segments``):
   ``.cleaned`` -> ``.swap``, old segments out of the list and renamed
   ``.deleted`` (removed after ``file.delete.delay.ms``, so a fetch sending
   their bytes is not cut), ``.swap`` -> final names. If the log changed
   meanwhile (deleted, closed, the segments gone) the swap is refused and the
   cleaning is aborted: its files are deleted.

Memory: the offset map (fixed, ``dedupe.buffer.size / threads``), the two
I/O buffers, and for a compressed batch its records decompressed (at most
``max(64 MiB, 16 x max.message.bytes)``) and recompressed.

The time of a cleaning (``now``, for delete horizons) is taken once, when
the job is prepared (``Cleaner.doClean``'s ``currentTime``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from broker.errors import CorruptRecordError
from broker.log import clean_loops, files
from broker.log.checkpoints import fsync_dir
from broker.log.cleaner_entries import (
    decompression_bound,
    entry_size,
    filter_compressed,
    map_compressed,
)
from broker.log.cleaner_faults import maybe_crash
from broker.log.cleaning_plan import CleaningJob, SegmentSnapshot
from broker.log.errors import LogCleaningAbortedError, LogClosedError
from broker.log.files import TopicPartition
from broker.log.recovery import recover_segment
from broker.log.segment import LogSegment
from broker.log.throttler import Throttler
from broker.records.batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    RECORDS_COUNT_OFFSET,
    RECORDS_OFFSET,
)

logger = logging.getLogger("broker.log.cleaner")

INT_MAX = 2**31 - 1
T = TypeVar("T")

#: run a callable on the thread that owns the logs and return its result
OwnerCall = Callable[[Callable[[], T]], T]


def direct_call(fn: Callable[[], T]) -> T:
    """The owner call when the caller is the owner thread (tests, tools)."""
    return fn()


@dataclass
class CleanerStats:
    """``CleanerStats``: what one cleaning read and wrote, and how long it took."""

    start_time: float = field(default_factory=time.monotonic)
    map_complete_time: float = -1.0
    end_time: float = -1.0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    messages_written: int = 0
    buffer_utilization: float = 0.0

    def index_done(self) -> None:
        self.map_complete_time = time.monotonic()

    def all_done(self) -> None:
        self.end_time = time.monotonic()

    @property
    def elapsed_secs(self) -> float:
        return max(self.end_time - self.start_time, 0.0)

    @property
    def elapsed_index_secs(self) -> float:
        return max(self.map_complete_time - self.start_time, 0.0)


class Cleaner:
    """Cleans logs with one offset map and one pair of I/O buffers (one per thread)."""

    def __init__(
        self,
        cleaner_id: int,
        offset_map: clean_loops.OffsetMap,
        *,
        io_buffer_size: int,
        max_io_buffer_size: int,
        dup_buffer_load_factor: float,
        throttler: Throttler,
        check_done: Callable[[TopicPartition], None],
        owner_call: OwnerCall[object] = direct_call,
    ) -> None:
        if offset_map.slots * dup_buffer_load_factor <= 1:
            raise ValueError(
                "offset map is too small to fit in even a single message, so log cleaning will "
                "never make progress. You can increase log.cleaner.dedupe.buffer.size or "
                "decrease log.cleaner.threads"
            )
        self.id = cleaner_id
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 64)
        self.max_io_buffer_size = max_io_buffer_size
        self.dup_buffer_load_factor = dup_buffer_load_factor
        self.throttler = throttler
        self.check_done = check_done
        self.owner_call = owner_call
        self._read_buffer = bytearray(self.io_buffer_size)
        self._write_buffer = bytearray(self.io_buffer_size)
        #: the largest the buffers grew in this cleaner's life (the memory bound's second term)
        self.peak_buffer_bytes = 2 * self.io_buffer_size

    # ---- one log ----------------------------------------------------------------------

    def clean(self, job: CleaningJob) -> tuple[int, CleanerStats]:
        """``Cleaner.doClean``: returns the first offset not cleaned and the stats."""
        tp = job.topic_partition
        logger.info("Beginning cleaning of log %s", tp)
        stats = CleanerStats()
        to_clean = job.to_clean
        try:
            self.build_offset_map(
                job, to_clean.first_dirty_offset, to_clean.first_uncleanable_offset, stats
            )
            end_offset = self.offset_map.latest_offset + 1
            stats.index_done()
            groups = group_segments_by_size(
                job.segments_between(0, end_offset),
                job.config.segment_bytes,
                job.config.segment_index_bytes,
                to_clean.first_uncleanable_offset,
            )
            producers = clean_loops.ActiveProducers(job.active_producers)
            for group in groups:
                self.clean_segments(job, group, producers, stats)
            stats.buffer_utilization = self.offset_map.utilization
        finally:
            # the map's pages go back to the OS between cleanings; the buffers shrink back
            self.offset_map.clear()
            self._restore_buffers()
        stats.all_done()
        return end_offset, stats

    # ---- the offset map ---------------------------------------------------------------

    def build_offset_map(self, job: CleaningJob, start: int, end: int, stats: CleanerStats) -> None:
        """``Cleaner.buildOffsetMap``: keys of [start, end) into the map, as many as fit."""
        offset_map = self.offset_map
        offset_map.clear()
        offset_map.track_superseded(start, end)
        dirty = job.segments_between(start, end)
        logger.info(
            "Building offset map for log %s for %d segments in offset range [%d, %d).",
            job.topic_partition,
            len(dirty),
            start,
            end,
        )
        max_entries = int(offset_map.slots * self.dup_buffer_load_factor)
        for i, view in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            self.check_done(job.topic_partition)
            position = job.first_dirty_position if i == 0 else 0
            if self._map_segment(
                job,
                view,
                position,
                start_offset=start,
                next_segment_start=next_start,
                max_entries=max_entries,
                stats=stats,
            ):
                logger.debug(
                    "Offset map is full, %d segments fully mapped, segment with base offset %d "
                    "is partially mapped",
                    i,
                    view.base_offset,
                )
                break
        logger.info("Offset map for log %s complete.", job.topic_partition)

    def _map_segment(
        self,
        job: CleaningJob,
        view: SegmentSnapshot,
        position: int,
        *,
        start_offset: int,
        next_segment_start: int,
        max_entries: int,
        stats: CleanerStats,
    ) -> bool:
        """``buildOffsetMapForSegment``; True when the map filled up."""
        offset_map = self.offset_map
        bound = decompression_bound(job.config.max_message_bytes)
        fd = self._open(job, view)
        try:
            while position < view.size:
                self.check_done(job.topic_partition)
                n = self._read(fd, position, view.size)
                self.throttler.maybe_throttle(n)
                buf = self._read_buffer
                p = 0
                while True:
                    p, status, read = clean_loops.map_chunk(
                        offset_map, buf, p, n, start_offset=start_offset, max_entries=max_entries
                    )
                    stats.map_messages_read += read
                    if status == clean_loops.MAP_FULL:
                        return True
                    if status == clean_loops.DONE:
                        break
                    full, read, last_offset = map_compressed(
                        offset_map,
                        buf,
                        p,
                        start_offset=start_offset,
                        max_entries=max_entries,
                        bound=bound,
                    )
                    stats.map_messages_read += read
                    if full:
                        return True
                    if last_offset >= start_offset:
                        offset_map.update_latest_offset(last_offset)
                    p += entry_size(buf, p)
                stats.map_bytes_read += p
                if p == 0:
                    self._grow_or_fail(view, position, n)
                position += p
        finally:
            os.close(fd)
        # an offset gap at the end of the segment: the map covers it too
        offset_map.update_latest_offset(next_segment_start - 1)
        return False

    # ---- cleaning -----------------------------------------------------------------------

    def clean_segments(
        self,
        job: CleaningJob,
        group: list[SegmentSnapshot],
        producers: clean_loops.ActiveProducers,
        stats: CleanerStats,
    ) -> None:
        """``Cleaner.cleanSegments``: a group into one new segment, swapped in."""
        base = group[0].base_offset
        cleaned = create_cleaned_segment(job, base)
        placeholder: LogSegment | None = None
        try:
            for view in group:
                retain_legacy_deletes = view.last_modified > job.legacy_delete_horizon_ms
                logger.info(
                    "Cleaning %s in log %s into %d with an upper bound deletion horizon %d "
                    "computed from the segment last modified time of %d, %s deletes.",
                    view.segment,
                    job.topic_partition,
                    base,
                    job.legacy_delete_horizon_ms,
                    view.last_modified,
                    "retaining" if retain_legacy_deletes else "discarding",
                )
                self.clean_into(
                    job,
                    view,
                    cleaned,
                    producers,
                    retain_legacy_deletes=retain_legacy_deletes,
                    stats=stats,
                )
            # every transactional batch and marker is kept whole (KEEP_TXN in _clean_py.py),
            # so each aborted transaction the old segments index stays one of the cleaned
            # segment (Kafka's CleanedTransactionMetadata re-appends them as it reads the
            # markers it keeps)
            for view in group:
                for aborted in view.segment.txn_index.aborted_txns():
                    cleaned.txn_index.append(aborted)
            next_offset = finish_cleaned_segment(
                cleaned, group[-1].last_modified, self._read_buffer
            )
            # Kafka's swap recovery deletes the old files in [first base, next offset of
            # the swap); a group whose later segments were cleaned away entirely would
            # leave them behind after a crash mid-swap. An empty placeholder segment at
            # the last old base extends that range and replaces its files (deviations.md)
            if len(group) > 1 and next_offset <= group[-1].base_offset:
                placeholder = create_cleaned_segment(job, group[-1].base_offset)
                finish_cleaned_segment(placeholder, group[-1].last_modified, self._read_buffer)
            fsync_dir(job.directory)
            maybe_crash("cleaned")
            old = [view.segment for view in group]
            log = job.log
            logger.info(
                "Swapping in cleaned segment %s for segment(s) %s in log %s",
                cleaned,
                old,
                job.topic_partition,
            )
            swapped = self.owner_call(lambda: log.replace_segments(cleaned, old, placeholder))
            if not swapped:
                raise LogCleaningAbortedError(
                    f"the segments of {job.topic_partition} changed during the cleaning"
                )
            fsync_dir(log.dir)
        except BaseException:
            for segment in (cleaned, placeholder):
                if segment is not None and segment.has_suffix(files.CLEANED_FILE_SUFFIX):
                    segment.close_handlers()
                    segment.delete_if_exists()
            raise

    def clean_into(
        self,
        job: CleaningJob,
        view: SegmentSnapshot,
        dest: LogSegment,
        producers: clean_loops.ActiveProducers,
        *,
        retain_legacy_deletes: bool,
        stats: CleanerStats,
    ) -> None:
        """``Cleaner.cleanInto``: one source segment through the filter into ``dest``."""
        offset_map = self.offset_map
        latest = offset_map.latest_offset
        now = job.now
        new_horizon = now + job.config.delete_retention_ms
        bound = decompression_bound(job.config.max_message_bytes)
        fd = self._open(job, view)
        position = 0
        try:
            while position < view.size:
                self.check_done(job.topic_partition)
                n = self._read(fd, position, view.size)
                self.throttler.maybe_throttle(n)
                buf = self._read_buffer
                p = 0
                out = 0
                while True:
                    p, out, status, read, kept, bytes_read, invalid = clean_loops.filter_chunk(
                        offset_map,
                        producers,
                        buf,
                        p,
                        n,
                        out=self._write_buffer,
                        out_pos=out,
                        latest_offset=latest,
                        now=now,
                        new_horizon=new_horizon,
                        retain_legacy_deletes=retain_legacy_deletes,
                    )
                    stats.messages_read += read
                    stats.messages_written += kept
                    stats.bytes_read += bytes_read
                    stats.invalid_messages_read += invalid
                    if status == clean_loops.DONE:
                        break
                    if status == clean_loops.OUT_FULL:
                        if out == 0:
                            self._grow_write_buffer(worst_output(buf, p))
                        else:
                            out = self._flush(dest, out, stats)
                        continue
                    filtered = filter_compressed(
                        offset_map,
                        producers,
                        buf,
                        p,
                        latest_offset=latest,
                        now=now,
                        new_horizon=new_horizon,
                        retain_legacy_deletes=retain_legacy_deletes,
                        bound=bound,
                    )
                    size = entry_size(buf, p)
                    stats.messages_read += filtered.read
                    stats.messages_written += filtered.kept
                    stats.bytes_read += size
                    stats.invalid_messages_read += filtered.invalid
                    data = filtered.data
                    if data:
                        if out + len(data) > len(self._write_buffer):
                            out = self._flush(dest, out, stats)
                            self._grow_write_buffer(len(data))
                        self._write_buffer[out : out + len(data)] = data
                        out += len(data)
                    p += size
                self._flush(dest, out, stats)
                if p == 0:
                    self._grow_or_fail(view, position, n)
                position += p
        finally:
            os.close(fd)

    # ---- buffers and files --------------------------------------------------------------

    def _open(self, job: CleaningJob, view: SegmentSnapshot) -> int:
        try:
            return job.log.local_log.open_reader(view.segment)
        except (OSError, LogClosedError) as exc:
            raise LogCleaningAbortedError(f"cannot read {view.path}: {exc}") from exc

    def _read(self, fd: int, position: int, size: int) -> int:
        """Fill the read buffer from ``position`` (at most to ``size``); bytes read."""
        buf = self._read_buffer
        want = min(len(buf), size - position)
        view = memoryview(buf)
        got = 0
        try:
            while got < want:
                n = os.preadv(fd, [view[got:want]], position + got)
                if n <= 0:
                    break
                got += n
        finally:
            view.release()
        return got

    def _flush(self, dest: LogSegment, out: int, stats: CleanerStats) -> int:
        if out:
            with memoryview(self._write_buffer) as view:
                dest.log.append(view[:out])
            # write-out starts now (sync_file_range, no wait): the fsync before the
            # swap then waits for little (broker/log/writeback.py)
            dest.log.start_writeback()
            stats.bytes_written += out
            self.throttler.maybe_throttle(out)
        return 0

    def _grow_or_fail(self, view: SegmentSnapshot, position: int, n: int) -> None:
        """``growBuffersOrFail``: no complete entry fit the read buffer."""
        buf = self._read_buffer
        left = view.size - position
        if n < LOG_OVERHEAD:
            raise CorruptRecordError(
                f"Log segment may be corrupt, {left} bytes left in segment {view.path} at "
                f"position {position} are not a batch"
            )
        size = entry_size(buf, 0)
        if size > left:
            raise CorruptRecordError(
                f"Log segment may be corrupt, batch size {size} > {left} bytes left in segment "
                f"for log segment {view.path} at position {position}"
            )
        if size <= len(buf):
            raise CorruptRecordError(
                f"Batch size {size} < buffer size {len(buf)}, but not processed for log segment "
                f"{view.path} at position {position}"
            )
        logger.info("Growing cleaner I/O buffers from %d bytes to %d bytes.", len(buf), size)
        self._read_buffer = bytearray(size)
        self._grow_write_buffer(size)

    def _grow_write_buffer(self, size: int) -> None:
        if size > len(self._write_buffer):
            self._write_buffer = bytearray(size)
        self.peak_buffer_bytes = max(
            self.peak_buffer_bytes, len(self._read_buffer) + len(self._write_buffer)
        )

    def _restore_buffers(self) -> None:
        if len(self._read_buffer) > self.io_buffer_size:
            self._read_buffer = bytearray(self.io_buffer_size)
        if len(self._write_buffer) > self.io_buffer_size:
            self._write_buffer = bytearray(self.io_buffer_size)


def worst_output(buf: bytearray, pos: int) -> int:
    """The most bytes the filter may write for the entry at ``pos`` (the walks'
    ``OUT_FULL`` rule: a rebuilt record may gain 13 bytes, and a batch cannot
    hold more records than bytes)."""
    size = entry_size(buf, pos)
    count = 0
    if buf[pos + MAGIC_OFFSET] == MAGIC_V2:
        count = int.from_bytes(
            buf[pos + RECORDS_COUNT_OFFSET : pos + RECORDS_OFFSET], "big", signed=True
        )
    return size + 13 * min(max(count, 0), size)


def create_cleaned_segment(job: CleaningJob, base_offset: int) -> LogSegment:
    """``UnifiedLog.createNewCleanedSegment``: a fresh ``.cleaned`` segment."""
    directory = job.directory
    for path in (
        files.log_file(directory, base_offset, files.CLEANED_FILE_SUFFIX),
        files.offset_index_file(directory, base_offset, files.CLEANED_FILE_SUFFIX),
        files.time_index_file(directory, base_offset, files.CLEANED_FILE_SUFFIX),
        files.txn_index_file(directory, base_offset, files.CLEANED_FILE_SUFFIX),
    ):
        path.unlink(missing_ok=True)
    config = job.config
    return LogSegment.open(
        directory,
        base_offset,
        config,
        file_already_exists=False,
        init_file_size=config.segment_bytes if config.preallocate else 0,
        preallocate=config.preallocate,
        file_suffix=files.CLEANED_FILE_SUFFIX,
    )


def finish_cleaned_segment(
    segment: LogSegment, last_modified: int, buffer: bytearray | None = None
) -> int:
    """Indexes built by the recovery scan (which checks every batch written;
    through ``buffer``, the cleaner's read buffer), files trimmed and fsynced,
    mtime of the last old segment; returns the segment's next offset."""
    result = recover_segment(segment, buffer=buffer)
    if result.error is not None or result.truncated_bytes:
        raise CorruptRecordError(
            f"cleaned segment {segment.log.path} does not read back: {result.error}"
        )
    segment.on_become_inactive_segment()
    segment.flush()
    segment.set_last_modified(last_modified)
    return result.next_offset


def group_segments_by_size(
    segments: list[SegmentSnapshot],
    max_size: int,
    max_index_size: int,
    first_uncleanable_offset: int,
) -> list[list[SegmentSnapshot]]:
    """``Cleaner.groupSegmentsBySize``: runs of segments whose log bytes, offset
    index bytes and time index bytes each stay within the limits and whose
    offsets fit one segment (estimated from the next segment's base offset)."""
    grouped: list[list[SegmentSnapshot]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        log_size = group[0].size
        index_size = group[0].offset_index_bytes
        time_index_size = group[0].time_index_bytes
        while (
            rest
            and log_size + rest[0].size <= max_size
            and index_size + rest[0].offset_index_bytes <= max_index_size
            and time_index_size + rest[0].time_index_bytes <= max_index_size
            and (
                rest[0].size == 0
                or _last_offset_of_first(rest, first_uncleanable_offset) - group[0].base_offset
                <= INT_MAX
            )
        ):
            head = rest.pop(0)
            group.append(head)
            log_size += head.size
            index_size += head.offset_index_bytes
            time_index_size += head.time_index_bytes
        grouped.append(group)
    return grouped


def _last_offset_of_first(segments: list[SegmentSnapshot], first_uncleanable_offset: int) -> int:
    """``lastOffsetForFirstSegment``: the next segment's base - 1, or for the last
    one the first uncleanable offset - 1."""
    if len(segments) > 1:
        return segments[1].base_offset - 1
    return first_uncleanable_offset - 1


def cleaned_files(directory: Path) -> list[Path]:
    """``.cleaned`` files in a partition folder (tests, tools)."""
    return sorted(p for p in directory.iterdir() if p.name.endswith(files.CLEANED_FILE_SUFFIX))
