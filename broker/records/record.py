"""One record, materialised: the slow-path view used by dump-log, Fetch
down-conversion tests, Spark and the test suite -- never by the produce hot
path (which walks records with :mod:`broker.records.scan`).

Also the v2 record codec in plain Python (``DefaultRecord.java``)::

    Length          varint   bytes after this field
    Attributes      int8     unused, written 0
    TimestampDelta  varlong  record timestamp - batch base timestamp
    OffsetDelta     varint   record offset - batch base offset
    KeyLength       varint   < 0 = null key
    Key             bytes
    ValueLength     varint   < 0 = null value
    Value           bytes
    HeaderCount     varint   must be >= 0
    Headers         HeaderKeyLength varint (>= 0) | HeaderKey (UTF-8) |
                    HeaderValueLength varint (< 0 = null) | HeaderValue

All varints are zig-zag. Example: value "a", null key, deltas 0, no headers
-> ``0E 00 00 00 01 02 61 00``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from broker.errors import InvalidRecordError
from broker.records import _scan_py
from broker.records.batch import NO_SEQUENCE, NO_TIMESTAMP, TimestampType, increment_sequence
from broker.records.buffers import ReadableBuffer

Header = tuple[str, bytes | None]

#: ``DefaultRecord.MAX_RECORD_OVERHEAD``: length 5 + attributes 1 + ts 10 + offset 5
MAX_RECORD_OVERHEAD = 21


@dataclass(frozen=True, slots=True)
class Record:
    """A record of any magic as Kafka's ``Record`` interface presents it.

    ``timestamp`` is what Kafka's ``record.timestamp()`` returns: for a v2
    LogAppendTime batch the batch max timestamp, for a v1 inner record of a
    LogAppendTime wrapper the wrapper's timestamp, for v0 -1.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    magic: int = 2
    sequence: int = NO_SEQUENCE
    size_in_bytes: int = 0
    attributes: int = 0
    #: legacy records only: the stored CRC-32 of the record
    checksum: int | None = field(default=None, compare=False)

    @property
    def has_key(self) -> bool:
        return self.key is not None


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """What a producer hands to a builder (``SimpleRecord.java``)."""

    timestamp: int = NO_TIMESTAMP
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()


# ---------------------------------------------------------------------------
# varint writers (slow path)
# ---------------------------------------------------------------------------


def varint_bytes(value: int) -> bytes:
    """Zig-zag varint of an int32."""
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varlong_bytes(value: int) -> bytes:
    """Zig-zag varlong of an int64."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _sized(data: bytes | None) -> bytes:
    if data is None:
        return varint_bytes(-1)
    return varint_bytes(len(data)) + data


def encode_v2_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
) -> bytes:
    """``DefaultRecord.writeTo``: the record with its length prefix."""
    parts = [b"\x00", varlong_bytes(timestamp_delta), varint_bytes(offset_delta)]
    parts.append(_sized(key))
    parts.append(_sized(value))
    parts.append(varint_bytes(len(headers)))
    for hkey, hvalue in headers:
        if hkey is None:
            raise ValueError("Invalid null header key found in headers")
        parts.append(_sized(hkey.encode("utf-8", "surrogateescape")))
        parts.append(_sized(hvalue))
    body = b"".join(parts)
    return varint_bytes(len(body)) + body


def decode_v2_record(
    buf: ReadableBuffer,
    pos: int,
    end: int,
    *,
    base_offset: int,
    base_timestamp: int,
    base_sequence: int,
    log_append_time: int | None,
) -> tuple[Record, int]:
    """``DefaultRecord.readFrom``: one record at ``pos``; returns it and the
    position after it. Structure errors raise InvalidRecordError (the same
    rules the hot walk applies)."""
    read_varint = _scan_py.read_varint
    start = pos
    body, p = read_varint(buf, pos, end)
    if body < 0 or body > end - p:
        raise InvalidRecordError(
            f"Invalid record size: expected {body} bytes in record payload, but instead "
            f"the buffer has only {end - p} remaining bytes."
        )
    rec_end = p + body
    body_start = p
    if p >= rec_end:
        raise InvalidRecordError("Found invalid record structure")
    attributes = buf[p]
    p += 1
    ts_delta, p = _scan_py.read_varlong(buf, p, rec_end)
    offset_delta, p = read_varint(buf, p, rec_end)
    key, p = _read_sized(buf, p, rec_end)
    value, p = _read_sized(buf, p, rec_end)
    count, p = read_varint(buf, p, rec_end)
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}")
    if count > rec_end - p:
        raise InvalidRecordError(
            f"Found invalid number of record headers. {count} is larger than the "
            "remaining size of the buffer"
        )
    headers: list[Header] = []
    for _ in range(count):
        klen, p = read_varint(buf, p, rec_end)
        if klen < 0:
            raise InvalidRecordError(f"Invalid negative header key size {klen}")
        if klen > rec_end - p:
            raise InvalidRecordError("Found invalid record structure")
        hkey = bytes(buf[p : p + klen]).decode("utf-8", "surrogateescape")
        p += klen
        hvalue, p = _read_sized(buf, p, rec_end)
        headers.append((hkey, hvalue))
    if p != rec_end:
        raise InvalidRecordError(
            f"Invalid record size: expected to read {body} bytes in record payload, "
            f"but instead read {p - body_start}"
        )
    timestamp = (
        log_append_time if log_append_time is not None else _scan_py._j64(base_timestamp + ts_delta)
    )
    sequence = (
        increment_sequence(base_sequence, offset_delta) if base_sequence >= 0 else NO_SEQUENCE
    )
    record = Record(
        offset=_scan_py._j64(base_offset + offset_delta),
        timestamp=timestamp,
        key=key,
        value=value,
        headers=tuple(headers),
        timestamp_type=(
            TimestampType.LOG_APPEND_TIME
            if log_append_time is not None
            else TimestampType.CREATE_TIME
        ),
        magic=2,
        sequence=sequence,
        size_in_bytes=rec_end - start,
        attributes=attributes,
    )
    return record, rec_end


def _read_sized(buf: ReadableBuffer, p: int, end: int) -> tuple[bytes | None, int]:
    length, p = _scan_py.read_varint(buf, p, end)
    if length < 0:
        return None, p
    if length > end - p:
        raise InvalidRecordError("Found invalid record structure")
    return bytes(buf[p : p + length]), p + length


def v2_record_to_string(record: Record) -> str:
    """``DefaultRecord.toString`` (used in error messages)."""
    key = 0 if record.key is None else len(record.key)
    value = 0 if record.value is None else len(record.value)
    return (
        f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, "
        f"key={key} bytes, value={value} bytes)"
    )
