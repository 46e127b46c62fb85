"""Kafka's ``LogValidatorTest`` (storage/src/test/java/.../LogValidatorTest.java,
SNAP = 3.9 produce path), case by case, names in snake_case.

Each test drives ``validate_messages_and_assign_offsets`` -- the LogValidator
level, without the request and append checks around it -- as the Java test
drives ``new LogValidator(...).validateMessagesAndAssignOffsets``.
"""

from __future__ import annotations

import itertools

import pytest

from broker.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordValidationError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from broker.records import batch as v2
from broker.records.batch import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    TimestampType,
)
from broker.records.builder import assemble_v2_batch, build_v2_batch
from broker.records.iterate import iter_records
from broker.records.origin import AppendOrigin
from broker.records.record import SimpleRecord, encode_v2_record

from .kafka_fixtures import (
    CODECS,
    Recorder,
    batches,
    check_offsets,
    commit_marker,
    create_records,
    create_two_batched_records,
    end_txn_marker_batch,
    legacy_record,
    legacy_unchecked,
    now_ms,
    offsets_of,
    records_with_invalid_inner_magic,
    records_with_non_sequential_inner_offsets,
    validate,
    validate_log_append_time,
    validate_messages,
    verify_stats,
    with_records,
)

GZIP = CODECS["gzip"]
NONE = CODECS["none"]
LAT = TimestampType.LOG_APPEND_TIME


def test_validation_of_batches_with_non_sequential_inner_offsets():
    for magic in (MAGIC_V0, MAGIC_V1, MAGIC_V2):
        records = records_with_non_sequential_inner_offsets(magic, GZIP, 20)
        if magic >= MAGIC_V2:
            with pytest.raises(InvalidRecordError):
                validate_messages(records, magic, GZIP, GZIP, Recorder())
        else:
            result = validate_messages(records, magic, GZIP, GZIP, Recorder())
            assert offsets_of(result.validated) == list(range(20))


@pytest.mark.parametrize(
    ("magic", "source", "target"),
    [
        (0, "gzip", "none"), (1, "gzip", "none"), (2, "gzip", "none"),
        (0, "gzip", "gzip"), (1, "gzip", "gzip"), (2, "gzip", "gzip"),
        (0, "snappy", "gzip"), (1, "snappy", "gzip"), (2, "snappy", "gzip"),
        (0, "lz4", "gzip"), (1, "lz4", "gzip"), (2, "lz4", "gzip"),
        (2, "none", "none"), (2, "none", "gzip"),
        (2, "zstd", "gzip"),
    ],
)  # fmt: skip
def test_check_only_one_batch(magic, source, target):
    records = create_two_batched_records(magic, CODECS[source])
    with pytest.raises(InvalidRecordError):
        validate_messages(records, magic, CODECS[source], CODECS[target], Recorder())


@pytest.mark.parametrize(("source", "target"), list(itertools.product(CODECS, CODECS)))
def test_batch_without_records_not_allowed(source, target):
    buf = bytearray(v2.RECORD_BATCH_OVERHEAD)
    v2.pack_header(
        buf, 0, base_offset=0, batch_length=v2.RECORD_BATCH_OVERHEAD - 12,
        partition_leader_epoch=40, attributes=v2.TRANSACTIONAL_FLAG_MASK, last_offset_delta=5,
        base_timestamp=NO_TIMESTAMP, max_timestamp=now_ms(), producer_id=1324,
        producer_epoch=10, base_sequence=984, records_count=0,
    )  # fmt: skip
    v2.write_crc(buf, 0, len(buf))
    with pytest.raises(InvalidRecordError):
        validate(
            buf, to_magic=MAGIC_V2, source=CODECS[source], target=CODECS[target],
            offset=1234567, before=5000, after=5000,
        )  # fmt: skip


