"""``broker pipeline audit``: what the log dirs hold and what is wrong with them.

The tables and the meaning of every column are defined in ``plain.py``
(the single-process reference the tests hold this job to). Here Spark
computes them:

1. ``kafka-log`` at level ``batches`` (one task per segment or piece of a
   large one, small segments packed together): one row per batch or
   unreadable range; cached, since every table below reads it;
2. ``kafka-log`` at level ``index``: every ``.index`` / ``.timeindex`` entry
   with its verdict;
3. the segment list from the driver (so an empty segment still has a row);
4. offset gaps: a window over each partition's batches in log order
   (segment base offset, position), ``lag(last_offset)``;
5. sums per segment, partition and topic; batch kinds; an hourly timeline;
   the list of problems.

Each table is written as Parquet under ``OUT/<table>/``; the report
(``report.py``) is made from the small ones.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.spark.datasource import NAME
from broker.spark.layout import discover
from broker.spark.plain import (
    HOUR_MS,
    PROBLEM_CRC,
    PROBLEM_GAP,
    PROBLEM_OFFSET_INDEX,
    PROBLEM_TIME_INDEX,
    PROBLEM_UNDECODABLE,
    PROBLEM_UNREADABLE,
    SEGMENT_COUNTERS,
    SEGMENT_MAXIMA,
    SEGMENT_MINIMA,
)

TABLES = ("segments", "partitions", "topics", "batch_kinds", "timeline", "problems")
SEGMENT_KEYS = ["log_dir", "topic", "partition", "segment", "segment_base_offset"]

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class AuditOutput:
    out_dir: Path
    tables: dict[str, Path]
    report: Path | None
    totals: dict[str, Any]


def _reader(spark: Any, level: str, options: dict[str, str]) -> Any:
    reader = spark.read.format(NAME).option("level", level)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def build_tables(
    spark: Any,
    paths: Sequence[str],
    *,
    verify_crc: bool = True,
    topics: Sequence[str] | None = None,
    max_partition_bytes: int | None = None,
    pack_bytes: int | None = None,
) -> dict[str, Any]:
    """The audit's DataFrames: the two scans run and cached here, the tables
    lazy on top of them."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 - Spark's usual name

    options = {"verifyCrc": "true" if verify_crc else "false"}
    if topics:
        options["topics"] = ",".join(topics)
    if max_partition_bytes:
        options["maxPartitionBytes"] = str(max_partition_bytes)
    # small segments share tasks (the data source's packing, spread over the
    # session's parallelism); pack_bytes overrides the target, 0 turns it off
    options["minPartitions"] = str(spark.sparkContext.defaultParallelism)
    if pack_bytes is not None:
        options["packBytes"] = str(pack_bytes)
    path_list = list(paths)
    # both scans materialised once, before any query uses them: a query whose
    # branches read a cached frame not yet filled would each scan the files
    batches = _reader(spark, "batches", options).load(path_list).cache()
    spark.sparkContext.setJobDescription("audit: batch facts of every segment")
    batches.count()
    index = (
        _reader(
            spark,
            "index",
            {k: v for k, v in options.items() if k in ("topics", "packBytes", "minPartitions")},
        )
        .load(path_list)
        .cache()
    )
    spark.sparkContext.setJobDescription("audit: index entries of every segment")
    index.count()
    spark.sparkContext.setJobDescription(None)

    wanted = set(topics) if topics else None
    listed = [
        (
            s.log_dir,
            s.topic,
            s.partition,
            s.path,
            s.base_offset,
            s.size,
            int(s.compacted),
            s.size if s.dirty else 0,
        )
        for s in discover(path_list)
        if wanted is None or s.topic in wanted
    ]
    segment_list = spark.createDataFrame(
        listed,
        "log_dir string, topic string, partition int, segment string, "
        "segment_base_offset bigint, bytes bigint, compacted_segments bigint, dirty_bytes bigint",
    )

    readable = F.col("magic").isNotNull()
    decoded = readable & F.col("error").isNull()

    def count_if(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    def sum_if(cond: Any, column: str) -> Any:
        return F.sum(F.when(cond, F.col(column)).otherwise(0))

    with_holes = batches.withColumn(
        "holes",
        F.greatest(
            F.col("last_offset") - F.col("base_offset") + 1 - F.col("record_count"), F.lit(0)
        ),
    )
    per_batch = with_holes.groupBy(*SEGMENT_KEYS).agg(
        count_if(readable).alias("batches"),
        sum_if(decoded, "record_count").alias("records"),
        sum_if(decoded, "size").alias("record_batch_bytes"),
        sum_if(decoded, "uncompressed_bytes").alias("uncompressed_bytes"),
        sum_if(decoded, "no_timestamp_records").alias("no_timestamp_records"),
        count_if(readable & (F.col("crc_valid") == F.lit(False))).alias("crc_failures"),
        count_if(readable & F.col("error").isNotNull()).alias("undecodable_batches"),
        count_if(~readable).alias("unreadable_spans"),
        sum_if(~readable, "size").alias("unreadable_bytes"),
        count_if(readable & (F.col("magic") < 2)).alias("legacy_batches"),
        sum_if(decoded & F.col("base_offset").isNotNull(), "holes").alias("batch_offset_holes"),
        F.min(F.when(readable, F.col("base_offset"))).alias("first_offset"),
        F.max(F.when(readable, F.col("last_offset"))).alias("last_offset"),
        F.min(F.when(decoded, F.col("min_timestamp"))).alias("min_timestamp"),
        F.max(F.when(decoded, F.col("max_timestamp"))).alias("max_timestamp"),
    )

    is_offset = F.col("index") == F.lit("offset")
    is_time = F.col("index") == F.lit("time")
    entry = F.col("slot") >= 0
    per_index = index.groupBy(*SEGMENT_KEYS).agg(
        count_if(is_offset & entry).alias("offset_index_entries"),
        count_if(is_offset & F.col("mismatch")).alias("offset_index_mismatches"),
        count_if(is_time & entry).alias("time_index_entries"),
        count_if(is_time & F.col("mismatch")).alias("time_index_mismatches"),
    )

    in_log_order = Window.partitionBy("log_dir", "topic", "partition").orderBy(
        "segment_base_offset", "position"
    )
    ordered = (
        batches.where(readable & F.col("base_offset").isNotNull())
        .withColumn("previous_last", F.lag("last_offset").over(in_log_order))
        .where(F.col("base_offset") > F.col("previous_last") + 1)
        .withColumn("missing", F.col("base_offset") - F.col("previous_last") - 1)
    )
    # in a compacted topic a gap is what the log cleaner removed, not a problem
    gaps = ordered.join(
        segment_list.select(*SEGMENT_KEYS, "compacted_segments"), SEGMENT_KEYS, "left"
    ).cache()
    compacted = F.coalesce(F.col("compacted_segments"), F.lit(0)) > 0
    per_gap = gaps.groupBy(*SEGMENT_KEYS).agg(
        count_if(~compacted).alias("offset_gaps"),
        count_if(compacted).alias("cleaned_offset_gaps"),
        F.sum("missing").alias("missing_offsets"),
    )

    segments = (
        segment_list.join(per_batch, SEGMENT_KEYS, "left")
        .join(per_index, SEGMENT_KEYS, "left")
        .join(per_gap, SEGMENT_KEYS, "left")
        .fillna(0, subset=[c for c in SEGMENT_COUNTERS if c != "bytes"])
    )
    segments = _with_ratio(segments, F).select(
        *SEGMENT_KEYS, *SEGMENT_COUNTERS, *SEGMENT_MINIMA, *SEGMENT_MAXIMA, "compression_ratio"
    )
    segments = segments.cache()

    partitions = _roll_up(segments, ["log_dir", "topic", "partition"], F).withColumnRenamed(
        "rows", "segments"
    )
    topics_df = (
        _roll_up(segments, ["topic"], F)
        .withColumnRenamed("rows", "segments")
        .join(
            segments.groupBy("topic").agg(
                F.countDistinct("log_dir", "partition").alias("partitions")
            ),
            ["topic"],
        )
    )

    batch_kinds = (
        batches.where(readable)
        .groupBy(*SEGMENT_KEYS, "magic", "codec")
        .agg(
            F.count(F.lit(1)).alias("batches"),
            count_if(F.col("error").isNotNull()).alias("undecodable"),
            sum_if(F.col("error").isNull(), "record_count").alias("records"),
            sum_if(F.col("error").isNull(), "size").alias("stored_bytes"),
            sum_if(F.col("error").isNull(), "uncompressed_bytes").alias("uncompressed_bytes"),
        )
    )
    batch_kinds = batch_kinds.withColumn(
        "compression_ratio",
        F.when(F.col("stored_bytes") > 0, F.col("uncompressed_bytes") / F.col("stored_bytes")),
    )

    timeline = (
        batches.where(
            decoded
            & F.col("max_timestamp").isNotNull()
            & F.coalesce(F.col("crc_valid"), F.lit(True))
        )
        .withColumn("hour", F.floor(F.col("max_timestamp") / HOUR_MS) * HOUR_MS)
        .groupBy("topic", "hour")
        .agg(F.sum("record_count").alias("records"))
        .withColumn("hour", F.col("hour").cast("bigint"))
    )

    problem_cols = [*SEGMENT_KEYS, "position", "offset", "kind", "detail"]
    null_long = F.lit(None).cast("bigint")
    problems = (
        batches.where(~readable)
        .select(
            *SEGMENT_KEYS,
            "position",
            null_long.alias("offset"),
            F.lit(PROBLEM_UNREADABLE).alias("kind"),
            F.col("error").alias("detail"),
        )
        .unionByName(
            batches.where(readable & (F.col("crc_valid") == F.lit(False))).select(
                *SEGMENT_KEYS,
                "position",
                F.col("last_offset").alias("offset"),
                F.lit(PROBLEM_CRC).alias("kind"),
                F.concat(
                    F.lit("CRC mismatch in a magic v"),
                    F.col("magic").cast("string"),
                    F.lit(" batch"),
                ).alias("detail"),
            )
        )
        .unionByName(
            batches.where(readable & F.col("error").isNotNull()).select(
                *SEGMENT_KEYS,
                "position",
                F.coalesce("base_offset", "last_offset").alias("offset"),
                F.lit(PROBLEM_UNDECODABLE).alias("kind"),
                F.col("error").alias("detail"),
            )
        )
        .unionByName(
            gaps.where(~compacted).select(
                *SEGMENT_KEYS,
                "position",
                (F.col("previous_last") + 1).alias("offset"),
                F.lit(PROBLEM_GAP).alias("kind"),
                F.concat(
                    F.col("missing").cast("string"),
                    F.lit(" offsets missing before offset "),
                    F.col("base_offset").cast("string"),
                ).alias("detail"),
            )
        )
        .unionByName(
            index.where(F.col("mismatch")).select(
                *SEGMENT_KEYS,
                F.col("position"),
                F.col("offset"),
                F.when(is_offset, F.lit(PROBLEM_OFFSET_INDEX))
                .otherwise(F.lit(PROBLEM_TIME_INDEX))
                .alias("kind"),
                F.concat(
                    F.lit("slot "), F.col("slot").cast("string"), F.lit(": "), F.col("problem")
                ).alias("detail"),
            )
        )
        .select(*problem_cols)
    )
    return {
        "batches": batches,
        "index": index,
        "gaps": gaps,
        "segments": segments,
        "partitions": partitions,
        "topics": topics_df,
        "batch_kinds": batch_kinds,
        "timeline": timeline,
        "problems": problems,
    }


def _with_ratio(df: Any, F: Any) -> Any:  # noqa: N803
    return df.withColumn(
        "compression_ratio",
        F.when(
            F.col("record_batch_bytes") > 0,
            F.col("uncompressed_bytes") / F.col("record_batch_bytes"),
        ),
    )


def _roll_up(segments: Any, keys: list[str], F: Any) -> Any:  # noqa: N803
    aggregates = [F.count(F.lit(1)).alias("rows")]
    aggregates += [F.sum(c).alias(c) for c in SEGMENT_COUNTERS]
    aggregates += [F.min(c).alias(c) for c in SEGMENT_MINIMA]
    aggregates += [F.max(c).alias(c) for c in SEGMENT_MAXIMA]
    rolled = _with_ratio(segments.groupBy(*keys).agg(*aggregates), F)
    # plain.dirty_ratio: what the log cleaner has yet to clean of compacted bytes
    return rolled.withColumn(
        "dirty_ratio",
        F.when(
            F.col("compacted_segments") > 0,
            F.when(F.col("bytes") > 0, F.col("dirty_bytes") / F.col("bytes")).otherwise(F.lit(0.0)),
        ),
    )


def run(
    spark: Any,
    paths: Sequence[str],
    out_dir: Path,
    *,
    verify_crc: bool = True,
    topics: Sequence[str] | None = None,
    max_partition_bytes: int | None = None,
    pack_bytes: int | None = None,
    report: bool = True,
    log: Log = _stderr,
) -> AuditOutput:
    """Compute and write every table; then the report. Returns where things went."""
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"audit: reading {', '.join(paths)}")
    frames = build_tables(
        spark,
        paths,
        verify_crc=verify_crc,
        topics=topics,
        max_partition_bytes=max_partition_bytes,
        pack_bytes=pack_bytes,
    )
    # the tables are small and read cached data: written by concurrent jobs, so
    # one job's planning and commit overlap another's tasks
    written = {name: out_dir / name for name in TABLES}

    def write(name: str) -> None:
        log(f"audit: writing {name} -> {written[name]}")
        frames[name].coalesce(1).write.mode("overwrite").parquet(str(written[name]))

    frames["segments"].count()  # the frame every roll-up reads, filled once
    with ThreadPoolExecutor(max_workers=3) as pool:
        for future in [pool.submit(write, name) for name in TABLES]:
            future.result()
    totals = _totals(written["topics"])
    report_path = None
    if report:
        from broker.spark.report import write_report

        report_path = write_report(out_dir, paths)
        log(f"audit: report -> {report_path}")
    for cached in ("batches", "index", "gaps", "segments"):
        frames[cached].unpersist()
    return AuditOutput(out_dir, written, report_path, totals)


def _totals(topics_table: Path) -> dict[str, Any]:
    """Sums over the written ``topics`` table (read back with pyarrow)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(topics_table).to_pylist()
    names = ("segments", "partitions", *SEGMENT_COUNTERS)
    return {name: sum(int(r.get(name) or 0) for r in rows) for name in names}
