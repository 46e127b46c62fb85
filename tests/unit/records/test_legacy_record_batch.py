"""Kafka's ``AbstractLegacyRecordBatchTest`` (clients/src/test/java/.../record/
AbstractLegacyRecordBatchTest.java) and the deep-iteration rules of
``AbstractLegacyRecordBatch.java``."""

from __future__ import annotations

import pytest

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records import legacy
from broker.records.batch import MAGIC_V0, MAGIC_V1, CompressionType, TimestampType
from broker.records.iterate import iter_records, legacy_records
from broker.records.legacy_builder import build_legacy, wrap_legacy
from broker.records.record import SimpleRecord

ABC = [SimpleRecord(1, b"a", b"1"), SimpleRecord(2, b"b", b"2"), SimpleRecord(3, b"c", b"3")]
GZIP = CompressionType.GZIP


def _gzip(magic):
    return build_legacy(ABC, magic=magic, compression_type=GZIP).buffer


def test_set_last_offset_compressed():
    buf = _gzip(MAGIC_V1)
    legacy.set_offset(buf, 0, 500)
    assert legacy.read_entry_header(buf).offset == 500
    assert legacy.is_valid(buf, 0, len(buf))
    assert [r.offset for r in iter_records(buf)] == [498, 499, 500]


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_iterate_compressed_record_with_wrapper_offset_zero(magic):
    buf = _gzip(magic)
    legacy.set_offset(buf, 0, 0)
    assert [r.offset for r in iter_records(buf)] == [0, 1, 2]


def test_invalid_wrapper_offset_v1():
    buf = _gzip(MAGIC_V1)
    legacy.set_offset(buf, 0, 1)
    with pytest.raises(InvalidRecordError):
        list(iter_records(buf))


def test_set_no_timestamp_type_not_allowed():
    buf = _gzip(MAGIC_V1)
    with pytest.raises(ValueError):
        legacy.set_max_timestamp(buf, 0, TimestampType.NO_TIMESTAMP_TYPE, -1)


@pytest.mark.parametrize("ts_type", [TimestampType.LOG_APPEND_TIME, TimestampType.CREATE_TIME])
def test_set_timestamp_not_allowed_v0(ts_type):
    """testSetLogAppendTimeNotAllowedV0 / testSetCreateTimeNotAllowedV0."""
    buf = _gzip(MAGIC_V0)
    with pytest.raises(ValueError):
        legacy.set_max_timestamp(buf, 0, ts_type, 15)


def test_set_partition_leader_epoch_not_allowed():
    """testSetPartitionLeaderEpochNotAllowedV0/V1: legacy entries have no field
    for it; the legacy module offers no such mutator at all."""
    assert not hasattr(legacy, "set_partition_leader_epoch")


def test_set_log_append_time_v1():
    buf = _gzip(MAGIC_V1)
    assert legacy.set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, 15)
    h = legacy.read_entry_header(buf)
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert h.timestamp == 15
    assert legacy.is_valid(buf, 0, len(buf))
    assert [r.timestamp for r in iter_records(buf)] == [15, 15, 15]


def test_set_create_time_v1():
    buf = _gzip(MAGIC_V1)
    assert legacy.set_max_timestamp(buf, 0, TimestampType.CREATE_TIME, 15)
    h = legacy.read_entry_header(buf)
    assert (h.timestamp_type, h.timestamp) == (TimestampType.CREATE_TIME, 15)
    assert legacy.is_valid(buf, 0, len(buf))
    assert [r.timestamp for r in iter_records(buf)] == [1, 2, 3]


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_zstd_compression_type_with_v0_or_v1(magic):
    with pytest.raises(InvalidRecordError):
        build_legacy(ABC, magic=magic, compression_type=CompressionType.ZSTD)
    # a wrapper flagged ZSTD (written by hand) is refused by the deep iterator
    buf = bytearray(_gzip(magic))
    buf[legacy.RECORD_ATTRIBUTES_OFFSET] = (buf[legacy.RECORD_ATTRIBUTES_OFFSET] & ~7) | 4
    with pytest.raises(InvalidRecordError):
        legacy_records(buf, 0, len(buf), 1 << 20)


def test_inner_compressed_record_is_refused():
    inner = legacy.encode_entry(0, MAGIC_V1, attributes=GZIP, timestamp=5, key=None, value=b"x")
    buf = wrap_legacy(inner, magic=MAGIC_V1, compression_type=GZIP, level=None, last_offset=0,
                      timestamp=5, timestamp_type=TimestampType.CREATE_TIME)  # fmt: skip
    with pytest.raises(InvalidRecordError):
        list(iter_records(buf))


def test_inner_entry_smaller_than_overhead_is_corrupt():
    inner = (0).to_bytes(8, "big") + (5).to_bytes(4, "big") + bytes(5)
    buf = wrap_legacy(inner, magic=MAGIC_V0, compression_type=GZIP, level=None, last_offset=0,
                      timestamp=-1, timestamp_type=TimestampType.CREATE_TIME)  # fmt: skip
    with pytest.raises(CorruptRecordError):
        list(iter_records(buf))


def test_trailing_partial_inner_entry_ignored_and_empty_wrapper_refused():
    entry = legacy.encode_entry(7, MAGIC_V0, attributes=0, timestamp=-1, key=None, value=b"x")
    buf = wrap_legacy(entry + entry[:10], magic=MAGIC_V0, compression_type=GZIP, level=None,
                      last_offset=7, timestamp=-1, timestamp_type=TimestampType.CREATE_TIME)  # fmt: skip
    assert [r.offset for r in iter_records(buf)] == [7]
    empty = wrap_legacy(b"", magic=MAGIC_V0, compression_type=GZIP, level=None, last_offset=0,
                        timestamp=-1, timestamp_type=TimestampType.CREATE_TIME)  # fmt: skip
    with pytest.raises(InvalidRecordError):
        list(iter_records(empty))


def test_null_wrapper_value_refused():
    wrapper = legacy.encode_entry(0, MAGIC_V1, attributes=GZIP, timestamp=5, key=None, value=None)
    with pytest.raises(InvalidRecordError):
        list(iter_records(wrapper))


def test_inner_v1_records_take_wrapper_log_append_time():
    buf = build_legacy(ABC, magic=MAGIC_V1, compression_type=GZIP,
                       timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=99).buffer  # fmt: skip
    recs = list(iter_records(buf))
    assert [r.timestamp for r in recs] == [99, 99, 99]
    assert all(r.timestamp_type is TimestampType.LOG_APPEND_TIME for r in recs)
