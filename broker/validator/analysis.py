"""Checks of a partition's records before the validator runs.

``check_request_records`` is ``ProduceRequest.validateRecords``, by produce
version::

    version  record format   broker-side check
    0-2      magic 0 / 1     none (any magic accepted)
    3-6      magic 2         >= 1 batch, first batch magic 2, exactly one batch
                             (else INVALID_RECORD 87); first batch ZSTD ->
                             UNSUPPORTED_COMPRESSION_TYPE (76)
    7+       magic 2         same, ZSTD allowed

``analyze_records`` is ``UnifiedLog.analyzeAndValidateRecords``, per
entry in order (one compiled call, ``scan.scan_entries``)::

    size field < 14 / magic outside 0..2      CorruptRecordError (2)
    v2, origin CLIENT, base offset != 0       InvalidRecordError (87)
    entry size > max.message.bytes            RecordTooLargeError (10)
    not valid (size, CRC-32C / CRC-32)        CorruptRecordError (2), InvalidMessageCrc meter
    codec id 5..7                             InvalidRecordError (87)  [Kafka: -1, deviation]

A trailing partial entry is dropped (the log appends only whole entries);
the source codec is the codec of the last entry whose codec is not NONE.
"""

from __future__ import annotations

from typing import NamedTuple

from broker.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)
from broker.records import batch as v2
from broker.records import entries, legacy, scan
from broker.records.batch import MAGIC_V2, CompressionType
from broker.records.buffers import ReadableBuffer
from broker.records.origin import AppendOrigin
from broker.validator.result import MetricsRecorder

#: first produce version whose clients send magic 2 (``requiredMagicForVersion``)
MIN_V2_PRODUCE_VERSION = 3
#: first produce version allowed to carry ZSTD (KIP-110)
MIN_ZSTD_PRODUCE_VERSION = 7


def check_request_records(records: ReadableBuffer, produce_version: int) -> None:
    """``ProduceRequest.validateRecords``."""
    if produce_version < MIN_V2_PRODUCE_VERSION:
        return
    view = memoryview(records)
    size = view.nbytes
    if (
        size >= v2.RECORD_BATCH_OVERHEAD
        and view[v2.MAGIC_OFFSET] == MAGIC_V2
        and int.from_bytes(view[v2.LENGTH_OFFSET : v2.LENGTH_OFFSET + 4], "big") + v2.LOG_OVERHEAD
        == size
        and (
            produce_version >= MIN_ZSTD_PRODUCE_VERSION
            or view[v2.ATTRIBUTES_OFFSET + 1] & v2.COMPRESSION_CODEC_MASK != CompressionType.ZSTD
        )
    ):
        # the usual request: one whole v2 batch and nothing after it, which
        # passes every check below (checked without framing it twice)
        return
    it = entries.iter_buffer_entries(records)
    first = next(it, None)  # (framing errors of the first entry raise CorruptRecordError)
    if first is None:
        raise InvalidRecordError(
            "Produce requests with version "
            f"{produce_version} must have at least one record batch per partition"
        )
    if first.magic != MAGIC_V2:
        raise InvalidRecordError(
            f"Produce requests with version {produce_version} are only allowed to contain "
            f"record batches with magic version {MAGIC_V2}"
        )
    if produce_version < MIN_ZSTD_PRODUCE_VERSION:
        codec = v2.read_header(records, first.position).compression_type
        if codec == CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError(
                "Produce requests with version "
                f"{produce_version} are not allowed to use ZStandard compression"
            )
    if next(it, None) is not None:
        raise InvalidRecordError(
            f"Produce requests with version {produce_version} are only allowed to contain "
            "exactly one record batch per partition"
        )


class RecordsAnalysis(NamedTuple):
    entries: int
    valid_bytes: int
    first_magic: int  # -1 without entries
    source_compression_type: int
    magic_mask: int  # bit m set: an entry of magic m is present

    def all_magic(self, magic: int) -> bool:
        """``MemoryRecords.hasMatchingMagic``: every entry has ``magic``."""
        return self.magic_mask == 1 << magic


def analyze_records(
    records: ReadableBuffer,
    *,
    max_message_bytes: int,
    origin: AppendOrigin,
    recorder: MetricsRecorder,
) -> RecordsAnalysis:
    n, valid_end, first_magic, codec, fail, fail_pos, fail_value, mask = scan.scan_entries(
        records, 0, len(memoryview(records)), max_message_bytes, origin is AppendOrigin.CLIENT
    )
    if fail != scan.FAIL_NONE:
        _raise(
            fail,
            pos=fail_pos,
            value=fail_value,
            max_message_bytes=max_message_bytes,
            recorder=recorder,
        )
    return RecordsAnalysis(n, valid_end, first_magic, codec, mask)


def _raise(
    fail: int,
    *,
    pos: int,
    value: int,
    max_message_bytes: int,
    recorder: MetricsRecorder,
) -> None:
    if fail == scan.FAIL_SIZE:
        raise CorruptRecordError(
            f"Record size {value} is less than the minimum record overhead "
            f"({entries.MIN_ENTRY_SIZE_FIELD})"
        )
    if fail == scan.FAIL_MAGIC:
        raise CorruptRecordError(f"Invalid magic found in record: {value}")
    if fail == scan.FAIL_BASE_OFFSET:
        raise InvalidRecordError(
            f"The baseOffset of the record batch in the append to a partition should be 0, "
            f"but it is {value}"
        )
    if fail == scan.FAIL_TOO_LARGE:
        raise RecordTooLargeError(
            f"The record batch size in the append is {value} bytes which exceeds the maximum "
            f"configured value of {max_message_bytes}."
        )
    if fail == scan.FAIL_CRC:
        recorder.record_invalid_checksums()
        raise CorruptRecordError(f"Record is corrupt (invalid checksum) at position {pos}")
    raise InvalidRecordError(f"Unknown compression type id: {value}")


def frame_records(records: memoryview) -> RecordsAnalysis:
    """Entries, first magic and magics present (``MemoryRecords.batches()``)."""
    n = 0
    first_magic = -1
    mask = 0
    codec = 0
    end = 0
    for e in entries.iter_buffer_entries(records):
        if first_magic < 0:
            first_magic = e.magic
        mask |= 1 << e.magic
        entry_codec = (
            v2.read_header(records, e.position).compression_type
            if e.magic >= MAGIC_V2
            else legacy.read_entry_header(records, e.position).compression_type
        )
        if entry_codec != CompressionType.NONE:
            codec = entry_codec
        n += 1
        end = e.position + e.size_in_bytes
    return RecordsAnalysis(n, end, first_magic, codec, mask)
