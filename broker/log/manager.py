"""All partition logs of all log directories (``LogManager.scala``).

Start-up (:meth:`LogManager.startup`), per log dir: take the ``.lock``
(an OS lock: ``lockf``, the same kind of lock as Java's ``FileChannel.tryLock``,
so a Kafka broker and this one exclude each other too); read or write
``meta.properties``; note and delete ``.kafka_cleanshutdown``; read both
offset checkpoints; load every ``<topic>-<partition>`` folder with
``num.recovery.threads.per.data.dir`` threads; finish deleting
``...-delete`` folders.

Ticks the application's scheduler calls, and from which thread:

========================================  =========================================
``cleanup_logs()`` (retention)             the thread that owns the logs (event loop)
``remove_expired_producers()``             the thread that owns the logs
``flush_dirty_logs()`` (flush.ms, rolls)   any thread (flushes are thread-safe)
``checkpoint_recovery_offsets()``          any thread
``checkpoint_log_start_offsets()``         any thread
``delete_expired_files()``                 any thread
========================================  =========================================

The log cleaner (``log_cleaner.py``, when ``log.cleaner.enable``) is made
here and started by :meth:`start_cleaner` with the owner call its threads
use to reach the owner thread; :meth:`stop_cleaner` stops it (before
:meth:`shutdown`, from a thread other than the owner while the owner still
serves calls).

Creating and deleting partitions, altering topic configs and shutdown run
on the owner thread. Shutdown: every log flushed (the empty active segment
included) and closed, both checkpoints written, the clean-shutdown marker
written for each dir that was clean or fully loaded, locks released.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from broker.config import BrokerConfig, TopicConfig
from broker.errors import KafkaStorageError, UnknownTopicOrPartitionError
from broker.log import files
from broker.log.checkpoints import (
    CleanShutdownFile,
    log_start_offset_checkpoint,
    random_uuid,
    read_meta_properties,
    recovery_point_checkpoint,
    uuid_to_string,
    write_meta_properties,
)
from broker.log.cleaner import OwnerCall, direct_call
from broker.log.config_store import TopicConfigStore
from broker.log.errors import CheckpointError, LogDirLockedError
from broker.log.files import TopicPartition
from broker.log.local_log import FlushRecorder
from broker.log.log_cleaner import CleanerConfig, LogCleaner
from broker.log.recovery_report import RecoveryRecorder
from broker.log.segment import TimeMs, wall_clock_ms
from broker.log.unified_log import UnifiedLog

logger = logging.getLogger(__name__)

#: folders a Kafka log dir may hold that are not partitions of topics
METADATA_TOPIC = "__cluster_metadata"
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"

_PROCESS_LOCKS: set[str] = set()
_PROCESS_LOCKS_GUARD = threading.Lock()


class PartitionLogStats(NamedTuple):
    """Kafka's ``Log`` gauges of one partition (``UnifiedLog.newMetrics``)."""

    topic: str
    partition: int
    log_end_offset: int
    log_start_offset: int
    size_bytes: int
    num_segments: int


class DirLock:
    """The ``.lock`` file of a log dir, held with ``lockf`` (fcntl record lock).

    POSIX record locks do not conflict within one process, so locks this
    process holds are also tracked in memory (Java's ``OverlappingFileLockException``).
    """

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / files.LOCK_FILE_NAME
        self._fd: int | None = None

    def try_lock(self) -> bool:
        key = str(self.path.resolve())
        with _PROCESS_LOCKS_GUARD:
            if key in _PROCESS_LOCKS:
                return False
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
            _PROCESS_LOCKS.add(key)
            self._fd = fd
            return True

    def release(self) -> None:
        if self._fd is None:
            return
        with _PROCESS_LOCKS_GUARD:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
                _PROCESS_LOCKS.discard(str(self.path.resolve()))


