"""Legacy (magic v0/v1) log entries: the outer record of a message set.

Source: ``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java``.
A log entry is ``Offset int64 | MessageSize int32 | Record``; the record::

    record offset  size  field
         0          4    CRC         uint32  CRC-32 (zlib) of record bytes [4, end)
         4          1    Magic       int8    0 or 1
         5          1    Attributes  int8    bits 0-2 codec; bit 3 timestamp type (v1 only)
         6          8    Timestamp   int64   (v1 only)
     6 (v0)/14 (v1) 4    KeyLength   int32   -1 = null (any negative = null)
         .          n    Key
         .          4    ValueLength int32   -1 = null
         .          n    Value

Record header 6 (v0) / 14 (v1) bytes; the smallest record is 14 (v0) / 22 (v1)
bytes, the smallest entry 26 / 34. The entry offset is the record's offset;
for a compressed wrapper it is the absolute offset of the *last* inner record.

This module holds what the log needs from the outer record (validity, last
offset, timestamp); deep iteration of compressed wrappers and the builder of
v0/v1 sets live beside it.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from broker.records.batch import (
    COMPRESSION_CODEC_MASK,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer, WritableBuffer

#: offsets inside the *entry* (log overhead included)
ENTRY_OFFSET_OFFSET = 0
ENTRY_SIZE_OFFSET = 8
RECORD_CRC_OFFSET = LOG_OVERHEAD + 0
RECORD_MAGIC_OFFSET = LOG_OVERHEAD + 4
RECORD_ATTRIBUTES_OFFSET = LOG_OVERHEAD + 5
RECORD_TIMESTAMP_OFFSET = LOG_OVERHEAD + 6

RECORD_HEADER_SIZE_V0 = 6
RECORD_HEADER_SIZE_V1 = 14
#: ``LegacyRecord.RECORD_OVERHEAD_V0/V1``: header + key and value length fields
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
#: smallest valid record (``LegacyRecord.RECORD_OVERHEAD_V0``): anything
#: shorter is a CorruptRecordException in every reader.
MIN_RECORD_SIZE = RECORD_OVERHEAD_V0

_ENTRY_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT8 = struct.Struct(">b")


class LegacyEntryHeader(NamedTuple):
    """The fixed part of a legacy entry, decoded."""

    offset: int
    size: int  # record size (without the 12-byte log overhead)
    crc: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP for v0

    @property
    def size_in_bytes(self) -> int:
        return self.size + LOG_OVERHEAD

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME


def record_header_size(magic: int) -> int:
    return RECORD_HEADER_SIZE_V0 if magic == MAGIC_V0 else RECORD_HEADER_SIZE_V1


def read_entry_header(buf: ReadableBuffer, pos: int = 0) -> LegacyEntryHeader:
    """Decode the entry at ``pos``; needs 18 bytes (26 for a v1 timestamp)."""
    offset, size, crc, magic, attributes = _ENTRY_PREFIX.unpack_from(buf, pos)
    timestamp = NO_TIMESTAMP
    if magic >= MAGIC_V1:
        timestamp = _INT64.unpack_from(buf, pos + RECORD_TIMESTAMP_OFFSET)[0]
    return LegacyEntryHeader(offset, size, crc, magic, attributes, timestamp)


def compute_crc(buf: ReadableBuffer, pos: int, size_in_bytes: int) -> int:
    """CRC-32 of the record bytes after its CRC field: ``[pos+16, pos+size)``."""
    with memoryview(buf) as view:
        return zlib.crc32(view[pos + RECORD_MAGIC_OFFSET : pos + size_in_bytes])


def is_valid(buf: ReadableBuffer, pos: int, size_in_bytes: int) -> bool:
    """``LegacyRecord.isValid`` for the entry's record: size >= 14 and CRC ok."""
    record_size = size_in_bytes - LOG_OVERHEAD
    if record_size < MIN_RECORD_SIZE:
        return False
    stored: int = _UINT32.unpack_from(buf, pos + RECORD_CRC_OFFSET)[0]
    return stored == compute_crc(buf, pos, size_in_bytes)


def set_offset(buf: WritableBuffer, pos: int, offset: int) -> None:
    """The entry offset lies outside the record CRC."""
    _INT64.pack_into(buf, pos + ENTRY_OFFSET_OFFSET, offset)


def set_max_timestamp(
    buf: WritableBuffer, pos: int, timestamp_type: TimestampType, timestamp: int
) -> bool:
    """``AbstractLegacyRecordBatch.setMaxTimestamp`` for a v1 outer record.

    No-op when type and timestamp already match; otherwise the attribute
    byte is rebuilt from the codec and the new type bit (other bits cleared),
    the timestamp written and the record CRC recomputed.
    v0 has no timestamp: Kafka throws UnsupportedOperationException.
    """
    header = read_entry_header(buf, pos)
    if header.magic == MAGIC_V0:
        raise ValueError("cannot set timestamp of a magic v0 record")
    if header.timestamp_type is timestamp_type and header.timestamp == timestamp:
        return False
    attrs = header.compression_type
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    _INT8.pack_into(buf, pos + RECORD_ATTRIBUTES_OFFSET, attrs)
    _INT64.pack_into(buf, pos + RECORD_TIMESTAMP_OFFSET, timestamp)
    _UINT32.pack_into(buf, pos + RECORD_CRC_OFFSET, compute_crc(buf, pos, header.size_in_bytes))
    return True
