"""Kafka's ``DefaultRecordTest`` (clients/src/test/java/.../record/DefaultRecordTest.java).

"readFrom" is :func:`broker.records.record.decode_v2_record` (the slow path);
the ``...Partial`` cases (``readPartiallyFrom``, the skip-key-value iterator of
the in-place path) are the hot walk, ``walk_v2`` of both twins, over a
one-record batch.
"""

from __future__ import annotations

import time

import pytest

from broker.errors import InvalidRecordError
from broker.records.batch import NO_SEQUENCE
from broker.records.record import decode_v2_record, encode_v2_record, varint_bytes, varlong_bytes

from .twins import TWINS, walk_all


def _decode(buf, *, base_offset=0, base_timestamp=0, base_sequence=NO_SEQUENCE):
    return decode_v2_record(
        buf, 0, len(buf), base_offset=base_offset, base_timestamp=base_timestamp,
        base_sequence=base_sequence, log_append_time=None,
    )  # fmt: skip


def _assert_invalid(buf):
    with pytest.raises(InvalidRecordError):
        _decode(buf)


def _assert_invalid_partial(twin, buf):
    with pytest.raises(InvalidRecordError):
        walk_all(twin, buf, 0, len(buf), 1)


def _body(*fields: bytes, size: int = 100) -> bytes:
    """A record whose length field says ``size`` and whose buffer is exactly
    that long (zero-padded), as the Java tests allocate it."""
    head = varint_bytes(size)
    body = b"".join(fields)
    return head + body + bytes(size - len(body))


PREFIX = (b"\x00", varlong_bytes(2), varint_bytes(1))  # attributes, ts delta 2, offset delta 1

HEADERS = (("foo", b"value"), ("bar", None), ('"A\\u00ea\\u00f1\\u00fcC"', b"value"))


def test_basic_serde():
    cases = [
        (b"hi", b"there", ()),
        (None, b"there", ()),
        (b"hi", None, ()),
        (None, None, ()),
        (b"hi", b"there", HEADERS),
    ]
    base_ts = int(time.time() * 1000)
    for key, value, headers in cases:
        encoded = encode_v2_record(10, 323, key, value, headers)
        rec, end = _decode(encoded, base_offset=37, base_timestamp=base_ts, base_sequence=723)
        assert end == len(encoded)
        assert rec.offset == 47
        assert rec.timestamp == base_ts + 323
        assert rec.sequence == 733
        assert rec.key == key
        assert rec.value == value
        assert rec.headers == headers
        assert rec.size_in_bytes == len(encoded)


def _with_header_count(count: int) -> bytes:
    encoded = bytearray(encode_v2_record(10, 323, b"hi", b"there", HEADERS))
    assert encoded[14] == 6  # zig-zag 3: the header count sits at byte 14
    encoded[14] = count
    return bytes(encoded)


@pytest.mark.parametrize("twin", TWINS)
def test_basic_serde_invalid_header_count_too_high(twin):
    buf = _with_header_count(8)  # zig-zag 4
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_basic_serde_invalid_header_count_too_low(twin):
    buf = _with_header_count(4)  # zig-zag 2
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_key_size(twin):
    buf = _body(*PREFIX, varint_bytes(105))
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_value_size(twin):
    buf = _body(*PREFIX, varint_bytes(-1), varint_bytes(105))
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_num_headers(twin):
    buf = _body(*PREFIX, varint_bytes(-1), varint_bytes(-1), varint_bytes(-1))
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)
    buf2 = _body(*PREFIX, varint_bytes(-1), varint_bytes(-1), varint_bytes(100))
    _assert_invalid(buf2)
    _assert_invalid_partial(twin, buf2)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_header_key(twin):
    buf = _body(*PREFIX, varint_bytes(-1), varint_bytes(-1), varint_bytes(1), varint_bytes(105))
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_null_header_key(twin):
    buf = _body(*PREFIX, varint_bytes(-1), varint_bytes(-1), varint_bytes(1), varint_bytes(-1))
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_header_value(twin):
    buf = _body(
        *PREFIX, varint_bytes(-1), varint_bytes(-1), varint_bytes(1), varint_bytes(1), b"\x01",
        varint_bytes(105),
    )  # fmt: skip
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_underflow_reading_timestamp(twin):
    buf = varint_bytes(1) + b"\x00"
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_underflow_reading_varlong(twin):
    buf = varint_bytes(2) + b"\x00" + varlong_bytes(156)[:1]
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_varlong(twin):
    ts = bytearray(varlong_bytes(2**63 - 1))
    assert len(ts) == 10
    ts[9] = 0x80  # Byte.MIN_VALUE as the final byte: the varlong never ends
    buf = varint_bytes(11) + b"\x00" + bytes(ts) + b"\x00"
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


def test_serde_no_sequence():
    encoded = encode_v2_record(10, 323, b"hi", b"there")
    rec, _ = _decode(encoded, base_offset=37, base_timestamp=int(time.time() * 1000))
    assert rec.sequence == NO_SEQUENCE


@pytest.mark.parametrize("twin", TWINS)
def test_invalid_size_of_body_in_bytes(twin):
    buf = varint_bytes(10)
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("key_length", [-1, -2, -100])
def test_any_negative_key_or_value_length_is_null(twin, key_length):
    """``DefaultRecord.readFrom``: any negative key/value length means null (not only -1)."""
    body = b"\x00" + varlong_bytes(0) + varint_bytes(0) + varint_bytes(key_length)
    body += varint_bytes(key_length) + varint_bytes(0)
    buf = varint_bytes(len(body)) + body
    rec, _ = _decode(buf)
    assert rec.key is None and rec.value is None
    _max, _min, consecutive, canonical, errors, _counts = walk_all(twin, buf, 0, len(buf), 1)
    assert errors is None and consecutive
    assert canonical == (key_length == -1)


@pytest.mark.parametrize("twin", TWINS)
def test_overlong_varint_length(twin):
    buf = b"\xff\xff\xff\xff\xff\x01" + bytes(10)
    _assert_invalid(buf)
    _assert_invalid_partial(twin, buf)
