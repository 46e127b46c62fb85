"""Writing v0/v1 message sets (``MemoryRecordsBuilder`` with magic 0 or 1).

Uncompressed: one log entry per record, each with its absolute offset::

    Offset int64 | Size int32 | CRC uint32 | Magic int8 | Attributes int8 |
    [Timestamp int64 (v1)] | KeyLength int32 | Key | ValueLength int32 | Value

Compressed: one wrapper entry whose value is the compressed stream of the
inner entries (``writeLegacyCompressedWrapperHeader``):

* wrapper offset = absolute offset of the last inner record;
* inner offsets: v1 relative to the first (0..n-1), v0 absolute;
* wrapper key null, attributes = codec | LogAppendTime bit (v1);
* wrapper timestamp (v1) = log-append time for LogAppendTime, else the max
  inner timestamp; its CRC is computed after the payload is in place.

LogAppendTime with v1: every record is written with timestamp = log-append
time and attribute bit 3 (``appendLegacyRecord``). ZSTD is refused for
magic < 2, as are headers, transactional and control records.

``uncompressed_bytes_written`` = the inner entries' bytes + the wrapper's
12 + 14/22 header bytes (0 header bytes when uncompressed).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence

from broker.errors import InvalidRecordError
from broker.records import codecs
from broker.records.batch import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.builder import BuiltRecords, check_timestamp
from broker.records.legacy import compute_attributes, encode_entry
from broker.records.record import SimpleRecord

_INT_MAX = 2**31 - 1


def record_overhead(magic: int) -> int:
    """``LegacyRecord.recordOverhead``: 14 (v0) / 22 (v1)."""
    return 14 if magic == MAGIC_V0 else 22


def header_size(magic: int, compression_type: int) -> int:
    """``AbstractRecords.recordBatchHeaderSizeInBytes`` for any magic."""
    if magic > MAGIC_V1:
        return 61
    if compression_type != CompressionType.NONE:
        return LOG_OVERHEAD + record_overhead(magic)
    return 0


def wrap_legacy(
    inner_entries: ReadableBuffer,
    *,
    magic: int,
    compression_type: int,
    level: int | None,
    last_offset: int,
    timestamp: int,
    timestamp_type: TimestampType,
) -> bytearray:
    """A compressed wrapper entry around already-written inner entries."""
    if compression_type == CompressionType.ZSTD:
        raise InvalidRecordError(f"ZStandard compression is not supported for magic {magic}")
    payload = codecs.compress(compression_type, inner_entries, level=level, magic=magic)
    attrs = compute_attributes(magic, compression_type, timestamp_type)
    head = struct.pack(">bb", magic, attrs)
    if magic > MAGIC_V0:
        head += struct.pack(">q", timestamp)
    head += struct.pack(">ii", -1, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head))
    size = 4 + len(head) + len(payload)
    out = bytearray(struct.pack(">qiI", last_offset, size, crc))
    out += head
    out += payload
    return out


def build_legacy(
    records: Iterable[SimpleRecord],
    *,
    magic: int,
    base_offset: int = 0,
    offsets: Sequence[int] | None = None,
    compression_type: int = CompressionType.NONE,
    level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
) -> BuiltRecords:
    """``MemoryRecords.builder(magic 0/1, ...)`` + appends + ``build()``."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Invalid magic value {magic}")
    if compression_type == CompressionType.ZSTD:
        raise InvalidRecordError(f"ZStandard compression is not supported for magic {magic}")
    if magic > MAGIC_V0 and timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("TimestampType must be set for magic >= 0")
    compressed = compression_type != CompressionType.NONE
    is_lat = timestamp_type is TimestampType.LOG_APPEND_TIME
    attrs = compute_attributes(magic, CompressionType.NONE, timestamp_type)
    parts: list[bytes] = []
    max_ts = NO_TIMESTAMP
    offset_of_max = -1
    last_offset: int | None = None
    n = 0
    for i, record in enumerate(records):
        offset = offsets[i] if offsets is not None else base_offset + i
        if last_offset is not None and offset <= last_offset:
            raise ValueError(
                f"Illegal offset {offset} following previous offset {last_offset} "
                "(Offsets must increase monotonically)."
            )
        if offset - base_offset > _INT_MAX:
            raise ValueError(
                f"Maximum offset delta exceeded, base offset: {base_offset}, last offset: {offset}"
            )
        check_timestamp(record.timestamp)
        if record.headers:
            raise InvalidRecordError(f"Magic v{magic} does not support record headers")
        timestamp = log_append_time if is_lat else record.timestamp
        check_timestamp(timestamp)
        inner_offset = offset - base_offset if (magic > MAGIC_V0 and compressed) else offset
        parts.append(
            encode_entry(
                inner_offset,
                magic,
                attributes=attrs,
                timestamp=timestamp,
                key=record.key,
                value=record.value,
            )
        )
        if magic > MAGIC_V0 and timestamp > max_ts:
            max_ts = timestamp
            offset_of_max = offset
        last_offset = offset
        n += 1
    if n == 0 or last_offset is None:
        return BuiltRecords(bytearray(), 0, base_offset, base_offset - 1, NO_TIMESTAMP, -1, 0)
    body = b"".join(parts)
    if compressed:
        wrapper_ts = log_append_time if is_lat else max_ts
        out = wrap_legacy(
            body,
            magic=magic,
            compression_type=compression_type,
            level=level,
            last_offset=last_offset,
            timestamp=wrapper_ts,
            timestamp_type=timestamp_type,
        )
    else:
        out = bytearray(body)
    info_max, info_offset = legacy_info(
        compressed, is_lat, log_append_time=log_append_time, max_timestamp=max_ts,
        offset_of_max=offset_of_max, base_offset=base_offset, last_offset=last_offset,
    )  # fmt: skip
    return BuiltRecords(
        out,
        n,
        base_offset,
        last_offset,
        info_max,
        info_offset,
        len(body) + header_size(magic, compression_type),
    )


def legacy_info(
    compressed: bool,
    is_lat: bool,
    *,
    log_append_time: int,
    max_timestamp: int,
    offset_of_max: int,
    base_offset: int,
    last_offset: int,
) -> tuple[int, int]:
    """``MemoryRecordsBuilder.info()`` for magic 0/1."""
    if is_lat:
        return log_append_time, (last_offset if compressed else base_offset)
    if max_timestamp == NO_TIMESTAMP:
        return NO_TIMESTAMP, -1
    return max_timestamp, (last_offset if compressed else offset_of_max)
