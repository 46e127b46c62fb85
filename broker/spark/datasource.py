"""The ``kafka-log`` Spark data source (``pyspark.sql.datasource``, Spark 4).

::

    spark.dataSource.register(KafkaLogDataSource)      # session.py does it
    df = spark.read.format("kafka-log").load("/var/lib/kafka/data")
    df = spark.read.format("kafka-log").load(["/data/a-0", "/data/b-0/00000000000000000000.log"])

A path is a log dir, a ``<topic>-<partition>`` folder or a segment file
(``layout.py``). Options (case-insensitive, all optional):

=====================  ===================================================
``level``              ``records`` (default), ``batches`` or ``index``
                       (row layouts in ``schemas.py``)
``verifyCrc``          ``true`` (default): check each batch's CRC into
                       ``crc_valid``; ``false`` leaves it null
``values``             ``false``: leave ``value`` null (keys, headers kept)
``topics``             comma-separated topics to read
``partitions``         comma-separated partition numbers
``startOffset``        first offset wanted (inclusive)
``endOffset``          offset past the last wanted (exclusive)
``maxPartitionBytes``  segments larger than this are split at batch
                       boundaries found through the offset index; the
                       default packing keeps a task within it
                       (default 134217728)
``packBytes``          the size small splits are packed up to (default:
                       Spark's rule, see ``splits.py``; ``0``: one task per
                       segment or piece)
``openCostInBytes``    what one more segment costs a task, in bytes, when
                       packing (default 4194304)
``minPartitions``      when the bytes are few, pack into at least about
                       this many tasks (default: the planner's CPU count)
``maxDecompressedBytes``  bound of one decompressed batch (default 64 MiB)
``rowsPerBatch``       rows per Arrow record batch handed to Spark (8192)
``pushFilters``        ``true`` (default): accept pushed filters on topic,
                       partition and offset (needs
                       ``spark.sql.python.filterPushdown.enabled``, which
                       ``session.py`` sets); ``false`` for a session where
                       that cannot be set
=====================  ===================================================

One input partition per segment file (or per piece of a large one), small
ones packed together; at the index level, which reads headers only, one per
partition folder, small ones packed the same way. Rows reach Spark as Arrow
record batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES
from broker.spark import schemas
from broker.spark.layout import discover, split_paths
from broker.spark.rows import DEFAULT_ROWS_PER_BATCH, ReadOptions, read_split
from broker.spark.selection import Selection, apply_filter, from_options
from broker.spark.splits import (
    DEFAULT_MAX_SPLIT_BYTES,
    DEFAULT_OPEN_COST_BYTES,
    FolderSplit,
    PackedSplit,
    SegmentSplit,
    folder_groups,
    pack,
    pack_target,
    plan,
    plan_folders,
    split_size,
)

NAME = "kafka-log"

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"option {key} must be true or false, got {raw!r}")


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    value = int(raw)
    if value <= 0:
        raise ValueError(f"option {key} must be positive, got {raw!r}")
    return value


def _not_negative(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = options.get(key)
    if raw is None:
        return default
    value = int(raw)
    if value < 0:
        raise ValueError(f"option {key} must not be negative, got {raw!r}")
    return value


@dataclass(frozen=True, slots=True)
class ReaderConfig:
    paths: tuple[str, ...]
    level: str
    selection: Selection
    read: ReadOptions
    max_split_bytes: int
    #: None: Spark's rule (``splits.pack_target``); 0: no packing
    pack_bytes: int | None
    open_cost: int
    min_partitions: int
    push_filters: bool

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReaderConfig:
        lowered = {k.lower(): v for k, v in options.items()}
        raw_paths = lowered.get("paths") or lowered.get("path")
        if not raw_paths:
            raise ValueError("kafka-log needs a path: .load(<log dir | partition dir | segment>)")
        level = lowered.get("level", schemas.LEVEL_RECORDS).strip().lower()
        if level not in schemas.LEVELS:
            raise ValueError(f"option level must be one of {', '.join(schemas.LEVELS)}")
        return cls(
            paths=tuple(split_paths(raw_paths)),
            level=level,
            selection=from_options(lowered),
            read=ReadOptions(
                verify_crc=_flag(lowered, "verifycrc", True),
                values=_flag(lowered, "values", True),
                max_decompressed_bytes=_positive(
                    lowered, "maxdecompressedbytes", DEFAULT_MAX_DECOMPRESSED_BYTES
                ),
                rows_per_batch=_positive(lowered, "rowsperbatch", DEFAULT_ROWS_PER_BATCH),
            ),
            max_split_bytes=_positive(lowered, "maxpartitionbytes", DEFAULT_MAX_SPLIT_BYTES),
            pack_bytes=_not_negative(lowered, "packbytes", None),
            open_cost=_not_negative(lowered, "opencostinbytes", DEFAULT_OPEN_COST_BYTES) or 0,
            min_partitions=_positive(lowered, "minpartitions", os.cpu_count() or 1),
            push_filters=_flag(lowered, "pushfilters", True),
        )


class SplitPartition(InputPartition):
    """One Spark task: a segment file or a piece of one; at the index level a
    partition folder (``splits.py``)."""

    def __init__(self, split: SegmentSplit | PackedSplit | FolderSplit | None) -> None:
        super().__init__(split)
        self.split = split


class KafkaLogReader(DataSourceReader):
    """Reads without filter pushdown (``pushFilters=false``)."""

    def __init__(self, config: ReaderConfig) -> None:
        self.config = config
        self.selection = config.selection

    def planned_splits(self) -> Sequence[SegmentSplit | PackedSplit | FolderSplit]:
        config = self.config
        segments = discover(config.paths)
        if config.level == schemas.LEVEL_INDEX:
            groups = folder_groups(segments, self.selection)
            target = self._pack_bytes([s.size for g in groups for s in g])
            return plan_folders(segments, self.selection, target, config.open_cost)
        splits = plan(segments, self.selection, config.max_split_bytes)
        return pack(splits, self._pack_bytes([split_size(s) for s in splits]), config.open_cost)

    def _pack_bytes(self, sizes: Sequence[int]) -> int:
        config = self.config
        if config.pack_bytes is not None:
            return config.pack_bytes
        return pack_target(sizes, config.max_split_bytes, config.open_cost, config.min_partitions)

    def partitions(self) -> Sequence[InputPartition]:
        splits = self.planned_splits()
        if not splits:  # nothing selected: one empty task rather than none
            return [SplitPartition(None)]
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        split = getattr(partition, "split", None)
        if split is None:
            return iter(())
        return read_split(self.config.level, split, self.selection, self.config.read)


class KafkaLogPushdownReader(KafkaLogReader):
    """Takes the topic, partition and offset filters Spark pushes down and
    applies them while planning and reading (``selection.py``); returns
    the others for Spark to evaluate."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:  # noqa: N802 - Spark's name
        columns: tuple[str, ...] = ("topic", "partition", "offset")
        if self.config.level != schemas.LEVEL_RECORDS:
            columns = ("topic", "partition")
        remaining = []
        for flt in filters:
            narrowed = apply_filter(self.selection, flt, columns)
            if narrowed is None:
                remaining.append(flt)
            else:
                self.selection = narrowed
        return remaining


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return schemas.SCHEMAS[ReaderConfig.from_options(self.options).level]

    def reader(self, schema: StructType) -> DataSourceReader:
        config = ReaderConfig.from_options(self.options)
        if config.push_filters:
            return KafkaLogPushdownReader(config)
        return KafkaLogReader(config)
