"""Which partition is cleaned next, and the state of every cleaning (``LogCleanerManager.scala``).

Per partition a cleaning state (none, in progress, aborted, paused n times),
per log dir the ``cleaner-offset-checkpoint`` (the first dirty offset of each
compacted partition, Kafka's ``OffsetCheckpointFile`` format) and the set of
partitions marked uncleanable after a cleaning failed.

State transitions (Kafka's)::

    none --grab--> in progress --done--> none (checkpoint := end offset)
    in progress --abort--> aborted --done--> paused(1)   (abort_and_pause_cleaning)
    none --pause--> paused(1) --pause--> paused(2) ... --resume--> paused(n-1) / none

plus, for the owner thread that must not wait for a cleaner thread,
:meth:`abort_cleaning`: an in-progress cleaning is marked aborted and its
state simply cleared when it is done (Kafka's abortCleaning, which pauses,
waits, and resumes, ends in the same state).

Threads: every method takes ``_lock``, and asks for the list of logs (the
log manager's lock) before, never while holding it, so the two locks are
always taken in the log manager's order; :meth:`grab_filthiest_compacted_log`
reads the logs and runs on the thread that owns them (the cleaner threads
ask it through their owner call); checkpoint files are written by whichever
thread changes them (the cleaner threads when a cleaning is done). The
checkpoints are read from disk once, at start, and kept in memory.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from broker.log.checkpoints import OffsetCheckpointFile, cleaner_offset_checkpoint
from broker.log.cleaning_plan import (
    LogToClean,
    calculate_cleanable_bytes,
    cleanable_offsets,
    max_compaction_delay,
)
from broker.log.errors import CheckpointError, LogCleaningAbortedError
from broker.log.files import TopicPartition

if TYPE_CHECKING:
    from broker.log.unified_log import UnifiedLog

logger = logging.getLogger("broker.log.cleaner")


@dataclass(frozen=True)
class CleaningState:
    """``LogCleaningState``: in progress, aborted (``resume``: clear it when done
    instead of pausing) or paused ``paused`` times."""

    name: str
    paused: int = 0
    resume: bool = False


IN_PROGRESS = CleaningState("LogCleaningInProgress")
ABORTED = CleaningState("LogCleaningAborted")
ABORTED_THEN_RESUME = CleaningState("LogCleaningAborted", resume=True)


def paused(count: int) -> CleaningState:
    return CleaningState("LogCleaningPaused", count)


class PreCleanStats:
    """``PreCleanStats``: what one look for a log to clean found."""

    def __init__(self) -> None:
        self.max_compaction_delay_ms = 0
        self.delayed_partitions = 0
        self.cleanable_partitions = 0

    def update_max_compaction_delay(self, delay_ms: int) -> None:
        self.max_compaction_delay_ms = max(self.max_compaction_delay_ms, delay_ms)
        if delay_ms > 0:
            self.delayed_partitions += 1


class LogCleaningError(Exception):
    """``LogCleaningException``: cleaning ``log`` failed; its partition becomes uncleanable."""

    def __init__(self, log: UnifiedLog, message: str) -> None:
        super().__init__(message)
        self.log = log


LogsView = Callable[[], Mapping[TopicPartition, "UnifiedLog"]]


class LogCleanerManager:
    def __init__(
        self, log_dirs: Iterable[Path], logs: LogsView, time_ms: Callable[[], int]
    ) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._logs = logs
        self._time_ms = time_ms
        self._lock = threading.RLock()
        self._paused_cond = threading.Condition(self._lock)
        self._in_progress: dict[TopicPartition, CleaningState] = {}
        self._uncleanable: dict[Path, set[TopicPartition]] = {}
        self._files: dict[Path, OffsetCheckpointFile] = {}
        self._offsets: dict[Path, dict[TopicPartition, int]] = {}
        for log_dir in self.log_dirs:
            checkpoint = cleaner_offset_checkpoint(log_dir)
            self._files[log_dir] = checkpoint
            try:
                self._offsets[log_dir] = checkpoint.read()
            except CheckpointError as exc:
                logger.error("Failed to read the cleaner checkpoint of %s: %s", log_dir, exc)
                self._offsets[log_dir] = {}
        #: the cleanable ratio of the dirtiest log at the last look (``max-dirty-percent``)
        self.dirtiest_log_cleanable_ratio = 0.0
        self.time_of_last_run = time_ms()

    # ---- checkpoints ----------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        with self._lock:
            out: dict[TopicPartition, int] = {}
            for offsets in self._offsets.values():
                out.update(offsets)
            return out

    def update_checkpoints(
        self,
        log_dir: Path,
        update: tuple[TopicPartition, int] | None = None,
        remove: TopicPartition | None = None,
    ) -> None:
        """``updateCheckpoints``: the dir's checkpoint, restricted to existing logs,
        with ``update`` set and ``remove`` removed, written out."""
        logs = self._logs()
        with self._lock:
            checkpoint = self._files.get(log_dir)
            if checkpoint is None:
                return
            current = {tp: o for tp, o in self._offsets[log_dir].items() if tp in logs}
            if remove is not None:
                current.pop(remove, None)
            if update is not None:
                current[update[0]] = update[1]
            self._write(log_dir, current)

    def _write(self, log_dir: Path, offsets: dict[TopicPartition, int]) -> None:
        with self._lock:
            self._offsets[log_dir] = offsets
            checkpoint = self._files[log_dir]
            try:
                checkpoint.write(offsets)
            except OSError as exc:
                logger.error("Failed to write checkpoint file %s: %s", checkpoint.path, exc)

    def maybe_truncate_checkpoint(self, log_dir: Path, tp: TopicPartition, offset: int) -> None:
        """``maybeTruncateCheckpoint``: a log truncated below its checkpoint."""
        log = self._logs().get(tp)
        if log is None or not log.config.compacted:
            return
        with self._lock:
            if self._offsets.get(log_dir, {}).get(tp, 0) > offset:
                self._write(log_dir, {**self._offsets[log_dir], tp: offset})

    # ---- choosing a log ----------------------------------------------------------------

    def grab_filthiest_compacted_log(
        self, now: int, pre_clean_stats: PreCleanStats | None = None
    ) -> LogToClean | None:
        """``grabFilthiestCompactedLog``, on the thread that owns the logs: the
        compacted log with the highest cleanable ratio above its
        ``min.cleanable.dirty.ratio`` (or one past ``max.compaction.lag.ms``),
        marked in progress; None when no log needs cleaning."""
        stats = pre_clean_stats or PreCleanStats()
        logs = self._logs()
        with self._lock:
            self.time_of_last_run = now
            last_clean = self.all_cleaner_checkpoints()
            dirty: list[LogToClean] = []
            for tp, log in sorted(logs.items()):
                if not log.config.compacted or tp in self._in_progress:
                    continue
                if self.is_uncleanable_partition(log, tp):
                    continue
                try:
                    offsets = cleanable_offsets(log, last_clean.get(tp), now)
                    if offsets.force_update_checkpoint:
                        log_dir = log.dir.parent
                        if log_dir in self._offsets:
                            current = {t: o for t, o in self._offsets[log_dir].items() if t in logs}
                            self._write(log_dir, {**current, tp: offsets.first_dirty_offset})
                    delay = max_compaction_delay(log, offsets.first_dirty_offset, now)
                    stats.update_max_compaction_delay(delay)
                    ltc = LogToClean.of(
                        tp,
                        log,
                        offsets.first_dirty_offset,
                        offsets.first_uncleanable_dirty_offset,
                        delay > 0,
                    )
                except Exception as exc:
                    raise LogCleaningError(
                        log, f"Failed to calculate log cleaning stats for partition {tp}: {exc}"
                    ) from exc
                if ltc.total_bytes > 0:
                    dirty.append(ltc)
            self.dirtiest_log_cleanable_ratio = max(
                (ltc.cleanable_ratio for ltc in dirty), default=0.0
            )
            cleanable = [
                ltc
                for ltc in dirty
                if (ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                or ltc.cleanable_ratio > ltc.log.config.min_cleanable_dirty_ratio
            ]
            if not cleanable:
                return None
            stats.cleanable_partitions = len(cleanable)
            filthiest = max(cleanable, key=lambda ltc: ltc.cleanable_ratio)
            self._in_progress[filthiest.topic_partition] = IN_PROGRESS
            return filthiest

    # ---- states ------------------------------------------------------------------------

    def cleaning_state(self, tp: TopicPartition) -> CleaningState | None:
        with self._lock:
            return self._in_progress.get(tp)

    def set_cleaning_state(self, tp: TopicPartition, state: CleaningState) -> None:
        with self._lock:
            self._in_progress[tp] = state

    def is_cleaning(self, tp: TopicPartition) -> bool:
        """A cleaning of ``tp`` is under way or paused (retention leaves it alone)."""
        with self._lock:
            return tp in self._in_progress

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """``abortCleaning`` without waiting (the owner thread calls it when a
        partition is deleted; a cleaning's swap is refused for a deleted log)."""
        with self._lock:
            state = self._in_progress.get(tp)
            if state is None:
                return
            if state is IN_PROGRESS:
                self._in_progress[tp] = ABORTED_THEN_RESUME

    def abort_and_pause_cleaning(self, tp: TopicPartition, timeout_s: float | None = None) -> None:
        """``abortAndPauseCleaning``: waits until the cleaning stopped (not from
        the owner thread while a cleaner thread waits for it)."""
        with self._lock:
            state = self._in_progress.get(tp)
            if state is None:
                self._in_progress[tp] = paused(1)
            elif state is IN_PROGRESS:
                self._in_progress[tp] = ABORTED
            elif state.paused:
                self._in_progress[tp] = paused(state.paused + 1)
            else:
                raise ValueError(
                    f"Compaction for partition {tp} cannot be aborted and paused since it is "
                    f"in {state.name} state."
                )
            if not self._paused_cond.wait_for(
                lambda: self._is_paused(tp), None if timeout_s is None else timeout_s
            ):
                raise TimeoutError(f"the cleaning of {tp} did not stop")

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        """``resumeCleaning``: undo one pause of each."""
        with self._lock:
            for tp in tps:
                state = self._in_progress.get(tp)
                if state is None:
                    raise ValueError(
                        f"Compaction for partition {tp} cannot be resumed since it is not paused."
                    )
                if state.paused == 1:
                    del self._in_progress[tp]
                elif state.paused > 1:
                    self._in_progress[tp] = paused(state.paused - 1)
                else:
                    raise ValueError(
                        f"Compaction for partition {tp} cannot be resumed since it is in "
                        f"{state.name} state."
                    )

    def _is_paused(self, tp: TopicPartition) -> bool:
        state = self._in_progress.get(tp)
        return state is not None and state.paused > 0

    def check_cleaning_aborted(self, tp: TopicPartition) -> None:
        with self._lock:
            state = self._in_progress.get(tp)
            if state is not None and state.name == ABORTED.name:
                raise LogCleaningAbortedError(f"the cleaning of {tp} was aborted")

    def done_cleaning(self, tp: TopicPartition, log_dir: Path, end_offset: int) -> None:
        """``doneCleaning``: checkpoint the end offset unless the cleaning was aborted."""
        logs = self._logs()
        with self._lock:
            state = self._in_progress.get(tp)
            if state is IN_PROGRESS:
                if log_dir in self._offsets:
                    current = {t: o for t, o in self._offsets[log_dir].items() if t in logs}
                    self._write(log_dir, {**current, tp: end_offset})
                del self._in_progress[tp]
            elif state is not None and state.name == ABORTED.name:
                if state.resume:
                    del self._in_progress[tp]
                else:
                    self._in_progress[tp] = paused(1)
                    self._paused_cond.notify_all()
            elif state is None:
                raise ValueError(f"State for partition {tp} should exist.")
            else:
                raise ValueError(f"In-progress partition {tp} cannot be in {state.name} state.")

    # ---- uncleanable partitions ---------------------------------------------------------

    def mark_partition_uncleanable(self, log_dir: Path, tp: TopicPartition) -> None:
        with self._lock:
            self._uncleanable.setdefault(Path(log_dir), set()).add(tp)

    def is_uncleanable_partition(self, log: UnifiedLog, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._uncleanable.get(log.dir.parent, ())

    def uncleanable_partitions(self, log_dir: Path) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable.get(Path(log_dir), ()))

    def maintain_uncleanable_partitions(self) -> None:
        """``maintainUncleanablePartitions``: forget deleted partitions."""
        logs = self._logs()
        with self._lock:
            for log_dir in list(self._uncleanable):
                self._uncleanable[log_dir] = {tp for tp in self._uncleanable[log_dir] if tp in logs}
                if not self._uncleanable[log_dir]:
                    del self._uncleanable[log_dir]

    def uncleanable_bytes(self, log_dir: Path, now: int) -> int:
        """``uncleanable-bytes``: the cleanable bytes of the dir's uncleanable
        partitions (owner thread: it reads the logs)."""
        logs = self._logs()
        with self._lock:
            last_clean = self.all_cleaner_checkpoints()
            total = 0
            for tp in self._uncleanable.get(Path(log_dir), ()):
                log = logs.get(tp)
                if log is None:
                    continue
                offsets = cleanable_offsets(log, last_clean.get(tp), now)
                total += calculate_cleanable_bytes(
                    log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset
                )[1]
            return total
