"""What the log and the producer-state checks need of each batch being appended.

The validator produces one :class:`BatchInfo` per batch of the records it
validated (offsets assigned); the partition hands them to
``UnifiedLog.prepare_append`` with the bytes, so the headers are read once.
Callers that append bytes they did not validate (the coordinators writing
``__consumer_offsets``, tools, tests) get the same facts from
:func:`parse_batch_infos`, which reads only the entry headers::

    v2 batch (batch.py):    BaseOffset int64 | BatchLength int32 | PartitionLeaderEpoch int32
                            | Magic int8 = 2 | CRC uint32 | Attributes int16
                            | LastOffsetDelta int32 | BaseTimestamp int64 | MaxTimestamp int64
                            | ProducerId int64 | ProducerEpoch int16 | BaseSequence int32
                            | RecordsCount int32 | Records
    v0/v1 entry (legacy.py): Offset int64 | MessageSize int32 | CRC uint32 | Magic int8
                            | Attributes int8 | Timestamp int64 (v1 only) | Key | Value

A compressed v0/v1 wrapper's offset is that of its *last* inner record; its
first offset is not in the header (``base_offset`` None). Legacy entries have
no producer fields (-1) and no partition leader epoch (-1).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.errors import CorruptRecordError
from broker.records import legacy
from broker.records.batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    increment_sequence,
)

_LEGACY_V1 = struct.Struct(">qiIbbq")  # offset, size, crc, magic, attributes, timestamp
_LEGACY_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_OFFSET_SIZE = struct.Struct(">qi")
#: the smallest entry of any magic (a v0 record without key and value)
_MIN_ENTRY = LOG_OVERHEAD + legacy.MIN_RECORD_SIZE


class BatchInfo(NamedTuple):
    """One batch of records being appended (offsets already assigned).

    Built with ``tuple.__new__`` on the produce path: the field order is part
    of :func:`v2_batch_info` and :func:`parse_batch_infos`.
    """

    position: int  # within the appended records
    size_in_bytes: int  # log overhead included
    magic: int
    base_offset: int | None  # None for a compressed v0/v1 wrapper
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    attributes: int

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``."""
        if self.base_offset is None:
            return self.base_sequence
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def compression_type(self) -> int:
        """Raw codec id (the low three attribute bits, any magic)."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)


def v2_batch_info(
    position: int,
    size_in_bytes: int,
    *,
    base_offset: int,
    last_offset_delta: int,
    max_timestamp: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
) -> BatchInfo:
    """A v2 batch's facts from its header fields."""
    return tuple.__new__(
        BatchInfo,
        (
            position, size_in_bytes, MAGIC_V2, base_offset, base_offset + last_offset_delta,
            max_timestamp, partition_leader_epoch, producer_id, producer_epoch, base_sequence,
            attributes,
        ),
    )  # fmt: skip


def parse_batch_infos(view: memoryview) -> list[BatchInfo]:
    """The facts of every batch of well-formed records (no record is read).

    CorruptRecordError when the bytes are not whole entries of magic 0-2.
    """
    size = view.nbytes
    if size >= RECORD_BATCH_OVERHEAD and view[MAGIC_OFFSET] == MAGIC_V2:
        (base, length, epoch, _magic, _crc, attributes, delta, _base_ts, max_ts, pid, pepoch,
         seq, _count) = HEADER_STRUCT.unpack_from(view, 0)  # fmt: skip
        if length + LOG_OVERHEAD == size:  # one v2 batch: the common case of a produce request
            return [
                v2_batch_info(
                    0, size, base_offset=base, last_offset_delta=delta, max_timestamp=max_ts,
                    attributes=attributes, producer_id=pid, producer_epoch=pepoch,
                    base_sequence=seq, partition_leader_epoch=epoch,
                )
            ]  # fmt: skip
    pos = 0
    out: list[BatchInfo] = []
    while pos < size:
        if size - pos < HEADER_SIZE_UP_TO_MAGIC:
            raise CorruptRecordError(f"{size - pos} trailing bytes after the last batch")
        _offset, length = _OFFSET_SIZE.unpack_from(view, pos)
        total = length + LOG_OVERHEAD
        magic = view[pos + MAGIC_OFFSET]
        if total < _MIN_ENTRY or pos + total > size:
            raise CorruptRecordError(f"batch of {total} bytes at {pos} does not fit the records")
        if magic == MAGIC_V2:
            if total < RECORD_BATCH_OVERHEAD:
                raise CorruptRecordError(f"v2 batch of {total} bytes at {pos}")
            (base, _len, epoch, _magic, _crc, attributes, delta, _base_ts, max_ts, pid, pepoch,
             seq, _count) = HEADER_STRUCT.unpack_from(view, pos)  # fmt: skip
            out.append(
                v2_batch_info(
                    pos, total, base_offset=base, last_offset_delta=delta, max_timestamp=max_ts,
                    attributes=attributes, producer_id=pid, producer_epoch=pepoch,
                    base_sequence=seq, partition_leader_epoch=epoch,
                )
            )  # fmt: skip
        else:
            if magic == MAGIC_V1:
                offset, _len, _crc, _m, attributes, timestamp = _LEGACY_V1.unpack_from(view, pos)
            elif magic == MAGIC_V0:
                offset, _len, _crc, _m, attributes = _LEGACY_V0.unpack_from(view, pos)
                timestamp = NO_TIMESTAMP
            else:
                raise CorruptRecordError(f"Invalid magic found in record: {magic}")
            first = None if attributes & COMPRESSION_CODEC_MASK else offset
            out.append(
                tuple.__new__(
                    BatchInfo,
                    (
                        pos,
                        total,
                        magic,
                        first,
                        offset,
                        timestamp,
                        NO_PARTITION_LEADER_EPOCH,
                        NO_PRODUCER_ID,
                        NO_PRODUCER_EPOCH,
                        NO_SEQUENCE,
                        attributes,
                    ),
                )
            )
        pos += total
    return out
