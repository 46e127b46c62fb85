"""Pure-Python reference of the recovery scan (twin of ``_recover_c.pyx``).

:func:`scan_segment` walks the batches of a segment's bytes the way
Kafka's ``LogSegment.recover`` does (``LogSegment.java``), header by header, never
looking inside records:

* structure: at least 18 bytes left, size field >= 14, the entry fits, a
  known magic (0, 1, 2) and at least a minimal header for it;
* integrity: CRC-32C over [21, end) for v2, CRC-32 over the record from its
  magic byte for v0/v1 (inner records of a compressed wrapper are not
  checked, as in Kafka);
* order: offsets increase from batch to batch and fit the segment's 32-bit
  relative offsets.

The first failure ends the scan: everything from that batch on is invalid.
While walking it computes what the indexes need (entries every
``index.interval.bytes``, the running max timestamp), the leader epochs
that start in the segment, and the producer batches to replay.

The walk may be cut in chunks (recovery reads the file in big pieces): the
running state -- file position of ``buf[0]`` (``position_base``), position
of the last index entry, max timestamp and its offset, last time-index
timestamp -- goes in as arguments and comes back in the result, and a batch
cut by the end of the chunk just ends the walk (``error`` None).

Returns a tuple ``(valid_end, error, offset_index_bytes, time_index_bytes,
max_timestamp, offset_of_max_timestamp, epoch_starts, producer_batches,
last_offset, last_index_position, last_time_entry_timestamp)`` with
positions in the file (``position_base`` added):

* ``offset_index_bytes`` / ``time_index_bytes``: the entries the indexes get,
  already in their on-disk layout (big-endian relative offset + position;
  timestamp + relative offset), the time entries filtered as
  ``TimeIndex.maybeAppend`` does (only a timestamp greater than the last one)
* ``epoch_starts``: ``(epoch, base_offset)``
* ``producer_batches``: ``(producer_id, producer_epoch, base_sequence,
  last_offset_delta, base_offset, max_timestamp, attributes, position)``
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from crc32c import crc32c

from broker.records.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
)
from broker.records.legacy import (
    MIN_RECORD_SIZE,
    RECORD_MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_OFFSET_SIZE = struct.Struct(">qi")
_LEGACY = struct.Struct(">qiIbbq")  # offset, size, crc, magic, attributes, timestamp (v1)
_LEGACY_V0 = struct.Struct(">qiIbb")

INT_MAX = 2**31 - 1
NO_TIMESTAMP = -1
#: the smallest v0 / v1 entry, log overhead included
_MIN_LEGACY_ENTRY = (LOG_OVERHEAD + RECORD_OVERHEAD_V0, LOG_OVERHEAD + RECORD_OVERHEAD_V1)


def scan_segment(
    buf: Any,
    start: int,
    end: int,
    *,
    base_offset: int,
    index_interval_bytes: int,
    prev_last_offset: int,
    latest_epoch: int,
    position_base: int = 0,
    last_index_position: int = 0,
    max_timestamp: int = NO_TIMESTAMP,
    offset_of_max_timestamp: int | None = None,
    last_time_entry_timestamp: int = NO_TIMESTAMP,
) -> tuple[int, str | None, bytes, bytes, int, int, list[Any], list[Any], int, int, int]:
    view = memoryview(buf)
    pos = start
    last_index_pos = last_index_position - position_base  # may be negative
    max_ts = max_timestamp
    offset_of_max_ts = base_offset if offset_of_max_timestamp is None else offset_of_max_timestamp
    offset_entries = bytearray()
    time_entries = bytearray()
    last_time_entry_ts = last_time_entry_timestamp
    epoch_starts: list[Any] = []
    producer_batches: list[Any] = []
    last_offset = prev_last_offset
    error: str | None = None
    while True:
        if pos + HEADER_SIZE_UP_TO_MAGIC >= end:
            break
        offset, size = _OFFSET_SIZE.unpack_from(view, pos)
        if size < MIN_RECORD_SIZE:
            error = (
                f"record size {size} is smaller than the minimum record overhead "
                f"({MIN_RECORD_SIZE})"
            )
            break
        total = size + LOG_OVERHEAD
        if pos + total > end:
            break  # a partial batch at the end: not an error, the scan just ends
        magic = view[pos + MAGIC_OFFSET]
        if magic == MAGIC_V2:
            if total < RECORD_BATCH_OVERHEAD:
                error = f"batch size {total} is smaller than the v2 header"
                break
            (
                batch_base,
                _len,
                epoch,
                _magic,
                crc,
                attributes,
                last_delta,
                _base_ts,
                batch_max_ts,
                producer_id,
                producer_epoch,
                base_sequence,
                _count,
            ) = HEADER_STRUCT.unpack_from(view, pos)
            if crc32c(view[pos + ATTRIBUTES_OFFSET : pos + total]) != crc:
                error = f"CRC-32C mismatch of the batch at position {pos + position_base}"
                break
            if last_delta < 0 or batch_base <= last_offset:
                error = f"offset {batch_base} does not follow {last_offset}"
                break
            batch_last = batch_base + last_delta
        elif magic in {MAGIC_V0, MAGIC_V1}:
            if total < _MIN_LEGACY_ENTRY[magic]:
                error = f"record size {size} is too small for magic {magic}"
                break
            if magic == MAGIC_V1:
                _off, _size, crc, _m, attributes, batch_max_ts = _LEGACY.unpack_from(view, pos)
            else:
                _off, _size, crc, _m, attributes = _LEGACY_V0.unpack_from(view, pos)
                batch_max_ts = NO_TIMESTAMP
            if zlib.crc32(view[pos + RECORD_MAGIC_OFFSET : pos + total]) != crc:
                error = f"CRC-32 mismatch of the message at position {pos + position_base}"
                break
            if offset <= last_offset:
                error = f"offset {offset} does not follow {last_offset}"
                break
            batch_base = offset
            batch_last = offset
            epoch = -1
            producer_id = -1
        else:
            error = f"unknown magic {magic} at position {pos + position_base}"
            break
        relative = batch_last - base_offset
        if relative < 0 or relative > INT_MAX:
            error = f"offset {batch_last} overflows the segment with base offset {base_offset}"
            break
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
            offset_of_max_ts = batch_last
        if pos - last_index_pos > index_interval_bytes:
            offset_entries += _OFFSET_ENTRY.pack(batch_last - base_offset, pos + position_base)
            if max_ts > last_time_entry_ts:
                time_entries += _TIME_ENTRY.pack(max_ts, offset_of_max_ts - base_offset)
                last_time_entry_ts = max_ts
            last_index_pos = pos
        if magic == MAGIC_V2:
            if epoch >= 0 and epoch > latest_epoch:
                epoch_starts.append((epoch, batch_base))
                latest_epoch = epoch
            if producer_id != -1:
                producer_batches.append(
                    (
                        producer_id,
                        producer_epoch,
                        base_sequence,
                        last_delta,
                        batch_base,
                        batch_max_ts,
                        attributes,
                        pos + position_base,
                    )
                )
        last_offset = batch_last
        pos += total
    return (
        pos + position_base,
        error,
        bytes(offset_entries),
        bytes(time_entries),
        max_ts,
        offset_of_max_ts,
        epoch_starts,
        producer_batches,
        last_offset,
        last_index_pos + position_base,
        last_time_entry_ts,
    )