@pytest.mark.parametrize(("batch_magic", "record_magic", "codec"), [(0, 1, "gzip"), (1, 0, "gzip")])
def test_check_mismatch_magic(batch_magic, record_magic, codec):
    recorder = Recorder()
    records = records_with_invalid_inner_magic(batch_magic, record_magic, CODECS[codec])
    with pytest.raises(RecordValidationError):
        validate_messages(records, batch_magic, CODECS[codec], CODECS[codec], recorder)
    assert recorder.invalid_magic > 0


def test_create_time_up_conversion_v1_to_v2():
    timestamp = now_ms()
    records = create_records(MAGIC_V1, timestamp, GZIP)
    result = validate(records, to_magic=MAGIC_V2, source=GZIP, target=GZIP, now=timestamp)
    for b in batches(result.validated):
        assert b.is_valid
        h = b.header()
        assert h.base_timestamp == timestamp
        assert h.max_timestamp == timestamp
        assert h.timestamp_type is TimestampType.CREATE_TIME
        assert (h.producer_epoch, h.producer_id, h.base_sequence) == (-1, -1, -1)
    assert result.max_timestamp == timestamp
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed
    verify_stats(result.stats, 3, records, True)


@pytest.mark.parametrize("to_magic", [1, 2])
def test_check_create_time_up_conversion_from_v0(to_magic):
    records = create_records(MAGIC_V0, NO_TIMESTAMP, GZIP)
    result = validate(records, to_magic=to_magic, source=GZIP, target=GZIP)
    for b in batches(result.validated):
        assert b.is_valid
        if b.magic >= MAGIC_V2:
            h = b.header()
            assert h.base_timestamp == NO_TIMESTAMP
            assert h.max_timestamp == NO_TIMESTAMP
            assert h.timestamp_type is TimestampType.CREATE_TIME
            assert (h.producer_epoch, h.producer_id, h.base_sequence) == (-1, -1, -1)
        else:
            lh = b.legacy_header()
            assert lh.timestamp == NO_TIMESTAMP
            assert lh.timestamp_type is TimestampType.CREATE_TIME
    assert result.max_timestamp == NO_TIMESTAMP
    assert result.shallow_offset_of_max_timestamp == -1
    assert result.message_size_maybe_changed
    verify_stats(result.stats, 3, records, True)


def _producer_fields(magic):
    if magic >= MAGIC_V2:
        return 1324, 10, 984, True, 40
    return -1, -1, -1, False, -1


@pytest.mark.parametrize("magic", [1, 2])
def test_check_recompression(magic):
    now = now_ms()
    seq = [now - 1, now + 1, now]
    pid, epoch, base_seq, txn, ple = _producer_fields(magic)
    records = with_records(
        magic,
        [SimpleRecord(seq[0], None, b"hello"), SimpleRecord(seq[1], None, b"there"),
         SimpleRecord(seq[2], None, b"beautiful")],
        producer_id=pid, producer_epoch=epoch, base_sequence=base_seq,
        partition_leader_epoch=ple, is_transactional=txn,
    )  # fmt: skip
    assert len(batches(records)) == (1 if magic >= MAGIC_V2 else 3)
    result = validate(
        records, to_magic=magic, source=NONE, target=GZIP, partition_leader_epoch=ple, now=now
    )
    out = batches(result.validated)
    assert len(out) == 1
    i = 0
    for b in out:
        assert b.is_valid
        if b.magic >= MAGIC_V2:
            h = b.header()
            assert h.timestamp_type is TimestampType.CREATE_TIME
            assert h.base_timestamp == seq[0]
            assert (h.producer_epoch, h.producer_id, h.base_sequence) == (epoch, pid, base_seq)
            assert h.partition_leader_epoch == ple
        for r in b.records():
            assert r.timestamp == seq[i]
            i += 1
    assert result.max_timestamp == now + 1
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed
    verify_stats(result.stats, 3, records, True)


