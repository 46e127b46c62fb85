"""Down-conversion for Fetch v0-v3 (``RecordsUtil.downConvert`` driven as
``LazyDownConversionRecords`` drives it; LazyDownConversionRecordsTest facts)."""

from __future__ import annotations

import pytest

from broker.errors import UnsupportedCompressionTypeError
from broker.records import batch as v2
from broker.records.batch import MAGIC_V0, MAGIC_V1, CompressionType, TimestampType
from broker.records.builder import build_v2_batch
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.downconvert import down_convert
from broker.records.iterate import iter_batches, iter_records
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord


def _batch(base, n, *, codec=0, ts=1000, headers=(), **kw):
    return build_v2_batch(
        [SimpleRecord(ts + i, b"k%d" % (base + i), b"v%d" % (base + i), headers) for i in range(n)],
        base_offset=base, compression_type=codec, **kw,
    ).buffer  # fmt: skip


def _content(buf):
    return [(r.offset, r.timestamp, r.key, r.value) for r in iter_records(buf)]


@pytest.mark.parametrize("to_magic", [MAGIC_V0, MAGIC_V1])
@pytest.mark.parametrize("codec", [0, 1])
def test_v2_to_legacy_keeps_offsets_content_and_codec(to_magic, codec):
    log = _batch(10, 3, codec=codec, headers=(("h", b"dropped"),)) + _batch(13, 2, codec=codec)
    out = down_convert(log, to_magic, 0, max_bytes=1 << 20)
    got = _content(out.records)
    assert [(o, k, v) for o, _, k, v in got] == [
        (10 + i, b"k%d" % (10 + i), b"v%d" % (10 + i)) for i in range(5)
    ]
    if to_magic == MAGIC_V1:
        assert [t for _, t, _, _ in got] == [1000, 1001, 1002, 1000, 1001]
    else:
        assert all(t == -1 for _, t, _, _ in got)
    batches = list(iter_batches(out.records))
    assert {b.magic for b in batches} == {to_magic}
    assert {b.compression_type for b in batches} == {codec}
    assert all(b.is_valid for b in batches)
    if codec:
        assert [b.legacy_header().offset for b in batches] == [12, 14]  # wrapper = last offset
    assert out.stats.num_records_converted == 5
    assert out.source_bytes == len(log)


def test_uncompressed_records_below_first_offset_are_dropped():
    out = down_convert(_batch(10, 5), MAGIC_V1, 12, max_bytes=1 << 20)
    assert [o for o, *_ in _content(out.records)] == [12, 13, 14]
    assert out.stats.num_records_converted == 3
    # compressed batches are converted whole (the consumer skips what it did not ask for)
    out = down_convert(_batch(10, 5, codec=1), MAGIC_V1, 12, max_bytes=1 << 20)
    assert [o for o, *_ in _content(out.records)] == [10, 11, 12, 13, 14]


def test_log_append_time_batch_stamps_the_batch_time():
    log = _batch(0, 3, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=555)
    out = down_convert(log, MAGIC_V1, 0, max_bytes=1 << 20)
    recs = list(iter_records(out.records))
    assert [r.timestamp for r in recs] == [555, 555, 555]
    assert all(r.timestamp_type is TimestampType.LOG_APPEND_TIME for r in recs)


def test_control_batches_are_dropped():
    marker = EndTransactionMarker(ControlRecordType.COMMIT, 1)
    control = build_v2_batch(
        [SimpleRecord(5, marker.key(), marker.serialize_value())], base_offset=3,
        producer_id=9, producer_epoch=0, is_transactional=True, is_control=True,
    ).buffer  # fmt: skip
    log = _batch(0, 3) + control + _batch(4, 1)
    out = down_convert(log, MAGIC_V1, 0, max_bytes=1 << 20)
    assert [o for o, *_ in _content(out.records)] == [0, 1, 2, 4]


def test_zstd_first_batch_is_unsupported_and_later_zstd_stops_the_conversion():
    zstd = _batch(0, 2, codec=CompressionType.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError):
        down_convert(zstd, MAGIC_V1, 0, max_bytes=1 << 20)
    log = _batch(0, 2) + _batch(2, 2, codec=CompressionType.ZSTD)
    out = down_convert(log, MAGIC_V1, 0, max_bytes=1 << 20)
    assert [o for o, *_ in _content(out.records)] == [0, 1]
    assert out.source_bytes == len(_batch(0, 2))


def test_max_bytes_bounds_the_conversion_but_takes_the_first_batch():
    first, second = _batch(0, 50), _batch(50, 2)
    out = down_convert(first + second, MAGIC_V1, 0, max_bytes=10)
    assert [o for o, *_ in _content(out.records)][-1] == 49
    out = down_convert(first + second, MAGIC_V1, 0, max_bytes=len(first) + len(second))
    assert [o for o, *_ in _content(out.records)][-1] == 51


def test_batches_at_or_below_the_target_magic_are_copied():
    legacy = build_legacy([SimpleRecord(1, None, b"a")], magic=MAGIC_V1, base_offset=0).buffer
    out = down_convert(legacy + _batch(1, 1), MAGIC_V1, 0, max_bytes=1 << 20)
    assert bytes(out.records[: len(legacy)]) == bytes(legacy)
    assert out.stats.num_records_converted == 1  # only the v2 batch was converted


def test_stats_count_source_and_written_bytes():
    log = _batch(0, 4)
    out = down_convert(log, MAGIC_V1, 0, max_bytes=1 << 20)
    # temporary memory: the batch read + the entries written (uncompressed legacy: no header)
    assert out.stats.temporary_memory_bytes == len(log) + len(out.records)
    assert out.stats.conversion_time_nanos >= 0


def test_negative_timestamps_are_written_as_no_timestamp():
    buf = _batch(0, 2, ts=0)
    buf[v2.BASE_TIMESTAMP_OFFSET : v2.BASE_TIMESTAMP_OFFSET + 8] = (-50).to_bytes(
        8, "big", signed=True
    )
    v2.write_crc(buf, 0, len(buf))
    out = down_convert(buf, MAGIC_V1, 0, max_bytes=1 << 20)
    assert [t for _, t, _, _ in _content(out.records)] == [-1, -1]


def test_v1_to_v0():
    legacy = build_legacy([SimpleRecord(7, None, b"a"), SimpleRecord(8, b"k", b"b")], magic=MAGIC_V1,
                          base_offset=5, compression_type=1).buffer  # fmt: skip
    out = down_convert(legacy, MAGIC_V0, 0, max_bytes=1 << 20)
    assert _content(out.records) == [(5, -1, None, b"a"), (6, -1, b"k", b"b")]
