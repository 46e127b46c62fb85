"""The Spark pipeline on a log dir of a little over 1 GB.

* Audit: ``broker pipeline audit`` (Spark, local[2]) against the plain
  single-process audit of the same files in the same run
  (``broker.spark.plain``: every record decoded into a ``Record``, numbers
  added up in Python; the reference the tests hold Spark's tables to). Goal:
  Spark at least 1.6x faster on the machine's 2 cores, start-up of the
  session included. For the record, the same batch walk Spark's tasks run
  (compiled record walk, no Spark) is also timed in one process, so the
  share of the 2 cores and the share of the faster walk can be told apart.
* Export: records per second of ``broker pipeline export`` to Parquet.

The log dir (6 topics, 10 partitions, 64 MB segments; v2 batches in lz4,
zstd, snappy, gzip and none, plus v1 gzip wrappers as an old broker wrote
them) is generated in a temporary directory with the broker's own writers:
a few batches are built once with ``broker.records`` builders, then stamped
with fresh offsets and timestamps (new CRC) and appended through
``UnifiedLog``, so indexes and snapshots are as the broker writes them. It
is read once before timing (page cache warm for everyone) and deleted at
the end.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Report
from broker.config import TopicConfig
from broker.log.checkpoints import CleanShutdownFile, recovery_point_checkpoint
from broker.log.files import TopicPartition
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType, TimestampType, write_crc
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord

#: what this bench imports beyond the broker's dependencies (checked by bench/__main__.py)
REQUIRES = ("pyspark", "pyarrow")

TOTAL_BYTES = 1_150 * 2**20
SEGMENT_BYTES = 64 * 2**20
RECORDS_PER_BATCH = 400
TEMPLATES = 6
BASE_TS = 1_700_000_000_000

#: topic, partitions, magic, codec, share of the bytes
TOPICS = [
    ("orders", 2, 2, CompressionType.LZ4, 0.28),
    ("clicks", 2, 2, CompressionType.ZSTD, 0.22),
    ("payments", 2, 2, CompressionType.NONE, 0.20),
    ("events", 2, 2, CompressionType.SNAPPY, 0.15),
    ("audit-trail", 1, 2, CompressionType.GZIP, 0.08),
    ("legacy-v1", 1, 1, CompressionType.GZIP, 0.07),
]

WORDS = [
    "order",
    "item",
    "user",
    "session",
    "click",
    "view",
    "cart",
    "checkout",
    "payment",
    "refund",
    "shipped",
    "delivered",
    "returned",
    "pending",
    "approved",
    "declined",
    "region",
    "eu",
    "us",
    "apac",
    "mobile",
    "web",
    "api",
    "retry",
]


def _records(rng: random.Random, n: int) -> list[SimpleRecord]:
    out = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(24))
        value = f'{{"id":{rng.getrandbits(40)},"seq":{i},"text":"{words}"}}'.encode()
        out.append(SimpleRecord(BASE_TS + i * 5, b"user-%06d" % rng.randrange(10**6), value))
    return out


def _templates(magic: int, codec: int, rng: random.Random) -> list[bytes]:
    built = []
    for _ in range(TEMPLATES):
        records = _records(rng, RECORDS_PER_BATCH)
        if magic == 2:
            b = build_v2_batch(records, compression_type=codec, partition_leader_epoch=0)
        else:
            b = build_legacy(
                records,
                magic=magic,
                compression_type=codec,
                timestamp_type=TimestampType.CREATE_TIME,
            )
        built.append(bytes(b.buffer))
    return built


def _stamp(template: bytes, magic: int, base_offset: int, shift_ms: int) -> bytearray:
    """The template at a new base offset; v2 timestamps moved on by ``shift_ms``."""
    buf = bytearray(template)
    if magic == 2:
        struct.pack_into(">q", buf, 0, base_offset)
        base_ts, max_ts = struct.unpack_from(">qq", buf, 27)
        struct.pack_into(">qq", buf, 27, base_ts + shift_ms, max_ts + shift_ms)
        write_crc(buf, 0, len(buf))
    else:  # a v1 wrapper: its offset is the last inner one (outside the CRC)
        struct.pack_into(">q", buf, 0, base_offset + RECORDS_PER_BATCH - 1)
    return buf


def generate(root: Path) -> int:
    """Write the log dir; returns its size in bytes."""
    rng = random.Random(7)
    config = TopicConfig().with_overrides({"segment.bytes": SEGMENT_BYTES, "segment.ms": 2**62})
    ends: dict[TopicPartition, int] = {}
    for topic, partitions, magic, codec, share in TOPICS:
        templates = _templates(magic, codec, rng)
        per_partition = TOTAL_BYTES * share / partitions
        for p in range(partitions):
            log = UnifiedLog.open(root / f"{topic}-{p}", config, had_clean_shutdown=True)
            written = 0
            n = 0
            while written < per_partition:
                data = _stamp(templates[n % TEMPLATES], magic, log.log_end_offset, n * 2_000)
                log.append(data)
                written += len(data)
                n += 1
            log.flush(include_empty_active=True)
            ends[TopicPartition(topic, p)] = log.log_end_offset
            log.close()
    recovery_point_checkpoint(root).write(ends)
    CleanShutdownFile(root).write()
    return sum(f.stat().st_size for f in root.rglob("*.log"))


def _warm(root: Path) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                while fh.read(8 << 20):
                    pass


def _serial_batch_walk(paths: list[str]) -> int:
    from broker.spark.layout import discover
    from broker.spark.rows import read_batches
    from broker.spark.selection import Selection
    from broker.spark.splits import plan

    rows = 0
    for split in plan(discover(paths), Selection()):
        for chunk in read_batches(split):
            rows += chunk.num_rows
    return rows


def main(report: Report) -> None:
    from broker.spark import audit, export, plain, session

    base = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        root = base / "logs"
        start = time.perf_counter()
        size = generate(root)
        report.value("log dir generated (MiB)", size / 2**20, "MiB")
        report.value("generation time", time.perf_counter() - start, "s")
        _warm(root)
        paths = [str(root)]

        start = time.perf_counter()
        reference = plain.audit(paths)
        plain_s = time.perf_counter() - start
        records = sum(t["records"] for t in reference.topics)
        report.value("records", records, "records")
        report.value("plain single-process audit", plain_s, "s")

        start = time.perf_counter()
        _serial_batch_walk(paths)
        walk_s = time.perf_counter() - start
        report.value("batch walk of Spark's tasks, one process, no Spark", walk_s, "s")

        start = time.perf_counter()
        started = session.start("local[2]", progress=False)
        try:
            spark = started.spark
            start_s = time.perf_counter() - start
            report.value("Spark session start (local[2])", start_s, "s")
            t0 = time.perf_counter()
            result = audit.run(spark, paths, base / "audit", log=lambda _m: None)
            audit_s = time.perf_counter() - t0
            report.value("Spark audit (local[2], tables + report)", audit_s, "s")
            same = result.totals["records"] == records and result.totals["batches"] == sum(
                t["batches"] for t in reference.topics
            )
            report.value("Spark audit agrees with the plain audit (1 = yes)", int(same), "")
            end_to_end = start_s + audit_s
            report.ratio(
                "audit speed-up: plain / Spark incl. session start",
                plain_s,
                end_to_end,
                goal=">= 1.6x",
                ok=plain_s / end_to_end >= 1.6,
            )
            report.ratio("audit speed-up: plain / Spark audit alone", plain_s, audit_s)
            report.ratio("one-process batch walk / Spark audit alone", walk_s, audit_s)

            t0 = time.perf_counter()
            exported = export.run(spark, paths, base / "export", log=lambda _m: None)
            export_s = time.perf_counter() - t0
            report.value("export: records written", exported.rows, "records")
            report.value(
                "export: records per second (local[2], Parquet)", exported.rows / export_s, "rows/s"
            )
            report.value("export: MiB of log per second", size / 2**20 / export_s, "MiB/s")
        finally:
            started.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_alone() -> Any:  # pragma: no cover - manual use: python -m bench.bench_pipeline
    report = Report()
    report.section("pipeline")
    main(report)
    return report


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    _run_alone()