@pytest.mark.parametrize(
    ("magic", "source", "target"),
    [(0, "none", "none"), (1, "none", "none"), (0, "none", "gzip"), (1, "none", "gzip")],
)
def test_check_allow_multi_batch(magic, source, target):
    records = create_two_batched_records(magic, CODECS[source])
    validate_messages(records, magic, CODECS[source], CODECS[target], Recorder())


@pytest.mark.parametrize("magic", [1, 2])
def test_check_compressed(magic):
    now = now_ms()
    seq = [now - 1, now + 1, now]
    pid, epoch, base_seq, txn, ple = _producer_fields(magic)
    records = with_records(
        magic,
        [SimpleRecord(seq[0], None, b"hello"), SimpleRecord(seq[1], None, b"there"),
         SimpleRecord(seq[2], None, b"beautiful")],
        codec=GZIP, producer_id=pid, producer_epoch=epoch, base_sequence=base_seq,
        partition_leader_epoch=ple, is_transactional=txn,
    )  # fmt: skip
    result = validate(
        records, to_magic=magic, source=GZIP, target=GZIP, partition_leader_epoch=ple, now=now
    )
    i = 0
    for b in batches(result.validated):
        assert b.is_valid
        if b.magic >= MAGIC_V2:
            h = b.header()
            assert h.timestamp_type is TimestampType.CREATE_TIME
            assert h.base_timestamp == seq[0]
            assert (h.producer_epoch, h.producer_id, h.base_sequence) == (epoch, pid, base_seq)
            assert h.partition_leader_epoch == ple
        for r in b.records():
            assert r.timestamp == seq[i]
            i += 1
    assert result.max_timestamp == now + 1
    assert result.shallow_offset_of_max_timestamp == 2
    assert not result.message_size_maybe_changed
    verify_stats(result.stats, 0, records, True)


def _with_count_overrides(last_offset_delta, count):
    records = create_records(MAGIC_V2, 1234, NONE)
    v2_struct = memoryview(records)
    v2_struct[v2.RECORDS_COUNT_OFFSET : v2.RECORDS_COUNT_OFFSET + 4] = count.to_bytes(
        4, "big", signed=True
    )
    v2_struct[v2.LAST_OFFSET_DELTA_OFFSET : v2.LAST_OFFSET_DELTA_OFFSET + 4] = (
        last_offset_delta.to_bytes(4, "big", signed=True)
    )
    return validate(records, to_magic=MAGIC_V2, source=GZIP, target=GZIP, timestamp_type=LAT)


def test_record_batch_with_count_overrides():
    _with_count_overrides(2, 3)


@pytest.mark.parametrize(("last_offset_delta", "count"), [(0, 3), (15, 3), (-3, 3)])
def test_inconsistent_count_and_offset(last_offset_delta, count):
    with pytest.raises(InvalidRecordError):
        _with_count_overrides(last_offset_delta, count)


@pytest.mark.parametrize(("last_offset_delta", "count"), [(5, 6), (1, 2)])
def test_unmatched_number_of_records(last_offset_delta, count):
    with pytest.raises(InvalidRecordError):
        _with_count_overrides(last_offset_delta, count)


@pytest.mark.parametrize(("last_offset_delta", "count"), [(2, -3), (2, 6), (2, 0), (-3, -2)])
def test_invalid_offset_range_and_record_count(last_offset_delta, count):
    """Scala ``testInvalidOffsetRangeAndRecordCount``'s extra pairs."""
    with pytest.raises(InvalidRecordError):
        _with_count_overrides(last_offset_delta, count)


def test_invalid_create_time_non_compressed_v1():
    records = create_records(MAGIC_V1, now_ms() - 1001, NONE)
    with pytest.raises(RecordValidationError):
        validate(records, to_magic=MAGIC_V1, source=NONE, target=NONE)


def test_invalid_create_time_compressed_v1():
    records = create_records(MAGIC_V1, now_ms() - 1001, GZIP)
    with pytest.raises(RecordValidationError):
        validate(records, to_magic=MAGIC_V1, source=GZIP, target=GZIP)


