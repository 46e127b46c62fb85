"""RecordBatch v2 header: layout, attribute bits, CRC-32C, in-place patching.

Source: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java``.
All integers big-endian. The header is 61 bytes (declared once, as
``HEADER_FIELDS``: each field's name and struct code; ``HEADER_STRUCT`` and the
``*_OFFSET`` constants are derived from it)::

    offset size field
       0    8  BaseOffset            int64   rewritten by the broker (outside the CRC)
       8    4  BatchLength           int32   total batch size - 12
      12    4  PartitionLeaderEpoch  int32   set by the broker (outside the CRC)
      16    1  Magic                 int8    = 2
      17    4  CRC                   uint32  CRC-32C of bytes [21, end of batch)
      21    2  Attributes            int16   see below
      23    4  LastOffsetDelta       int32
      27    8  BaseTimestamp         int64
      35    8  MaxTimestamp          int64
      43    8  ProducerId            int64   -1 = none
      51    2  ProducerEpoch         int16   -1 = none
      53    4  BaseSequence          int32   -1 = none
      57    4  RecordsCount          int32
      61    .  Records               (one compressed stream when codec != none)

Attributes (only the low byte carries meaning)::

    bits 0-2  codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
    bit  3    timestamp type: 0 CreateTime, 1 LogAppendTime
    bit  4    transactional
    bit  5    control batch
    bit  6    delete horizon set (base timestamp holds it)
    bits 7-15 unused; cleared by setMaxTimestamp

The mutators work on a writable buffer (``bytearray`` or a writable
``memoryview``) at a position, so a batch can be patched where it lies in
the request frame: no copy, no Python object per record.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from crc32c import crc32c

from broker.records.buffers import ReadableBuffer, WritableBuffer

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

#: The v2 header, declared once: each field's name (``RecordBatchHeader``'s) and
#: struct code, in order (``DefaultRecordBatch``'s ``*_OFFSET``/``*_LENGTH``
#: constants). :data:`HEADER_STRUCT` and every ``*_OFFSET`` below derive from it.
HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("base_offset", "q"),
    ("batch_length", "i"),
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
#: the whole header; ``unpack_from`` gives the fields in :data:`HEADER_FIELDS` order
HEADER_STRUCT = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS))
#: each field's offset from the start of the batch
FIELD_OFFSETS: dict[str, int] = {
    name: struct.calcsize(">" + "".join(code for _, code in HEADER_FIELDS[:i]))
    for i, (name, _) in enumerate(HEADER_FIELDS)
}
#: each field's index in what ``HEADER_STRUCT.unpack_from`` returns
FIELD_INDEX: dict[str, int] = {name: i for i, (name, _) in enumerate(HEADER_FIELDS)}

BASE_OFFSET_OFFSET = FIELD_OFFSETS["base_offset"]
LENGTH_OFFSET = FIELD_OFFSETS["batch_length"]
PARTITION_LEADER_EPOCH_OFFSET = FIELD_OFFSETS["partition_leader_epoch"]
MAGIC_OFFSET = FIELD_OFFSETS["magic"]
CRC_OFFSET = FIELD_OFFSETS["crc"]
ATTRIBUTES_OFFSET = FIELD_OFFSETS["attributes"]
LAST_OFFSET_DELTA_OFFSET = FIELD_OFFSETS["last_offset_delta"]
BASE_TIMESTAMP_OFFSET = FIELD_OFFSETS["base_timestamp"]
MAX_TIMESTAMP_OFFSET = FIELD_OFFSETS["max_timestamp"]
PRODUCER_ID_OFFSET = FIELD_OFFSETS["producer_id"]
PRODUCER_EPOCH_OFFSET = FIELD_OFFSETS["producer_epoch"]
BASE_SEQUENCE_OFFSET = FIELD_OFFSETS["base_sequence"]
RECORDS_COUNT_OFFSET = FIELD_OFFSETS["records_count"]
RECORDS_OFFSET = HEADER_STRUCT.size
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET


def _field_size(name: str) -> int:
    return struct.calcsize(">" + dict(HEADER_FIELDS)[name])


#: ``Records.LOG_OVERHEAD``: the offset and size fields before every entry
#: (a v2 batch's base offset and length, a legacy entry's offset and size).
LOG_OVERHEAD = LENGTH_OFFSET + _field_size("batch_length")
#: bytes needed to read the magic of any entry (``HEADER_SIZE_UP_TO_MAGIC``).
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + _field_size("magic")

# the layout of the module docstring (and of DefaultRecordBatch.java)
assert (
    BASE_OFFSET_OFFSET, LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, MAGIC_OFFSET, CRC_OFFSET,
    ATTRIBUTES_OFFSET, LAST_OFFSET_DELTA_OFFSET, BASE_TIMESTAMP_OFFSET, MAX_TIMESTAMP_OFFSET,
    PRODUCER_ID_OFFSET, PRODUCER_EPOCH_OFFSET, BASE_SEQUENCE_OFFSET, RECORDS_COUNT_OFFSET,
    RECORDS_OFFSET, LOG_OVERHEAD, HEADER_SIZE_UP_TO_MAGIC,
) == (0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61, 12, 17)  # fmt: skip

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40


class CompressionType(enum.IntEnum):
    """Codec ids of the attribute bits (``CompressionType.java``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        """Name used by ``compression.type`` (``uncompressed`` for NONE)."""
        return "uncompressed" if self is CompressionType.NONE else self.name.lower()

    @classmethod
    def for_name(cls, name: str) -> CompressionType:
        """From a ``compression.type`` value other than ``producer``."""
        lowered = name.lower()
        if lowered in ("uncompressed", "none"):
            return cls.NONE
        return cls[lowered.upper()]


class TimestampType(enum.IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class RecordBatchHeader(NamedTuple):
    """The 61 header bytes of a v2 batch, decoded."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression_type(self) -> int:
        """Raw codec id (0-7); ids 5-7 are not valid codecs."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """``baseSequence + lastOffsetDelta`` wrapping past Int.MAX to 0."""
        return increment_sequence(self.base_sequence, self.last_offset_delta)


assert RecordBatchHeader._fields == tuple(FIELD_INDEX)


def read_header(buf: ReadableBuffer, pos: int = 0) -> RecordBatchHeader:
    """Decode the header at ``pos``; the caller made sure 61 bytes are there."""
    return RecordBatchHeader._make(HEADER_STRUCT.unpack_from(buf, pos))


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: wraps at Int.MAX to 0."""
    if sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if sequence > 2**31 - 1 - increment:
        return increment - (2**31 - 1 - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if sequence < decrement:
        return 2**31 - 1 - (decrement - sequence) + 1
    return sequence - decrement


def compute_crc(buf: ReadableBuffer, pos: int, size: int) -> int:
    """CRC-32C of ``[pos + 21, pos + size)`` (size includes the log overhead)."""
    with memoryview(buf) as view:
        return int(crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size]))


def stored_crc(buf: ReadableBuffer, pos: int = 0) -> int:
    value: int = _UINT32.unpack_from(buf, pos + CRC_OFFSET)[0]
    return value


def is_valid(buf: ReadableBuffer, pos: int, size: int) -> bool:
    """``DefaultRecordBatch.isValid``: at least a header, and the CRC matches."""
    return size >= RECORD_BATCH_OVERHEAD and stored_crc(buf, pos) == compute_crc(buf, pos, size)


def write_crc(buf: WritableBuffer, pos: int, size: int) -> None:
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))


