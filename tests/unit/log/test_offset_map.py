"""The cleaner's offset map (Kafka's ``OffsetMapTest``), both twins."""

from __future__ import annotations

import hashlib
import importlib
import os
from types import ModuleType

import pytest

from broker.log import _clean_py

_clean_c = importlib.import_module("broker.log._clean_c")
TWINS = pytest.mark.parametrize("twin", [_clean_py, _clean_c], ids=["python", "compiled"])

MEMORY_SIZE = 4096


def key(i: int) -> bytes:
    return str(i).encode()


@TWINS
@pytest.mark.parametrize("items", [10, 100, 1000, 5000])
def test_basic_validation(twin: ModuleType, items: int) -> None:
    m = twin.OffsetMap(items * 48)
    for i in range(items):
        m.put(key(i), i)
    for i in range(items):
        assert m.get(key(i)) == i


@TWINS
def test_clear(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    for i in range(10):
        m.put(key(i), i)
    assert [m.get(key(i)) for i in range(10)] == list(range(10))
    m.clear()
    assert [m.get(key(i)) for i in range(10)] == [-1] * 10
    assert (m.size, m.latest_offset) == (0, -1)


def fill(m: object) -> int:
    i = 37
    while m.size < m.slots:  # type: ignore[attr-defined]
        m.put(key(i), i)  # type: ignore[attr-defined]
        i += 1
    return i


@TWINS
def test_get_when_full(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    i = fill(m)
    assert m.get(key(i)) == -1
    assert m.get(key(i - 1)) == i - 1
    with pytest.raises(ValueError, match="full offset map"):
        m.put(key(i), i)


@TWINS
def test_update_latest_offset(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    i = fill(m)
    assert m.get(key(i - 1)) == i - 1
    m.update_latest_offset(40)
    assert m.get(key(40)) == 40
    assert m.latest_offset == 40


@TWINS
def test_latest_offset(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    i = fill(m)
    assert m.latest_offset == i - 1


@TWINS
def test_utilization(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    assert m.utilization == 0.0
    i = 37
    while m.size < m.slots:
        m.put(key(i), i)
        assert m.utilization == m.size / m.slots
        i += 1


@TWINS
def test_slots_are_24_bytes_and_a_key_seen_again_keeps_its_slot(twin: ModuleType) -> None:
    m = twin.OffsetMap(24 * 7 + 23)
    assert m.slots == 7
    m.put(b"k", 1)
    m.put(b"k", 9)
    assert (m.size, m.get(b"k"), m.latest_offset) == (1, 9, 9)
    with pytest.raises(ValueError):
        twin.OffsetMap(23)


@TWINS
def test_keys_are_stored_as_their_md5(twin: ModuleType) -> None:
    m = twin.OffsetMap(MEMORY_SIZE)
    m.put(b"hello", 5)
    assert m.get_hash(hashlib.md5(b"hello").digest()) == 5
    m.put_hash(hashlib.md5(b"").digest(), 6)
    assert m.get(b"") == 6


def test_compiled_md5_is_md5() -> None:
    for n in [*range(130), 1000, 4096, 65537]:
        data = os.urandom(n)
        assert _clean_c.md5(data) == hashlib.md5(data).digest() == _clean_py.md5(data)


def test_twins_probe_the_same_slots() -> None:
    """Same keys in the same order: the same answers and the same probe counts
    (so the same collisions) from both tables."""
    b, b2 = _clean_c.OffsetMap(24 * 61), _clean_py.OffsetMap(24 * 61)
    rng = [key(i) for i in range(80)]
    for m in (b, b2):
        for i in range(61):
            m.put(key(i % 50), i)
    assert [b.get(k) for k in rng] == [b2.get(k) for k in rng]
    assert b.collision_rate == pytest.approx(b2.collision_rate)


@TWINS
def test_rebuilt_headers_carry_the_crc32c_of_any_length(twin: ModuleType) -> None:
    """The compiled CRC-32C runs three streams on long inputs: every length agrees."""
    from crc32c import crc32c

    source = bytearray(61)
    for size in [61, 62, 100, 1536 + 21, 1536 + 61, 4096, 4600 + 7, 100_000 + 3]:
        out = bytearray(os.urandom(size))
        twin.write_v2_header(
            out,
            0,
            size,
            source=source,
            source_pos=0,
            attributes=0,
            base_timestamp=5,
            max_timestamp=6,
            count=1,
        )
        assert int.from_bytes(out[17:21], "big") == crc32c(bytes(out[21:]))