def test_invalid_create_time_non_compressed_v2():
    records = create_records(MAGIC_V2, now_ms() - 1001, NONE)
    with pytest.raises(RecordValidationError):
        validate(records, to_magic=MAGIC_V2, source=NONE, target=NONE)


@pytest.mark.parametrize(
    ("magic", "codec", "target"),
    [(0, "gzip", "gzip"), (1, "gzip", "gzip"), (0, "lz4", "lz4"), (1, "lz4", "lz4"),
     (0, "snappy", "snappy"), (1, "snappy", "snappy")],
)  # fmt: skip
def test_check_invalid_checksum(magic, codec, target):
    record = bytearray(legacy_record(magic, 0, None, b"hello"))
    record[0] = 0  # LegacyRecord.CRC_OFFSET
    records = legacy_unchecked(magic, CODECS[codec], [(0, bytes(record))])
    recorder = Recorder()
    with pytest.raises(CorruptRecordError):
        validate(
            records, to_magic=magic, source=CODECS[target], target=CODECS[codec], recorder=recorder
        )
    assert recorder.invalid_checksums > 0


@pytest.mark.parametrize(
    ("magic", "codec", "target"), list(itertools.product((0, 1, 2), CODECS, CODECS))
)
def test_check_invalid_sequence(magic, codec, target):
    records = build_v2_batch(
        [SimpleRecord(NO_TIMESTAMP, None, b"hello")], compression_type=CODECS[codec],
        producer_id=1234, producer_epoch=0, base_sequence=0,
    ).buffer  # fmt: skip
    records[53:57] = (-2).to_bytes(4, "big", signed=True)  # base sequence, CRC left stale
    recorder = Recorder()
    with pytest.raises(InvalidRecordError):
        validate(
            records, to_magic=magic, source=CODECS[target], target=CODECS[codec], recorder=recorder
        )
    assert recorder.invalid_sequence > 0


@pytest.mark.parametrize(
    ("magic", "codec", "target"),
    [(0, "gzip", "gzip"), (1, "gzip", "gzip"), (2, "gzip", "gzip"),
     (0, "lz4", "lz4"), (1, "lz4", "lz4"), (2, "lz4", "lz4"),
     (0, "snappy", "snappy"), (1, "snappy", "snappy"), (2, "snappy", "snappy"),
     (2, "zstd", "zstd")],
)  # fmt: skip
def test_check_no_key_compacted_topic(magic, codec, target):
    records = create_records(magic, NO_TIMESTAMP, CODECS[codec])
    recorder = Recorder()
    with pytest.raises(RecordValidationError):
        validate(
            records, to_magic=magic, source=CODECS[target], target=CODECS[codec],
            compacted=True, recorder=recorder,
        )  # fmt: skip
    assert recorder.no_key_compacted_topic > 0


def test_invalid_create_time_compressed_v2():
    records = create_records(MAGIC_V2, now_ms() - 1001, GZIP)
    with pytest.raises(RecordValidationError):
        validate(records, to_magic=MAGIC_V2, source=GZIP, target=GZIP)


def test_absolute_offset_assignment_non_compressed():
    records = create_records(MAGIC_V0, NO_TIMESTAMP, NONE)
    check_offsets(records, 0)
    result = validate(records, to_magic=MAGIC_V0, source=NONE, target=NONE, offset=1234567)
    check_offsets(result.validated, 1234567)


def test_absolute_offset_assignment_compressed():
    records = create_records(MAGIC_V0, NO_TIMESTAMP, GZIP)
    check_offsets(records, 0)
    result = validate(records, to_magic=MAGIC_V0, source=GZIP, target=GZIP, offset=1234567)
    check_offsets(result.validated, 1234567)


