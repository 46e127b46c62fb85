"""Control records and end-transaction markers (``ControlRecordType.java``,
``EndTransactionMarker.java``).

A control batch is a v2 batch with attribute bit 5; it holds one control
record whose key and value are::

    key   Version int16 (0) | Type int16     ABORT 0, COMMIT 1, LEADER_CHANGE 2,
                                             SNAPSHOT_HEADER 3, SNAPSHOT_FOOTER 4,
                                             KRAFT_VERSION 5, KRAFT_VOTERS 6
    value (end-txn markers) Version int16 (0) | CoordinatorEpoch int32

Readers are lenient about versions (a higher version is parsed as v0) and
strict about sizes and negative versions (InvalidRecordError).

:func:`end_txn_marker_batch` writes the batch a coordinator appends to end a
transaction (``MemoryRecords.withEndTransactionMarker``): one uncompressed
v2 batch, CreateTime, transactional and control bits set (attributes 0x30),
BaseSequence -1, one record at offset delta 0 whose timestamp is the
marker's, key ``00 00 00 TT`` and value ``00 00 EE EE EE EE``; 78 bytes.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from broker.errors import InvalidRecordError
from broker.records.batch import NO_SEQUENCE
from broker.records.buffers import ReadableBuffer
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord

CONTROL_KEY_SIZE = 4
END_TXN_MARKER_VALUE_SIZE = 6
CURRENT_CONTROL_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1


def parse_type_id(key: ReadableBuffer | None) -> int:
    """``ControlRecordType.parseTypeId``: the raw type id of a control key."""
    size = 0 if key is None else len(memoryview(key))
    if key is None or size < CONTROL_KEY_SIZE:
        raise InvalidRecordError(
            "Invalid value size found for end control record key. Must have at least "
            f"{CONTROL_KEY_SIZE} bytes, but found only {size}"
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption"
        )
    return int(type_id)


def parse_control_type(key: ReadableBuffer | None) -> ControlRecordType:
    """``ControlRecordType.parse``: unknown ids map to UNKNOWN."""
    type_id = parse_type_id(key)
    try:
        return ControlRecordType(type_id)
    except ValueError:
        return ControlRecordType.UNKNOWN


def control_key(control_type: ControlRecordType) -> bytes:
    if control_type is ControlRecordType.UNKNOWN:
        raise ValueError("Cannot serialize UNKNOWN control record type")
    return _KEY.pack(CURRENT_CONTROL_KEY_VERSION, int(control_type))


class EndTransactionMarker(NamedTuple):
    control_type: ControlRecordType  # ABORT or COMMIT
    coordinator_epoch: int

    def serialize_value(self) -> bytes:
        return _MARKER.pack(CURRENT_END_TXN_MARKER_VERSION, self.coordinator_epoch)

    def key(self) -> bytes:
        return control_key(self.control_type)


def _ensure_marker_type(control_type: ControlRecordType) -> None:
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(
            f"Invalid control record type for end transaction marker{control_type.name}"
        )


def parse_end_txn_marker(
    key: ReadableBuffer | None, value: ReadableBuffer | None
) -> EndTransactionMarker:
    """``EndTransactionMarker.deserialize`` of a control record's key and value."""
    control_type = parse_control_type(key)
    _ensure_marker_type(control_type)
    size = 0 if value is None else len(memoryview(value))
    if value is None or size < END_TXN_MARKER_VALUE_SIZE:
        raise InvalidRecordError(
            "Invalid value size found for end transaction marker. Must have at least "
            f"{END_TXN_MARKER_VALUE_SIZE} bytes, but found only {size}"
        )
    version, epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for end transaction marker: {version}. "
            "May indicate data corruption"
        )
    return EndTransactionMarker(control_type, int(epoch))


def end_txn_marker_batch(
    marker: EndTransactionMarker,
    *,
    base_offset: int,
    timestamp: int,
    partition_leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
) -> bytearray:
    """The control batch of ``marker`` (``MemoryRecords.withEndTransactionMarker``;
    layout in the module docstring)."""
    _ensure_marker_type(marker.control_type)
    built = build_v2_batch(
        [SimpleRecord(timestamp, marker.key(), marker.serialize_value())],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    return built.buffer
