"""Kafka's ``DefaultRecordBatchTest`` (clients/src/test/java/.../record/DefaultRecordBatchTest.java).

Iteration checks run through the slow-path reader (``iterate.v2_records``)
and through the hot walk of both twins.
"""

from __future__ import annotations

import time

import pytest

from broker.errors import InvalidRecordError
from broker.records import batch as v2
from broker.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
    decrement_sequence,
    increment_sequence,
)
from broker.records.builder import build_v2_batch
from broker.records.control import ControlRecordType, EndTransactionMarker, parse_end_txn_marker
from broker.records.iterate import iter_batches, iter_records, v2_records
from broker.records.record import SimpleRecord, encode_v2_record

from .twins import TWINS, walk_all

ABC = [SimpleRecord(1, b"a", b"1"), SimpleRecord(2, b"b", b"2"), SimpleRecord(3, b"c", b"3")]


def _empty_header(**kw):
    buf = bytearray(v2.RECORD_BATCH_OVERHEAD)
    attrs = v2.compute_attributes(0, kw["timestamp_type"], kw["transactional"], kw["control"])
    v2.pack_header(
        buf, 0, base_offset=15, batch_length=v2.RECORD_BATCH_OVERHEAD - 12,
        partition_leader_epoch=15, attributes=attrs, last_offset_delta=37 - 15,
        base_timestamp=NO_TIMESTAMP, max_timestamp=kw["timestamp"], producer_id=23423,
        producer_epoch=145, base_sequence=983, records_count=0,
    )  # fmt: skip
    v2.write_crc(buf, 0, len(buf))
    return buf


def test_write_empty_header():
    timestamp = int(time.time() * 1000)
    for ts_type in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
        for transactional in (True, False):
            for control in (True, False):
                buf = _empty_header(
                    timestamp_type=ts_type, transactional=transactional, control=control,
                    timestamp=timestamp,
                )  # fmt: skip
                h = v2.read_header(buf)
                assert (h.producer_id, h.producer_epoch, h.base_sequence) == (23423, 145, 983)
                assert h.last_sequence == 983 + (37 - 15)
                assert (h.base_offset, h.last_offset, h.partition_leader_epoch) == (15, 37, 15)
                assert h.is_transactional == transactional
                assert h.timestamp_type is ts_type
                assert h.max_timestamp == timestamp
                assert h.base_timestamp == NO_TIMESTAMP
                assert h.is_control_batch == control
                assert v2.is_valid(buf, 0, len(buf))


def test_build_default_record_batch():
    built = build_v2_batch(
        [SimpleRecord(1, b"a", b"v"), SimpleRecord(2, b"b", b"v")], base_offset=1234567
    )
    h = v2.read_header(built.buffer)
    assert v2.is_valid(built.buffer, 0, len(built.buffer))
    assert (h.base_offset, h.last_offset, h.max_timestamp) == (1234567, 1234568, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (
        NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE,
    )  # fmt: skip
    assert h.last_sequence == NO_SEQUENCE


def test_build_default_record_batch_with_producer_id():
    built = build_v2_batch(
        [SimpleRecord(1, b"a", b"v"), SimpleRecord(2, b"b", b"v")], base_offset=1234567,
        producer_id=23423, producer_epoch=145, base_sequence=983,
    )  # fmt: skip
    h = v2.read_header(built.buffer)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (
        23423, 145, 983, 984,
    )  # fmt: skip


def test_build_default_record_batch_with_sequence_wrap_around():
    built = build_v2_batch(
        [SimpleRecord(1, b"a", b"v"), SimpleRecord(2, b"b", b"v"), SimpleRecord(3, b"c", b"v")],
        base_offset=1234567, producer_id=23423, producer_epoch=145, base_sequence=2**31 - 2,
    )  # fmt: skip
    h = v2.read_header(built.buffer)
    assert h.base_sequence == 2**31 - 2
    assert h.last_sequence == 0
    assert [r.sequence for r in iter_records(built.buffer)] == [2**31 - 2, 2**31 - 1, 0]


def test_size_in_bytes():
    ts = int(time.time() * 1000)
    headers = (("foo", b"value"), ("bar", None))
    records = [
        SimpleRecord(ts, b"key", b"value"),
        SimpleRecord(ts + 30000, None, b"value"),
        SimpleRecord(ts + 60000, b"key", None),
        SimpleRecord(ts + 60000, b"key", b"value", headers),
    ]
    built = build_v2_batch(records)
    expected = RECORDS_OFFSET + sum(
        len(encode_v2_record(i, r.timestamp - ts, r.key, r.value, r.headers))
        for i, r in enumerate(records)
    )
    assert len(built.buffer) == expected == built.uncompressed_bytes_written


def test_invalid_record_size():
    buf = build_v2_batch(ABC).buffer
    buf[v2.LENGTH_OFFSET : v2.LENGTH_OFFSET + 4] = (10).to_bytes(4, "big")
    h = v2.read_header(buf)
    assert not v2.is_valid(buf, 0, h.size_in_bytes)


def _with_count(count, codec):
    ts = int(time.time() * 1000)
    buf = build_v2_batch(
        [SimpleRecord(ts, None, v) for v in (b"hello", b"there", b"beautiful")],
        compression_type=codec,
    ).buffer
    buf[v2.RECORDS_COUNT_OFFSET : v2.RECORDS_COUNT_OFFSET + 4] = count.to_bytes(4, "big")
    return buf


@pytest.mark.parametrize(
    "codec", [CompressionType.NONE, CompressionType.GZIP], ids=["non_compressed", "compressed"]
)
@pytest.mark.parametrize("count", [5, 2], ids=["too_many", "too_little"])
def test_invalid_record_count_v2(count, codec):
    """testInvalidRecordCount{TooMany,TooLittle}{NonCompressed,Compressed}V2."""
    buf = _with_count(count, codec)
    with pytest.raises(InvalidRecordError):
        v2_records(buf, 0, 1 << 20)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("count", [5, 2], ids=["too_many", "too_little"])
def test_invalid_record_count_walk(twin, count):
    buf = _with_count(count, CompressionType.NONE)
    with pytest.raises(InvalidRecordError):
        walk_all(twin, buf, RECORDS_OFFSET, len(buf), count)


def test_invalid_crc():
    buf = build_v2_batch(ABC).buffer
    buf[v2.LAST_OFFSET_DELTA_OFFSET : v2.LAST_OFFSET_DELTA_OFFSET + 4] = (23).to_bytes(4, "big")
    assert not v2.is_valid(buf, 0, len(buf))


def test_set_last_offset():
    buf = build_v2_batch(ABC).buffer
    v2.set_last_offset(buf, 0, 500)
    h = v2.read_header(buf)
    assert (h.last_offset, h.base_offset) == (500, 498)
    assert v2.is_valid(buf, 0, len(buf))
    assert [r.offset for r in iter_records(buf)] == [498, 499, 500]


def test_set_partition_leader_epoch():
    buf = build_v2_batch(ABC).buffer
    v2.set_partition_leader_epoch(buf, 0, 500)
    assert v2.read_header(buf).partition_leader_epoch == 500
    assert v2.is_valid(buf, 0, len(buf))


def test_set_log_append_time():
    buf = build_v2_batch(ABC).buffer
    assert v2.set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, 15)
    h = v2.read_header(buf)
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert h.max_timestamp == 15
    assert v2.is_valid(buf, 0, len(buf))
    assert [r.timestamp for r in iter_records(buf)] == [15, 15, 15]


