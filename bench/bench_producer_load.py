"""Opening a partition with many idempotent producers: what reading their last
five batches back costs (``broker/log/producer_tail.py``).

Baseline, in the same run: the same open with the read-back switched off
(Kafka's behaviour: one batch per producer from the snapshot). Cases:

* 10 producers, 500 batches each, round robin;
* 1000 producers, 8 batches each, round robin (every producer's last five
  batches spread over the last ~3 MB), opened after a clean shutdown and
  after a crash (recovery of the active segment);
* 200 producers whose batch before their last lies 20 MB back: the read
  gives up at its bound (16 MiB);
* no producer at all: nothing is read.

Files are in the page cache (just written), as after a process restart.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import Report
from broker.config import TopicConfig
from broker.log import recovery
from broker.log.unified_log import UnifiedLog
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord

CONFIG = TopicConfig(segment_bytes=1 << 20)
NOW = 1_700_000_000_000


def batch(offset: int, pid: int, seq: int, records: int = 5, size: int = 100) -> bytes:
    recs = [SimpleRecord(NOW + offset + i, None, b"p" * size) for i in range(records)]
    built = build_v2_batch(
        recs,
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=seq if pid >= 0 else -1,
    )
    return bytes(built.buffer)


def write_round_robin(directory: Path, producers: int, rounds: int) -> None:
    log = UnifiedLog.open(directory, CONFIG, time_ms=lambda: NOW)
    for r in range(rounds):
        for pid in range(producers):
            log.append(batch(log.log_end_offset, pid, r * 5))
    log.flush()
    log.close()


def write_idle_producers(directory: Path, producers: int, filler_bytes: int) -> None:
    log = UnifiedLog.open(directory, CONFIG, time_ms=lambda: NOW)
    for r in range(2):
        for pid in range(producers):
            log.append(batch(log.log_end_offset, pid, r * 5))
    while log.size < filler_bytes:
        log.append(batch(log.log_end_offset, -1, 0, records=20, size=1000))
    for pid in range(producers):
        log.append(batch(log.log_end_offset, pid, 10))
    log.flush()
    log.close()


def write_no_producers(directory: Path, total_bytes: int) -> None:
    log = UnifiedLog.open(directory, CONFIG, time_ms=lambda: NOW)
    while log.size < total_bytes:
        log.append(batch(log.log_end_offset, -1, 0))
    log.flush()
    log.close()


@contextmanager
def read_back_off() -> Iterator[None]:
    real = recovery.restore_batch_metadata
    recovery.restore_batch_metadata = lambda *a, **k: recovery.NOTHING_READ  # type: ignore[assignment]
    try:
        yield
    finally:
        recovery.restore_batch_metadata = real  # type: ignore[assignment]


def best_open(open_log: Callable[[], UnifiedLog], repeat: int = 7) -> tuple[float, UnifiedLog]:
    best = float("inf")
    log = None
    for _ in range(repeat):
        if log is not None:
            log.close()
        start = time.perf_counter()
        log = open_log()
        best = min(best, time.perf_counter() - start)
    assert log is not None
    return best, log


def measure(report: Report, name: str, open_log: Callable[[], UnifiedLog]) -> None:
    with read_back_off():
        base_s, base_log = best_open(open_log)
    base_log.close()
    with_s, log = best_open(open_log)
    scan = log.tail_scan
    log.close()
    report.value(f"{name}: open, Kafka's one batch per producer", base_s * 1000, "ms")
    report.value(f"{name}: open, last five read back", with_s * 1000, "ms")
    report.value(f"{name}: bytes read back", scan.bytes_read / 1e3, "kB")
    report.value(f"{name}: batches restored", scan.batches_restored, "batches")
    report.ratio(f"{name}: open with read-back vs without", with_s, base_s)


def main(report: Report) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-producers-"))
    try:
        few = root / "few-0"
        write_round_robin(few, 10, 500)
        measure(
            report,
            "10 producers, clean",
            lambda: UnifiedLog.open(few, CONFIG, had_clean_shutdown=True, time_ms=lambda: NOW),
        )
        many = root / "many-0"
        write_round_robin(many, 1000, 8)
        measure(
            report,
            "1000 producers, clean",
            lambda: UnifiedLog.open(many, CONFIG, had_clean_shutdown=True, time_ms=lambda: NOW),
        )
        active_base = max(int(p.stem) for p in many.glob("*.log"))
        measure(
            report,
            "1000 producers, crash",
            lambda: UnifiedLog.open(
                many,
                CONFIG,
                recovery_point=active_base,
                had_clean_shutdown=False,
                time_ms=lambda: NOW,
            ),
        )
        idle = root / "idle-0"
        write_idle_producers(idle, 200, 20 << 20)
        measure(
            report,
            "200 producers 20 MB back, clean",
            lambda: UnifiedLog.open(idle, CONFIG, had_clean_shutdown=True, time_ms=lambda: NOW),
        )
        plain = root / "plain-0"
        write_no_producers(plain, 5 << 20)
        measure(
            report,
            "no producers, clean",
            lambda: UnifiedLog.open(plain, CONFIG, had_clean_shutdown=True, time_ms=lambda: NOW),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
