"""Crash tests of the log with a real process killed by SIGKILL.

A writer subprocess (``log_crash_writer.py``) appends and flushes in a loop,
reporting flushed offsets through its stdout pipe, and is killed at random
moments (10 rounds, each at most ~1.5 s). After every kill the log is
reopened (no clean-shutdown marker: recovery) and must hold every flushed
batch, with contiguous offsets, the expected content, and indexes that pass
their checks. Then damage is done by hand to a crashed log -- torn tails,
appended garbage, zeroed regions as preallocation leaves them, deleted or
corrupted index files -- and each recovers.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from broker.log.unified_log import UnifiedLog
from broker.records.entries import iter_file_entries
from tests.integration.log_crash_writer import TP, value_for
from tests.unit.log.helpers import entry_offsets

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run_writer_and_kill(log_dir: Path, seed: int, preallocate: bool, kill_after: float) -> int:
    """Start the writer, kill it with SIGKILL after ``kill_after`` s; the last
    flushed offset it reported (0 if none)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.log_crash_writer",
            str(log_dir),
            str(seed),
            "1" if preallocate else "0",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    flushed = [0]

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = line.split()
            if parts and parts[0] == b"flushed":
                flushed[0] = int(parts[1])

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20  # start-up is bounded too
    while flushed[0] == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    thread.join(timeout=10)
    assert proc.stderr is not None and proc.stdout is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, err
    return flushed[0]


def check_log(log: UnifiedLog) -> None:
    """Contiguous offsets from the first segment, content derived from offsets,
    indexes consistent with the data."""
    expected = log.segments[0].base_offset
    for segment in log.segments:
        data = segment.log.pread(0, segment.size)
        for entry in iter_file_entries(data):
            batch = data[entry.position : entry.position + entry.size_in_bytes]
            assert entry.offset == expected
            offsets = entry_offsets(batch)
            assert offsets == list(range(expected, expected + len(offsets)))
            for offset in offsets:
                assert value_for(offset, 13)[:13] in batch
            expected += len(offsets)
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        segment.offset_index.check_entries_increasing()
        segment.time_index.check_entries_increasing()
        for i in range(segment.offset_index.entries):
            entry_ = segment.offset_index.entry(i)
            found = segment.log.search_for_offset_with_size(entry_.offset, entry_.position)
            assert found is not None and found.position == entry_.position
    assert expected == log.log_end_offset


def reopen(log_dir: Path) -> LogManager:
    manager = LogManager([log_dir])
    manager.startup()
    return manager


def test_sigkill_at_random_moments_keeps_every_flushed_batch(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    rng = random.Random(2024)
    last_leo = 0
    for round_no in range(10):
        flushed = run_writer_and_kill(
            log_dir, rng.randrange(1 << 30), round_no % 2 == 1, rng.uniform(0.05, 1.0)
        )
        manager = reopen(log_dir)
        log = manager.get_log(TP)
        assert log is not None
        assert log.log_end_offset >= flushed, (round_no, flushed, log.log_end_offset)
        assert log.log_end_offset >= last_leo  # the previous round shut down cleanly
        check_log(log)
        last_leo = log.log_end_offset
        manager.shutdown()
    assert last_leo > 0


def crashed_log(tmp_path: Path, batches: int = 300) -> tuple[Path, int]:
    """A log written and 'crashed' (descriptors dropped, nothing trimmed)."""
    log_dir = tmp_path / "data"
    manager = LogManager([log_dir])
    manager.startup()
    manager.create_topic(TP.topic, 1, {"segment.bytes": "16384", "index.interval.bytes": "256"})
    log = manager.get_log(TP)
    assert log is not None
    from tests.unit.log.batches import v2_batch

    for _ in range(batches):
        base = log.log_end_offset
        log.append(v2_batch(base, [value_for(base, 100)[:100]], base_timestamp=base))
    log.flush()
    manager.checkpoint_recovery_offsets()
    leo = log.log_end_offset
    for lg in manager.all_logs():
        lg.close_handlers()
    manager._release_locks()
    return log_dir / "crash-0", leo


def recover_and_check(log_dir: Path) -> UnifiedLog:
    manager = reopen(log_dir.parent)
    log = manager.get_log(TopicPartition("crash", 0))
    assert log is not None
    check_log(log)
    manager.shutdown()
    return log


def active_log_file(part: Path) -> Path:
    return sorted(part.glob("*.log"))[-1]


def test_torn_tail_recovers(tmp_path: Path) -> None:
    part, leo = crashed_log(tmp_path)
    path = active_log_file(part)
    os.truncate(path, path.stat().st_size - 37)
    # the recovery point covers the torn batch: make it unflushed
    (part.parent / "recovery-point-offset-checkpoint").write_text("0\n1\ncrash 0 0\n")
    log = recover_and_check(part)
    assert log.log_end_offset == leo - 1


@pytest.mark.parametrize("kind", ["garbage", "zeros"])
def test_garbage_and_zeroed_tails_recover(tmp_path: Path, kind: str) -> None:
    part, leo = crashed_log(tmp_path)
    path = active_log_file(part)
    with open(path, "ab") as f:
        f.write(os.urandom(3000) if kind == "garbage" else bytes(3000))
    log = recover_and_check(part)
    assert log.log_end_offset == leo


def test_zeroed_region_in_the_middle_truncates_there(tmp_path: Path) -> None:
    part, leo = crashed_log(tmp_path)
    path = active_log_file(part)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(bytes(size - size // 2))
    (part.parent / "recovery-point-offset-checkpoint").write_text("0\n1\ncrash 0 0\n")
    log = recover_and_check(part)
    assert log.log_end_offset < leo


@pytest.mark.parametrize("kind", ["deleted", "garbage", "truncated"])
def test_index_files_recover(tmp_path: Path, kind: str) -> None:
    part, leo = crashed_log(tmp_path)
    for path in list(part.glob("*.index")) + list(part.glob("*.timeindex")):
        if kind == "deleted":
            path.unlink()
        elif kind == "garbage":
            path.write_bytes(os.urandom(path.stat().st_size or 24))
        else:
            path.write_bytes(b"  ")
    log = recover_and_check(part)
    assert log.log_end_offset == leo
    assert all(p.exists() for p in part.glob("*.log"))
    reopened = reopen(part.parent)
    log2 = reopened.get_log(TP)
    assert log2 is not None
    for offset in range(0, leo, 7):
        info = log2.read(offset, 1, True)
        assert info.records is not None
        assert entry_offsets(info.records.read())[0] == offset
    reopened.shutdown()