class LogManager:
    """Loads, creates, deletes and closes partition logs; holds topic configs and ids."""

    def __init__(
        self,
        log_dirs: list[Path],
        broker_config: BrokerConfig | None = None,
        *,
        time_ms: TimeMs = wall_clock_ms,
        flush_recorder: FlushRecorder | None = None,
        recovery_recorder: RecoveryRecorder | None = None,
    ) -> None:
        self.broker_config = broker_config or BrokerConfig()
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        self._time_ms = time_ms
        self._flush_recorder = flush_recorder
        self._recovery_recorder = recovery_recorder
        self._logs: dict[TopicPartition, UnifiedLog] = {}
        self._topic_ids: dict[str, bytes] = {}
        self._locks: list[DirLock] = []
        self._lock = threading.RLock()
        self._had_clean_shutdown: dict[Path, bool] = {}
        self._loaded_completely: dict[Path, bool] = {}
        self._pending_dir_deletes: list[tuple[int, Path, UnifiedLog | None]] = []
        self.config_store = TopicConfigStore(self.log_dirs, self.broker_config)
        self.cluster_id: str | None = self.broker_config.get("cluster.id")
        self.directory_ids: dict[Path, str] = {}
        #: log dir -> why it went offline (Kafka's ``LogDirFailureChannel``)
        self._offline_dirs: dict[Path, str] = {}
        #: called (from whichever thread saw the last failure) once no log dir is left
        self.on_all_dirs_offline: Callable[[], None] | None = None
        self._started = False
        cleaner_config = CleanerConfig.from_broker(self.broker_config)
        #: the log cleaner (None with log.cleaner.enable=false)
        self.cleaner: LogCleaner | None = (
            LogCleaner(cleaner_config, self.log_dirs, self._snapshot_logs, time_ms=time_ms)
            if cleaner_config.enable_cleaner
            else None
        )

    # ---- start-up --------------------------------------------------------------------------

    def startup(self) -> None:
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
        self._lock_dirs()
        try:
            for log_dir in self.log_dirs:
                self._check_meta_properties(log_dir)
            self.config_store.load()
            self._load_logs()
        except BaseException:
            self._release_locks()
            raise
        self._started = True

    def start_cleaner(self, owner_call: OwnerCall[object] = direct_call) -> None:
        """Start the cleaner threads (after :meth:`startup`); ``owner_call`` runs a
        callable on the thread that owns the logs and returns its result."""
        if self.cleaner is not None:
            self.cleaner.owner_call = owner_call
            self.cleaner.startup()

    def stop_cleaner(self) -> None:
        """Stop the cleaner threads (not from the owner thread while they run)."""
        if self.cleaner is not None:
            self.cleaner.shutdown()

    def _lock_dirs(self) -> None:
        for log_dir in self.log_dirs:
            lock = DirLock(log_dir)
            if not lock.try_lock():
                self._release_locks()
                raise LogDirLockedError(
                    f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance in "
                    "another process or thread is using this directory."
                )
            self._locks.append(lock)

    def _release_locks(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks = []

    def _check_meta_properties(self, log_dir: Path) -> None:
        node_id = str(self.broker_config.node_id)
        props = read_meta_properties(log_dir)
        if props is None:
            if self.cluster_id is None:
                for other in self.log_dirs:
                    existing = read_meta_properties(other)
                    if existing and existing.get("cluster.id"):
                        self.cluster_id = existing["cluster.id"]
                        break
                else:
                    self.cluster_id = uuid_to_string(random_uuid())
            props = {
                "version": "1",
                "cluster.id": self.cluster_id,
                "node.id": node_id,
                "directory.id": uuid_to_string(random_uuid()),
            }
            write_meta_properties(log_dir, props)
        else:
            stored_node = props.get("node.id", props.get("broker.id"))
            if stored_node is not None and stored_node != node_id:
                raise KafkaStorageError(
                    f"Stored node id {stored_node} in {log_dir} doesn't match the configured "
                    f"node.id {node_id}"
                )
            stored_cluster = props.get("cluster.id")
            if stored_cluster:
                if self.cluster_id is not None and stored_cluster != self.cluster_id:
                    raise KafkaStorageError(
                        f"Cluster id {stored_cluster} in {log_dir} doesn't match {self.cluster_id}"
                    )
                self.cluster_id = stored_cluster
            if "directory.id" not in props:
                props = {**props, "directory.id": uuid_to_string(random_uuid())}
                write_meta_properties(log_dir, props)
        self.directory_ids[log_dir] = props["directory.id"]

    def _load_logs(self) -> None:
        threads = int(self.broker_config.get("num.recovery.threads.per.data.dir"))
        for log_dir in self.log_dirs:
            marker = CleanShutdownFile(log_dir)
            clean = marker.exists()
            if clean:
                # deleted at once: a crash while loading counts as unclean (KAFKA-10471)
                marker.delete()
            started = time.monotonic()
            self._had_clean_shutdown[log_dir] = clean
            try:
                recovery_points = recovery_point_checkpoint(log_dir).read()
            except CheckpointError as exc:
                logger.warning("Resetting the recovery checkpoint of %s to 0: %s", log_dir, exc)
                recovery_points = {}
            try:
                start_offsets = log_start_offset_checkpoint(log_dir).read()
            except CheckpointError as exc:
                logger.warning("Ignoring the log start offsets of %s: %s", log_dir, exc)
                start_offsets = {}
            partition_dirs = []
            for child in sorted(log_dir.iterdir()):
                if not child.is_dir():
                    continue
                if files.is_deleted_dir(child.name):
                    shutil.rmtree(child, ignore_errors=True)
                    continue
                if child.name == REMOTE_INDEX_CACHE_DIR or child.name.startswith(
                    METADATA_TOPIC + "-"
                ):
                    continue  # Kafka's loader skips these too (KRaft metadata, tiered storage)
                try:
                    tp = files.parse_topic_partition_name(child.name)
                except ValueError:
                    raise KafkaStorageError(
                        f"Found directory {child}, '{child.name}' is not in the form of "
                        "topic-partition or topic-partition.uniqueId-delete (if marked for "
                        "deletion). Kafka's log directories (and children) should only contain "
                        "Kafka topic data."
                    ) from None
                partition_dirs.append((tp, child))

            def load(
                item: tuple[TopicPartition, Path],
                clean: bool = clean,
                start_offsets: dict[TopicPartition, int] = start_offsets,
                recovery_points: dict[TopicPartition, int] = recovery_points,
            ) -> UnifiedLog:
                tp, path = item
                return self._open_log(
                    path,
                    tp,
                    log_start_offset=start_offsets.get(tp, 0),
                    recovery_point=recovery_points.get(tp, 0),
                    had_clean_shutdown=clean,
                )

            # LogManager.loadLogs says which way the dir is loaded, then how it went
            if clean:
                logger.info(
                    "Skipping recovery of %d logs from %s since clean shutdown file was found",
                    len(partition_dirs),
                    log_dir,
                )
            else:
                logger.info(
                    "Attempting recovery for all logs in %s since no clean shutdown file was found",
                    log_dir,
                )
            with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
                loaded = list(pool.map(load, partition_dirs))
            logger.info(
                "Loaded %d logs from %s in %d ms (%d segments recovered)",
                len(loaded),
                log_dir,
                (time.monotonic() - started) * 1000,
                sum(log.recovered_segments for log in loaded),
            )
            with self._lock:
                for (tp, path), log in zip(partition_dirs, loaded, strict=True):
                    previous = self._logs.get(tp)
                    if previous is not None:
                        raise KafkaStorageError(
                            f"Duplicate log directories for {tp} are found in both {path} "
                            f"and {previous.dir}."
                        )
                    self._logs[tp] = log
                    if log.topic_id is not None:
                        self._topic_ids.setdefault(tp.topic, log.topic_id)
            self._loaded_completely[log_dir] = True

    def _open_log(
        self,
        path: Path,
        tp: TopicPartition,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = False,
        topic_id: bytes | None = None,
    ) -> UnifiedLog:
        return UnifiedLog.open(
            path,
            self.config_store.config(tp.topic),
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            time_ms=self._time_ms,
            producer_id_expiration_ms=int(self.broker_config.get("producer.id.expiration.ms")),
            flush_recorder=self._flush_recorder,
            topic_id=topic_id,
            recovery_recorder=self._recovery_recorder,
        )

    # ---- queries --------------------------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> UnifiedLog | None:
        return self._logs.get(tp)

    def all_logs(self) -> list[UnifiedLog]:
        """The logs of the live log dirs (an offline dir's logs take no part in
        retention, flushes, checkpoints or cleaning)."""
        return list(self._snapshot_logs().values())

    def logs_by_topic(self, topic: str) -> dict[int, UnifiedLog]:
        with self._lock:
            return {tp.partition: log for tp, log in self._logs.items() if tp.topic == topic}

    def topics(self) -> dict[str, int]:
        """Topic -> number of partitions present."""
        out: dict[str, int] = {}
        with self._lock:
            for tp in self._logs:
                out[tp.topic] = out.get(tp.topic, 0) + 1
        return out

    def log_stats(self) -> list[PartitionLogStats]:
        """Gauges of every partition, read at scrape time (safe from any thread)."""
        return [
            PartitionLogStats(
                tp.topic,
                tp.partition,
                log.log_end_offset,
                log.log_start_offset,
                log.size,
                log.number_of_segments,
            )
            for tp, log in sorted(self._snapshot_logs().items())
        ]

    def _snapshot_logs(self) -> dict[TopicPartition, UnifiedLog]:
        with self._lock:
            offline = self._offline_dirs
            if not offline:
                return dict(self._logs)
            return {tp: lg for tp, lg in self._logs.items() if lg.dir.parent not in offline}

    # ---- log dir failures -----------------------------------------------------------------------

    @property
    def live_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self._offline_dirs]

    @property
    def offline_log_dirs(self) -> dict[Path, str]:
        """Offline log dir -> the error that took it offline."""
        return dict(self._offline_dirs)

    def handle_log_dir_failure(self, log_dir: Path, message: str) -> None:
        """An I/O error in ``log_dir`` (``message`` says which, Kafka's wording):
        the dir goes offline (``LogDirFailureChannel.maybeAddOfflineLogDir``,
        ``LogManager.handleLogDirFailure``). Its logs refuse appends and reads
        from now on (KAFKA_STORAGE_ERROR, as Kafka's offline partitions answer)
        and take no part in the periodic tasks; their descriptors stay open until
        shutdown, so a read already handed a file slice never meets a reused
        descriptor. Once no log dir is left, :attr:`on_all_dirs_offline` is
        called (Kafka halts the broker). Any thread; the first failure of a dir
        counts, later ones are ignored."""
        with self._lock:
            if log_dir not in self.log_dirs or log_dir in self._offline_dirs:
                return
            self._offline_dirs[log_dir] = message
            gone = [lg for lg in self._logs.values() if lg.dir.parent == log_dir]
            live = self.live_log_dirs
        logger.error("%s", message)
        logger.error("Stopping serving logs in dir %s (%d partitions offline)", log_dir, len(gone))
        for lg in gone:
            lg.mark_deleted()  # refuses appends and reads, keeps the descriptors
        if not live:
            logger.critical(
                "Shutdown broker because all log dirs in %s have failed",
                ", ".join(str(d) for d in self.log_dirs),
            )
            if self.on_all_dirs_offline is not None:
                self.on_all_dirs_offline()

    def topic_id(self, topic: str) -> bytes | None:
        return self._topic_ids.get(topic)

    def topic_id_string(self, topic: str) -> str | None:
        topic_id = self._topic_ids.get(topic)
        return None if topic_id is None else uuid_to_string(topic_id)

    def topic_for_id(self, topic_id: bytes) -> str | None:
        for topic, tid in self._topic_ids.items():
            if tid == topic_id:
                return topic
        return None

    def topic_config(self, topic: str) -> TopicConfig:
        return self.config_store.config(topic)

    # ---- creating and deleting ------------------------------------------------------------------

    def _next_log_dir(self) -> Path:
        """The live log dir with the fewest partitions (Kafka's ``nextLogDirs``)."""
        live = self.live_log_dirs
        if not live:
            failed = ", ".join(str(d) for d in self.log_dirs)
            raise KafkaStorageError(
                f"No log directory is online to create a log in: {failed} failed"
            )
        counts = dict.fromkeys(live, 0)
        for log in self._logs.values():
            parent = log.dir.parent
            if parent in counts:
                counts[parent] += 1
        return min(live, key=lambda d: counts[d])

    def create_topic(
        self, topic: str, partitions: int, overrides: Mapping[str, object] | None = None
    ) -> bytes:
        """Create ``partitions`` partition logs and persist the overrides; returns the topic id."""
        with self._lock:
            if overrides:
                self.config_store.set(topic, overrides)
            topic_id = self._topic_ids.get(topic) or random_uuid()
            self._topic_ids[topic] = topic_id
            for partition in range(partitions):
                self.get_or_create_log(TopicPartition(topic, partition))
            return topic_id

    def get_or_create_log(self, tp: TopicPartition) -> UnifiedLog:
        with self._lock:
            log = self._logs.get(tp)
            if log is not None:
                return log
            topic_id = self._topic_ids.get(tp.topic)
            if topic_id is None:
                topic_id = random_uuid()
                self._topic_ids[tp.topic] = topic_id
            path = self._next_log_dir() / files.log_dir_name(tp)
            log = self._open_log(path, tp, had_clean_shutdown=True, topic_id=topic_id)
            self._logs[tp] = log
            return log

    def delete_log(self, tp: TopicPartition) -> None:
        """Rename the folder ``<topic>-<p>.<uuid>-delete``, remove it after
        ``file.delete.delay.ms`` (Kafka's ``asyncDelete``).

        The log refuses appends and reads at once, but its descriptors stay
        open until the folder is removed: a fetch that got a file slice just
        before may still be sending it (a closed descriptor could be reused
        for another file by then).
        """
        with self._lock:
            log = self._logs.pop(tp, None)
            if log is None:
                raise UnknownTopicOrPartitionError(f"Partition {tp} does not exist")
            log.mark_deleted()
            if self.cleaner is not None:
                # a cleaning under way finds the log deleted at its swap (LogManager.asyncDelete)
                self.cleaner.manager.abort_cleaning(tp)
                self.cleaner.manager.update_checkpoints(log.dir.parent, remove=tp)
            target = log.dir.parent / files.log_delete_dir_name(tp)
            log.rename_dir(target)
            deadline = self._time_ms() + log.config.file_delete_delay_ms
            self._pending_dir_deletes.append((deadline, target, log))
            if not any(t.topic == tp.topic for t in self._logs):
                self._topic_ids.pop(tp.topic, None)
        self.checkpoint_recovery_offsets()
        self.checkpoint_log_start_offsets()

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            partitions = [tp for tp in self._logs if tp.topic == topic]
            if not partitions:
                raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
            for tp in partitions:
                self.delete_log(tp)
            self.config_store.delete(topic)

    def alter_topic_config(
        self, topic: str, set_keys: Mapping[str, object], delete_keys: list[str] | None = None
    ) -> TopicConfig:
        """Persist the change; every partition of the topic uses it from its next append."""
        config = self.config_store.alter(topic, set_keys, delete_keys)
        for log in self.logs_by_topic(topic).values():
            log.config = config
        return config

    # ---- ticks ----------------------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """Retention for every log (owner thread); segments deleted.

        Kafka's ``cleanupLogs`` leaves compacted logs to the cleaner threads,
        which apply retention to them after cleaning; here retention runs on
        the owner thread for every log (``delete_old_segments``: size and time
        only when ``delete`` is in the policy, the log start offset always),
        except a log being cleaned, which waits for the next tick.
        """
        cleaner = self.cleaner
        deleted = 0
        for log in self.all_logs():
            if cleaner is not None and cleaner.manager.is_cleaning(log.topic_partition):
                continue
            try:
                deleted += log.delete_old_segments()
            except OSError as exc:
                self._io_failed(log, "deleting segments of", exc)
        return deleted

    def _io_failed(self, log: UnifiedLog, doing: str, exc: OSError) -> None:
        """An I/O error of one log's files takes its dir offline (Kafka's
        ``UnifiedLog.maybeHandleIOException``: ``Error while flushing log for
        ... in dir ...``)."""
        parent = log.dir.parent
        self.handle_log_dir_failure(
            parent, f"Error while {doing} {log.topic_partition} in dir {parent}: {exc}"
        )

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        """Flush logs past ``flush.ms`` and logs with a roll waiting for its flush."""
        now = self._time_ms() if now_ms is None else now_ms
        flushed = 0
        for log in self.all_logs():
            try:
                if now - log.last_flush_time >= log.config.flush_ms:
                    flushed += log.flush()
                elif log.maybe_flush_after_roll():
                    flushed += 1
            except OSError as exc:
                self._io_failed(log, "flushing log for", exc)
        return flushed

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        now = self._time_ms() if now_ms is None else now_ms
        return sum(log.remove_expired_producers(now) for log in self.all_logs())

    def _logs_in_dir(self, log_dir: Path) -> dict[TopicPartition, UnifiedLog]:
        with self._lock:
            return {tp: log for tp, log in self._logs.items() if log.dir.parent == log_dir}

    def checkpoint_recovery_offsets(self) -> None:
        """The recovery point of every log, per live log dir; a dir whose file
        cannot be written goes offline (``checkpointRecoveryOffsetsInDir``)."""
        for log_dir in self.live_log_dirs:
            logs = self._logs_in_dir(log_dir)
            try:
                recovery_point_checkpoint(log_dir).write(
                    {tp: log.recovery_point for tp, log in logs.items()}
                )
            except OSError as exc:
                self.handle_log_dir_failure(
                    log_dir,
                    f"Disk error while writing recovery offsets checkpoint in directory "
                    f"{log_dir}: {exc}",
                )

    def checkpoint_log_start_offsets(self) -> None:
        """Only logs whose start offset is above their first segment (Kafka); a
        dir whose file cannot be written goes offline."""
        for log_dir in self.live_log_dirs:
            offsets = {}
            for tp, log in self._logs_in_dir(log_dir).items():
                segments = log.segments
                if segments and log.log_start_offset > segments[0].base_offset:
                    offsets[tp] = log.log_start_offset
            try:
                log_start_offset_checkpoint(log_dir).write(offsets)
            except OSError as exc:
                self.handle_log_dir_failure(
                    log_dir,
                    f"Disk error while writing log start offsets checkpoint in directory "
                    f"{log_dir}: {exc}",
                )

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        now = self._time_ms() if now_ms is None else now_ms
        count = 0
        for log in self.all_logs():
            try:
                count += log.delete_expired_files(now)
            except OSError as exc:
                self._io_failed(log, "deleting files of", exc)
        with self._lock:
            due = [(p, lg) for deadline, p, lg in self._pending_dir_deletes if deadline <= now]
            self._pending_dir_deletes = [e for e in self._pending_dir_deletes if e[0] > now]
        for path, deleted_log in due:
            if deleted_log is not None:
                deleted_log.close_handlers()
            shutil.rmtree(path, ignore_errors=True)
        return count + len(due)

    # ---- shutdown -------------------------------------------------------------------------------

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, write checkpoints and clean-shutdown markers,
        release the locks."""
        try:
            errors = False
            for log in self.all_logs():
                try:
                    log.flush(include_empty_active=True)
                    log.close()
                except OSError as exc:
                    errors = True
                    logger.error("Error closing %s: %s", log.topic_partition, exc)
            if not errors:
                self.checkpoint_recovery_offsets()
                self.checkpoint_log_start_offsets()
                for log_dir in self.live_log_dirs:
                    if self._had_clean_shutdown.get(log_dir) or self._loaded_completely.get(
                        log_dir
                    ):
                        CleanShutdownFile(log_dir).write(broker_epoch)
            with self._lock:
                offline = [lg for lg in self._logs.values() if lg.dir.parent in self._offline_dirs]
            for log in offline:
                log.close_handlers()  # nothing flushed or checkpointed in an offline dir
            with self._lock:
                pending = [(p, lg) for _, p, lg in self._pending_dir_deletes]
                self._pending_dir_deletes = []
            for path, deleted_log in pending:
                if deleted_log is not None:
                    deleted_log.close_handlers()
                shutil.rmtree(path, ignore_errors=True)
        finally:
            self._release_locks()
            self._started = False

    def __enter__(self) -> LogManager:
        self.startup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def run_periodically(
    interval_s: float, action: Callable[[], object], stop: threading.Event
) -> threading.Thread:
    """A daemon thread calling ``action`` every ``interval_s`` until ``stop`` is set
    (for ticks safe from any thread, e.g. ``flush_dirty_logs``)."""

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                action()
            except Exception:
                logger.exception("periodic log task failed")

    thread = threading.Thread(target=loop, name="log-periodic", daemon=True)
    thread.start()
    return thread
