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
from broker.records.record import Record

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
        raise ValueError("Cannot set timestamp for a record with magic = 0")
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError(
            "Timestamp type must be provided to compute attributes for message format v1"
        )
    if header.timestamp_type is timestamp_type and header.timestamp == timestamp:
        return False
    attrs = header.compression_type
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    _INT8.pack_into(buf, pos + RECORD_ATTRIBUTES_OFFSET, attrs)
    _INT64.pack_into(buf, pos + RECORD_TIMESTAMP_OFFSET, timestamp)
    _UINT32.pack_into(buf, pos + RECORD_CRC_OFFSET, compute_crc(buf, pos, header.size_in_bytes))
    return True


# ---------------------------------------------------------------------------
# records of a legacy entry (slow path: dump-log, tests, iterators)
# ---------------------------------------------------------------------------

_INT32 = struct.Struct(">i")


def _codec_name(codec: int) -> str:
    """``CompressionType.toString`` (lower-case names)."""
    return ("none", "gzip", "snappy", "lz4", "zstd")[codec] if 0 <= codec <= 4 else str(codec)


def key_value_spans(buf: ReadableBuffer, pos: int, size_in_bytes: int) -> tuple[int, int, int, int]:
    """(key position, key length, value position, value length) of the entry's
    record; lengths < 0 mean null. Raises CorruptRecordError when a length
    runs past the record."""
    from broker.errors import CorruptRecordError

    magic = _INT8.unpack_from(buf, pos + RECORD_MAGIC_OFFSET)[0]
    end = pos + size_in_bytes
    p = pos + LOG_OVERHEAD + record_header_size(magic)
    if p + 4 > end:
        raise CorruptRecordError("Record is corrupt (key size past the end of the record)")
    key_len: int = _INT32.unpack_from(buf, p)[0]
    p += 4
    key_pos = p
    if key_len > 0:
        p += key_len
    if p + 4 > end:
        raise CorruptRecordError("Record is corrupt (value size past the end of the record)")
    value_len: int = _INT32.unpack_from(buf, p)[0]
    p += 4
    value_pos = p
    if value_len > 0:
        p += value_len
    if p > end:
        raise CorruptRecordError("Record is corrupt (value past the end of the record)")
    return key_pos, key_len, value_pos, value_len


def read_record(
    buf: ReadableBuffer,
    pos: int,
    size_in_bytes: int,
    *,
    offset: int | None = None,
    wrapper_timestamp: int | None = None,
    wrapper_timestamp_type: TimestampType | None = None,
) -> Record:
    """The record of the entry at ``pos`` (``LegacyRecord`` seen through
    ``AbstractLegacyRecordBatch``). ``wrapper_*``: an inner record of a v1
    wrapper takes the wrapper's timestamp type, and its timestamp when that is
    LogAppendTime. ``offset`` overrides the stored entry offset (absolute
    offsets of v1 inner records)."""
    header = read_entry_header(buf, pos)
    key_pos, key_len, value_pos, value_len = key_value_spans(buf, pos, size_in_bytes)
    if header.magic == MAGIC_V0:
        ts_type = TimestampType.NO_TIMESTAMP_TYPE
        timestamp = NO_TIMESTAMP
    else:
        ts_type = (
            wrapper_timestamp_type if wrapper_timestamp_type is not None else header.timestamp_type
        )
        if (
            wrapper_timestamp_type is TimestampType.LOG_APPEND_TIME
            and wrapper_timestamp is not None
        ):
            timestamp = wrapper_timestamp
        else:
            timestamp = header.timestamp
    return Record(
        offset=header.offset if offset is None else offset,
        timestamp=timestamp,
        key=None if key_len < 0 else bytes(buf[key_pos : key_pos + key_len]),
        value=None if value_len < 0 else bytes(buf[value_pos : value_pos + value_len]),
        headers=(),
        timestamp_type=ts_type,
        magic=header.magic,
        size_in_bytes=size_in_bytes,
        attributes=header.attributes,
        checksum=header.crc,
    )


def record_to_string(record: Record) -> str:
    """``AbstractLegacyRecordBatch.toString`` around ``LegacyRecord.toString``,
    as Kafka prints a legacy record in validation messages."""
    key = 0 if record.key is None else len(record.key)
    value = 0 if record.value is None else len(record.value)
    codec = _codec_name(record.attributes & COMPRESSION_CODEC_MASK)
    if record.magic > 0:
        inner = (
            f"Record(magic={record.magic}, attributes={record.attributes}, compression={codec}, "
            f"crc={record.checksum}, {_TS_TYPE_NAMES[record.timestamp_type]}={record.timestamp}, "
            f"key={key} bytes, value={value} bytes)"
        )
    else:
        inner = (
            f"Record(magic={record.magic}, attributes={record.attributes}, compression={codec}, "
            f"crc={record.checksum}, key={key} bytes, value={value} bytes)"
        )
    return f"LegacyRecordBatch(offset={record.offset}, {inner})"


_TS_TYPE_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def compute_attributes(magic: int, compression_type: int, timestamp_type: TimestampType) -> int:
    """``LegacyRecord.computeAttributes``: codec bits; LAT bit for v1 only."""
    attrs = compression_type & COMPRESSION_CODEC_MASK
    if magic > MAGIC_V0 and timestamp_type is TimestampType.LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    return attrs


def encode_entry(
    offset: int,
    magic: int,
    *,
    attributes: int,
    timestamp: int,
    key: ReadableBuffer | None,
    value: ReadableBuffer | None,
) -> bytes:
    """One log entry ``offset | size | crc | magic | attributes | [ts] | key | value``
    with its CRC-32 (``LegacyRecord.write``). Raises ValueError for what
    Kafka's writer refuses (magic not 0/1, timestamp < -1)."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Invalid magic value {magic}")
    if timestamp < 0 and timestamp != NO_TIMESTAMP:
        raise ValueError(f"Invalid message timestamp {timestamp}")
    parts = [struct.pack(">bb", magic, attributes)]
    if magic > MAGIC_V0:
        parts.append(_INT64.pack(timestamp))
    for data in (key, value):
        if data is None:
            parts.append(_INT32.pack(-1))
        else:
            raw = bytes(data)
            parts.append(_INT32.pack(len(raw)))
            parts.append(raw)
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body
