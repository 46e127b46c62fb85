"""The validator's checks and the exceptions they raise (``LogValidator``'s
``getFirstBatchAndMaybeValidateNoMoreBatches``, ``validateBatch``, ``validateRecord``,
``processRecordErrors``).

Batch checks (``LogValidator.validateBatch``, in this order; the first
failure raises, the partition fails without record_errors; the conditions
of 2-6 are ``scan.check_client_batch``, the errors and meters are here)::

    #  applies when        check                             error (code)       meter
    1  always              magic == first batch's magic      InvalidRecord (87) invalid magic
    2  CLIENT, magic >= 2  lastOffset - baseOffset + 1 > 0   InvalidRecord (87) invalid offset
    3  CLIENT, magic >= 2  records count > 0                 InvalidRecord (87) invalid offset
    4  CLIENT, magic >= 2  count == lastOffsetDelta + 1      InvalidRecord (87) invalid offset
    5  CLIENT              not a control batch               InvalidRecord (87) invalid offset
    6  CLIENT              producer id set -> sequence >= 0  InvalidRecord (87) invalid sequence
    7  always              transactional -> toMagic >= 2     UnsupportedForMessageFormat (43)
    8  always              producer id set -> toMagic >= 2   UnsupportedForMessageFormat (43)

Record checks (``validateRecord``; the first failing one per record, all
records of the batch are checked) come back from the compiled walks as error
tuples and are turned here into ``RecordError`` s with Kafka's messages:

    magic      "Record {record}'s magic does not match outer magic {m} in topic partition {tp}"
    key        "Compacted topic cannot accept message without key in topic partition {tp}"
    range      "Timestamp {ts} of message with offset {offset} is out of range. The timestamp
                should be within [{now-before}, {now+after}]"
    type       "Invalid timestamp type in message {record}. Producer should not set timestamp
                type to LogAppendTime."
    inner CRC  raises CorruptRecordError at once (InvalidMessageCrcRecordsPerSec, 3.9+)

``process_record_errors``: any timestamp error -> RecordValidationError with
InvalidTimestampError (32); otherwise with InvalidRecordError (87) naming
the first three errors and the total. ``record_errors`` lists the first
``MAX_LISTED_RECORD_ERRORS`` (20) errors and the message says how many were
left out (Kafka lists every one; docs/deviations.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from broker.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
    RecordValidationError,
    UnsupportedForMessageFormatError,
)
from broker.records import batch as v2
from broker.records import legacy, scan
from broker.records._scan_py import _j64
from broker.records.batch import MAGIC_V2, NO_PRODUCER_ID, RecordBatchHeader, TimestampType
from broker.records.buffers import ReadableBuffer
from broker.records.origin import AppendOrigin
from broker.records.record import decode_v2_record, v2_record_to_string
from broker.validator.result import MetricsRecorder

ErrorTuple = tuple[int, int, int, int, int]


def check_batch_magic(first_magic: int, magic: int, tp: str, recorder: MetricsRecorder) -> None:
    """Check 1 (also used per legacy entry)."""
    if magic != first_magic:
        recorder.record_invalid_magic()
        raise InvalidRecordError(
            f"Batch magic {magic} is not the same as the first batch's magic byte "
            f"{first_magic} in topic partition {tp}"
        )


def check_v2_batch(
    first_magic: int,
    h: RecordBatchHeader,
    *,
    origin: AppendOrigin,
    to_magic: int,
    tp: str,
    recorder: MetricsRecorder,
) -> None:
    """``validateBatch`` for a v2 batch (checks 1-8; 2-6 are
    ``scan.check_client_batch``)."""
    check_batch_magic(first_magic, h.magic, tp, recorder)
    if origin is AppendOrigin.CLIENT:
        failed = scan.check_client_batch(
            base_offset=h.base_offset, last_offset_delta=h.last_offset_delta,
            records_count=h.records_count, attributes=h.attributes, producer_id=h.producer_id,
            base_sequence=h.base_sequence,
        )  # fmt: skip
        if failed:
            raise_client_batch(failed, h, tp, recorder)
    check_producer_format(h.is_transactional, h.producer_id, to_magic)


def raise_client_batch(
    check: int, h: RecordBatchHeader, tp: str, recorder: MetricsRecorder
) -> NoReturn:
    """The meter and error of the failed check 2-6 (``scan.CHECK_*``) of batch ``h``."""
    if check == scan.CHECK_SEQUENCE:
        recorder.record_invalid_sequence()
        raise InvalidRecordError(
            f"Invalid sequence number {h.base_sequence} in record batch with producerId "
            f"{h.producer_id} in topic partition {tp}"
        )
    recorder.record_invalid_offset()
    last_offset = _j64(h.base_offset + h.last_offset_delta)
    if check == scan.CHECK_OFFSET_RANGE:
        raise InvalidRecordError(
            f"Batch has an invalid offset range: [{h.base_offset}, {last_offset}] "
            f"in topic partition {tp}"
        )
    if check == scan.CHECK_COUNT:
        raise InvalidRecordError(
            f"Invalid reported count for record batch: {h.records_count} in topic partition {tp}"
        )
    if check == scan.CHECK_COUNT_MISMATCH:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [{h.base_offset}, {last_offset}] and count "
            f"of records {h.records_count} in topic partition {tp}"
        )
    raise InvalidRecordError(  # CHECK_CONTROL
        f"Clients are not allowed to write control records in topic partition {tp}"
    )


def check_producer_format(is_transactional: bool, producer_id: int, to_magic: int) -> None:
    """Checks 7 and 8."""
    if is_transactional and to_magic < MAGIC_V2:
        raise UnsupportedForMessageFormatError(
            f"Transactional records cannot be used with magic version {to_magic}"
        )
    if producer_id != NO_PRODUCER_ID and to_magic < MAGIC_V2:
        raise UnsupportedForMessageFormatError(
            f"Idempotent records cannot be used with magic version {to_magic}"
        )


class RecordContext:
    """Where the records of one batch lie, to render Kafka's record strings."""

    __slots__ = (
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_magic",
        "buf",
        "lat_timestamp",
        "wrapper_timestamp",
        "wrapper_type",
    )

    def __init__(
        self,
        buf: ReadableBuffer,
        batch_magic: int,
        *,
        base_offset: int = 0,
        base_timestamp: int = 0,
        base_sequence: int = -1,
        lat_timestamp: int | None = None,
        wrapper_timestamp: int | None = None,
        wrapper_type: TimestampType | None = None,
    ) -> None:
        self.buf = buf
        self.batch_magic = batch_magic
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.base_sequence = base_sequence
        self.lat_timestamp = lat_timestamp
        self.wrapper_timestamp = wrapper_timestamp
        self.wrapper_type = wrapper_type

    def record_string(self, position: int, offset: int) -> str:
        buf = self.buf
        if self.batch_magic >= MAGIC_V2:
            record, _ = decode_v2_record(
                buf,
                position,
                len(memoryview(buf)),
                base_offset=self.base_offset,
                base_timestamp=self.base_timestamp,
                base_sequence=self.base_sequence,
                log_append_time=self.lat_timestamp,
            )
            return v2_record_to_string(record)
        size = int.from_bytes(bytes(buf[position + 8 : position + 12]), "big") + 12
        inner_magic = buf[position + legacy.RECORD_MAGIC_OFFSET]
        wrapper_type = self.wrapper_type if inner_magic == 1 else None
        rec = legacy.read_record(
            buf,
            position,
            size,
            offset=offset,
            wrapper_timestamp=self.wrapper_timestamp,
            wrapper_timestamp_type=wrapper_type,
        )
        return legacy.record_to_string(rec)


