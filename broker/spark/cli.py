"""``broker pipeline``: audit, export and convert log dirs with Spark.

::

    broker pipeline audit   LOGDIR... --out DIR [--topics a,b] [--no-verify-crc]
    broker pipeline export  LOGDIR... --out DIR [--format parquet|orc|json] [--by-date]
                                      [--topics a,b] [--no-values] [--overwrite]
    broker pipeline convert SRCDIR --out DSTDIR [--codec keep|none|gzip|snappy|lz4|zstd]

Every sub-command takes ``--master`` (default ``local[*]``) and any number
of ``--conf key=value`` (Spark settings; they win over the pipeline's
defaults in ``session.py``), and shows Spark's progress bar unless
``--quiet``. Exit status: 0 done and clean; 1 done, but the data has
problems (audit: any problem found; convert: bytes or batches skipped);
2 bad arguments or inputs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from broker.records.batch import CompressionType

CODEC_CHOICES = ("keep", "none", "gzip", "snappy", "lz4", "zstd")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. --conf spark.executor.memory=4g (repeatable)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no step messages")
    parser.add_argument(
        "--no-cds",
        action="store_true",
        help="do not use (or create) the JVM class-data-sharing archive that halves start-up",
    )


def _topics(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [t.strip() for t in value.split(",") if t.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="pipeline_command", metavar="SUBCOMMAND", required=True)

    audit = sub.add_parser(
        "audit",
        help="counts, sizes, compression, timestamps and problems (CRC, torn tails, "
        "index mismatches, offset gaps) per topic, partition and segment",
    )
    audit.add_argument("logdirs", nargs="+", metavar="LOGDIR")
    audit.add_argument("--out", required=True, type=Path, help="folder for Parquet + report")
    audit.add_argument("--topics", help="comma-separated topics (default: all)")
    audit.add_argument("--no-verify-crc", action="store_true", help="skip the CRC checks")
    audit.add_argument("--no-report", action="store_true", help="Parquet tables only")
    audit.add_argument(
        "--pack-bytes",
        type=int,
        help="pack small segments into Spark tasks of up to this many bytes "
        "(default: the kafka-log source's packing; 0: one task per segment)",
    )
    audit.add_argument(
        "--max-partition-bytes",
        type=int,
        help="split segments larger than this into several tasks (default 128 MiB)",
    )
    _common(audit)

    export = sub.add_parser("export", help="records to Parquet (or ORC, JSON) by topic [and date]")
    export.add_argument("logdirs", nargs="+", metavar="LOGDIR")
    export.add_argument("--out", required=True, type=Path)
    export.add_argument("--format", default="parquet", choices=("parquet", "orc", "json"))
    export.add_argument(
        "--by-date", action="store_true", help="also partition by the UTC date of the timestamp"
    )
    export.add_argument("--topics", help="comma-separated topics (default: all)")
    export.add_argument("--no-values", action="store_true", help="leave record values out")
    export.add_argument("--no-verify-crc", action="store_true", help="skip the CRC checks")
    export.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    _common(export)

    convert = sub.add_parser(
        "convert",
        help="rewrite a log dir of v0/v1 message sets as v2 segments (same offsets and "
        "timestamps), with fresh indexes, producer snapshots and checkpoints",
    )
    convert.add_argument("source", type=Path, metavar="SRCDIR")
    convert.add_argument("--out", required=True, type=Path, metavar="DSTDIR")
    convert.add_argument(
        "--codec",
        default="keep",
        choices=CODEC_CHOICES,
        help="codec of the written batches (default: keep each batch's own)",
    )
    convert.add_argument(
        "--batch-bytes",
        type=int,
        default=16384,
        help="uncompressed v0/v1 records are grouped into v2 batches of about this size",
    )
    convert.add_argument(
        "--index-interval-bytes",
        type=int,
        default=4096,
        help="index.interval.bytes of the written segments (Kafka's default 4096)",
    )
    _common(convert)


def run(args: argparse.Namespace) -> int:
    from broker.spark import session
    from broker.spark.layout import LayoutError

    try:
        conf = session.parse_conf(args.conf)
    except ValueError as exc:
        print(f"broker pipeline: {exc}", file=sys.stderr)
        return 2

    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    started = session.start(
        session.default_master(args.master),
        conf,
        app_name=f"broker pipeline {args.pipeline_command}",
        progress=not args.quiet,
        use_cds=not args.no_cds,
    )
    try:
        return _dispatch(args, started.spark, log)
    except (LayoutError, FileExistsError, FileNotFoundError, ValueError) as exc:
        print(f"broker pipeline {args.pipeline_command}: {exc}", file=sys.stderr)
        return 2
    finally:
        started.stop()


def _dispatch(args: argparse.Namespace, spark: object, log: Callable[[str], None]) -> int:
    command = args.pipeline_command
    if command == "audit":
        from broker.spark import audit
        from broker.spark.plain import problem_count

        result = audit.run(
            spark,
            args.logdirs,
            args.out,
            verify_crc=not args.no_verify_crc,
            topics=_topics(args.topics),
            max_partition_bytes=args.max_partition_bytes,
            pack_bytes=args.pack_bytes,
            report=not args.no_report,
            log=log,
        )
        t = result.totals
        problems = problem_count(t)
        print(
            f"audit: {t.get('records', 0):,} records in {t.get('batches', 0):,} batches, "
            f"{t.get('segments', 0):,} segments, {t.get('partitions', 0):,} partitions; "
            f"{problems:,} problems; tables and report in {result.out_dir}"
        )
        return 1 if problems else 0
    if command == "export":
        from broker.spark import export

        out = export.run(
            spark,
            args.logdirs,
            args.out,
            fmt=args.format,
            by_date=args.by_date,
            topics=_topics(args.topics),
            values=not args.no_values,
            verify_crc=not args.no_verify_crc,
            mode="overwrite" if args.overwrite else "errorifexists",
            log=log,
        )
        rows = f"{out.rows:,} records" if out.rows >= 0 else "records"
        print(f"export: {rows} written to {out.out_dir} in {out.seconds:.1f} s")
        return 0
    from broker.spark import convert

    codec = None if args.codec == "keep" else int(CompressionType.for_name(args.codec))
    converted = convert.run(
        spark,
        args.source,
        args.out,
        codec=codec,
        batch_bytes=args.batch_bytes,
        index_interval_bytes=args.index_interval_bytes,
        log=log,
    )
    records = sum(r.records for r in converted.partitions)
    print(
        f"convert: {len(converted.partitions)} partitions, {records:,} records written to "
        f"{converted.dest}; {len(converted.problems)} problems"
    )
    return 1 if converted.problems else 0


def main(argv: list[str] | None = None) -> int:
    """``broker pipeline`` as a program of its own (what ``submit.py`` runs
    under spark-submit)."""
    parser = argparse.ArgumentParser(
        prog="broker pipeline", description="Audit, export or convert log dirs with Spark."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
