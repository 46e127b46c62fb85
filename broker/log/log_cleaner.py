"""The log cleaner: threads that compact ``cleanup.policy=compact`` logs (``LogCleaner.scala``).

``log.cleaner.threads`` threads (default 1), each with its own offset map of
``log.cleaner.dedupe.buffer.size / threads`` bytes (at most 2 GiB) and I/O
buffers of ``log.cleaner.io.buffer.size / threads / 2`` each, sharing one
throttler of ``log.cleaner.io.max.bytes.per.second``. Each thread loops:

1. on the owner thread (the event loop, through ``owner_call``): choose the
   dirtiest compacted log (``LogCleanerManager.grab_filthiest_compacted_log``)
   and copy what cleaning it needs (``cleaning_plan.prepare_job``);
2. on its own thread: clean it (``cleaner.Cleaner``), reading sealed segments
   through descriptors of its own and writing ``.cleaned`` files nobody else
   sees; the compiled loops release the GIL;
3. on the owner thread again: the swap of each group (``UnifiedLog.replace_segments``);
4. checkpoint the first dirty offset (``cleaner-offset-checkpoint``), or mark
   the partition uncleanable if the cleaning failed (a corrupt batch: logged,
   counted, the other partitions go on); sleep ``log.cleaner.backoff.ms``
   when no log needed cleaning.

A thread that fails outside a cleaning dies (``DeadThreadCount``). The
threads run at nice 19, below the event loop.

Why this is thread-safe: the owner thread alone changes a log's segment
list, files and producer state; a cleaner thread only reads a snapshot
taken on the owner thread, duplicates a segment's descriptor under the
log's lock (which every close of a descriptor takes), and hands every
change back to the owner thread. Appends touch only the active segment,
which is never cleaned. Retention skips a log while it is being cleaned
(``LogManager.cleanup_logs``), and a deleted log refuses the swap.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.log import clean_loops
from broker.log.cleaner import Cleaner, CleanerStats, OwnerCall, direct_call
from broker.log.cleaner_manager import LogCleanerManager, LogCleaningError, PreCleanStats
from broker.log.cleaning_plan import CleaningJob, prepare_job
from broker.log.errors import LogCleaningAbortedError, ThreadShutdownError
from broker.log.files import TopicPartition
from broker.log.throttler import Throttler

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.log.unified_log import UnifiedLog

logger = logging.getLogger("broker.log.cleaner")

INT_MAX = 2**31 - 1
#: 1/32 of each thread's dedupe buffer is its superseded bitmap: 4 MiB of the
#: default 128 MiB, one bit for each of 33.5 M dirty offsets (the table keeps
#: 97% of Kafka's slots; deviations.md)
SUPERSEDED_SHARE = 32


class CleanerConfig(NamedTuple):
    """``CleanerConfig``: the broker's ``log.cleaner.*`` keys."""

    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_message_size: int = 1_048_588
    max_io_bytes_per_second: float = float("inf")
    backoff_ms: int = 15_000
    enable_cleaner: bool = True

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> CleanerConfig:
        return cls(
            int(config.get("log.cleaner.threads")),
            int(config.get("log.cleaner.dedupe.buffer.size")),
            float(config.get("log.cleaner.io.buffer.load.factor")),
            int(config.get("log.cleaner.io.buffer.size")),
            int(config.get("message.max.bytes")),
            float(config.get("log.cleaner.io.max.bytes.per.second")),
            int(config.get("log.cleaner.backoff.ms")),
            bool(config.get("log.cleaner.enable")),
        )

    @property
    def map_memory_per_thread(self) -> int:
        """A thread's share of ``log.cleaner.dedupe.buffer.size``: its offset map
        (table and superseded bitmap together)."""
        return min(self.dedupe_buffer_size // max(self.num_threads, 1), INT_MAX)

    @property
    def superseded_memory_per_thread(self) -> int:
        """The part of it that is the superseded bitmap (1 bit per dirty offset,
        ``_clean_py.py``): 1/``SUPERSEDED_SHARE`` of it."""
        return self.map_memory_per_thread // SUPERSEDED_SHARE

    @property
    def io_buffer_per_thread(self) -> int:
        """Each of the read and write buffers of a thread."""
        return self.io_buffer_size // max(self.num_threads, 1) // 2


@dataclass
class CleanerThreadState:
    """What a thread's last cleaning (and last look for one) found."""

    last_stats: CleanerStats = field(default_factory=CleanerStats)
    last_pre_clean_stats: PreCleanStats = field(default_factory=PreCleanStats)
    failed: bool = False
    cleanings: int = 0


class CleanerSnapshot(NamedTuple):
    """The cleaner's gauges (Kafka's ``LogCleaner`` and ``LogCleanerManager`` metrics)."""

    max_buffer_utilization_percent: int
    cleaner_recopy_percent: int
    max_clean_time_secs: int
    max_compaction_delay_secs: int
    dead_thread_count: int
    max_dirty_percent: int
    time_since_last_run_ms: int
    #: per log dir: (uncleanable partitions, their uncleanable bytes)
    uncleanable: dict[str, tuple[int, int]]


class LogCleaner:
    def __init__(
        self,
        config: CleanerConfig,
        log_dirs: Iterable[Path],
        logs: Callable[[], Mapping[TopicPartition, UnifiedLog]],
        *,
        owner_call: OwnerCall[object] = direct_call,
        time_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.config = config
        self.log_dirs = [Path(d) for d in log_dirs]
        self.manager = LogCleanerManager(self.log_dirs, logs, time_ms)
        self.throttler = Throttler(config.max_io_bytes_per_second)
        self.owner_call = owner_call
        self._time_ms = time_ms
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.states: list[CleanerThreadState] = []
        self._cleaners: list[Cleaner] = []

    # ---- lifecycle ---------------------------------------------------------------------

    def make_cleaner(self, cleaner_id: int) -> Cleaner:
        config = self.config
        if config.dedupe_buffer_size // max(config.num_threads, 1) > INT_MAX:
            logger.warning(
                "Cannot use more than 2G of cleaner buffer space per cleaner thread, ignoring "
                "excess buffer space..."
            )
        return Cleaner(
            cleaner_id,
            clean_loops.OffsetMap(
                config.map_memory_per_thread - config.superseded_memory_per_thread,
                config.superseded_memory_per_thread,
            ),
            io_buffer_size=config.io_buffer_per_thread,
            max_io_buffer_size=config.max_message_size,
            dup_buffer_load_factor=config.dedupe_buffer_load_factor,
            throttler=self.throttler,
            check_done=self._check_done,
            owner_call=self.owner_call,
        )

    def startup(self) -> None:
        logger.info("Starting the log cleaner")
        self._stop.clear()
        for i in range(self.config.num_threads):
            cleaner = self.make_cleaner(i)
            state = CleanerThreadState()
            # daemon: a process that exits without stopping it is a crash, which the
            # cleaner's files survive (the next start finishes or undoes its swap)
            thread = threading.Thread(
                target=self._run,
                args=(cleaner, state),
                name=f"kafka-log-cleaner-thread-{i}",
                daemon=True,
            )
            self._cleaners.append(cleaner)
            self.states.append(state)
            self._threads.append(thread)
            thread.start()

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop the threads (a cleaning in progress is aborted). Call it where the
        owner thread still serves owner calls (not from the owner thread itself
        while threads may be waiting for it)."""
        logger.info("Shutting down the log cleaner.")
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _check_done(self, tp: TopicPartition) -> None:
        if self._stop.is_set():
            raise ThreadShutdownError("the log cleaner is shutting down")
        self.manager.check_cleaning_aborted(tp)

    # ---- the threads ------------------------------------------------------------------------

    def _run(self, cleaner: Cleaner, state: CleanerThreadState) -> None:
        lower_priority()
        try:
            while not self._stop.is_set():
                cleaned = self.try_clean_filthiest_log(cleaner, state)
                if not cleaned:
                    self._stop.wait(self.config.backoff_ms / 1000)
                self.manager.maintain_uncleanable_partitions()
        except ThreadShutdownError:
            pass
        except BaseException:
            # ShutdownableThread: "Error due to", the thread is gone (DeadThreadCount)
            logger.exception("%s: Error due to", threading.current_thread().name)
            state.failed = True

    def try_clean_filthiest_log(self, cleaner: Cleaner, state: CleanerThreadState) -> bool:
        """``tryCleanFilthiestLog``: clean one log if one needs it; True if one was."""
        try:
            return self._clean_filthiest_log(cleaner, state)
        except LogCleaningError as exc:
            logger.warning(
                "Unexpected exception thrown when cleaning log %s. Marking its partition (%s) "
                "as uncleanable",
                exc.log,
                exc.log.topic_partition,
                exc_info=exc,
            )
            self.manager.mark_partition_uncleanable(exc.log.dir.parent, exc.log.topic_partition)
            return False

    def _clean_filthiest_log(self, cleaner: Cleaner, state: CleanerThreadState) -> bool:
        pre_clean = PreCleanStats()

        def grab() -> CleaningJob | None:
            now = self._time_ms()
            to_clean = self.manager.grab_filthiest_compacted_log(now, pre_clean)
            if to_clean is None:
                return None
            try:
                return prepare_job(to_clean, now)
            except Exception as exc:
                self.manager.done_cleaning(
                    to_clean.topic_partition, to_clean.log.dir.parent, to_clean.first_dirty_offset
                )
                raise LogCleaningError(to_clean.log, f"cannot prepare its cleaning: {exc}") from exc

        job = self.owner_call(grab)
        if job is None:
            return False
        assert isinstance(job, CleaningJob)
        state.last_pre_clean_stats = pre_clean
        try:
            self._clean_log(cleaner, job, state)
        except ThreadShutdownError:
            raise
        except Exception as exc:
            raise LogCleaningError(job.log, str(exc)) from exc
        return True

    def _clean_log(self, cleaner: Cleaner, job: CleaningJob, state: CleanerThreadState) -> None:
        """``cleanLog``: clean, then record the new first dirty offset."""
        tp = job.topic_partition
        start = job.to_clean.first_dirty_offset
        end = start
        try:
            end, stats = cleaner.clean(job)
            state.last_stats = stats
            state.cleanings += 1
            record_stats(
                cleaner.id,
                tp,
                start=start,
                end=end,
                stats=stats,
                pre_clean=state.last_pre_clean_stats,
            )
        except ThreadShutdownError:
            raise
        except LogCleaningAbortedError as exc:
            logger.info("The cleaning of %s stopped: %s", tp, exc)
        finally:
            self.manager.done_cleaning(tp, job.log.dir.parent, end)

    def clean_once(self) -> bool:
        """One round of a cleaner thread, on the calling thread (tools, tests,
        benchmarks); True if a log was cleaned."""
        if not self._cleaners:
            self._cleaners.append(self.make_cleaner(0))
            self.states.append(CleanerThreadState())
        return self.try_clean_filthiest_log(self._cleaners[0], self.states[0])

    @property
    def cleaners(self) -> list[Cleaner]:
        return list(self._cleaners)

    # ---- gauges ------------------------------------------------------------------------

    def snapshot(self) -> CleanerSnapshot:
        """The gauges, on the owner thread (uncleanable bytes read the logs)."""
        states = list(self.states)
        written = sum(s.last_stats.bytes_written for s in states)
        read = sum(s.last_stats.bytes_read for s in states)
        now = self._time_ms()
        manager = self.manager
        return CleanerSnapshot(
            int(max((100 * s.last_stats.buffer_utilization for s in states), default=0)),
            int(100 * written / max(read, 1)),
            int(max((s.last_stats.elapsed_secs for s in states), default=0)),
            int(
                max(
                    (s.last_pre_clean_stats.max_compaction_delay_ms / 1000 for s in states),
                    default=0,
                )
            ),
            self.dead_thread_count,
            int(100 * manager.dirtiest_log_cleanable_ratio),
            now - manager.time_of_last_run,
            {
                str(d): (len(manager.uncleanable_partitions(d)), manager.uncleanable_bytes(d, now))
                for d in self.log_dirs
            },
        )

    @property
    def dead_thread_count(self) -> int:
        return sum(1 for s in self.states if s.failed)


#: nice value of the cleaner threads (Linux schedules threads, so it is theirs alone)
CLEANER_NICE = 19


def lower_priority() -> None:
    """Run this cleaner thread below the event loop: cleaning is background
    work, and when both want a core the scheduler should pick the loop (as
    for the produce offload threads). Kafka's cleaner threads run at normal
    priority (docs/deviations.md)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CLEANER_NICE)
    except OSError as exc:  # not permitted in some sandboxes: run at normal priority
        logger.warning("cannot lower the priority of the log cleaner thread: %s", exc)


def record_stats(
    cleaner_id: int,
    tp: TopicPartition,
    *,
    start: int,
    end: int,
    stats: CleanerStats,
    pre_clean: PreCleanStats,
) -> None:
    """``recordStats``: Kafka's summary of a cleaning, at INFO."""
    mb = 1024 * 1024
    elapsed = max(stats.elapsed_secs, 1e-9)
    index = max(stats.elapsed_index_secs, 1e-9)
    copy = max(elapsed - index, 1e-9)
    logger.info(
        "\n\tLog cleaner thread %d cleaned log %s (dirty section = [%d, %d])\n"
        "\t%.1f MB of log processed in %.1f seconds (%.1f MB/sec).\n"
        "\tIndexed %.1f MB in %.1f seconds (%.1f Mb/sec, %.1f%% of total time)\n"
        "\tBuffer utilization: %.1f%%\n"
        "\tCleaned %.1f MB in %.1f seconds (%.1f Mb/sec, %.1f%% of total time)\n"
        "\tStart size: %.1f MB (%d messages)\n"
        "\tEnd size: %.1f MB (%d messages)\n"
        "\t%.1f%% size reduction (%.1f%% fewer messages)",
        cleaner_id,
        tp,
        start,
        end,
        stats.bytes_read / mb,
        elapsed,
        stats.bytes_read / mb / elapsed,
        stats.map_bytes_read / mb,
        index,
        stats.map_bytes_read / mb / index,
        100 * index / elapsed,
        100 * stats.buffer_utilization,
        stats.bytes_read / mb,
        copy,
        stats.bytes_read / mb / copy,
        100 * copy / elapsed,
        stats.bytes_read / mb,
        stats.messages_read,
        stats.bytes_written / mb,
        stats.messages_written,
        100 * (1 - stats.bytes_written / max(stats.bytes_read, 1)),
        100 * (1 - stats.messages_written / max(stats.messages_read, 1)),
    )
    if pre_clean.delayed_partitions > 0:
        logger.info(
            "\tCleanable partitions: %d, Delayed partitions: %d, max delay: %d",
            pre_clean.cleanable_partitions,
            pre_clean.delayed_partitions,
            pre_clean.max_compaction_delay_ms,
        )
    if stats.invalid_messages_read > 0:
        logger.warning(
            "\tFound %d invalid messages during compaction.", stats.invalid_messages_read
        )
