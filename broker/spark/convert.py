"""``broker pipeline convert``: a log dir of v0/v1 message sets rewritten as v2.

One Spark task per partition folder (``upgrade.convert_partition`` does the
work, through the broker's own log writer); the driver then writes what a
cleanly stopped broker leaves in a log dir (Kafka's ``LogManager.shutdown``:
``CheckpointFile.java``, ``CleanShutdownFileHandler.java``)::

    recovery-point-offset-checkpoint   every partition at its log end offset
    log-start-offset-checkpoint        partitions whose log start is past their
                                       first segment (taken from the source)
    meta.properties                    copied from the source when present
    .kafka_cleanshutdown               so the broker loads without recovery

The destination must not exist or be empty: a conversion never writes over
a log.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from broker.log import files
from broker.log.checkpoints import (
    CleanShutdownFile,
    log_start_offset_checkpoint,
    recovery_point_checkpoint,
)
from broker.log.errors import CheckpointError
from broker.log.files import TopicPartition
from broker.spark.layout import partition_dirs
from broker.spark.upgrade import DEFAULT_BATCH_BYTES, PartitionResult, convert_partition

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ConvertOutput:
    dest: Path
    partitions: list[PartitionResult]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.partitions for p in r.problems]


def _source_log_starts(source: Path) -> dict[TopicPartition, int]:
    try:
        return log_start_offset_checkpoint(source).read()
    except (CheckpointError, FileNotFoundError, ValueError):
        return {}


def run(
    spark: Any,
    source: Path,
    dest: Path,
    *,
    codec: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    index_interval_bytes: int = 4096,
    log: Log = _stderr,
) -> ConvertOutput:
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty: convert writes a new log dir")
    folders = partition_dirs(source)
    if not folders:
        raise FileNotFoundError(f"{source} holds no <topic>-<partition> folders")
    dest.mkdir(parents=True, exist_ok=True)
    starts = _source_log_starts(source)
    jobs = []
    for folder in folders:
        tp = files.parse_topic_partition_name(folder.name)
        jobs.append((str(folder), starts.get(tp)))
    log(f"convert: {len(jobs)} partitions from {source} to {dest}")
    target = str(dest)

    def one(job: tuple[str, int | None]) -> dict[str, Any]:
        folder, start = job
        converted = convert_partition(
            folder,
            target,
            codec=codec,
            batch_bytes=batch_bytes,
            index_interval_bytes=index_interval_bytes,
            log_start_offset=start,
        )
        return asdict(converted)

    rdd = spark.sparkContext.parallelize(jobs, numSlices=len(jobs))
    spark.sparkContext.setJobDescription(f"convert {len(jobs)} partitions")
    results = [PartitionResult(**row) for row in rdd.map(one).collect()]
    ends = {TopicPartition(r.topic, r.partition): r.log_end_offset for r in results}
    recovery_point_checkpoint(dest).write(ends)
    log_start_offset_checkpoint(dest).write(
        {
            TopicPartition(r.topic, r.partition): r.log_start_offset
            for r in results
            if TopicPartition(r.topic, r.partition) in starts
        }
    )
    meta = source / files.META_PROPERTIES_FILE_NAME
    if meta.exists():
        shutil.copyfile(meta, dest / files.META_PROPERTIES_FILE_NAME)
    CleanShutdownFile(dest).write()
    for r in results:
        log(
            f"convert: {r.topic}-{r.partition}: {r.records} records, {r.batches_in} batches "
            f"({r.legacy_entries_in} legacy entries) -> {r.batches_out} v2 batches, "
            f"{r.bytes_in} -> {r.bytes_out} bytes, offsets {r.log_start_offset}..{r.log_end_offset}"
        )
        for problem in r.problems:
            log(f"convert: {r.topic}-{r.partition}: {problem}")
    return ConvertOutput(dest, results)
