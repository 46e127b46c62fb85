"""File and directory names of a log directory (``LogFileUtils.java``, ``LocalLog.scala``).

A log directory (one entry of ``log.dirs``) holds one folder per partition
and a few per-directory files::

    <log.dir>/
      .lock                              held with an OS lock while a broker runs
      meta.properties                    version=1, cluster.id, node.id, directory.id
      recovery-point-offset-checkpoint   "0\\n<n>\\n<topic> <partition> <offset>\\n"*
      log-start-offset-checkpoint        same format
      cleaner-offset-checkpoint          same format: first dirty offset of compacted logs
      .kafka_cleanshutdown               {"version":0,"brokerEpoch":N} (3.7+)
      <topic>-<partition>/
        00000000000000000000.log         batches, as received (after validation)
        00000000000000000000.index       8-byte entries: relative offset, position
        00000000000000000000.timeindex   12-byte entries: timestamp, relative offset
        00000000000000000000.txnindex    34-byte entries: aborted transactions (if any)
        00000000000000000000.snapshot    producer state at that offset
        leader-epoch-checkpoint          "0\\n<n>\\n<epoch> <start offset>\\n"*
        partition.metadata               "version: 0\\ntopic_id: <base64 uuid>"

A segment's files are named by its base offset as a 20-digit zero-padded
decimal; ``.deleted`` / ``.cleaned`` / ``.swap`` may follow any of them. The
offset of a file is the digits before its first ``.``. A partition folder
being deleted is renamed ``<topic>-<partition>.<uuid hex>-delete`` first.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import NamedTuple

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

LOCK_FILE_NAME = ".lock"
CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"
META_PROPERTIES_FILE_NAME = "meta.properties"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"

_SUFFIXED_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)(-delete|-future|-stray)$")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def filename_prefix_from_offset(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: 20 digits, zero-padded."""
    return f"{offset:020d}"


def log_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{filename_prefix_from_offset(offset)}{LOG_FILE_SUFFIX}{suffix}"


def offset_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{filename_prefix_from_offset(offset)}{INDEX_FILE_SUFFIX}{suffix}"


def time_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{filename_prefix_from_offset(offset)}{TIME_INDEX_FILE_SUFFIX}{suffix}"


def txn_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{filename_prefix_from_offset(offset)}{TXN_INDEX_FILE_SUFFIX}{suffix}"


def producer_snapshot_file(directory: Path, offset: int) -> Path:
    return directory / f"{filename_prefix_from_offset(offset)}{PRODUCER_SNAPSHOT_FILE_SUFFIX}"


def offset_from_file_name(name: str) -> int:
    """``LogFileUtils.offsetFromFileName``: the digits before the first dot.

    Raises ValueError for a name that does not start with a number.
    """
    return int(name[: name.index(".")], 10)


def is_log_file(path: Path) -> bool:
    return path.name.endswith(LOG_FILE_SUFFIX)


def is_index_file(path: Path) -> bool:
    name = path.name
    return name.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX))


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def log_delete_dir_name(tp: TopicPartition) -> str:
    """``LocalLog.logDeleteDirName``: ``topic-partition.<uuid hex>-delete``, the
    topic cut so the whole name stays within 255 characters."""
    full_suffix = f"-{tp.partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return tp.topic[: min(len(tp.topic), 255 - len(full_suffix))] + full_suffix


def parse_topic_partition_name(name: str) -> TopicPartition:
    """``LocalLog.parseTopicPartitionName``: ``topic-partition`` or a suffixed
    ``topic-partition.<id>-delete|-future|-stray``. ValueError otherwise."""
    if not name or "-" not in name:
        raise ValueError(f"{name!r} is not in the form of topic-partition")
    suffixed = name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX))
    if suffixed:
        if not _SUFFIXED_DIR.match(name):
            raise ValueError(f"{name!r} is not in the form of topic-partition.uniqueId-delete")
        name = name[: name.rindex(".")]
    index = name.rindex("-")
    topic, partition = name[:index], name[index + 1 :]
    if not topic or not partition or not partition.lstrip("-").isdigit():
        raise ValueError(f"{name!r} is not in the form of topic-partition")
    return TopicPartition(topic, int(partition))


def is_deleted_dir(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX) and bool(_SUFFIXED_DIR.match(name))