def _relative_offset_assignment(magic, codec):
    records = create_records(magic, now_ms(), codec)
    check_offsets(records, 0)
    result = validate(
        records, to_magic=magic, source=codec, target=codec, offset=1234567, before=5000, after=5000
    )
    check_offsets(result.validated, 1234567)


def test_relative_offset_assignment_non_compressed_v1():
    _relative_offset_assignment(MAGIC_V1, NONE)


def test_relative_offset_assignment_non_compressed_v2():
    _relative_offset_assignment(MAGIC_V2, NONE)


def test_relative_offset_assignment_compressed_v1():
    _relative_offset_assignment(MAGIC_V1, GZIP)


def test_relative_offset_assignment_compressed_v2():
    _relative_offset_assignment(MAGIC_V2, GZIP)


def _up_conversion_from_v0(to_magic, codec):
    records = create_records(MAGIC_V0, NO_TIMESTAMP, codec)
    check_offsets(records, 0)
    result = validate(
        records, to_magic=to_magic, source=codec, target=codec, offset=1234567, timestamp_type=LAT
    )
    check_offsets(result.validated, 1234567)
    verify_stats(result.stats, 3, records, codec != NONE)


def test_offset_assignment_after_up_conversion_v0_to_v1_non_compressed():
    _up_conversion_from_v0(MAGIC_V1, NONE)


def test_offset_assignment_after_up_conversion_v0_to_v2_non_compressed():
    _up_conversion_from_v0(MAGIC_V2, NONE)


def test_offset_assignment_after_up_conversion_v0_to_v1_compressed():
    _up_conversion_from_v0(MAGIC_V1, GZIP)


def test_offset_assignment_after_up_conversion_v0_to_v2_compressed():
    _up_conversion_from_v0(MAGIC_V2, GZIP)


def test_control_records_not_allowed_from_clients():
    records = end_txn_marker_batch(23423, 5, commit_marker())
    with pytest.raises(InvalidRecordError):
        validate(records, to_magic=MAGIC_V2, source=NONE, target=NONE, offset=1234567,
                 before=5000, after=5000)  # fmt: skip


def test_control_records_not_compressed():
    records = end_txn_marker_batch(23423, 5, commit_marker())
    result = validate(
        records, to_magic=MAGIC_V2, source=NONE, target=CODECS["snappy"], offset=1234567,
        before=5000, after=5000, origin=AppendOrigin.COORDINATOR,
    )  # fmt: skip
    out = batches(result.validated)
    assert len(out) == 1
    assert out[0].compression_type == NONE


def _conversion(source_magic, to_magic, codec):
    """(Kafka's v1 -> v2 cases use LogAppendTime and records without timestamps.)"""
    up = to_magic == MAGIC_V2
    ts = NO_TIMESTAMP if up else now_ms()
    records = create_records(source_magic, ts, codec)
    check_offsets(records, 0)
    result = validate(
        records, to_magic=to_magic, source=codec, target=codec, offset=1234567,
        timestamp_type=LAT if up else TimestampType.CREATE_TIME, before=5000, after=5000,
    )  # fmt: skip
    check_offsets(result.validated, 1234567)


def test_offset_assignment_after_down_conversion_v1_to_v0_non_compressed():
    _conversion(MAGIC_V1, MAGIC_V0, NONE)


def test_offset_assignment_after_down_conversion_v1_to_v0_compressed():
    _conversion(MAGIC_V1, MAGIC_V0, GZIP)


def test_offset_assignment_after_up_conversion_v1_to_v2_non_compressed():
    _conversion(MAGIC_V1, MAGIC_V2, NONE)


def test_offset_assignment_after_up_conversion_v1_to_v2_compressed():
    _conversion(MAGIC_V1, MAGIC_V2, GZIP)


def test_offset_assignment_after_down_conversion_v2_to_v1_non_compressed():
    _conversion(MAGIC_V2, MAGIC_V1, NONE)


def test_offset_assignment_after_down_conversion_v2_to_v1_compressed():
    _conversion(MAGIC_V2, MAGIC_V1, GZIP)


def test_offset_assignment_after_down_conversion_v2_to_v0_non_compressed():
    _conversion(MAGIC_V2, MAGIC_V0, NONE)


def test_offset_assignment_after_down_conversion_v2_to_v0_compressed():
    _conversion(MAGIC_V2, MAGIC_V0, GZIP)


def _transactional_or_idempotent(transactional):
    return build_v2_batch(
        [SimpleRecord(NO_TIMESTAMP, None, v) for v in (b"hello", b"there", b"beautiful")],
        producer_id=1344, producer_epoch=16, base_sequence=0, is_transactional=transactional,
    ).buffer  # fmt: skip


def test_down_conversion_of_transactional_records_not_permitted():
    with pytest.raises(UnsupportedForMessageFormatError):
        validate(_transactional_or_idempotent(True), to_magic=MAGIC_V1, source=GZIP, target=GZIP,
                 offset=1234567, before=5000, after=5000)  # fmt: skip


def test_down_conversion_of_idempotent_records_not_permitted():
    with pytest.raises(UnsupportedForMessageFormatError):
        validate(_transactional_or_idempotent(False), to_magic=MAGIC_V1, source=GZIP, target=GZIP,
                 offset=1234567, before=5000, after=5000)  # fmt: skip


def test_non_increasing_offset_record_batch_has_metrics_logged():
    records = build_v2_batch(
        [SimpleRecord(NO_TIMESTAMP, None, v) for v in (b"hello", b"there", b"beautiful")],
        offsets=[0, 2, 3],
    ).buffer
    v2.set_last_offset(records, 0, 2)
    recorder = Recorder()
    with pytest.raises(InvalidRecordError):
        validate(records, to_magic=MAGIC_V0, source=GZIP, target=GZIP, recorder=recorder,
                 before=5000, after=5000)  # fmt: skip
    assert recorder.invalid_offset == 1


def test_zstd_compressed_with_unavailable_ibp_version():
    records = create_records(MAGIC_V2, 1234, NONE)
    with pytest.raises(UnsupportedCompressionTypeError):
        validate(records, to_magic=MAGIC_V2, source=NONE, target=CODECS["zstd"],
                 timestamp_type=LAT, zstd_allowed_by_ibp=False)  # fmt: skip


def test_invalid_timestamp_exception_has_batch_index():
    records = create_records(MAGIC_V2, now_ms() - 1001, GZIP)
    with pytest.raises(RecordValidationError) as e:
        validate(records, to_magic=MAGIC_V1, source=GZIP, target=GZIP)
    assert isinstance(e.value.cause, InvalidTimestampError)
    assert len(e.value.record_errors) == 3


def test_invalid_record_exception_has_batch_index():
    records = records_with_invalid_inner_magic(MAGIC_V0, MAGIC_V1, GZIP)
    with pytest.raises(RecordValidationError) as e:
        validate_messages(records, MAGIC_V0, GZIP, GZIP, Recorder())
    assert isinstance(e.value.cause, InvalidRecordError)
    assert len(e.value.record_errors) == 20
    assert all(err is not None and err.message for err in e.value.record_errors)


def test_batch_with_invalid_records_and_invalid_timestamp():
    entries = [(0, legacy_record(MAGIC_V1, 1200, None, b"timestamp"))]
    entries += [(30 * (i + 1), legacy_record(MAGIC_V0, 0, None, str(i).encode())) for i in range(5)]
    records = legacy_unchecked(MAGIC_V1, GZIP, entries)
    with pytest.raises(RecordValidationError) as e:
        validate_messages(records, MAGIC_V0, GZIP, GZIP, Recorder())
    assert isinstance(e.value.cause, InvalidTimestampError)
    assert len(e.value.record_errors) == 6


def _out_of_range(future):
    before, after = 24 * 3600 * 1000, 3600 * 1000
    now = now_ms()
    ts = now + after + 300_000 if future else now - before - 300_000
    records = create_records(MAGIC_V2, ts, GZIP)
    with pytest.raises(RecordValidationError) as e:
        validate(records, to_magic=MAGIC_V2, source=GZIP, target=GZIP, before=before, after=after,
                 now=now)  # fmt: skip
    assert isinstance(e.value.cause, InvalidTimestampError)
    assert len(e.value.record_errors) == 3


def test_record_with_past_timestamp_is_rejected():
    _out_of_range(future=False)


def test_record_with_future_timestamp_is_rejected():
    _out_of_range(future=True)


def test_different_level_does_not_cause_recompression():
    values = [b"some" * 256, b"data" * 256]
    gzip_max = create_records(MAGIC_V2, NO_TIMESTAMP, GZIP, values, level=9)
    gzip_min = create_records(MAGIC_V2, NO_TIMESTAMP, GZIP, values, level=1)
    assert gzip_max != gzip_min
    result = validate(gzip_max, to_magic=MAGIC_V2, source=GZIP, target=GZIP, level=1,
                      before=5000, after=5000)  # fmt: skip
    assert bytes(result.validated) == bytes(gzip_max)
    assert bytes(result.validated) != bytes(gzip_min)


def test_different_codec_causes_recompression():
    values = [b"somedata", b"moredata"]
    gzip_max = create_records(MAGIC_V2, NO_TIMESTAMP, GZIP, values, level=9)
    lz4_min = create_records(MAGIC_V2, NO_TIMESTAMP, CODECS["lz4"], values, level=1)
    result = validate(gzip_max, to_magic=MAGIC_V2, source=GZIP, target=CODECS["lz4"], level=1,
                      before=5000, after=5000)  # fmt: skip
    assert bytes(result.validated) == bytes(lz4_min)


@pytest.mark.parametrize("magic", [1, 2])
def test_check_non_compressed(magic):
    now = now_ms()
    seq = [now - 1, now + 1, now]
    pid, epoch, base_seq, txn, ple = _producer_fields(magic)
    records = with_records(
        magic,
        [SimpleRecord(seq[0], None, b"hello"), SimpleRecord(seq[1], None, b"there"),
         SimpleRecord(seq[2], None, b"beautiful")],
        producer_id=pid, producer_epoch=epoch, base_sequence=base_seq,
        partition_leader_epoch=ple, is_transactional=txn,
    )  # fmt: skip
    result = validate(records, to_magic=magic, source=NONE, target=NONE, partition_leader_epoch=ple,
                      now=now)  # fmt: skip
    i = 0
    for b in batches(result.validated):
        assert b.is_valid
        if b.magic >= MAGIC_V2:
            h = b.header()
            assert h.timestamp_type is TimestampType.CREATE_TIME
            assert h.base_timestamp == seq[0]
            assert (h.producer_epoch, h.producer_id, h.base_sequence) == (epoch, pid, base_seq)
            assert h.is_transactional == txn
            assert h.partition_leader_epoch == ple
        for r in b.records():
            assert r.timestamp == seq[i]
            i += 1
    assert i == result.num_records == 3
    assert result.max_timestamp == now + 1
    assert result.shallow_offset_of_max_timestamp == (2 if magic >= MAGIC_V2 else 1)
    assert not result.message_size_maybe_changed
    verify_stats(result.stats, 0, records, False)


@pytest.mark.parametrize("magic", [1, 2])
def test_check_log_append_time_without_recompression(magic):
    records = create_records(magic, 1234, GZIP)
    now = now_ms()
    result = validate(
        records, to_magic=magic, source=GZIP, target=GZIP, timestamp_type=LAT, now=now
    )
    assert len(result.validated) == len(records)
    for b in batches(result.validated):
        validate_log_append_time(now, 1234, b)
    assert result.max_timestamp == now
    assert result.shallow_offset_of_max_timestamp == 2
    assert not result.message_size_maybe_changed
    verify_stats(result.stats, 0, records, True)