def v2_record_context(buf: ReadableBuffer, h: RecordBatchHeader) -> RecordContext:
    """The records of v2 batch ``h`` (raw or decompressed into ``buf``)."""
    lat_batch = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    return RecordContext(
        buf,
        MAGIC_V2,
        base_offset=h.base_offset,
        base_timestamp=h.base_timestamp,
        base_sequence=h.base_sequence,
        lat_timestamp=h.max_timestamp if lat_batch else None,
    )


#: record errors listed per partition (KIP-467 ``record_errors``); every error is
#: counted, and the partition's error message gives the total. Kafka lists one
#: entry per failing record, so a 2 KB zstd batch of 4 M keyless records made
#: a 360 MB response (docs/deviations.md, "Record errors are capped").
MAX_LISTED_RECORD_ERRORS = 20


def record_errors(
    errors: Sequence[ErrorTuple] | None,
    counts: Sequence[int] | None,
    ctx: RecordContext,
    *,
    tp: str,
    now: int,
    before_max: int,
    after_max: int,
    recorder: MetricsRecorder,
) -> None:
    """Mark the meters for every failed record, then raise what Kafka raises
    for this batch (``validateRecord`` + ``processRecordErrors``).

    ``errors`` are the listed errors of a walk (at most
    :data:`MAX_LISTED_RECORD_ERRORS`, plus the one that ended the walk) and
    ``counts`` the number of every kind (by ERR_* code); only the listed ones
    are turned into messages."""
    if not counts:
        return
    if counts[scan.ERR_MAGIC]:
        recorder.record_invalid_magic(counts[scan.ERR_MAGIC])
    if counts[scan.ERR_NO_KEY]:
        recorder.record_no_key_compacted_topic(counts[scan.ERR_NO_KEY])
    out: list[RecordError] = []
    for index, code, offset, ts, position in errors or ():
        if code == scan.ERR_MAGIC:
            message = (
                f"Record {ctx.record_string(position, offset)}'s magic does not match outer "
                f"magic {ctx.batch_magic} in topic partition {tp}"
            )
        elif code == scan.ERR_NO_KEY:
            message = f"Compacted topic cannot accept message without key in topic partition {tp}"
        elif code == scan.ERR_TS_RANGE:
            message = (
                f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp "
                f"should be within [{_j64(now - before_max)}, {_j64(now + after_max)}]"
            )
        elif code == scan.ERR_TS_TYPE:
            message = (
                f"Invalid timestamp type in message {ctx.record_string(position, offset)}. "
                "Producer should not set timestamp type to LogAppendTime."
            )
        else:  # ERR_CORRUPT: an inner legacy record's CRC; fatal at once (always listed last)
            recorder.record_invalid_checksums()
            raise _corrupt_inner(ctx.buf, position, tp)
        if len(out) < MAX_LISTED_RECORD_ERRORS:
            out.append(RecordError(index, message))
    any_timestamp = bool(counts[scan.ERR_TS_RANGE] or counts[scan.ERR_TS_TYPE])
    process_record_errors(out, any_timestamp, total=sum(counts))


