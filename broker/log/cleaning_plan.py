"""Which part of a log the cleaner may clean, and what it gets to clean it
(``LogCleanerManager`` object functions, ``LogToClean``).

A compacted log has a clean section (already cleaned: from the log start up
to the *first dirty offset*, the ``cleaner-offset-checkpoint`` entry) and a
dirty section after it, of which only the *cleanable* part may be cleaned.
The cleanable part ends at the first uncleanable offset, the least of:

* the last stable offset (no transactions here: the high watermark, the LEO);
* the active segment's base offset (the active segment is never cleaned);
* with ``min.compaction.lag.ms`` > 0, the base of the first dirty segment
  holding a record younger than the lag (its largest timestamp, or its
  mtime without timestamps, is within the lag of now);

rounded down to a segment base. Its *dirty ratio* is cleanable bytes /
(clean + cleanable bytes); a log is cleaned when its ratio is above
``min.cleanable.dirty.ratio`` or when ``max.compaction.lag.ms`` says a dirty
segment waited too long (``max_compaction_delay`` > 0).

All of this reads the log (segment list, sizes, timestamps, index lookups):
it runs on the thread that owns the logs. :func:`prepare_job` then copies
what the cleaner thread needs into a :class:`CleaningJob`, so that thread
never walks the live segment list.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.log.files import TopicPartition
from broker.log.segment import LogSegment

if TYPE_CHECKING:
    from broker.config import TopicConfig
    from broker.log.unified_log import UnifiedLog

logger = logging.getLogger("broker.log.cleaner")

LONG_MAX = 2**63 - 1


class OffsetsToClean(NamedTuple):
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    #: the checkpointed offset was invalid: write the first dirty offset back
    force_update_checkpoint: bool = False


def is_compact_and_delete(config: TopicConfig) -> bool:
    return config.compacted and any(p.lower() == "delete" for p in config.cleanup_policy)


def cleanable_offsets(log: UnifiedLog, last_clean_offset: int | None, now: int) -> OffsetsToClean:
    """``LogCleanerManager.cleanableOffsets``."""
    log_start = log.log_start_offset
    checkpoint = log_start if last_clean_offset is None else last_clean_offset
    force = False
    first_dirty = checkpoint
    if checkpoint < log_start:
        if not is_compact_and_delete(log.config):
            logger.warning(
                "Resetting first dirty offset of %s to log start offset %d since the "
                "checkpointed offset %d is invalid.",
                log.topic_partition,
                log_start,
                checkpoint,
            )
        first_dirty, force = log_start, True
    elif checkpoint > log.log_end_offset:
        logger.warning(
            "The last checkpoint dirty offset for partition %s is %d, which is larger than the "
            "log end offset %d. Resetting to the log start offset %d.",
            log.topic_partition,
            checkpoint,
            log.log_end_offset,
            log_start,
        )
        first_dirty, force = log_start, True
    candidates = [log.high_watermark, log.active_segment.base_offset]
    min_lag = max(log.config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for segment in log.non_active_log_segments_from(first_dirty):
            if segment.largest_timestamp() > now - min_lag:
                candidates.append(segment.base_offset)
                break
    return OffsetsToClean(first_dirty, max(first_dirty, min(candidates)), force)


def calculate_cleanable_bytes(
    log: UnifiedLog, first_dirty_offset: int, uncleanable_offset: int
) -> tuple[int, int]:
    """``LogCleanerManager.calculateCleanableBytes``: the first uncleanable offset
    rounded down to a segment base, and the bytes of the segments before it
    from the one holding the first dirty offset."""
    after = log.non_active_log_segments_from(uncleanable_offset)
    first_uncleanable = (after[0] if after else log.active_segment).base_offset
    segments = log.log_segments(min(first_dirty_offset, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in segments)


def max_compaction_delay(log: UnifiedLog, first_dirty_offset: int, now: int) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how long past
    ``max.compaction.lag.ms`` the oldest dirty record is (0: not past)."""
    stamps = [
        ts
        for s in log.non_active_log_segments_from(first_dirty_offset)
        if (ts := s.get_first_batch_timestamp()) > 0
    ]
    earliest = min(stamps, default=LONG_MAX)
    clean_until = now - max(log.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True)
