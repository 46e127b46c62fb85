"""Control records and end-transaction markers (``ControlRecordType.java``,
``EndTransactionMarker.java``; ControlRecordTypeTest,
EndTransactionMarkerTest)."""

from __future__ import annotations

import pytest

from broker.errors import InvalidRecordError
from broker.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    control_key,
    end_txn_marker_batch,
    parse_control_type,
    parse_end_txn_marker,
)
from broker.records.iterate import iter_batches


@pytest.mark.parametrize(
    "control_type", [t for t in ControlRecordType if t is not ControlRecordType.UNKNOWN]
)
def test_control_key_round_trip(control_type):
    assert parse_control_type(control_key(control_type)) is control_type


def test_unknown_type_and_higher_key_version():
    assert parse_control_type(b"\x00\x00\x00\x63") is ControlRecordType.UNKNOWN
    assert parse_control_type(b"\x00\x05\x00\x01extra") is ControlRecordType.COMMIT


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"])
def test_bad_control_keys(key):
    with pytest.raises(InvalidRecordError):
        parse_control_type(key)


def test_end_txn_marker_round_trip():
    marker = EndTransactionMarker(ControlRecordType.COMMIT, 5)
    assert marker.serialize_value() == b"\x00\x00\x00\x00\x00\x05"
    assert parse_end_txn_marker(marker.key(), marker.serialize_value()) == marker
    # a higher value version is parsed as v0
    assert parse_end_txn_marker(marker.key(), b"\x00\x03\x00\x00\x00\x07") == (
        EndTransactionMarker(ControlRecordType.COMMIT, 7)
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (control_key(ControlRecordType.ABORT), b"\x00\x00\x00"),  # value too short
        (control_key(ControlRecordType.ABORT), b"\xff\xff\x00\x00\x00\x01"),  # negative version
        (control_key(ControlRecordType.ABORT), None),
        (control_key(ControlRecordType.LEADER_CHANGE), b"\x00\x00\x00\x00\x00\x01"),  # not a marker
    ],
)
def test_bad_end_txn_markers(key, value):
    with pytest.raises(InvalidRecordError):
        parse_end_txn_marker(key, value)


def _crc32c_bitwise(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) bit by bit, so the
    golden CRC below does not come from the library the builder uses."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


#: ``MemoryRecords.withEndTransactionMarker(5, 1700000000000, 3, 42, 7,
#: EndTransactionMarker(COMMIT, 0x0A0B0C0D))`` written field by field from
#: ``DefaultRecordBatch.java`` (61-byte header) and ``DefaultRecord.java``
#: (varints zigzag-encoded); the CRC is checked by a bitwise CRC-32C below
#: (tests/golden/VECTORS.md)
MARKER_GOLDEN = bytes.fromhex(
    "0000000000000005"  # BaseOffset 5
    "00000042"  # BatchLength 66 (78 - 12)
    "00000003"  # PartitionLeaderEpoch 3
    "02"  # Magic 2
    "42a2ed97"  # CRC-32C of bytes [21, 78)
    "0030"  # Attributes: transactional (0x10) | control (0x20), CreateTime, no compression
    "00000000"  # LastOffsetDelta 0
    "0000018bcfe56800"  # BaseTimestamp 1700000000000
    "0000018bcfe56800"  # MaxTimestamp 1700000000000
    "000000000000002a"  # ProducerId 42
    "0007"  # ProducerEpoch 7
    "ffffffff"  # BaseSequence -1 (RecordBatch.NO_SEQUENCE)
    "00000001"  # RecordsCount 1
    "20"  # record Length 16 (zigzag varint)
    "00"  # record Attributes
    "00"  # TimestampDelta 0
    "00"  # OffsetDelta 0
    "08"  # KeyLength 4
    "00000001"  # key: Version 0, Type COMMIT (1)
    "0c"  # ValueLength 6
    "00000a0b0c0d"  # value: Version 0, CoordinatorEpoch 0x0A0B0C0D
    "00"  # Headers count 0
)


def test_end_txn_marker_batch_golden_bytes():
    built = end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.COMMIT, 0x0A0B0C0D),
        base_offset=5,
        timestamp=1_700_000_000_000,
        partition_leader_epoch=3,
        producer_id=42,
        producer_epoch=7,
    )
    assert bytes(built) == MARKER_GOLDEN
    assert _crc32c_bitwise(MARKER_GOLDEN[21:]) == int.from_bytes(MARKER_GOLDEN[17:21], "big")


def test_end_txn_marker_batch_abort_reads_back():
    built = bytes(
        end_txn_marker_batch(
            EndTransactionMarker(ControlRecordType.ABORT, 2),
            base_offset=100,
            timestamp=12,
            partition_leader_epoch=0,
            producer_id=1,
            producer_epoch=0,
        )
    )
    (batch,) = iter_batches(built)
    header = batch.header()
    assert header.is_control_batch and header.is_transactional
    (record,) = batch.records()
    assert record.offset == 100 and record.timestamp == 12
    assert parse_end_txn_marker(record.key, record.value) == EndTransactionMarker(
        ControlRecordType.ABORT, 2
    )


def test_end_txn_marker_batch_refuses_other_types():
    with pytest.raises(InvalidRecordError):
        end_txn_marker_batch(
            EndTransactionMarker(ControlRecordType.LEADER_CHANGE, 0),
            base_offset=0,
            timestamp=0,
            partition_leader_epoch=0,
            producer_id=1,
            producer_epoch=0,
        )