def report_rejected_v2(
    buf: ReadableBuffer,
    rejected: scan.BatchRejected,
    *,
    tp: str,
    now: int,
    before_max: int,
    after_max: int,
    recorder: MetricsRecorder,
) -> NoReturn:
    """Raise what Kafka raises for the v2 batch at the start of ``buf`` that
    ``scan.assign_in_place_v2`` rejected (it left the batch unchanged): the
    failed client-batch check's error, or the records' (``record_errors``)."""
    h = v2.read_header(buf, 0)
    if rejected.check != scan.CHECK_NONE:
        raise_client_batch(rejected.check, h, tp, recorder)
    record_errors(
        rejected.errors, rejected.error_counts, v2_record_context(buf, h), tp=tp, now=now,
        before_max=before_max, after_max=after_max, recorder=recorder,
    )  # fmt: skip
    raise AssertionError("a batch rejected without a failed check or record")


def _corrupt_inner(buf: ReadableBuffer, position: int, tp: str) -> CorruptRecordError:
    size = int.from_bytes(bytes(buf[position + 8 : position + 12]), "big", signed=True)
    if size < legacy.MIN_RECORD_SIZE:
        return CorruptRecordError(
            f"Record is corrupt (crc could not be retrieved as the record is too small, "
            f"size = {size}) in topic partition {tp}"
        )
    stored = int.from_bytes(bytes(buf[position + 12 : position + 16]), "big")
    computed = scan.crc32(buf, position + 16, position + 12 + size)
    return CorruptRecordError(
        f"Record is corrupt (stored crc = {stored}, computed crc = {computed})"
    )


def process_record_errors(
    errors: list[RecordError], any_timestamp: bool, *, total: int | None = None
) -> None:
    """``LogValidator.processRecordErrors``; ``total`` is the number of failed
    records when ``errors`` lists only the first of them (default: all listed)."""
    if not errors and not total:
        return
    count = len(errors) if total is None else total
    left_out = count - len(errors)
    if any_timestamp:
        message = "One or more records have been rejected due to invalid timestamp"
        if left_out:
            message += f" ({count} record errors in total, the first {len(errors)} listed)"
        raise RecordValidationError(InvalidTimestampError(message), errors, total=count)
    shown = ", ".join(_record_error_string(e) for e in errors[:3])
    message = (
        f"One or more records have been rejected due to {count} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )
    if left_out:
        message += f" ({len(errors)} listed in record_errors, {left_out} left out)"
    raise RecordValidationError(InvalidRecordError(message), errors, total=count)


def _record_error_string(e: RecordError) -> str:
    """``ProduceResponse.RecordError.toString``."""
    message = "null" if e.message is None else f"'{e.message}'"
    return f"RecordError(batchIndex={e.batch_index}, message={message})"


def check_only_one_batch(entries: int, first_magic: int, source_codec: int) -> None:
    """``LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches``."""
    if entries == 0:
        raise InvalidRecordError("Record batch has no batches at all")
    if (first_magic >= MAGIC_V2 or source_codec != 0) and entries > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
