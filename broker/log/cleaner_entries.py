"""The entries the cleaner's compiled walks hand back: compressed ones.

``clean_loops.map_chunk`` / ``filter_chunk`` stop at a compressed entry
(``NEEDS_CODEC``); these functions finish it and the walk goes on after it.

* A compressed v2 data batch is decompressed (bounded), its records go
  through the same loops (``map_records`` / ``filter_records``), and the
  kept records are compressed again with the batch's own codec at the
  codec's default level (``MemoryRecords.buildRetainedRecordsInto``:
  ``Compression.of(originalBatch.compressionType()).build()``). Batches
  whose records all stay are copied as they are.
* A compressed v0/v1 wrapper is read with the slow-path iterator (such
  wrappers come only from pre-0.11 producers) and rebuilt with
  ``legacy_builder.build_legacy``: the kept inner records with their
  offsets, the wrapper's magic, codec and timestamp type; the wrapper offset
  becomes the last kept offset (Kafka keeps no last offset for v0/v1).

The decompression bound is the validator's: ``max(64 MiB, 16 x
max.message.bytes)``.
"""

from __future__ import annotations

from typing import Any

from broker.log import clean_loops
from broker.records import codecs, legacy
from broker.records.batch import (
    CONTROL_FLAG_MASK,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    TimestampType,
    read_header,
)
from broker.records.iterate import legacy_records
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord

MIN_DECOMPRESSION_BOUND = 64 * 1024 * 1024


def decompression_bound(max_message_bytes: int) -> int:
    return max(MIN_DECOMPRESSION_BOUND, 16 * max_message_bytes)


def entry_size(buf: Any, pos: int) -> int:
    return int.from_bytes(buf[pos + LENGTH_OFFSET : pos + LOG_OVERHEAD], "big") + LOG_OVERHEAD


def map_compressed(
    offset_map: clean_loops.OffsetMap,
    buf: Any,
    pos: int,
    *,
    start_offset: int,
    max_entries: int,
    bound: int,
) -> tuple[bool, int, int]:
    """Keys of the compressed entry at ``pos`` into the map; returns (full,
    records read, the entry's last offset)."""
    size = entry_size(buf, pos)
    if buf[pos + MAGIC_OFFSET] >= MAGIC_V2:
        h = read_header(buf, pos)
        with memoryview(buf) as view:
            data = codecs.decompress(
                h.compression_type, view[pos + RECORD_BATCH_OVERHEAD : pos + size], max_size=bound
            )
        full, read = clean_loops.map_records(
            offset_map,
            data,
            0,
            len(data),
            count=h.records_count,
            base_offset=h.base_offset,
            start_offset=start_offset,
            max_entries=max_entries,
        )
        return full, read, h.last_offset
    read = 0
    for record in legacy_records(buf, pos, size, bound):
        if record.key is not None and record.offset >= start_offset:
            if offset_map.size >= max_entries:
                return True, read, 0
            offset_map.put(record.key, record.offset)
        read += 1
    return False, read, legacy.read_entry_header(buf, pos).offset


class Filtered:
    """What filtering one compressed entry made: the bytes to write (maybe none)."""

    __slots__ = ("data", "invalid", "kept", "read")

    def __init__(self, data: Any, read: int, kept: int, invalid: int) -> None:
        self.data = data
        self.read = read
        self.kept = kept
        self.invalid = invalid


def filter_compressed(
    offset_map: clean_loops.OffsetMap,
    producers: clean_loops.ActiveProducers,
    buf: Any,
    pos: int,
    *,
    latest_offset: int,
    now: int,
    new_horizon: int,
    retain_legacy_deletes: bool,
    bound: int,
) -> Filtered:
    """The compressed entry at ``pos`` filtered (the walks' rules, see ``_clean_py``)."""
    size = entry_size(buf, pos)
    view = memoryview(buf)
    try:
        if buf[pos + MAGIC_OFFSET] >= MAGIC_V2:
            return _filter_v2(
                offset_map,
                producers,
                view,
                pos,
                size,
                latest_offset=latest_offset,
                now=now,
                new_horizon=new_horizon,
                bound=bound,
            )
        return _filter_legacy(
            offset_map,
            view,
            pos,
            size,
            latest_offset=latest_offset,
            retain_deletes=retain_legacy_deletes,
            bound=bound,
        )
    finally:
        view.release()


