"""Starting write-out early (``broker/log/writeback.py``): which ranges a
segment hands to ``sync_file_range`` and that the bytes stay intact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import writeback
from broker.log.file_records import FileRecords
from broker.log.index import round_down_to_exact_multiple
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


def test_each_range_starts_at_the_page_the_last_one_ended_in(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    records = FileRecords.open(tmp_path / "0.log")
    first = writeback.MIN_BYTES + 100
    records.append(b"a" * first)
    assert records.start_writeback() is True
    assert started == [(records.fd, 0, first)]  # the partly filled page too
    # nothing appended since: no call
    assert records.start_writeback() is False
    # the partly filled page again, with what the next appends put in it and after
    records.append(b"b" * 50)
    records.append(b"c" * writeback.MIN_BYTES)
    assert records.start_writeback() is True
    tail = round_down_to_exact_multiple(first, PAGE)
    assert started[-1] == (records.fd, tail, first + 50 + writeback.MIN_BYTES - tail)
    assert len(started) == 2
    records.close()


def test_small_appends_wait_until_enough_bytes_came(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    records = FileRecords.open(tmp_path / "0.log")
    small = 1000
    appended = 0
    while appended + small < writeback.MIN_BYTES:
        records.append(b"s" * small)
        appended += small
        assert records.start_writeback() is False
    records.append(b"s" * small)
    assert records.start_writeback() is True
    assert started == [(records.fd, 0, appended + small)]
    records.close()


def test_truncation_moves_the_next_range_back(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    records = FileRecords.open(tmp_path / "0.log")
    records.append(b"a" * (3 * writeback.MIN_BYTES))
    records.start_writeback()
    records.truncate_to(PAGE + 10)
    records.append(b"b" * writeback.MIN_BYTES)  # page 1 is written again
    assert records.start_writeback() is True
    assert started[-1] == (records.fd, PAGE, writeback.MIN_BYTES + 10)
    records.close()


def test_an_existing_file_starts_at_its_last_page(
    tmp_path: Path, started: list[tuple[int, int, int]]
) -> None:
    (tmp_path / "0.log").write_bytes(b"a" * (2 * PAGE + 7))
    records = FileRecords.open(tmp_path / "0.log", file_already_exists=True)
    assert records.start_writeback() is False  # nothing appended yet
    records.append(b"b" * writeback.MIN_BYTES)
    records.start_writeback()
    assert started == [(records.fd, 2 * PAGE, writeback.MIN_BYTES + 7)]
    records.close()


def test_bytes_written_around_a_started_writeback_read_back(tmp_path: Path) -> None:
    # the real call, with appends into the page after the started range
    records = FileRecords.open(tmp_path / "0.log")
    expected = bytearray()
    for i in range(40):
        chunk = bytes([i]) * (writeback.MIN_BYTES // 3 + i)
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
    value = b"v" * writeback.MIN_BYTES
    log = UnifiedLog.open(
        tmp_path / "t-0",
        TopicConfig(segment_bytes=writeback.MIN_BYTES + 3 * PAGE),
        time_ms=MockTime(),
    )
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
