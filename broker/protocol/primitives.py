"""Wire primitives shared by the generated codecs, and the codec's two errors.

Layouts (Kafka's ``protocol/types/Type.java``, ``ByteUtils.java``), all
integers big-endian::

    INT8 INT16 INT32 INT64      signed, 1/2/4/8 bytes
    UINT16                      unsigned, 2 bytes
    FLOAT64                     IEEE 754 double, 8 bytes
    BOOLEAN                     1 byte, 0 = false, anything else = true
    UUID                        16 bytes
    UNSIGNED_VARINT             base-128, low groups first, high bit = "more":
                                0 -> 00, 127 -> 7F, 128 -> 80 01, 300 -> AC 02;
                                at most 5 bytes (``ByteUtils.readUnsignedVarint``)
    STRING / NULLABLE_STRING    INT16 length (-1 = null) + UTF-8 bytes
    COMPACT_(NULLABLE_)STRING   UNSIGNED_VARINT (length + 1, 0 = null) + UTF-8 bytes
    BYTES / RECORDS             INT32 length (-1 = null) + bytes
    COMPACT_BYTES / RECORDS     UNSIGNED_VARINT (length + 1, 0 = null) + bytes
    ARRAY / COMPACT_ARRAY       INT32 count / UNSIGNED_VARINT (count + 1), then items

Everything that can go wrong while decoding a client's bytes ends in
:class:`DecodeError` (an ``InvalidRequestError``, INVALID_REQUEST). The
generated decoders rely on three kinds of guard: ``struct.unpack_from`` and
indexing raise on a short buffer (converted to :class:`DecodeError` at the
top of each decoder), every length is compared with the bytes that remain
*before* anything is sliced or allocated, and every array count times the
smallest possible item size must fit in what remains, so a lying count can
neither allocate nor loop in proportion to itself.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from broker.errors import InvalidRequestError, UnknownServerError
from broker.records.buffers import ReadableBuffer

#: ``ByteUtils.readUnsignedVarint`` accepts at most 5 bytes
MAX_UVARINT_BYTES = 5
#: Kafka refuses strings longer than this on read and on write
#: (``MessageDataGenerator``: "string field ... had invalid length")
MAX_STRING_LENGTH = 0x7FFF

_UVARINT_1 = [bytes((i,)) for i in range(128)]


class DecodeError(InvalidRequestError):
    """Malformed bytes: truncation, impossible lengths or counts, bad UTF-8, bad varints."""


class EncodeError(UnknownServerError):
    """A message object that cannot be encoded for the asked version (a bug of ours)."""


def as_view(buf: ReadableBuffer) -> memoryview:
    """A flat unsigned-byte view of ``buf`` (decoded records are slices of it)."""
    view = buf if type(buf) is memoryview else memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def read_uvarint(buf: ReadableBuffer, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; returns (value, next position)."""
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(MAX_UVARINT_BYTES):
        if pos >= end:
            raise DecodeError("unsigned varint runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise DecodeError("unsigned varint is longer than 5 bytes")


def uvarint(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**32) as an unsigned varint."""
    if value < 128:
        if value < 0:
            raise EncodeError(f"negative unsigned varint {value}")
        return _UVARINT_1[value]
    if value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint {value} does not fit 32 bits")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_fixed_array(code: str, buf: ReadableBuffer, pos: int, count: int) -> list[object]:
    """``count`` fixed-size items of struct ``code`` (the caller checked the bytes remain)."""
    return list(struct.unpack_from(f">{count}{code}", buf, pos))


def pack_fixed_array(code: str, values: Sequence[object]) -> bytes:
    """The items of a fixed-size primitive array, without its count."""
    return struct.pack(f">{len(values)}{code}", *values)


def string_too_long(length: int, name: str) -> None:
    """Kafka refuses to write strings over 0x7FFF bytes (compact ones too)."""
    raise EncodeError(f"'{name}' field is too long to be serialized ({length} bytes)")
