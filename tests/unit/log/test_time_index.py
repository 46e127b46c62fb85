"""Ports of Kafka's ``TimeIndexTest`` (``storage/src/test/.../log/TimeIndexTest.java``):
base 45, 30 entries x 12 bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.log.errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from broker.log.results import TimestampOffset
from broker.log.time_index import TimeIndex

BASE_OFFSET = 45
MAX_ENTRIES = 30


@pytest.fixture
def idx(tmp_path: Path) -> Iterator[TimeIndex]:
    index = TimeIndex(tmp_path / "timeindex", BASE_OFFSET, MAX_ENTRIES * 12)
    yield index
    if not index.is_closed:
        index.close()


def append_entries(idx: TimeIndex, n: int) -> None:
    for i in range(1, n + 1):
        idx.maybe_append(i * 10, i * 10 + BASE_OFFSET)


def test_look_up(idx: TimeIndex) -> None:
    assert idx.lookup(100) == TimestampOffset(-1, BASE_OFFSET)
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.lookup(9) == TimestampOffset(-1, BASE_OFFSET)
    assert idx.lookup(25) == TimestampOffset(20, 65)
    assert idx.lookup(30) == TimestampOffset(30, 75)


def test_entry(idx: TimeIndex) -> None:
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.entry(0) == TimestampOffset(10, 55)
    assert idx.entry(1) == TimestampOffset(20, 65)
    assert idx.entry(2) == TimestampOffset(30, 75)
    assert idx.entry(3) == TimestampOffset(40, 85)


def test_entry_overflow(idx: TimeIndex) -> None:
    with pytest.raises(IndexError):
        idx.entry(0)


def test_truncate(idx: TimeIndex) -> None:
    append_entries(idx, MAX_ENTRIES - 1)
    idx.truncate()
    assert idx.entries == 0
    append_entries(idx, MAX_ENTRIES - 1)
    idx.truncate_to(10 + BASE_OFFSET)
    assert idx.entries == 0


def test_append(idx: TimeIndex) -> None:
    append_entries(idx, MAX_ENTRIES - 1)
    with pytest.raises(IndexFullError):
        idx.maybe_append(10000, 1000 + BASE_OFFSET)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(10000, (MAX_ENTRIES - 2) * 10, True)
    idx.maybe_append(10000, 1000 + BASE_OFFSET, True)


def test_sanity_check(tmp_path: Path, idx: TimeIndex) -> None:
    idx.sanity_check()
    append_entries(idx, 5)
    idx.sanity_check()
    idx.close()

    # last offset < base offset
    (tmp_path / "t1").write_bytes((10).to_bytes(8, "big") + (-1).to_bytes(4, "big", signed=True))
    below_base = TimeIndex(tmp_path / "t1", BASE_OFFSET, MAX_ENTRIES * 12)
    with pytest.raises(CorruptIndexError):
        below_base.sanity_check()
    below_base.close()

    # last timestamp < first timestamp
    (tmp_path / "t2").write_bytes(
        (20).to_bytes(8, "big")
        + (1).to_bytes(4, "big")
        + (10).to_bytes(8, "big")
        + (2).to_bytes(4, "big")
    )
    decreasing = TimeIndex(tmp_path / "t2", BASE_OFFSET, MAX_ENTRIES * 12)
    with pytest.raises(CorruptIndexError):
        decreasing.sanity_check()
    decreasing.close()

    # length not a multiple of 12
    (tmp_path / "t3").write_bytes(b"\x00" * 13)
    odd = TimeIndex(tmp_path / "t3", BASE_OFFSET, MAX_ENTRIES * 12)
    with pytest.raises(CorruptIndexError):
        odd.sanity_check()
    odd.close_handler()


def test_is_full(idx: TimeIndex) -> None:
    assert not idx.is_full()
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.is_full()


def test_last_entry(idx: TimeIndex) -> None:
    assert idx.last_entry() == TimestampOffset(-1, BASE_OFFSET)
    idx.maybe_append(1, 1 + BASE_OFFSET)
    assert idx.last_entry() == TimestampOffset(1, 1 + BASE_OFFSET)


def test_resize(idx: TimeIndex) -> None:
    assert not idx.resize(idx.max_index_size)
    assert idx.resize(idx.max_index_size // 2)
    assert idx.resize(idx.max_index_size * 2)


def test_entry_size(idx: TimeIndex) -> None:
    assert idx.ENTRY_SIZE == 12


def test_parse_entry(idx: TimeIndex) -> None:
    idx.maybe_append(1, 1 + BASE_OFFSET)
    assert idx.entry(0) == TimestampOffset(1, 1 + BASE_OFFSET)


def test_equal_timestamp_is_not_appended(idx: TimeIndex) -> None:
    idx.maybe_append(5, BASE_OFFSET + 1)
    idx.maybe_append(5, BASE_OFFSET + 2)
    assert idx.entries == 1


def test_new_file_preallocated_to_whole_entries(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "ti", 0, 10_485_760)
    assert (tmp_path / "ti").stat().st_size == 10_485_756
    index.close()
    assert (tmp_path / "ti").stat().st_size == 0
