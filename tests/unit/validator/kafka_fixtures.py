"""Helpers of Kafka's LogValidatorTest, in Python.

``validate`` is ``new LogValidator(...).validateMessagesAndAssignOffsets``
with the test's constructor arguments as keywords; the record factories are
``createRecords``, ``MemoryRecords.withRecords``, ``appendUncheckedWithOffset``
and friends, built with this repository's builders.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from broker.records import batch as v2
from broker.records.batch import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
)
from broker.records.builder import assemble_v2_batch, build_v2_batch
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.iterate import iter_batches, iter_records
from broker.records.legacy import compute_attributes, encode_entry
from broker.records.legacy_builder import build_legacy, wrap_legacy
from broker.records.origin import AppendOrigin
from broker.records.record import SimpleRecord, encode_v2_record
from broker.validator.context import PathResult
from broker.validator.validate import validate_messages_and_assign_offsets

TP = "topic-0"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
VALUES = (b"hello", b"there", b"beautiful")


class Recorder:
    """The test's MetricsRecorder: counts every call."""

    def __init__(self) -> None:
        self.invalid_magic = 0
        self.invalid_offset = 0
        self.invalid_sequence = 0
        self.invalid_checksums = 0
        self.no_key_compacted_topic = 0

    def record_invalid_magic(self, count: int = 1) -> None:
        self.invalid_magic += count

    def record_invalid_offset(self) -> None:
        self.invalid_offset += 1

    def record_invalid_sequence(self) -> None:
        self.invalid_sequence += 1

    def record_invalid_checksums(self) -> None:
        self.invalid_checksums += 1

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        self.no_key_compacted_topic += count


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def validate(
    records: bytes | bytearray,
    *,
    to_magic: int,
    source: int,
    target: int,
    recorder: Recorder | None = None,
    offset: int = 0,
    compacted: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    before: int = 1000,
    after: int = 1000,
    partition_leader_epoch: int = -1,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    now: int | None = None,
    level: int | None = None,
    zstd_allowed_by_ibp: bool = True,
) -> PathResult:
    return validate_messages_and_assign_offsets(
        memoryview(bytearray(records)),
        topic_partition=TP,
        next_offset=offset,
        source_compression_type=source,
        target_compression_type=target,
        target_level=level,
        compacted=compacted,
        to_magic=to_magic,
        log_append_time=timestamp_type is TimestampType.LOG_APPEND_TIME,
        timestamp_before_max_ms=before,
        timestamp_after_max_ms=after,
        partition_leader_epoch=partition_leader_epoch,
        origin=origin,
        now_ms=now_ms() if now is None else now,
        recorder=recorder if recorder is not None else Recorder(),
        zstd_allowed_by_ibp=zstd_allowed_by_ibp,
    )


def validate_messages(
    records: bytes | bytearray, magic: int, source: int, target: int, recorder: Recorder
) -> PathResult:
    """The test's ``validateMessages`` helper: CreateTime, limits 1000 ms,
    clock frozen at 0, offset 0."""
    return validate(records, to_magic=magic, source=source, target=target, recorder=recorder, now=0)


def with_records(
    magic: int,
    records: Sequence[SimpleRecord],
    *,
    offset: int = 0,
    codec: int = 0,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    level: int | None = None,
) -> bytearray:
    """``MemoryRecords.withRecords``."""
    if magic >= MAGIC_V2:
        return build_v2_batch(
            records,
            base_offset=offset,
            compression_type=codec,
            level=level,
            timestamp_type=timestamp_type,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=is_transactional,
            partition_leader_epoch=partition_leader_epoch,
        ).buffer
    return build_legacy(
        records, magic=magic, base_offset=offset, compression_type=codec, level=level,
        timestamp_type=timestamp_type,
    ).buffer  # fmt: skip


def create_records(
    magic: int,
    timestamp: int,
    codec: int,
    values: Sequence[bytes] = VALUES,
    level: int | None = None,
) -> bytearray:
    """``createRecords``: null keys, offsets 0.., every record at ``timestamp``."""
    return with_records(
        magic, [SimpleRecord(timestamp, None, v) for v in values], codec=codec, level=level
    )