def _filter_v2(
    offset_map: clean_loops.OffsetMap,
    producers: clean_loops.ActiveProducers,
    view: memoryview,
    pos: int,
    size: int,
    *,
    latest_offset: int,
    now: int,
    new_horizon: int,
    bound: int,
) -> Filtered:
    h = read_header(view, pos)
    data = codecs.decompress(
        h.compression_type, view[pos + RECORD_BATCH_OVERHEAD : pos + size], max_size=bound
    )
    scratch = bytearray(len(data) + 13 * max(h.records_count, 0))
    lat = h.max_timestamp if h.timestamp_type is TimestampType.LOG_APPEND_TIME else -1
    horizon = h.base_timestamp if h.has_delete_horizon else -1
    decision, end, kept, invalid, base_ts, max_ts, out_horizon = clean_loops.filter_records(
        offset_map,
        data,
        0,
        len(data),
        count=h.records_count,
        base_offset=h.base_offset,
        base_timestamp=h.base_timestamp,
        log_append_time=lat,
        horizon=horizon,
        now=now,
        new_horizon=new_horizon,
        latest_offset=latest_offset,
        out=scratch,
        out_pos=0,
    )
    read = h.records_count
    if decision == clean_loops.KEEP_ALL:
        return Filtered(bytes(view[pos : pos + size]), read, kept, invalid)
    if decision == clean_loops.REBUILT:
        payload = codecs.compress(h.compression_type, memoryview(scratch)[:end])
        out = bytearray(RECORD_BATCH_OVERHEAD + len(payload))
        out[RECORD_BATCH_OVERHEAD:] = payload
        attributes = clean_loops.rebuilt_attributes(
            h.attributes, h.compression_type, out_horizon >= 0
        )
        clean_loops.write_v2_header(
            out,
            0,
            len(out),
            source=view,
            source_pos=pos,
            attributes=attributes,
            base_timestamp=base_ts,
            max_timestamp=max_ts,
            count=kept,
        )
        return Filtered(out, read, kept, invalid)
    if h.has_producer_id and producers.is_last_batch(
        h.producer_id, h.last_offset, bool(h.attributes & CONTROL_FLAG_MASK), h.producer_epoch
    ):
        empty = bytearray(RECORD_BATCH_OVERHEAD)
        clean_loops.write_empty_batch(empty, 0, view, pos)
        return Filtered(empty, read, 0, invalid)
    return Filtered(b"", read, 0, invalid)


def _filter_legacy(
    offset_map: clean_loops.OffsetMap,
    view: memoryview,
    pos: int,
    size: int,
    *,
    latest_offset: int,
    retain_deletes: bool,
    bound: int,
) -> Filtered:
    wrapper = legacy.read_entry_header(view, pos)
    records = legacy_records(view, pos, size, bound)
    kept = []
    invalid = 0
    original = True
    for record in records:
        verdict = clean_loops.keep_record(
            offset_map,
            record.key,
            has_value=record.value is not None,
            offset=record.offset,
            latest_offset=latest_offset,
            retain_deletes=retain_deletes,
        )
        if verdict > 0:
            kept.append(record)
            # KAFKA-4298: an inner record whose magic is not the wrapper's is rewritten
            original = original and record.magic == wrapper.magic
        else:
            original = False
            invalid += verdict < 0
    if original:
        return Filtered(bytes(view[pos : pos + size]), len(records), len(kept), invalid)
    if not kept:
        return Filtered(b"", len(records), 0, invalid)
    is_lat = wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME
    built = build_legacy(
        [SimpleRecord(r.timestamp, r.key, r.value) for r in kept],
        magic=wrapper.magic,
        base_offset=kept[0].offset,
        offsets=[r.offset for r in kept],
        compression_type=wrapper.compression_type,
        timestamp_type=wrapper.timestamp_type,
        log_append_time=wrapper.timestamp if is_lat else -1,
    )
    return Filtered(built.buffer, len(records), len(kept), invalid)
