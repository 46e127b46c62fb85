"""Test batches built by hand from Kafka's formats (``DefaultRecordBatch.java``,
``DefaultRecord.java``, ``LegacyRecord.java``), no broker code
but ``pack_header``/``write_crc`` of ``broker.records.batch``.

* :func:`v2_batch` -- a RecordBatch v2 with uncompressed records.
* :func:`legacy_entry` -- one uncompressed v0/v1 log entry.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from broker.records.batch import pack_header, write_crc


def zigzag_varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def v2_record(
    offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(b"\x00")
    body += zigzag_varint(timestamp_delta)
    body += zigzag_varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += zigzag_varint(-1)
        else:
            body += zigzag_varint(len(part)) + part
    body += zigzag_varint(0)  # headers
    return zigzag_varint(len(body)) + bytes(body)


def v2_batch(
    base_offset: int,
    values: Sequence[bytes | None] = (b"v",),
    *,
    timestamps: Sequence[int] | None = None,
    base_timestamp: int = 0,
    keys: Sequence[bytes | None] | None = None,
    partition_leader_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
) -> bytes:
    n = len(values)
    ts = list(timestamps) if timestamps is not None else [base_timestamp] * n
    first_ts = ts[0]
    keys = list(keys) if keys is not None else [None] * n
    records = b"".join(v2_record(i, ts[i] - first_ts, keys[i], values[i]) for i in range(n))
    buf = bytearray(61 + len(records))
    pack_header(
        buf,
        0,
        base_offset=base_offset,
        batch_length=len(buf) - 12,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=n - 1,
        base_timestamp=first_ts,
        max_timestamp=max(ts),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=n,
    )
    buf[61:] = records
    write_crc(buf, 0, len(buf))
    return bytes(buf)


def legacy_entry(
    offset: int,
    magic: int,
    value: bytes | None,
    *,
    key: bytes | None = None,
    timestamp: int = 0,
    attributes: int = 0,
) -> bytes:
    """``Offset int64 | Size int32 | Crc | Magic | Attributes | [Timestamp] | Key | Value``."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic >= 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        if part is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(part)) + part
    record = struct.pack(">I", zlib.crc32(bytes(body))) + bytes(body)
    return struct.pack(">qi", offset, len(record)) + record
