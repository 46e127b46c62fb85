"""Offsets and timestamps of the records inside a batch read from a segment.

``ListOffsets`` needs record-level answers (``FileRecords.searchForTimestamp``:
the first *record* with timestamp >= target; ``RecordBatch.offsetOfMaxTimestamp``:
the first record carrying the batch's max timestamp). Only these two reads
look inside batches; append, recovery and Fetch never do.

Per format, what a record contributes (``DefaultRecord.java``, ``LegacyRecord.java``,
``AbstractLegacyRecordBatch.java``)::

    v2 record     Length varint | Attributes int8 | TimestampDelta varlong |
                  OffsetDelta varint | ...  -> base offset + delta, base timestamp + delta
                  (LogAppendTime batch: every record has the batch max timestamp)
    v0/v1 entry   uncompressed: the entry offset and the record timestamp (v0: -1)
                  compressed wrapper: the inner message set after decompression;
                  v1 inner offsets are relative (last one = wrapper offset),
                  LogAppendTime wrappers give every inner record their timestamp

Compressed payloads are decompressed by ``broker.records.codecs``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records import codecs, scan
from broker.records.batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TimestampType,
    read_header,
)
from broker.records.legacy import (
    RECORD_HEADER_SIZE_V0,
    RECORD_HEADER_SIZE_V1,
    RECORD_TIMESTAMP_OFFSET,
)

if TYPE_CHECKING:
    from broker.log.file_records import FileBatch, FileRecords, TimestampAndOffset

_LEGACY = struct.Struct(">qiIbb")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


#: bound of one decompressed payload read back from our own segments
MAX_DECOMPRESSED_BYTES = 1 << 30


def decompress(codec: int, data: bytes, magic: int = MAGIC_V2) -> bytes:
    """Decompress a Kafka payload of codec id 1-4 (``broker.records.codecs``)."""
    try:
        return bytes(codecs.decompress(codec, data, max_size=MAX_DECOMPRESSED_BYTES, magic=magic))
    except (InvalidRecordError, ValueError) as exc:
        raise CorruptRecordError(f"cannot decompress a payload of codec {codec}: {exc}") from exc


def _iter_v2(
    data: bytes,
    *,
    base_offset: int,
    base_timestamp: int,
    count: int,
    codec: int,
    log_append_time: bool,
    max_timestamp: int,
) -> Iterator[tuple[int, int]]:
    body = data[RECORD_BATCH_OVERHEAD:]
    if codec:
        body = decompress(codec, body)
    pos, end = 0, len(body)
    for _ in range(count):
        length, pos = scan.read_varint(body, pos, end)
        record_end = pos + length
        if length < 0 or record_end > end:
            raise CorruptRecordError("record length past the end of the batch")
        pos += 1  # attributes
        ts_delta, pos = scan.read_varlong(body, pos, record_end)
        offset_delta, pos = scan.read_varint(body, pos, record_end)
        timestamp = max_timestamp if log_append_time else base_timestamp + ts_delta
        yield base_offset + offset_delta, timestamp
        pos = record_end


def _iter_legacy_set(
    data: bytes, wrapper_offset: int | None, wrapper_ts: int | None, magic: int
) -> Iterator[tuple[int, int]]:
    """Inner entries of a decompressed legacy wrapper."""
    inner: list[tuple[int, int]] = []
    pos = 0
    while pos + LOG_OVERHEAD + 6 <= len(data):
        offset, size, _crc, inner_magic, _attrs = _LEGACY.unpack_from(data, pos)
        ts = NO_TIMESTAMP
        if inner_magic >= 1 and pos + RECORD_TIMESTAMP_OFFSET + 8 <= len(data):
            ts = _INT64.unpack_from(data, pos + RECORD_TIMESTAMP_OFFSET)[0]
        if wrapper_ts is not None:
            ts = wrapper_ts
        inner.append((offset, ts))
        pos += LOG_OVERHEAD + size
    if magic > MAGIC_V0 and inner and wrapper_offset is not None:
        last_relative = inner[-1][0]
        inner = [(wrapper_offset - last_relative + rel, ts) for rel, ts in inner]
    yield from inner


def iter_record_offsets_timestamps(data: bytes) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of every record of the entry ``data`` (one batch)."""
    magic = data[MAGIC_OFFSET]
    if magic >= MAGIC_V2:
        h = read_header(data)
        yield from _iter_v2(
            data,
            base_offset=h.base_offset,
            base_timestamp=h.base_timestamp,
            count=h.records_count,
            codec=h.compression_type,
            log_append_time=h.timestamp_type is TimestampType.LOG_APPEND_TIME,
            max_timestamp=h.max_timestamp,
        )
        return
    offset, _size, _crc, magic, attributes = _LEGACY.unpack_from(data, 0)
    ts = _INT64.unpack_from(data, RECORD_TIMESTAMP_OFFSET)[0] if magic >= 1 else NO_TIMESTAMP
    codec = attributes & 0x07
    if codec == 0:
        yield offset, ts
        return
    header = LOG_OVERHEAD + (RECORD_HEADER_SIZE_V0 if magic == MAGIC_V0 else RECORD_HEADER_SIZE_V1)
    key_len = _INT32.unpack_from(data, header)[0]
    pos = header + 4 + max(key_len, 0)
    value_len = _INT32.unpack_from(data, pos)[0]
    value = data[pos + 4 : pos + 4 + max(value_len, 0)]
    log_append = magic >= 1 and bool(attributes & 0x08)
    yield from _iter_legacy_set(
        decompress(codec, value, magic), offset, ts if log_append else None, magic
    )


