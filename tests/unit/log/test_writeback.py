"""Starting write-out early (``broker/log/writeback.py``): which ranges a
segment hands to ``sync_file_range`` and that the bytes stay intact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import writeback
from broker.log.file_records import FileRecords
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

PAGE = writeback.PAGE_SIZE


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Every (fd, offset, nbytes) handed to sync_file_range, instead of calling it."""
    calls: list[tuple[int, int, int]] = []

    def record(fd: int, offset: int, nbytes: int) -> bool:
        calls.append((fd, offset, nbytes))
        return True

    monkeypatch.setattr(writeback, "start_writeback", record)
    return calls


def test_sync_file_range_starts_writeback_here(tmp_path: Path) -> None:
    # the broker runs on Linux: without the call the optimisation silently vanishes
    assert writeback.AVAILABLE
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"x" * (3 * PAGE))
        assert writeback.start_writeback(fd, 0, 3 * PAGE) is True
        assert writeback.start_writeback(fd, 0, 0) is False  # nothing asked
    finally:
        os.close(fd)


def test_each_call_starts_at_the_page_the_last_one_ended_in(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    records = FileRecords.open(tmp_path / "0.log")
    records.append(b"a" * (PAGE + 100))
    assert records.start_writeback() is True
    assert started == [(records.fd, 0, PAGE + 100)]  # the partly filled page too
    # nothing appended since: no call
    assert records.start_writeback() is False
    assert len(started) == 1
    # the partly filled page again, with what the next appends put in it and after
    records.append(b"b" * 50)
    records.append(b"c" * (2 * PAGE))
    assert records.start_writeback() is True
    assert started[-1] == (records.fd, PAGE, 2 * PAGE + 150)
    records.close()


def test_truncation_moves_the_next_range_back(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    records = FileRecords.open(tmp_path / "0.log")
    records.append(b"a" * (3 * PAGE))
    records.start_writeback()
    records.truncate_to(PAGE + 10)
    records.append(b"b" * PAGE)  # size 2 * PAGE + 10: page 1 was written again
    assert records.start_writeback() is True
    assert started[-1] == (records.fd, PAGE, PAGE + 10)
    records.close()


def test_an_existing_file_starts_at_its_last_page(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    (tmp_path / "0.log").write_bytes(b"a" * (2 * PAGE + 7))
    records = FileRecords.open(tmp_path / "0.log", file_already_exists=True)
    assert records.start_writeback() is False  # nothing appended yet
    records.append(b"b" * PAGE)
    records.start_writeback()
    assert started == [(records.fd, 2 * PAGE, PAGE + 7)]
    records.close()


def test_bytes_written_around_a_started_writeback_read_back(tmp_path: Path) -> None:
    # the real call, with appends into the page after the started range
    records = FileRecords.open(tmp_path / "0.log")
    expected = bytearray()
    for i in range(40):
        chunk = bytes([i]) * (PAGE // 3 + i)
        records.append(chunk)
        expected += chunk
        records.start_writeback()
    records.flush()
    assert (tmp_path / "0.log").read_bytes() == bytes(expected)
    records.close()


def test_the_log_starts_writeback_of_its_active_segment(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    # a segment holds one of these batches: every append after the first rolls
    value = b"v" * (2 * PAGE)
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(segment_bytes=3 * PAGE), time_ms=MockTime())
    log.append(v2_batch(0, [value]))
    assert log.start_writeback() is True
    first = log.active_segment
    assert started == [(first.log.fd, 0, first.log.size)]
    log.append(v2_batch(1, [value]))
    second = log.active_segment
    assert second is not first
    assert log.start_writeback() is True
    # the new segment from its start; the old one's tail is left to the flush
    assert started[-1] == (second.log.fd, 0, second.log.size)
    log.close()
