"""Storage benchmarks: appends, recovery, random offset lookups.

* Append throughput of ``UnifiedLog.append`` with 1 MB and 16 KB v2 batches
  against a plain loop of ``os.write`` of the same bytes to a file in the
  same directory (goal >= 0.9x). Both write ~256 MB into the page cache,
  best of 3, alternating.
* Recovery of an unclean 1 GB log (16 KB batches, no clean-shutdown marker,
  recovery point 0: every segment is scanned, every CRC checked, both
  indexes rebuilt) against reading the same ``.log`` files sequentially
  with 1 MB reads (goal <= 2x). The files are read once before both so both
  run from the page cache (the page-cache effect is dropped, not measured).
  Both sides write into the page cache; the log also stores two index
  entries per 16 KB append into its mmap'd indexes (every ``index.interval.bytes``
  = 4096), whose page faults (a new page every few hundred entries, and again
  after each writeback) are part of its cost, as in Kafka.
* Random offset lookups per second (``read(offset, 1)`` on the 1 GB log:
  index lookup, short scan, file slice).

Data is generated in a temporary directory and deleted at the end.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import Report, best_of, settle
from broker.config import TopicConfig
from broker.log import active_segment, scan
from broker.log.unified_log import UnifiedLog
from broker.records.batch import pack_header, write_crc


def make_batches(batch_size: int, total: int, first_offset: int = 0) -> list[bytes]:
    """One-record v2 batches of ``batch_size`` bytes with consecutive offsets."""
    value_len = batch_size - 61 - 12  # record overhead for a value of this size
    batches = []
    offset = first_offset
    payload = os.urandom(value_len)
    for _ in range(max(1, total // batch_size)):
        record = _record(payload)
        buf = bytearray(61 + len(record))
        pack_header(
            buf,
            0,
            base_offset=offset,
            batch_length=len(buf) - 12,
            partition_leader_epoch=0,
            attributes=0,
            last_offset_delta=0,
            base_timestamp=1_700_000_000_000 + offset,
            max_timestamp=1_700_000_000_000 + offset,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            records_count=1,
        )
        buf[61:] = record
        write_crc(buf, 0, len(buf))
        batches.append(bytes(buf))
        offset += 1
    return batches


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _record(value: bytes) -> bytes:
    body = b"\x00\x00\x00" + _varint(-1) + _varint(len(value)) + value + b"\x00"
    return _varint(len(body)) + body


def bench_append(report: Report, root: Path, batch_size: int, total: int) -> None:
    """Only the append loops are timed (opening and closing are not); five
    interleaved rounds, the fastest of each kept (the machine is shared),
    each from the same page-cache state (``bench.common.settle``)."""
    batches = make_batches(batch_size, total)
    nbytes = sum(len(b) for b in batches)
    config = TopicConfig(segment_bytes=2**31 - 1)

    def run_log() -> float:
        directory = root / "append-0"
        settle()
        log = UnifiedLog.open(directory, config, had_clean_shutdown=True)
        append = log.append
        start = time.perf_counter()
        for batch in batches:
            append(batch)
        elapsed = time.perf_counter() - start
        log.close()
        shutil.rmtree(directory)
        return elapsed

    def run_plain() -> float:
        path = root / "plain.bin"
        settle()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        write = os.write
        start = time.perf_counter()
        for batch in batches:
            write(fd, batch)
        elapsed = time.perf_counter() - start
        os.close(fd)
        path.unlink()
        return elapsed

    log_s = plain_s = float("inf")
    for _ in range(5):
        plain_s = min(plain_s, run_plain())
        log_s = min(log_s, run_log())
    label = f"{batch_size // 1024} KB" if batch_size < 1 << 20 else f"{batch_size >> 20} MB"
    report.value(f"append {label} batches: log", nbytes / log_s / 1e6, "MB/s")
    report.value(f"append {label} batches: os.write loop", nbytes / plain_s / 1e6, "MB/s")
    report.value(f"append {label} batches: log per append", log_s / len(batches) * 1e6, "us")
    report.value(f"append {label} batches: os.write per call", plain_s / len(batches) * 1e6, "us")
    # throughput ratio log / plain = plain time / log time
    report.ratio(
        f"append throughput {label} batches vs os.write loop",
        plain_s,
        log_s,
        goal=">= 0.9x",
        ok=plain_s / log_s >= 0.9,
    )


def read_files(paths: list[Path]) -> int:
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    total = 0
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(view)
                if not n:
                    break
                total += n
    return total


def bench_recovery_and_lookups(report: Report, root: Path) -> None:
    directory = root / "recover-0"
    config = TopicConfig()
    log = UnifiedLog.open(directory, config, had_clean_shutdown=True)
    batch_size = 16 * 1024
    target = 1 << 30
    written = 0
    chunk = 4096
    while written < target:
        for batch in make_batches(batch_size, chunk * batch_size, log.log_end_offset):
            log.append(batch)
            written += len(batch)
    leo = log.log_end_offset
    log.close_handlers()  # a crash: nothing trimmed, no marker, recovery point 0
    log_files = sorted(directory.glob("*.log"))
    read_files(log_files)  # warm the page cache for both measurements

    read_s = best_of(lambda: read_files(log_files), repeat=3)

    def recover() -> UnifiedLog:
        return UnifiedLog.open(directory, config, recovery_point=0, had_clean_shutdown=False)

    recover_s = float("inf")
    recovered = None
    for _ in range(3):
        if recovered is not None:
            recovered.close_handlers()
        start = time.perf_counter()
        recovered = recover()
        recover_s = min(recover_s, time.perf_counter() - start)
    assert recovered is not None and recovered.log_end_offset == leo
    assert recovered.recovered_segments == len(log_files)
    report.value("recovery: bytes scanned", written / 1e6, "MB")
    print(f"  (recovery scan: {scan.IMPLEMENTATION}; append path: {active_segment.IMPLEMENTATION})")
    report.value("sequential read of the same files (page cache)", read_s * 1000, "ms")
    report.value("unclean recovery (recovery point 0)", recover_s * 1000, "ms")
    report.ratio(
        "unclean recovery of 1 GB vs sequential read",
        recover_s,
        read_s,
        goal="<= 2x",
        ok=recover_s <= 2 * read_s,
    )

    rng = random.Random(1)
    offsets = [rng.randrange(leo) for _ in range(20000)]

    def lookups() -> None:
        for offset in offsets:
            recovered.read(offset, 1)

    lookup_s = best_of(lookups, repeat=3)
    report.value("random offset lookups (read(offset, 1))", len(offsets) / lookup_s, "lookups/s")
    recovered.close()


def main(report: Report) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-log-"))
    try:
        bench_append(report, root, 1 << 20, 256 << 20)
        bench_append(report, root, 16 << 10, 256 << 20)
        bench_recovery_and_lookups(report, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
