"""Pure-Python reference of the hot loops (twin of ``_scan_c.pyx``).

Varints are protobuf base-128 with zig-zag sign folding (``ByteUtils``):
``0 -> 00, -1 -> 01, 1 -> 02, 7 -> 0E``. A varint longer than 5 bytes or a
varlong longer than 10 bytes is an error (Kafka: IllegalArgumentException
turned into InvalidRecordException "Found invalid record structure").
"""

from __future__ import annotations

from broker.errors import InvalidRecordError
from broker.records.buffers import ReadableBuffer


def read_varint(buf: ReadableBuffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varint (<= 5 bytes) at ``pos``; returns (value, next pos)."""
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varint past end")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Found invalid record structure: varint too long")
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: ReadableBuffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (<= 10 bytes) at ``pos``; returns (value, next pos)."""
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varlong past end")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Found invalid record structure: varlong too long")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos
