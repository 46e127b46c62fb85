"""``validate_records``: the checks around the LogValidator
(``ProduceRequest.validateRecords``, ``UnifiedLog.append``, ``analyzeAndValidateRecords``)
and ProduceRequestTest's validator-level facts."""

from __future__ import annotations

import pytest

from broker.config import TopicConfig
from broker.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    RecordTooLargeError,
    RecordValidationError,
    UnsupportedCompressionTypeError,
)
from broker.records import batch as v2
from broker.records.batch import MAGIC_V0, MAGIC_V1, CompressionType, TimestampType
from broker.records.builder import build_v2_batch
from broker.records.iterate import iter_records
from broker.records.legacy_builder import build_legacy
from broker.records.origin import AppendOrigin
from broker.records.record import SimpleRecord
from broker.validator import validate_records
from broker.validator.checks import MAX_LISTED_RECORD_ERRORS
from broker.validator.validate import default_decompression_bound

from .kafka_fixtures import Recorder

NOW = 1_700_000_000_000
DEFAULT = TopicConfig()
HOUR = 3600 * 1000


def run(buf, *, config=DEFAULT, produce_version=9, recorder=None, **kw):
    return validate_records(
        memoryview(bytearray(buf)),
        topic="t",
        partition=3,
        config=config,
        next_offset=kw.pop("next_offset", 100),
        partition_leader_epoch=kw.pop("partition_leader_epoch", 7),
        now_ms=kw.pop("now_ms", NOW),
        produce_version=produce_version,
        recorder=recorder if recorder is not None else Recorder(),
        **kw,
    )


def batch(n=3, *, codec=0, ts=NOW, **kw):
    return build_v2_batch(
        [SimpleRecord(ts + i, b"k%d" % i, b"value-%d" % i) for i in range(n)],
        compression_type=codec, **kw,
    ).buffer  # fmt: skip


def test_in_place_result_and_patched_header():
    buf = bytearray(batch())
    view = memoryview(buf)
    r = validate_records(
        view, topic="t", partition=3, config=TopicConfig(), next_offset=100,
        partition_leader_epoch=7, now_ms=NOW, produce_version=9, recorder=Recorder(),
    )  # fmt: skip
    assert r.validated_records is not None
    assert (r.first_offset, r.last_offset, r.num_records) == (100, 102, 3)
    assert r.max_timestamp == NOW + 2
    assert r.shallow_offset_of_max_timestamp == 102
    assert r.log_append_time_ms == -1
    assert not r.message_size_maybe_changed
    h = v2.read_header(buf)  # patched in the caller's buffer
    assert (h.base_offset, h.partition_leader_epoch) == (100, 7)
    assert v2.is_valid(buf, 0, len(buf))
    (info,) = r.batches
    assert (info.position, info.size_in_bytes) == (0, len(buf))
    assert (info.base_offset, info.last_offset, info.magic) == (100, 102, 2)
    assert info.partition_leader_epoch == 7
    assert r.original_size_in_bytes == r.valid_bytes == len(buf)


def test_log_append_time_topic_reports_now():
    r = run(batch(), config=TopicConfig(message_timestamp_type="LogAppendTime"))
    assert r.log_append_time_ms == NOW
    assert r.max_timestamp == NOW


def test_trailing_partial_batch_is_trimmed():
    buf = batch() + batch()[:30]
    r = run(buf)
    assert r.valid_bytes == len(batch())
    assert r.original_size_in_bytes == len(buf)
    assert r.num_records == 3


def test_no_whole_batch_old_produce_version_appends_nothing():
    r = run(batch()[:40], produce_version=2)
    assert r.num_records == 0
    assert r.valid_bytes == 0


@pytest.mark.parametrize("version", [3, 9])
def test_produce_v3_plus_needs_one_v2_batch(version):
    with pytest.raises(InvalidRecordError):
        run(b"", produce_version=version)
    legacy = build_legacy([SimpleRecord(NOW, None, b"x")], magic=MAGIC_V1).buffer
    with pytest.raises(InvalidRecordError):
        run(legacy, produce_version=version)
    with pytest.raises(InvalidRecordError):
        run(batch() + batch(), produce_version=version)


def test_zstd_gate_for_produce_versions_below_7():
    """ProduceRequestTest.testZSTDProduceRequest: v7 accepted, v3 refused."""
    zstd = batch(codec=CompressionType.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError) as e:
        run(zstd, produce_version=3, config=TopicConfig(compression_type="zstd"))
    assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    r = run(zstd, produce_version=7, config=TopicConfig(compression_type="zstd"))
    assert r.num_records == 3


def test_client_v2_base_offset_must_be_zero():
    buf = batch()
    v2.set_base_offset(buf, 0, 5)
    with pytest.raises(InvalidRecordError):
        run(buf)
    # other origins may carry any base offset
    r = run(buf, origin=AppendOrigin.COORDINATOR)
    assert r.num_records == 3


def test_batch_larger_than_max_message_bytes():
    buf = batch()
    with pytest.raises(RecordTooLargeError) as e:
        run(buf, config=TopicConfig(max_message_bytes=len(buf) - 1))
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert run(buf, config=TopicConfig(max_message_bytes=len(buf))).num_records == 3


def test_corrupt_lz4_produce_request():
    """ProduceRequestTest.testCorruptLz4ProduceRequest: a flipped byte of the
    frame fails the batch CRC-32C: CORRUPT_MESSAGE and the CRC meter."""
    buf = batch(codec=CompressionType.LZ4)
    buf[v2.RECORDS_OFFSET + 6] ^= 0xFF
    recorder = Recorder()
    with pytest.raises(CorruptRecordError) as e:
        run(buf, recorder=recorder)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    assert recorder.invalid_checksums == 1


def test_legacy_outer_crc_checked_in_analysis():
    buf = build_legacy([SimpleRecord(NOW, None, b"x")] * 2, magic=MAGIC_V1).buffer
    buf[-1] ^= 1
    recorder = Recorder()
    with pytest.raises(CorruptRecordError):
        run(buf, produce_version=2, recorder=recorder)
    assert recorder.invalid_checksums == 1


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_codec_ids_5_to_7_are_invalid_record(codec_id):
    buf = batch()
    buf[v2.ATTRIBUTES_OFFSET + 1] = (buf[v2.ATTRIBUTES_OFFSET + 1] & ~7) | codec_id
    v2.write_crc(buf, 0, len(buf))
    with pytest.raises(InvalidRecordError) as e:
        run(buf)
    assert e.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize(
    "config_key", ["message_timestamp_difference_max_ms", "message_timestamp_before_max_ms"]
)
def test_produce_with_invalid_timestamp_past(config_key):
    """ProduceRequestTest.testProduceWithInvalidTimestamp (past, 5 h)."""
    cfg = TopicConfig(**{config_key: 1000})
    with pytest.raises(RecordValidationError) as e:
        run(batch(ts=NOW - 5 * HOUR), config=cfg)
    _assert_invalid_timestamp(e.value)


@pytest.mark.parametrize(
    "config_key", ["message_timestamp_difference_max_ms", "message_timestamp_after_max_ms"]
)
def test_produce_with_invalid_timestamp_future(config_key):
    cfg = TopicConfig(**{config_key: 1000})
    with pytest.raises(RecordValidationError) as e:
        run(batch(ts=NOW + 5 * HOUR), config=cfg)
    _assert_invalid_timestamp(e.value)


def _assert_invalid_timestamp(e):
    assert e.code == ErrorCode.INVALID_TIMESTAMP
    assert str(e) == "One or more records have been rejected due to invalid timestamp"
    assert [x.batch_index for x in e.record_errors] == [0, 1, 2]
    assert all(x.message for x in e.record_errors)


def test_timestamp_range_message_template():
    cfg = TopicConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=2000)
    with pytest.raises(RecordValidationError) as e:
        run(batch(1, ts=NOW - 5000), config=cfg)
    assert e.value.record_errors[0].message == (
        f"Timestamp {NOW - 5000} of message with offset 0 is out of range. "
        f"The timestamp should be within [{NOW - 1000}, {NOW + 2000}]"
    )


def test_timestamp_range_message_java_long_overflow_with_defaults():
    """Long.MAX limits overflow; a Long.MIN timestamp passes the range check
    (now - ts wraps negative) and is stored in place."""
    buf = batch(1, ts=0)
    buf[v2.BASE_TIMESTAMP_OFFSET : v2.BASE_TIMESTAMP_OFFSET + 8] = (-(2**63)).to_bytes(
        8, "big", signed=True
    )
    v2.write_crc(buf, 0, len(buf))
    r = run(buf)
    assert r.num_records == 1
    assert r.max_timestamp == -1  # below the initial -1, as in Kafka
    # the same batch needing a rebuild hits the builder's refusal (deviation: 87, not -1)
    with pytest.raises(InvalidRecordError):
        run(buf, config=TopicConfig(compression_type="gzip"))


def test_producer_set_log_append_time_accepted_on_create_time_topic_if_in_range():
    buf = batch()
    v2.set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, NOW)
    r = run(buf)  # 3.6+: in range -> accepted, rewritten CreateTime
    h = v2.read_header(r.validated_records)
    assert h.timestamp_type is TimestampType.CREATE_TIME
    # the records were checked (and the max taken) as the LAT batch showed
    # them: all at the batch max timestamp; stored CreateTime, they read as
    # base + delta again (Kafka's behaviour, header max below the records')
    assert h.max_timestamp == NOW == r.max_timestamp
    assert [x.timestamp for x in iter_records(r.validated_records)] == [NOW, NOW + 1, NOW + 2]


def test_producer_set_log_append_time_rejected_on_log_append_time_topic():
    buf = batch()
    v2.set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, NOW)
    with pytest.raises(RecordValidationError) as e:
        run(buf, config=TopicConfig(message_timestamp_type="LogAppendTime"))
    msg = e.value.record_errors[0].message
    assert msg == (
        f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, "
        "key=2 bytes, value=7 bytes). Producer should not set timestamp type to LogAppendTime."
    )


def test_no_key_message_and_record_errors_summary():
    cfg = TopicConfig(cleanup_policy=("compact",))
    buf = build_v2_batch([SimpleRecord(NOW, None, b"v"), SimpleRecord(NOW, b"k", b"v")]).buffer
    recorder = Recorder()
    with pytest.raises(RecordValidationError) as e:
        run(buf, config=cfg, recorder=recorder)
    err = e.value
    assert err.code == ErrorCode.INVALID_RECORD
    msg = "Compacted topic cannot accept message without key in topic partition t-3"
    assert [(x.batch_index, x.message) for x in err.record_errors] == [(0, msg)]
    assert str(err) == (
        "One or more records have been rejected due to 1 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=0, message='{msg}')]"
    )
    assert recorder.no_key_compacted_topic == 1


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
def test_record_errors_listed_up_to_the_cap_and_counted_in_full(codec):
    """Every keyless record is an error; the first MAX_LISTED_RECORD_ERRORS are
    listed, the meter counts all of them and the message gives the total and
    how many were left out (Kafka lists all of them)."""
    n = MAX_LISTED_RECORD_ERRORS + 37
    buf = build_v2_batch(
        [SimpleRecord(NOW, None, b"v") for _ in range(n)], compression_type=codec
    ).buffer
    recorder = Recorder()
    with pytest.raises(RecordValidationError) as e:
        run(buf, config=TopicConfig(cleanup_policy=("compact",)), recorder=recorder)
    err = e.value
    assert err.code == ErrorCode.INVALID_RECORD
    assert [x.batch_index for x in err.record_errors] == list(range(MAX_LISTED_RECORD_ERRORS))
    assert err.total == n
    assert recorder.no_key_compacted_topic == n
    assert str(err).startswith(
        f"One or more records have been rejected due to {n} record errors in total, and only "
        "showing the first three errors at most: [RecordError(batchIndex=0, "
    )
    assert str(err).endswith(f" ({MAX_LISTED_RECORD_ERRORS} listed in record_errors, 37 left out)")


