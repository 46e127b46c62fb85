"""CRC-32 of both twins against zlib, at every length the compiled fold
treats differently: below 16 bytes (table only), one 16-byte lane, four
64-byte lanes, and each tail length 1..15 after either (the tail is folded
in by shuffling, not by a byte loop), at unaligned starts."""

from __future__ import annotations

import random
import zlib

import pytest

from .twins import TWINS

_DATA = random.Random(20261122).randbytes(1200)
_LENGTHS = [*range(200), 255, 256, 257, 1023, 1024, 1025, 1100]


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("start", [0, 1, 7, 15, 16, 61])
def test_crc32_equals_zlib_at_every_length(twin, start):
    for length in _LENGTHS:
        expected = zlib.crc32(_DATA[start : start + length])
        assert twin.crc32(_DATA, start, start + length) == expected, length


@pytest.mark.parametrize("twin", TWINS)
def test_crc32_of_a_range_ignores_the_bytes_around_it(twin):
    # the tail fold reads the input's last 16 bytes (some already folded);
    # bytes before the range and after it must not leak in
    inner = bytes(range(100))
    a = b"\xff" * 40 + inner + b"\x00" * 40
    b = b"\x00" * 40 + inner + b"\xff" * 40
    assert twin.crc32(a, 40, 140) == twin.crc32(b, 40, 140) == zlib.crc32(inner)
