"""Writing v2 record batches (``MemoryRecordsBuilder`` with magic 2).

Two levels:

* :func:`assemble_v2_batch` takes records that are already encoded (by the
  compiled rebuild loops or by :func:`encode_v2_record`), compresses them as
  one stream when asked, and writes the 61-byte header (layout in
  ``batch.py``) with its CRC-32C. The validator's rebuild path uses it.
* :func:`build_v2_batch` encodes :class:`SimpleRecord` s itself (slow path:
  tests, tools, golden vectors).

Builder rules kept from ``MemoryRecordsBuilder``:

* base timestamp = the first record's own timestamp, also for LogAppendTime
  (only the attribute bit and the max timestamp change);
* max timestamp = log-append time for LogAppendTime, else the largest record
  timestamp (-1 when there is none);
* offsets strictly increase and ``offset - base_offset`` fits an int32;
  a timestamp < -1 is refused ("Invalid negative timestamp");
* producer fields: transactional needs a producer id; a producer id needs an
  epoch and (unless control) a sequence >= 0;
* ``uncompressed_bytes_written`` = record bytes + 61;
* ``info()``: LogAppendTime -> (log-append time, last offset); no timestamp
  -> (-1, -1); else (max timestamp, last offset).

Builder refusals caused by a client's data raise InvalidRecordError (Kafka:
IllegalArgumentException, answered UNKNOWN_SERVER_ERROR; docs/deviations.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker.errors import InvalidRecordError
from broker.records import codecs
from broker.records.batch import (
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    TimestampType,
    compute_attributes,
    pack_header,
    write_crc,
)
from broker.records.buffers import ReadableBuffer
from broker.records.record import SimpleRecord, encode_v2_record

_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BuiltRecords:
    """What a builder made and the facts ``MemoryRecordsBuilder`` reports."""

    buffer: bytearray
    num_records: int
    base_offset: int
    last_offset: int
    max_timestamp: int  # ``info().maxTimestamp``
    shallow_offset_of_max_timestamp: int  # ``info().shallowOffsetOfMaxTimestamp``
    uncompressed_bytes_written: int


def check_producer_state(
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    is_control: bool,
) -> None:
    """``MemoryRecordsBuilder.validateProducerState``."""
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise InvalidRecordError("Cannot write transactional messages without a valid producer ID")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise InvalidRecordError("Invalid negative producer epoch")
        if base_sequence < 0 and not is_control:
            raise InvalidRecordError("Invalid negative sequence number used")


def check_timestamp(timestamp: int) -> None:
    if timestamp < 0 and timestamp != NO_TIMESTAMP:
        raise InvalidRecordError(f"Invalid negative timestamp {timestamp}")


def assemble_v2_batch(
    records: ReadableBuffer,
    *,
    num_records: int,
    base_offset: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    compression_type: int = CompressionType.NONE,
    level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    has_delete_horizon: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """One v2 batch around already-encoded ``records`` (``writeDefaultBatchHeader``)."""
    check_producer_state(producer_id, producer_epoch, base_sequence, is_transactional, is_control)
    check_timestamp(base_timestamp)
    if compression_type != CompressionType.NONE:
        payload: ReadableBuffer = codecs.compress(compression_type, records, level=level)
    else:
        payload = records
    # the header's room then the payload: one copy, no zero-fill of the payload's room
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    size = len(out)
    attributes = compute_attributes(
        compression_type, timestamp_type, is_transactional, is_control, has_delete_horizon
    )
    pack_header(
        out,
        0,
        base_offset=base_offset,
        batch_length=size - LOG_OVERHEAD,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=num_records,
    )
    write_crc(out, 0, size)
    return out


def build_v2_batch(
    records: Iterable[SimpleRecord],
    *,
    base_offset: int = 0,
    offsets: Sequence[int] | None = None,
    compression_type: int = CompressionType.NONE,
    level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int = NO_TIMESTAMP,
) -> BuiltRecords:
    """``MemoryRecords.builder(...)`` + ``appendWithOffset`` for each record +
    ``build()``. ``offsets`` (strictly increasing) default to consecutive
    offsets from ``base_offset``. An empty input gives an empty buffer."""
    parts: list[bytes] = []
    base_timestamp: int | None = delete_horizon_ms if delete_horizon_ms >= 0 else None
    max_ts = NO_TIMESTAMP
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
        if base_timestamp is None:
            base_timestamp = record.timestamp
        parts.append(
            encode_v2_record(
                offset - base_offset,
                record.timestamp - base_timestamp,
                record.key,
                record.value,
                record.headers,
            )
        )
        max_ts = max(max_ts, record.timestamp)
        last_offset = offset
        n += 1
    if n == 0 or last_offset is None or base_timestamp is None:
        return BuiltRecords(bytearray(), 0, base_offset, base_offset - 1, NO_TIMESTAMP, -1, 0)
    body = b"".join(parts)
    is_lat = timestamp_type is TimestampType.LOG_APPEND_TIME
    header_max = log_append_time if is_lat else max_ts
    out = assemble_v2_batch(
        body,
        num_records=n,
        base_offset=base_offset,
        last_offset_delta=last_offset - base_offset,
        base_timestamp=base_timestamp,
        max_timestamp=header_max,
        compression_type=compression_type,
        level=level,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
        is_control=is_control,
        has_delete_horizon=delete_horizon_ms >= 0,
        partition_leader_epoch=partition_leader_epoch,
    )
    info_max, info_offset = builder_info(is_lat, log_append_time, max_ts, last_offset)
    return BuiltRecords(
        out, n, base_offset, last_offset, info_max, info_offset, len(body) + RECORD_BATCH_OVERHEAD
    )


def builder_info(
    is_lat: bool, log_append_time: int, max_timestamp: int, last_offset: int
) -> tuple[int, int]:
    """``MemoryRecordsBuilder.info()`` for magic 2 (or any compressed batch)."""
    if is_lat:
        return log_append_time, last_offset
    if max_timestamp == NO_TIMESTAMP:
        return NO_TIMESTAMP, -1
    return max_timestamp, last_offset