def legacy_record(magic: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """``LegacyRecord.create``: the record bytes without the 12-byte log overhead."""
    attrs = compute_attributes(magic, 0, TimestampType.CREATE_TIME)
    return encode_entry(0, magic, attributes=attrs, timestamp=timestamp, key=key, value=value)[12:]


def legacy_unchecked(
    batch_magic: int, codec: int, entries: Sequence[tuple[int, bytes]], *, base_offset: int = 0
) -> bytearray:
    """``MemoryRecordsBuilder.appendUncheckedWithOffset`` of legacy records into a
    legacy builder (inner offsets relative for v1 wrappers)."""
    inner = bytearray()
    last = base_offset
    max_ts = NO_TIMESTAMP
    for offset, record in entries:
        stored = offset - base_offset if (batch_magic > MAGIC_V0 and codec) else offset
        inner += stored.to_bytes(8, "big", signed=True) + len(record).to_bytes(4, "big") + record
        last = offset
        if batch_magic > MAGIC_V0 and record[4] > 0:
            max_ts = max(max_ts, int.from_bytes(record[6:14], "big", signed=True))
    if codec == CompressionType.NONE:
        return inner
    return wrap_legacy(
        inner, magic=batch_magic, compression_type=codec, level=None, last_offset=last,
        timestamp=max_ts, timestamp_type=TimestampType.CREATE_TIME,
    )  # fmt: skip


def v2_unchecked(codec: int, records: Sequence[tuple[int, SimpleRecord]]) -> bytearray:
    """``appendUncheckedWithOffset`` of SimpleRecords into a v2 builder at base 0."""
    base_ts = records[0][1].timestamp
    body = b"".join(
        encode_v2_record(off, r.timestamp - base_ts, r.key, r.value, r.headers)
        for off, r in records
    )
    last = records[-1][0]
    return assemble_v2_batch(
        body,
        num_records=len(records),
        base_offset=0,
        last_offset_delta=last,
        base_timestamp=base_ts,
        max_timestamp=max(r.timestamp for _, r in records),
        compression_type=codec,
    )


def records_with_non_sequential_inner_offsets(magic: int, codec: int, n: int) -> bytearray:
    recs = [SimpleRecord(NO_TIMESTAMP, None, str(i).encode()) for i in range(n)]
    if magic >= MAGIC_V2:
        return v2_unchecked(codec, [(0, r) for r in recs])
    return legacy_unchecked(
        magic, codec, [(0, legacy_record(magic, -1, None, r.value)) for r in recs]
    )


def records_with_invalid_inner_magic(batch_magic: int, record_magic: int, codec: int) -> bytearray:
    entries = [
        (1234567 + i, legacy_record(record_magic, NO_TIMESTAMP, str(i).encode(), str(i).encode()))
        for i in range(20)
    ]
    return legacy_unchecked(batch_magic, codec, entries)


def create_two_batched_records(magic: int, codec: int) -> bytearray:
    first = with_records(magic, [SimpleRecord(10, b"1", b"a")], offset=0, codec=codec)
    second = with_records(
        magic, [SimpleRecord(11, b"2", b"b"), SimpleRecord(12, b"3", b"c")], offset=1, codec=codec
    )
    return first + second


def end_txn_marker_batch(
    producer_id: int, producer_epoch: int, marker: EndTransactionMarker
) -> bytearray:
    """``MemoryRecords.withEndTransactionMarker``."""
    body = encode_v2_record(0, 0, marker.key(), marker.serialize_value())
    ts = now_ms()
    return assemble_v2_batch(
        body, num_records=1, base_offset=0, last_offset_delta=0, base_timestamp=ts,
        max_timestamp=ts, producer_id=producer_id, producer_epoch=producer_epoch,
        is_transactional=True, is_control=True,
    )  # fmt: skip


def commit_marker() -> EndTransactionMarker:
    return EndTransactionMarker(ControlRecordType.COMMIT, 0)


def offsets_of(buf: bytes | bytearray | memoryview) -> list[int]:
    return [r.offset for r in iter_records(buf)]


def check_offsets(buf: bytes | bytearray | memoryview, base: int) -> None:
    """``checkOffsets``: deep records carry base, base + 1, ..."""
    offsets = offsets_of(buf)
    assert offsets, "Message set should not be empty"
    assert offsets == list(range(base, base + len(offsets)))


def base_timestamp_of(buf: bytes | bytearray | memoryview, position: int = 0) -> int:
    return v2.read_header(buf, position).base_timestamp


def verify_stats(stats, converted: int, records: bytes | bytearray, compressed: bool) -> None:
    """``verifyRecordValidationStats``."""
    assert stats.num_records_converted == converted
    if converted > 0:
        assert 0 <= stats.conversion_time_nanos <= 60 * 10**9
    original = len(records)
    if converted > 0 and compressed:
        assert stats.temporary_memory_bytes > original
    elif converted > 0 or compressed:
        assert stats.temporary_memory_bytes > 0
    else:
        assert stats.temporary_memory_bytes == 0


def batches(buf: bytes | bytearray | memoryview) -> list:
    return list(iter_batches(buf))


def validate_log_append_time(expected: int, expected_base: int, b) -> None:
    """``validateLogAppendTime``."""
    assert b.is_valid
    if b.magic >= MAGIC_V2:
        h = b.header()
        assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
        assert h.max_timestamp == expected
        assert h.base_timestamp == expected_base
    else:
        lh = b.legacy_header()
        assert lh.timestamp_type is TimestampType.LOG_APPEND_TIME
        assert lh.timestamp == expected
    for r in b.records():
        assert r.timestamp == expected


__all__ = ["MAGIC_V1"]
