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
from collections.abc import Callable, Sequence

from broker.errors import InvalidRequestError, UnknownServerError
from broker.records.buffers import ReadableBuffer

#: ``ByteUtils.readUnsignedVarint`` accepts at most 5 bytes
MAX_UVARINT_BYTES = 5
#: Kafka refuses strings longer than this on read and on write
#: (``MessageDataGenerator``: "string field ... had invalid length")
MAX_STRING_LENGTH = 0x7FFF

_UVARINT_1 = [bytes((i,)) for i in range(128)]
_TWO_BYTES = struct.Struct(">BB").pack
_THREE_BYTES = struct.Struct(">BBB").pack


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
    """Decode an unsigned varint at ``pos``; returns (value, next position).

    Unrolled: the generated decoders call this for every length that does
    not fit one byte (a record set of 1 KiB already needs two).
    """
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        value = b & 0x7F
        b = buf[pos + 1]
        if b < 0x80:
            return value | b << 7, pos + 2
        value |= (b & 0x7F) << 7
        b = buf[pos + 2]
        if b < 0x80:
            return value | b << 14, pos + 3
        value |= (b & 0x7F) << 14
        b = buf[pos + 3]
        if b < 0x80:
            return value | b << 21, pos + 4
        value |= (b & 0x7F) << 21
        b = buf[pos + 4]
        if b < 0x80:
            return value | b << 28, pos + 5
    except IndexError:
        raise DecodeError("unsigned varint runs past the end of the buffer") from None
    raise DecodeError("unsigned varint is longer than 5 bytes")


def uvarint(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**32) as an unsigned varint."""
    if value < 0x80:
        if value < 0:
            raise EncodeError(f"negative unsigned varint {value}")
        return _UVARINT_1[value]
    if value < 0x4000:
        return _TWO_BYTES(value & 0x7F | 0x80, value >> 7)
    if value < 0x200000:
        return _THREE_BYTES(value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14)
    if value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint {value} does not fit 32 bits")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


#: compiled structs for short fixed-size arrays (replica lists, partition ids), by
#: (code, count); longer arrays are rare and go through struct's own format cache
_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}
_CACHED_COUNT = 32  # the generated code indexes lists of this many + 1


def _array_struct(code: str, count: int) -> struct.Struct:
    try:
        return _ARRAY_STRUCTS[code, count]
    except KeyError:
        compiled = struct.Struct(f">{count}{code}")
        if count <= _CACHED_COUNT:
            _ARRAY_STRUCTS[code, count] = compiled
        return compiled


def array_packers(code: str) -> list[Callable[..., bytes]]:
    """``pack`` of the structs for 0..32 items of ``code`` (indexed by count)."""
    return [_array_struct(code, n).pack for n in range(_CACHED_COUNT + 1)]


def array_unpackers(code: str) -> list[Callable[..., tuple[object, ...]]]:
    """``unpack_from`` of the structs for 0..32 items of ``code`` (indexed by count)."""
    return [_array_struct(code, n).unpack_from for n in range(_CACHED_COUNT + 1)]


def read_fixed_array(code: str, buf: ReadableBuffer, pos: int, count: int) -> list[object]:
    """``count`` fixed-size items of struct ``code`` (the caller checked the bytes remain)."""
    return list(_array_struct(code, count).unpack_from(buf, pos))


def pack_fixed_array(code: str, values: Sequence[object]) -> bytes:
    """The items of a fixed-size primitive array, without its count."""
    return _array_struct(code, len(values)).pack(*values)


def string_too_long(length: int, name: str) -> None:
    """Kafka refuses to write strings over 0x7FFF bytes (compact ones too)."""
    raise EncodeError(f"'{name}' field is too long to be serialized ({length} bytes)")