def test_set_max_timestamp_no_op_keeps_crc_and_clears_high_attribute_bits():
    buf = build_v2_batch(ABC).buffer
    crc = v2.stored_crc(buf)
    assert not v2.set_max_timestamp(buf, 0, TimestampType.CREATE_TIME, 3)
    assert v2.stored_crc(buf) == crc
    buf[v2.ATTRIBUTES_OFFSET] = 0x7F  # unused high byte set
    v2.write_crc(buf, 0, len(buf))
    assert v2.set_max_timestamp(buf, 0, TimestampType.CREATE_TIME, 99)
    assert buf[v2.ATTRIBUTES_OFFSET] == 0
    assert v2.is_valid(buf, 0, len(buf))


def test_set_no_timestamp_type_not_allowed():
    buf = build_v2_batch(ABC).buffer
    with pytest.raises(ValueError):
        v2.set_max_timestamp(buf, 0, TimestampType.NO_TIMESTAMP_TYPE, NO_TIMESTAMP)


def test_read_and_write_control_batch():
    marker = EndTransactionMarker(ControlRecordType.ABORT, 17)
    buf = build_v2_batch(
        [SimpleRecord(1, marker.key(), marker.serialize_value())],
        producer_id=1, producer_epoch=0, is_transactional=True, is_control=True,
    ).buffer  # fmt: skip
    (b,) = list(iter_batches(buf))
    assert b.header().is_control_batch
    (r,) = b.records()
    assert parse_end_txn_marker(r.key, r.value) == marker


@pytest.mark.parametrize("codec", [0, 1])
def test_streaming_iterator_consistency(codec):
    records = [SimpleRecord(i, str(i).encode(), b"v" * i) for i in range(10)]
    buf = build_v2_batch(records, compression_type=codec).buffer
    assert [(r.key, r.value) for r in iter_records(buf)] == [(r.key, r.value) for r in records]


@pytest.mark.parametrize("twin", TWINS)
def test_skip_key_value_iterator_correctness(twin):
    """The walk sees what the full reader sees: offsets, timestamps, count."""
    headers = (("k", b"v"),)
    records = [
        SimpleRecord(1000 + i, b"k%d" % i, b"v" * i, headers if i % 2 else ()) for i in range(5)
    ]
    buf = build_v2_batch(records, base_offset=0).buffer
    max_ts, min_ts, consecutive, canonical, errors, _counts = walk_all(
        twin, buf, RECORDS_OFFSET, len(buf), 5, base_timestamp=1000
    )
    assert (max_ts, min_ts, consecutive, canonical, errors) == (1004, 1000, True, True, None)


def test_increment_sequence():
    assert increment_sequence(5, 5) == 10
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 1 - 5, 10) == 4


def test_decrement_sequence():
    assert decrement_sequence(5, 5) == 0
    assert decrement_sequence(0, 1) == 2**31 - 1