@pytest.mark.parametrize("target_magic", [1, 2])
def test_check_log_append_time_with_recompression(target_magic):
    records = create_records(MAGIC_V0, NO_TIMESTAMP, GZIP)
    now = now_ms()
    result = validate(records, to_magic=target_magic, source=GZIP, target=GZIP, timestamp_type=LAT,
                      now=now)  # fmt: skip
    assert len(list(iter_records(result.validated))) == len(list(iter_records(records)))
    for b in batches(result.validated):
        validate_log_append_time(now, -1, b)
    assert result.max_timestamp == now
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed
    verify_stats(result.stats, 3, records, True)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_check_log_append_time_non_compressed(magic):
    records = create_records(magic, 1234, NONE)
    now = now_ms()
    result = validate(
        records, to_magic=magic, source=NONE, target=NONE, timestamp_type=LAT, now=now
    )
    assert result.num_records == 3
    assert len(list(iter_records(result.validated))) == 3
    if magic >= MAGIC_V1:
        for b in batches(result.validated):
            validate_log_append_time(now, 1234, b)
    assert result.max_timestamp == (NO_TIMESTAMP if magic == MAGIC_V0 else now)
    assert not result.message_size_maybe_changed
    assert result.shallow_offset_of_max_timestamp == {0: -1, 1: 0, 2: 2}[magic]
    verify_stats(result.stats, 0, records, False)


def _non_consecutive_gzip_batch():
    body = b"".join(encode_v2_record(d, 0, None, v) for d, v in ((0, b"a"), (0, b"b"), (2, b"c")))
    # offset deltas 0, 0, 2: count 3 and lastOffsetDelta 2 pass validateBatch
    return assemble_v2_batch(body, num_records=3, base_offset=0, last_offset_delta=2,
                             base_timestamp=1000, max_timestamp=1000, compression_type=GZIP)  # fmt: skip


def test_compressed_v2_non_consecutive_inner_offsets_same_codec():
    """A quirk of ``LogValidator.validateMessagesAndAssignOffsetsCompressed``: Kafka
    fails with UNKNOWN_SERVER_ERROR; we answer INVALID_RECORD."""
    with pytest.raises(InvalidRecordError):
        validate(
            _non_consecutive_gzip_batch(), to_magic=MAGIC_V2, source=GZIP, target=GZIP, now=1000
        )


def test_compressed_v2_non_consecutive_inner_offsets_codec_change_is_repaired():
    records = _non_consecutive_gzip_batch()
    result = validate(records, to_magic=MAGIC_V2, source=GZIP, target=NONE, now=1000, offset=10)
    assert offsets_of(result.validated) == [10, 11, 12]
    assert [r.value for r in iter_records(result.validated)] == [b"a", b"b", b"c"]
    assert result.stats.num_records_converted == 3


def test_empty_batch_from_the_coordinator_is_not_read():
    """count 0: Kafka's iterators are empty and never look at the bytes."""
    body = encode_v2_record(0, 0, None, b"ignored")
    records = assemble_v2_batch(body, num_records=1, base_offset=0, last_offset_delta=0,
                                base_timestamp=1000, max_timestamp=1000)  # fmt: skip
    records[v2.RECORDS_COUNT_OFFSET : v2.RECORDS_COUNT_OFFSET + 4] = (0).to_bytes(4, "big")
    result = validate(records, to_magic=MAGIC_V2, source=NONE, target=NONE, now=1000,
                      origin=AppendOrigin.COORDINATOR, offset=5)  # fmt: skip
    assert result.num_records == 0
    with pytest.raises(InvalidRecordError):  # a client's empty batch: validateBatch's count > 0
        validate(records, to_magic=MAGIC_V2, source=NONE, target=NONE, now=1000)