def test_timestamp_errors_past_the_cap_still_make_it_invalid_timestamp():
    """Keyless records first, then one bad timestamp past the listing cap:
    Kafka answers INVALID_TIMESTAMP when any record has a timestamp error,
    so the kinds are counted beyond what is listed."""
    n = MAX_LISTED_RECORD_ERRORS + 5
    records = [SimpleRecord(NOW, None, b"v") for _ in range(n)]
    records.append(SimpleRecord(NOW - 10 * HOUR, b"k", b"v"))
    buf = build_v2_batch(records).buffer
    cfg = TopicConfig(cleanup_policy=("compact",), message_timestamp_before_max_ms=HOUR)
    with pytest.raises(RecordValidationError) as e:
        run(buf, config=cfg)
    err = e.value
    assert err.code == ErrorCode.INVALID_TIMESTAMP
    assert len(err.record_errors) == MAX_LISTED_RECORD_ERRORS
    assert err.total == n + 1
    assert str(err) == (
        "One or more records have been rejected due to invalid timestamp "
        f"({n + 1} record errors in total, the first {MAX_LISTED_RECORD_ERRORS} listed)"
    )


def test_legacy_wrapper_errors_capped():
    """Inner v1 messages of a gzip wrapper: the same cap for the legacy walk."""
    n = MAX_LISTED_RECORD_ERRORS * 3
    buf = build_legacy(
        [SimpleRecord(NOW, None, b"v") for _ in range(n)],
        magic=MAGIC_V1,
        compression_type=CompressionType.GZIP,
    ).buffer
    recorder = Recorder()
    with pytest.raises(RecordValidationError) as e:
        run(buf, produce_version=2, config=TopicConfig(cleanup_policy=("compact",)),
            recorder=recorder)  # fmt: skip
    assert len(e.value.record_errors) == MAX_LISTED_RECORD_ERRORS
    assert e.value.total == n
    assert recorder.no_key_compacted_topic == n


def test_inner_magic_mismatch_message():
    from .kafka_fixtures import records_with_invalid_inner_magic

    buf = records_with_invalid_inner_magic(MAGIC_V1, MAGIC_V0, CompressionType.GZIP)
    with pytest.raises(RecordValidationError) as e:
        run(buf, produce_version=2)
    first = e.value.record_errors[0].message
    assert first.startswith(
        "Record LegacyRecordBatch(offset=1234567, Record(magic=0, attributes=0, "
    )
    assert first.endswith(
        "compression=none, crc="
        + first.split("crc=")[1].split(",")[0]
        + ", key=1 bytes, value=1 bytes))'s magic does not match outer magic 1 in topic partition t-3"
    )


def test_rebuilt_batch_larger_than_max_message_bytes():
    """``UnifiedLog.append``'s size check after the validator: a rebuild that
    grows past max.message.bytes."""
    values = [bytes(range(256)) * 4 for _ in range(4)]
    legacy = build_legacy([SimpleRecord(NOW, None, v) for v in values], magic=MAGIC_V0).buffer
    limit = len(legacy) // 4 + 10
    # the v0 entries fit one by one; the v2 batch holding all of them does not
    with pytest.raises(RecordTooLargeError):
        run(legacy, produce_version=0, config=TopicConfig(max_message_bytes=limit))


def test_decompression_bound_default_and_override():
    assert default_decompression_bound(1_048_588) == 64 * 1024 * 1024
    assert default_decompression_bound(8 * 1024 * 1024) == 128 * 1024 * 1024
    big = build_v2_batch([SimpleRecord(NOW, None, bytes(100_000))], compression_type=1).buffer
    with pytest.raises(InvalidRecordError):
        run(big, max_decompressed_bytes=50_000)
    assert run(big).num_records == 1


def test_rebuild_up_conversion_stats_and_offsets():
    legacy = build_legacy(
        [SimpleRecord(NOW - i, None, b"v%d" % i) for i in range(4)], magic=MAGIC_V1,
        compression_type=CompressionType.GZIP,
    ).buffer  # fmt: skip
    r = run(legacy, produce_version=2)
    assert r.message_size_maybe_changed
    assert r.stats.num_records_converted == 4
    assert [x.offset for x in iter_records(r.validated_records)] == [100, 101, 102, 103]
    h = v2.read_header(r.validated_records)
    assert (h.magic, h.compression_type, h.partition_leader_epoch) == (2, 1, 7)
    assert r.source_compression_type == r.target_compression_type == 1
