"""Unsigned varints (``ByteUtilsTest``), fixed arrays, views."""

from __future__ import annotations

import pytest

from broker.protocol.primitives import (
    DecodeError,
    EncodeError,
    as_view,
    pack_fixed_array,
    read_fixed_array,
    read_uvarint,
    uvarint,
)

VECTORS = [
    (0, b"\x00"),
    (1, b"\x01"),
    (127, b"\x7f"),
    (128, b"\x80\x01"),
    (300, b"\xac\x02"),
    (16383, b"\xff\x7f"),
    (16384, b"\x80\x80\x01"),
    (2**31 - 1, b"\xff\xff\xff\xff\x07"),
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
]


@pytest.mark.parametrize(("value", "encoded"), VECTORS)
def test_uvarint_vectors(value, encoded):
    assert uvarint(value) == encoded
    assert read_uvarint(b"\xee" + encoded + b"\xee", 1) == (value, 1 + len(encoded))


def test_uvarint_longer_than_5_bytes_is_rejected():
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        read_uvarint(b"\x80\x80\x80\x80\x80\x00", 0)


@pytest.mark.parametrize("buf", [b"", b"\x80", b"\xff\xff\xff\xff"])
def test_truncated_uvarint_is_rejected(buf):
    with pytest.raises(DecodeError, match="past the end"):
        read_uvarint(buf, 0)


@pytest.mark.parametrize("value", [-1, 2**32])
def test_uvarint_out_of_range(value):
    with pytest.raises(EncodeError):
        uvarint(value)


def test_fixed_arrays():
    raw = pack_fixed_array("i", [1, -2, 3])
    assert raw == b"\x00\x00\x00\x01\xff\xff\xff\xfe\x00\x00\x00\x03"
    assert read_fixed_array("i", b"\x00" + raw, 1, 3) == [1, -2, 3]
    assert pack_fixed_array("q", []) == b""


def test_as_view_flattens_formats():
    view = as_view(memoryview(bytearray(b"\xff\x01")).cast("b"))
    assert view.format == "B"
    assert view[0] == 255
    raw = b"ab"
    assert as_view(raw).obj is raw
