"""Cutting a byte range into log entries (batches), whatever their magic.

Sources: ``ByteBufferLogInputStream.java`` (produce requests) and
``FileLogInputStream.java`` (segment files). Every entry, v0/v1/v2 alike,
starts with::

    Offset int64 | Size int32 | ... | magic int8 at entry offset 16

so the framing needs only those 17 bytes. The two readers differ at the
edges, and the differences are Kafka's:

* buffer (:func:`iter_buffer_entries`): fewer than 12 bytes left -> stop;
  size < 14 -> CorruptRecordError; fewer than 17 bytes left -> stop; magic
  outside 0..2 -> CorruptRecordError; entry longer than what is left -> stop
  (a partial trailing batch is dropped silently: ``ByteBufferLogInputStream``
  stops there and ``UnifiedLog.analyzeAndValidateRecords`` counts whole batches only).
* file (:func:`iter_file_entries`): fewer than 18 bytes left -> stop;
  size < 14 -> CorruptRecordError; entry past the end -> stop; magic is not
  checked here (recovery checks validity batch by batch).

Nothing here copies record bytes: entries are (position, size) pairs into the
caller's buffer.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from broker.errors import CorruptRecordError
from broker.records import batch, legacy
from broker.records.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer

_OFFSET_SIZE = struct.Struct(">qi")
_MAGIC = struct.Struct(">b")

#: ``LegacyRecord.RECORD_OVERHEAD_V0``: smallest size field any entry may carry
MIN_ENTRY_SIZE_FIELD = legacy.MIN_RECORD_SIZE


class Entry(NamedTuple):
    """One entry of a record set: where it lies and what it says of itself."""

    position: int
    size_in_bytes: int  # including the 12-byte log overhead
    magic: int
    offset: int  # v2: base offset; v0/v1: the entry offset (= last offset)


def iter_buffer_entries(
    buf: ReadableBuffer, start: int = 0, end: int | None = None
) -> Iterator[Entry]:
    """Entries of a produce request's records (``ByteBufferLogInputStream``)."""
    pos = start
    stop = len(memoryview(buf)) if end is None else end
    while True:
        remaining = stop - pos
        if remaining < LOG_OVERHEAD:
            return
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < MIN_ENTRY_SIZE_FIELD:
            raise CorruptRecordError(
                f"Record size {size} is less than the minimum record overhead "
                f"({MIN_ENTRY_SIZE_FIELD})"
            )
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return
        magic = _MAGIC.unpack_from(buf, pos + MAGIC_OFFSET)[0]
        if magic < 0 or magic > MAGIC_V2:
            raise CorruptRecordError(f"Invalid magic found in record: {magic}")
        total = size + LOG_OVERHEAD
        if remaining < total:
            return
        yield Entry(pos, total, magic, offset)
        pos += total


def iter_file_entries(
    buf: ReadableBuffer, start: int = 0, end: int | None = None
) -> Iterator[Entry]:
    """Entries of a segment file's bytes (``FileLogInputStream``)."""
    pos = start
    stop = len(memoryview(buf)) if end is None else end
    while pos < stop - HEADER_SIZE_UP_TO_MAGIC:
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < MIN_ENTRY_SIZE_FIELD:
            raise CorruptRecordError(
                f"Found record size {size} smaller than minimum record overhead "
                f"({MIN_ENTRY_SIZE_FIELD}) at position {pos}"
            )
        total = size + LOG_OVERHEAD
        if pos + total > stop:
            return
        magic = _MAGIC.unpack_from(buf, pos + MAGIC_OFFSET)[0]
        yield Entry(pos, total, magic, offset)
        pos += total


class BatchSummary(NamedTuple):
    """What the log needs of one entry without looking at its records.

    For a legacy entry: ``last_offset`` is the entry offset; the base offset of
    a compressed wrapper is unknown without decompressing (``base_offset`` is
    then None); ``records_count`` likewise.
    """

    magic: int
    base_offset: int | None
    last_offset: int
    max_timestamp: int
    timestamp_type: TimestampType
    compression_type: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int | None
    is_transactional: bool
    is_control_batch: bool


def summarize(buf: ReadableBuffer, entry: Entry) -> BatchSummary:
    """Header-level facts of ``entry`` (which must be at least a minimal entry
    of its magic: check with :func:`is_valid_entry` first when unsure)."""
    if entry.magic >= MAGIC_V2:
        h = batch.read_header(buf, entry.position)
        return BatchSummary(
            magic=h.magic,
            base_offset=h.base_offset,
            last_offset=h.last_offset,
            max_timestamp=h.max_timestamp,
            timestamp_type=h.timestamp_type,
            compression_type=h.compression_type,
            partition_leader_epoch=h.partition_leader_epoch,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            records_count=h.records_count,
            is_transactional=h.is_transactional,
            is_control_batch=h.is_control_batch,
        )
    lh = legacy.read_entry_header(buf, entry.position)
    compressed = lh.compression_type != 0
    return BatchSummary(
        magic=lh.magic,
        base_offset=None if compressed else lh.offset,
        last_offset=lh.offset,
        max_timestamp=lh.timestamp,
        timestamp_type=lh.timestamp_type,
        compression_type=lh.compression_type,
        partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        base_sequence=NO_SEQUENCE,
        records_count=None if compressed else 1,
        is_transactional=False,
        is_control_batch=False,
    )


def is_valid_entry(buf: ReadableBuffer, entry: Entry) -> bool:
    """``RecordBatch.isValid`` for any magic: minimal size and CRC.

    v2: size >= 61 and CRC-32C matches; v0/v1: record size >= 14 and the
    outer record's CRC-32 matches (inner records of a wrapper are not checked).
    """
    if entry.magic >= MAGIC_V2:
        return entry.size_in_bytes >= RECORD_BATCH_OVERHEAD and batch.is_valid(
            buf, entry.position, entry.size_in_bytes
        )
    if entry.magic < 0:
        return False
    if entry.size_in_bytes < LOG_OVERHEAD + legacy.record_header_size(entry.magic) + 8:
        return False
    return legacy.is_valid(buf, entry.position, entry.size_in_bytes)