def search_for_timestamp(
    log: FileRecords, target_timestamp: int, starting_position: int, starting_offset: int
) -> TimestampAndOffset | None:
    """``FileRecords.searchForTimestamp``."""
    from broker.log.file_records import TimestampAndOffset

    for batch in log.iter_batches(starting_position):
        if batch.max_timestamp >= target_timestamp:
            for offset, timestamp in iter_record_offsets_timestamps(log.read_batch_bytes(batch)):
                if timestamp >= target_timestamp and offset >= starting_offset:
                    epoch = batch.summary.partition_leader_epoch
                    return TimestampAndOffset(timestamp, offset, epoch if epoch >= 0 else None)
    return None


def offset_of_max_timestamp(log: FileRecords, batch: FileBatch) -> int | None:
    """``RecordBatch.offsetOfMaxTimestamp``: None for v0."""
    if batch.magic == MAGIC_V0:
        return None
    for offset, timestamp in iter_record_offsets_timestamps(log.read_batch_bytes(batch)):
        if timestamp == batch.max_timestamp:
            return offset
    return None


__all__ = [
    "TimestampType",
    "decompress",
    "iter_record_offsets_timestamps",
    "offset_of_max_timestamp",
    "search_for_timestamp",
]


def parse_end_txn_marker(data: bytes) -> tuple[bool, int, int] | None:
    """(is_commit, coordinator_epoch, timestamp) of a control batch's first
    record (``EndTransactionMarker``: key = version int16 + type int16,
    value = version int16 + coordinator epoch int32), or None when the batch
    holds no marker."""
    h = read_header(data)
    if h.records_count <= 0 or h.compression_type:
        return None
    base_ts = h.base_timestamp
    body, end = data, len(data)
    pos = RECORD_BATCH_OVERHEAD
    length, pos = scan.read_varint(body, pos, end)
    record_end = min(end, pos + length)
    pos += 1
    ts_delta, pos = scan.read_varlong(body, pos, record_end)
    _offset_delta, pos = scan.read_varint(body, pos, record_end)
    key_len, pos = scan.read_varint(body, pos, record_end)
    if key_len < 4:
        return None
    marker_type = struct.unpack_from(">h", body, pos + 2)[0]
    pos += key_len
    value_len, pos = scan.read_varint(body, pos, record_end)
    if value_len < 6:
        return None
    coordinator_epoch = _INT32.unpack_from(body, pos + 2)[0]
    return marker_type == 1, coordinator_epoch, base_ts + ts_delta