def set_last_offset(buf: WritableBuffer, pos: int, last_offset: int) -> None:
    """Base offset := last_offset - lastOffsetDelta (outside the CRC)."""
    delta: int = _INT32.unpack_from(buf, pos + LAST_OFFSET_DELTA_OFFSET)[0]
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, last_offset - delta)


def set_base_offset(buf: WritableBuffer, pos: int, base_offset: int) -> None:
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: WritableBuffer, pos: int, epoch: int) -> None:
    """Outside the CRC."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def compute_attributes(
    compression_type: int,
    timestamp_type: TimestampType,
    is_transactional: bool,
    is_control: bool,
    has_delete_horizon: bool = False,
) -> int:
    """``DefaultRecordBatch.computeAttributes``: v2 needs a timestamp type."""
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError(
            "Timestamp type must be provided to compute attributes for message format v2 and above"
        )
    attrs = compression_type & COMPRESSION_CODEC_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attrs |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attrs |= CONTROL_FLAG_MASK
    if has_delete_horizon:
        attrs |= DELETE_HORIZON_FLAG_MASK
    return attrs


def set_max_timestamp(
    buf: WritableBuffer, pos: int, timestamp_type: TimestampType, max_timestamp: int
) -> bool:
    """``DefaultRecordBatch.setMaxTimestamp``.

    No-op (returns False) when type and value already match. Otherwise the
    whole attributes word is rewritten -- codec, transactional, control and
    delete-horizon bits kept, the new timestamp type set, the unused bits 7-15
    cleared -- the max timestamp is written and the CRC recomputed.
    """
    header = read_header(buf, pos)
    if header.timestamp_type is timestamp_type and header.max_timestamp == max_timestamp:
        return False
    attrs = compute_attributes(
        header.compression_type,
        timestamp_type,
        header.is_transactional,
        header.is_control_batch,
        header.has_delete_horizon,
    )
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, max_timestamp)
    write_crc(buf, pos, header.size_in_bytes)
    return True


def pack_header(
    buf: WritableBuffer,
    pos: int,
    *,
    base_offset: int,
    batch_length: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
) -> None:
    """Write a complete header with CRC 0; call :func:`write_crc` once the
    records are in place."""
    HEADER_STRUCT.pack_into(
        buf,
        pos,
        base_offset,
        batch_length,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    )
