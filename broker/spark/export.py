"""``broker pipeline export``: the records of log dirs as Parquet (or ORC, JSON).

Reads the ``kafka-log`` source at its records level and writes every record
partitioned by topic (``OUT/topic=<t>/``), and by the UTC date of its
timestamp when asked (``OUT/topic=<t>/date=<yyyy-mm-dd>/``; records without
a timestamp land in ``date=__HIVE_DEFAULT_PARTITION__``). Columns: those of
the records level except ``topic`` (in the folder name) and ``error``.

Rows the reader marks with an ``error`` (bytes that could not be framed,
batches that could not be decoded) are not records and are not exported;
``broker pipeline audit`` lists them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.spark.datasource import NAME

FORMATS = ("parquet", "orc", "json")

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ExportOutput:
    out_dir: Path
    rows: int
    seconds: float


def run(
    spark: Any,
    paths: Sequence[str],
    out_dir: Path,
    *,
    fmt: str = "parquet",
    by_date: bool = False,
    topics: Sequence[str] | None = None,
    values: bool = True,
    verify_crc: bool = True,
    mode: str = "errorifexists",
    log: Log = _stderr,
) -> ExportOutput:
    from pyspark.sql import functions as F  # noqa: N812 - Spark's usual name

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    reader = (
        spark.read.format(NAME)
        .option("values", "true" if values else "false")
        .option("verifyCrc", "true" if verify_crc else "false")
        # small segments packed into tasks spread over the session's parallelism
        .option("minPartitions", str(spark.sparkContext.defaultParallelism))
    )
    if topics:
        reader = reader.option("topics", ",".join(topics))
    df = reader.load(list(paths)).where(F.col("error").isNull()).drop("error")
    partition_by = ["topic"]
    if by_date:
        df = df.withColumn(
            "date",
            F.when(
                F.col("timestamp") >= 0,
                F.to_date(F.timestamp_millis(F.col("timestamp"))),
            ),
        )
        partition_by.append("date")
    log(f"export: {', '.join(paths)} -> {out_dir} ({fmt}, by {', '.join(partition_by)})")
    start = time.perf_counter()
    df.write.mode(mode).partitionBy(*partition_by).format(fmt).save(str(out_dir))
    seconds = time.perf_counter() - start
    rows = spark.read.format(fmt).load(str(out_dir)).count() if fmt != "json" else -1
    log(f"export: {rows if rows >= 0 else 'all'} records written in {seconds:.1f} s")
    return ExportOutput(out_dir, rows, seconds)
