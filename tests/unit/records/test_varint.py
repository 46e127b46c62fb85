"""Zig-zag varints (``ByteUtilsTest``), both twins."""

from __future__ import annotations

import pytest

from broker.errors import InvalidRecordError
from broker.records import _scan_py, scan

TWINS = [pytest.param(_scan_py, id="python"), pytest.param(scan.impl, id=scan.IMPLEMENTATION)]


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize(
    ("encoded", "value"),
    [
        (b"\x00", 0),
        (b"\x01", -1),
        (b"\x02", 1),
        (b"\x0e", 7),
        (b"\xfe\xff\xff\xff\x0f", 2**31 - 1),
        (b"\xff\xff\xff\xff\x0f", -(2**31)),
    ],
)
def test_read_varint(twin, encoded, value):
    assert twin.read_varint(encoded, 0, len(encoded)) == (value, len(encoded))


@pytest.mark.parametrize("twin", TWINS)
def test_read_varlong_extremes(twin):
    enc_max = b"\xfe" + b"\xff" * 8 + b"\x01"
    enc_min = b"\xff" * 9 + b"\x01"
    assert twin.read_varlong(enc_max, 0, 10) == (2**63 - 1, 10)
    assert twin.read_varlong(enc_min, 0, 10) == (-(2**63), 10)


@pytest.mark.parametrize("twin", TWINS)
def test_varint_overlong_and_truncated(twin):
    with pytest.raises(InvalidRecordError):
        twin.read_varint(b"\xff\xff\xff\xff\xff\x01", 0, 6)
    with pytest.raises(InvalidRecordError):
        twin.read_varint(b"\xff", 0, 1)
    with pytest.raises(InvalidRecordError):
        twin.read_varlong(b"\xff" * 10 + b"\x01", 0, 11)