class LogToClean:
    """``LogToClean``: a log and the sizes of its sections."""

    topic_partition: TopicPartition
    log: UnifiedLog
    first_dirty_offset: int
    uncleanable_offset: int
    need_compaction_now: bool
    clean_bytes: int
    first_uncleanable_offset: int
    cleanable_bytes: int

    @classmethod
    def of(
        cls,
        tp: TopicPartition,
        log: UnifiedLog,
        first_dirty_offset: int,
        uncleanable_offset: int,
        need_compaction_now: bool = False,
    ) -> LogToClean:
        clean = sum(s.size for s in log.log_segments(-1, first_dirty_offset))
        first_uncleanable, cleanable = calculate_cleanable_bytes(
            log, first_dirty_offset, uncleanable_offset
        )
        return cls(
            tp,
            log,
            first_dirty_offset,
            uncleanable_offset,
            need_compaction_now,
            clean,
            first_uncleanable,
            cleanable,
        )

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        total = self.total_bytes
        return self.cleanable_bytes / total if total else float("nan")


@dataclass(frozen=True)
class SegmentSnapshot:
    """A sealed segment as the cleaner thread sees it (taken on the owner thread)."""

    segment: LogSegment
    base_offset: int
    size: int
    last_modified: int
    offset_index_bytes: int
    time_index_bytes: int
    path: Path


@dataclass
class CleaningJob:
    """Everything one cleaning needs, copied on the owner thread."""

    to_clean: LogToClean
    directory: Path
    config: TopicConfig
    #: every segment with a base below the first uncleanable offset, oldest first
    segments: list[SegmentSnapshot]
    #: producer id -> (last data offset or -1, epoch) (``lastRecordsOfActiveProducers``)
    active_producers: dict[int, tuple[int, int]]
    now: int
    #: tombstones of v0/v1 segments modified before this go (``legacyDeleteHorizonMs``)
    legacy_delete_horizon_ms: int
    #: where the first dirty offset's batch starts in its segment
    first_dirty_position: int
    #: set by the cleaner: files of a cleaning that did not swap, to delete
    leftovers: list[Path] = field(default_factory=list)

    @property
    def topic_partition(self) -> TopicPartition:
        return self.to_clean.topic_partition

    @property
    def log(self) -> UnifiedLog:
        return self.to_clean.log

    def segments_between(self, start: int, end: int) -> list[SegmentSnapshot]:
        """``LogSegments.values(start, end)`` over the snapshot."""
        if start == end:
            return []
        out = []
        for i, s in enumerate(self.segments):
            following = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if s.base_offset >= end:
                break
            if following is not None and following <= start:
                continue
            out.append(s)
        return out


def _index_bytes(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def prepare_job(to_clean: LogToClean, now: int) -> CleaningJob:
    """On the owner thread: snapshot what the cleaner thread needs."""
    log = to_clean.log
    config = log.config
    views = []
    for segment in log.log_segments(0, to_clean.first_uncleanable_offset):
        loaded_offset, loaded_time = segment.indexes_loaded
        views.append(
            SegmentSnapshot(
                segment,
                segment.base_offset,
                segment.size,
                segment.last_modified(),
                segment.offset_index.size_in_bytes()
                if loaded_offset
                else _index_bytes(segment.offset_index_path),
                segment.time_index.size_in_bytes()
                if loaded_time
                else _index_bytes(segment.time_index_path),
                segment.log.path,
            )
        )
    clean_section = log.log_segments(0, to_clean.first_dirty_offset)
    legacy_horizon = (
        clean_section[-1].last_modified() - config.delete_retention_ms if clean_section else 0
    )
    first_dirty_position = 0
    dirty = log.log_segments(to_clean.first_dirty_offset, to_clean.first_uncleanable_offset)
    if dirty:
        first_dirty_position = dirty[0].offset_index.lookup(to_clean.first_dirty_offset).position
    producers = {
        pid: (entry.last_data_offset, entry.producer_epoch)
        for pid, entry in log.producer_state.active_producers.items()
    }
    return CleaningJob(
        to_clean,
        log.dir,
        config,
        views,
        producers,
        now,
        legacy_horizon,
        first_dirty_position,
    )
