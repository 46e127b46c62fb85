"""Ports of Kafka's ``OffsetIndexTest`` (``storage/src/test/.../log/OffsetIndexTest.java``):
index base 45, 30 entries."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.log.errors import IndexFullError, InvalidOffsetError, LogClosedError
from broker.log.offset_index import OffsetIndex, OffsetPosition

BASE_OFFSET = 45


@pytest.fixture
def index(tmp_path: Path) -> Iterator[OffsetIndex]:
    idx = OffsetIndex(tmp_path / "index", BASE_OFFSET, 30 * 8)
    yield idx
    if not idx.is_closed:
        idx.close()


def monotonic_seq(base: int, length: int, rng: random.Random) -> list[int]:
    seq, last = [], base
    for _ in range(length):
        last += rng.randrange(15) + 1
        seq.append(last)
    return seq


def test_random_lookup(index: OffsetIndex) -> None:
    rng = random.Random(7)
    assert index.lookup(92) == OffsetPosition(index.base_offset, 0)
    offsets = monotonic_seq(index.base_offset + 1, index.max_entries, rng)
    positions = monotonic_seq(0, index.max_entries, rng)
    for offset, position in zip(offsets, positions, strict=True):
        index.append(offset, position)
    for offset, position in zip(offsets, positions, strict=True):
        assert index.lookup(offset) == OffsetPosition(offset, position)
    candidates = list(range(index.base_offset, offsets[-1]))
    rng.shuffle(candidates)
    for target in candidates[:30]:
        floor = [(o, p) for o, p in zip(offsets, positions, strict=True) if o <= target]
        expected = OffsetPosition(*floor[-1]) if floor else OffsetPosition(index.base_offset, 0)
        assert index.lookup(target) == expected


def test_lookup_extreme_cases(index: OffsetIndex) -> None:
    assert index.lookup(index.base_offset) == OffsetPosition(index.base_offset, 0)
    for i in range(index.max_entries):
        index.append(index.base_offset + i + 1, i)
    assert index.lookup(index.base_offset) == OffsetPosition(index.base_offset, 0)
    assert index.lookup(index.base_offset + index.max_entries) == OffsetPosition(
        index.base_offset + index.max_entries, index.max_entries - 1
    )


def test_entry(index: OffsetIndex) -> None:
    for i in range(index.max_entries):
        index.append(index.base_offset + i, i)
    for i in range(index.max_entries):
        assert index.entry(i) == OffsetPosition(index.base_offset + i, i)


def test_entry_overflow(index: OffsetIndex) -> None:
    with pytest.raises(IndexError):
        index.entry(0)


def test_append_too_many(index: OffsetIndex) -> None:
    for i in range(index.max_entries):
        index.append(index.base_offset + i + 1, i)
    with pytest.raises(IndexFullError):
        index.append(index.max_entries + 1, 1)


def test_append_out_of_order(index: OffsetIndex) -> None:
    index.append(51, 0)
    with pytest.raises(InvalidOffsetError):
        index.append(50, 1)


def test_fetch_upper_bound_offset(index: OffsetIndex) -> None:
    first = OffsetPosition(BASE_OFFSET, 0)
    second = OffsetPosition(BASE_OFFSET + 1, 10)
    third = OffsetPosition(BASE_OFFSET + 2, 23)
    fourth = OffsetPosition(BASE_OFFSET + 3, 37)
    assert index.fetch_upper_bound_offset(first, 5) is None
    for entry in (first, second, third, fourth):
        index.append(entry.offset, entry.position)
    assert index.fetch_upper_bound_offset(first, 5) == second
    assert index.fetch_upper_bound_offset(first, 10) == second
    assert index.fetch_upper_bound_offset(first, 23) == third
    assert index.fetch_upper_bound_offset(first, 22) == third
    assert index.fetch_upper_bound_offset(second, 24) == fourth
    assert index.fetch_upper_bound_offset(fourth, 1) is None
    assert index.fetch_upper_bound_offset(first, 200) is None
    assert index.fetch_upper_bound_offset(second, 200) is None


def test_reopen(index: OffsetIndex) -> None:
    first = OffsetPosition(51, 0)
    sec = OffsetPosition(52, 1)
    index.append(*first)
    index.append(*sec)
    index.close()
    reopened = OffsetIndex(index.path, index.base_offset)
    assert reopened.lookup(first.offset) == first
    assert reopened.lookup(sec.offset) == sec
    assert reopened.last_offset == sec.offset
    assert reopened.entries == 2
    with pytest.raises(IndexFullError):
        reopened.append(53, 1)
    reopened.close()


def test_truncate(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "idx", 0, 10 * 8)
    idx.truncate()
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(12)
    assert idx.lookup(10) == OffsetPosition(9, 9)
    assert idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(10)
    assert idx.lookup(10) == OffsetPosition(9, 9)
    assert idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(9)
    assert idx.lookup(10) == OffsetPosition(8, 8)
    assert idx.last_offset == 8
    idx.append(9, 9)
    idx.truncate_to(5)
    assert idx.lookup(10) == OffsetPosition(4, 4)
    assert idx.last_offset == 4
    idx.append(5, 5)
    idx.truncate()
    assert idx.entries == 0
    idx.close()


def test_force_unmap(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "idx", 0, 10 * 8)
    idx.force_unmap()
    with pytest.raises(LogClosedError):
        idx.lookup(1)
    with pytest.raises(LogClosedError):
        idx.close()


def test_sanity_last_offset_equal_to_base_offset(tmp_path: Path) -> None:
    base_offset = 20
    idx = OffsetIndex(tmp_path / "idx", base_offset, 10 * 8)
    idx.append(base_offset, 0)
    idx.sanity_check()
    idx.close()


def test_new_file_is_preallocated_and_close_trims(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "idx", 0, 10_485_760)
    assert (tmp_path / "idx").stat().st_size == 10_485_760
    idx.append(3, 100)
    idx.close()
    assert (tmp_path / "idx").read_bytes() == bytes.fromhex("00000003 00000064")
