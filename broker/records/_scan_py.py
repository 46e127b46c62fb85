"""Pure-Python reference of the hot loops (twin of ``_scan_c.pyx``).

Every function here has a compiled twin with the same name, the same
signature and the same results (return values, exception types and
messages). ``broker.records.scan`` picks one; tests run both.

Varints are protobuf base-128 with zig-zag sign folding (``ByteUtils``):
``0 -> 00, -1 -> 01, 1 -> 02, 7 -> 0E``. A varint longer than 5 bytes or a
varlong longer than 10 bytes is an error (Kafka: IllegalArgumentException
turned into InvalidRecordException "Found invalid record structure").

The functions and what they own
-------------------------------
``scan_entries``     framing + per-entry checks of a produce request's record
                     set (``UnifiedLog.analyzeAndValidateRecords``), legacy
                     CRC-32 included; v2 CRC-32C through ``crc32c``.
``walk_v2``          one v2 batch's records (``DefaultRecord.readFrom`` rules)
                     with the validator's per-record checks; aggregates only.
``assign_in_place_v2`` the whole in-place validation of one uncompressed v2
                     batch (``LogValidator.assignOffsetsNonCompressed``):
                     checks, walk, header; ``BatchRejected``, nothing
                     changed, when a check or a record fails.
``check_client_batch`` ``validateBatch``'s checks of a client's v2 batch header.
``walk_legacy``      legacy entries (an uncompressed message set, or the inner
                     entries of a decompressed wrapper) with the validator's
                     checks; optionally encodes them as v2 records into ``out``.
``reencode_v2``      v2 records -> v2 records with offset deltas 0..n-1 and
                     timestamp deltas from the first record (the builder's form).
``v2_to_legacy``     v2 records -> v0/v1 log entries (down-conversion).
``crc32``            CRC-32 (zlib polynomial) of a buffer range.
``new_buffer``       an output buffer for the encoders (not zero-filled when compiled).

Why one module for all of them: the compiled twin shares its inline helpers
(varint decoders, CRC-32, Java ``long`` arithmetic) between every loop, and
Cython inlines only within one compilation unit; the reference mirrors it
function for function so the two can be read side by side.

Error tuples
------------
Per-record failures do not raise: they come back as tuples
``(batch_index, code, offset, timestamp, record_position)`` in a list that is
created only when a record fails. ``code`` is one of the ``ERR_*`` constants.
``ERR_CORRUPT`` (an inner legacy CRC mismatch) is fatal: the walk stops there
and it is the last tuple. Structural failures raise ``InvalidRecordError`` /
``CorruptRecordError`` at once, as Kafka's iterators throw.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records import batch
from broker.records.buffers import ReadableBuffer, WritableBuffer

# per-record error codes (see the module docstring)
ERR_MAGIC = 1
ERR_NO_KEY = 2
ERR_TS_RANGE = 3
ERR_TS_TYPE = 4
ERR_CORRUPT = 5
#: length of a walk's ``error_counts`` tuple (indexed by the ERR_* code; 0 unused)
ERROR_KINDS = 6

# scan_entries failure codes
FAIL_NONE = 0
FAIL_SIZE = 1  # size field < 14                    -> CorruptRecordError
FAIL_MAGIC = 2  # magic byte outside 0..2           -> CorruptRecordError
FAIL_BASE_OFFSET = 3  # client v2 base offset != 0   -> InvalidRecordError
FAIL_TOO_LARGE = 4  # entry > max.message.bytes      -> RecordTooLargeError
FAIL_CRC = 5  # isValid false                        -> CorruptRecordError
FAIL_CODEC = 6  # codec id 5..7                      -> InvalidRecordError (deviation)

# validateBatch's checks of a client's v2 batch (2-6 of validator/checks.py's
# table), in Kafka's order; check_client_batch returns the first that fails
CHECK_NONE = 0
CHECK_OFFSET_RANGE = 1  # lastOffset - baseOffset + 1 <= 0
CHECK_COUNT = 2  # records count <= 0
CHECK_COUNT_MISMATCH = 3  # records count != lastOffset - baseOffset + 1
CHECK_CONTROL = 4  # a control batch
CHECK_SEQUENCE = 5  # a producer id with a negative base sequence

_M64 = 0xFFFFFFFFFFFFFFFF
_LONG_MIN = -(2**63)
_INT_MAX = 2**31 - 1


def _j64(x: int) -> int:
    """Java ``long`` wraparound."""
    return ((x + 2**63) & _M64) + _LONG_MIN


def _i32(b: ReadableBuffer, p: int) -> int:
    return int.from_bytes(b[p : p + 4], "big", signed=True)


def _i64(b: ReadableBuffer, p: int) -> int:
    return int.from_bytes(b[p : p + 8], "big", signed=True)


def _u32(b: ReadableBuffer, p: int) -> int:
    return int.from_bytes(b[p : p + 4], "big", signed=False)


# ---------------------------------------------------------------------------
# varints
# ---------------------------------------------------------------------------


def read_varint(buf: ReadableBuffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varint (<= 5 bytes) at ``pos``; returns (value, next pos)."""
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varint past end")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Found invalid record structure: varint too long")
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: ReadableBuffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (<= 10 bytes) at ``pos``; returns (value, next pos)."""
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varlong past end")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Found invalid record structure: varlong too long")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def _write_varint(out: WritableBuffer, p: int, value: int) -> int:
    """Zig-zag varint (int32) at ``p``; returns the next position."""
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    while v >= 0x80:
        out[p] = (v & 0x7F) | 0x80
        p += 1
        v >>= 7
    out[p] = v
    return p + 1


def _write_varlong(out: WritableBuffer, p: int, value: int) -> int:
    v = ((value << 1) ^ (value >> 63)) & _M64
    while v >= 0x80:
        out[p] = (v & 0x7F) | 0x80
        p += 1
        v >>= 7
    out[p] = v
    return p + 1


def _varint_size(value: int) -> int:
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def _varlong_size(value: int) -> int:
    v = ((value << 1) ^ (value >> 63)) & _M64
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def _minimal(buf: ReadableBuffer, start: int, end: int) -> bool:
    """A varint is in its shortest form unless it has > 1 byte and ends in 0x00."""
    return end - start == 1 or buf[end - 1] != 0


def new_buffer(size: int) -> bytearray:
    """A bytearray of ``size`` bytes for an encoder to fill. The compiled twin
    leaves it uninitialised (callers read only what an encoder wrote)."""
    return bytearray(size)


def copy_into(dst: bytearray, offset: int, src: ReadableBuffer) -> None:
    """Copy ``src`` into ``dst[offset:]`` (which must hold it; ``dst`` keeps
    its size). The compiled twin releases the GIL for 64 KiB or more."""
    with memoryview(src) as view:
        n = view.nbytes
        if offset < 0 or n > len(dst) - offset:
            raise ValueError(f"copy_into: {n} bytes at {offset} do not fit {len(dst)}")
        dst[offset : offset + n] = view


def crc32(buf: ReadableBuffer, pos: int, end: int) -> int:
    """CRC-32 (IEEE, zlib's) of ``buf[pos:end]``."""
    with memoryview(buf) as view:
        return zlib.crc32(view[pos:end])


# ---------------------------------------------------------------------------
# framing and per-entry checks (analyzeAndValidateRecords)
# ---------------------------------------------------------------------------


def scan_entries(
    buf: ReadableBuffer, start: int, end: int, max_message_bytes: int, client_origin: bool
) -> tuple[int, int, int, int, int, int, int, int]:
    """Walk the entries of a produce request's records, in order, stopping at
    the first failure.

    Per entry (``UnifiedLog.analyzeAndValidateRecords`` after the framing of
    ``ByteBufferLogInputStream``): size field >= 14, magic in 0..2, complete
    (an incomplete trailing entry ends the walk silently), v2 client base
    offset 0, size <= ``max_message_bytes``, valid (v2: size >= 61 and
    CRC-32C; legacy: CRC-32 of the outer record), codec id <= 4.

    Returns ``(entries, valid_end, first_magic, source_codec, fail_code,
    fail_position, fail_value, magic_mask)``: ``valid_end`` is where the last
    whole entry ends, ``first_magic`` -1 when there is no entry,
    ``source_codec`` the codec of the last entry whose codec is not NONE (0 if
    none), ``fail_value`` the offending size, magic, base offset or codec,
    ``magic_mask`` has bit ``m`` set when an entry of magic ``m`` was seen.
    """
    pos = start
    entries = 0
    first_magic = -1
    codec = 0
    mask = 0
    while True:
        remaining = end - pos
        if remaining < 12:
            break
        size = _i32(buf, pos + 8)
        if size < 14:
            return entries, pos, first_magic, codec, FAIL_SIZE, pos, size, mask
        if remaining < 17:
            break
        magic = buf[pos + 16]
        if magic > 127:
            magic -= 256
        if magic < 0 or magic > 2:
            return entries, pos, first_magic, codec, FAIL_MAGIC, pos, magic, mask
        total = size + 12
        if remaining < total:
            break
        if magic == 2:
            if client_origin:
                base_offset = _i64(buf, pos)
                if base_offset != 0:
                    return (
                        entries,
                        pos,
                        first_magic,
                        codec,
                        FAIL_BASE_OFFSET,
                        pos,
                        base_offset,
                        mask,
                    )
            if total > max_message_bytes:
                return entries, pos, first_magic, codec, FAIL_TOO_LARGE, pos, total, mask
            if total < 61:
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            with memoryview(buf) as view:
                computed = crc32c(view[pos + 21 : pos + total])
            if computed != _u32(buf, pos + 17):
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            entry_codec = buf[pos + 22] & 0x07
        else:
            if total > max_message_bytes:
                return entries, pos, first_magic, codec, FAIL_TOO_LARGE, pos, total, mask
            if crc32(buf, pos + 16, pos + total) != _u32(buf, pos + 12):
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            entry_codec = buf[pos + 17] & 0x07
        if entry_codec > 4:
            return entries, pos, first_magic, codec, FAIL_CODEC, pos, entry_codec, mask
        if entry_codec != 0:
            codec = entry_codec
        if first_magic < 0:
            first_magic = magic
        mask |= 1 << magic
        entries += 1
        pos += total
    return entries, pos, first_magic, codec, FAIL_NONE, pos, 0, mask


# ---------------------------------------------------------------------------
# v2 records
# ---------------------------------------------------------------------------


def _check_timestamp(
    ts: int, lat_batch: bool, *, now: int, before_max: int, after_max: int, create_time: bool
) -> int:
    """``LogValidator.validateTimestamp`` (3.6+): 0 or an ERR_* code."""
    if create_time and ts != -1:
        diff = _j64(now - ts)
        if diff > before_max or _j64(-diff) > after_max:
            return ERR_TS_RANGE
        return 0
    if lat_batch:
        return ERR_TS_TYPE
    return 0


def walk_v2(
    buf: ReadableBuffer,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    lat_batch: bool,
    batch_max_timestamp: int,
    now: int,
    before_max: int,
    after_max: int,
    create_time: bool,
    compacted: bool,
    want_canonical: bool,
    error_limit: int,
) -> tuple[
    int, int, bool, bool, list[tuple[int, int, int, int, int]] | None, tuple[int, ...] | None
]:
    """Walk the ``count`` records in ``buf[pos:end]`` (a v2 batch's records,
    raw or decompressed) with ``DefaultRecord.readFrom``'s structure rules and
    the validator's per-record checks (key on compacted topics, timestamp).

    Returns ``(max_timestamp, min_timestamp, offsets_consecutive, canonical,
    errors, error_counts)`` over the records without error: ``errors`` lists
    the first ``error_limit`` record errors (None when there is none) and
    ``error_counts`` counts every one by its ERR_* code (None when none), so
    a batch of millions of failing records costs no object per record; ``offsets_consecutive`` is
    ``base_offset + offsetDelta == index`` for all of them (an in-place rule of
    ``validateMessagesAndAssignOffsetsCompressed``);
    ``canonical`` says the records are byte-for-byte what the builder would
    write at offset deltas 0..n-1 from the first record's timestamp
    (attributes 0, shortest varints, null lengths written as -1, not a
    LogAppendTime batch), so a rebuild may copy them as they are; it is only
    computed with ``want_canonical`` (else False): it is a sizeable share of
    the compiled walk's time and the in-place paths never need it.
    """
    max_ts = -1
    min_ts = 2**63 - 1
    consecutive = True
    canonical = want_canonical and not lat_batch
    errors: list[tuple[int, int, int, int, int]] | None = None
    counts: list[int] | None = None
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    if count == 0:
        # DefaultRecordBatch.iterator(): an empty iterator, the bytes unread
        return max_ts, min_ts, consecutive, canonical, errors, None
    for index in range(count):
        if pos >= end:
            raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
        record_pos = pos
        body, p = read_varint(buf, pos, end)
        if not _minimal(buf, pos, p):
            canonical = False
        if body < 0 or body > end - p:
            raise InvalidRecordError(
                f"Invalid record size: expected {body} bytes in record payload, but instead "
                f"the buffer has only {end - p} remaining bytes."
            )
        body_start = p
        rec_end = p + body
        if p >= rec_end:
            raise InvalidRecordError("Found invalid record structure")
        if buf[p] != 0:
            canonical = False
        p += 1
        q = p
        ts_delta, p = read_varlong(buf, p, rec_end)
        if not _minimal(buf, q, p):
            canonical = False
        q = p
        offset_delta, p = read_varint(buf, p, rec_end)
        if not _minimal(buf, q, p) or offset_delta != index:
            canonical = False
        q = p
        key_len, p = read_varint(buf, p, rec_end)
        if not _minimal(buf, q, p) or key_len < -1:
            canonical = False
        if key_len > 0:
            if key_len > rec_end - p:
                raise InvalidRecordError("Found invalid record structure")
            p += key_len
        q = p
        value_len, p = read_varint(buf, p, rec_end)
        if not _minimal(buf, q, p) or value_len < -1:
            canonical = False
        if value_len > 0:
            if value_len > rec_end - p:
                raise InvalidRecordError("Found invalid record structure")
            p += value_len
        q = p
        headers, p = read_varint(buf, p, rec_end)
        if not _minimal(buf, q, p):
            canonical = False
        if headers < 0:
            raise InvalidRecordError(f"Found invalid number of record headers {headers}")
        if headers > rec_end - p:
            raise InvalidRecordError(
                f"Found invalid number of record headers. {headers} is larger than the "
                "remaining size of the buffer"
            )
        for _ in range(headers):
            q = p
            hk, p = read_varint(buf, p, rec_end)
            if not _minimal(buf, q, p):
                canonical = False
            if hk < 0:
                raise InvalidRecordError(f"Invalid negative header key size {hk}")
            if hk > rec_end - p:
                raise InvalidRecordError("Found invalid record structure")
            p += hk
            q = p
            hv, p = read_varint(buf, p, rec_end)
            if not _minimal(buf, q, p) or hv < -1:
                canonical = False
            if hv > 0:
                if hv > rec_end - p:
                    raise InvalidRecordError("Found invalid record structure")
                p += hv
        if p != rec_end:
            raise InvalidRecordError(
                f"Invalid record size: expected to read {body} bytes in record payload, "
                f"but instead read {p - body_start}"
            )
        pos = rec_end

        ts = batch_max_timestamp if lat_batch else _j64(base_timestamp + ts_delta)
        if index == 0 and ts_delta != 0:
            canonical = False
        code = 0
        if compacted and key_len < 0:
            code = ERR_NO_KEY
        else:
            code = _check_timestamp(
                ts, lat_batch, now=now, before_max=before_max, after_max=after_max,
                create_time=create_time,
            )  # fmt: skip
        if code:
            if counts is None:
                counts = [0] * ERROR_KINDS
                errors = []
            counts[code] += 1
            if errors is not None and len(errors) < error_limit:
                errors.append((index, code, _j64(base_offset + offset_delta), ts, record_pos))
            continue
        max_ts = max(max_ts, ts)
        min_ts = min(min_ts, ts)
        if _j64(base_offset + offset_delta) != index:
            consecutive = False
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return max_ts, min_ts, consecutive, canonical, errors, _counts(counts)


def _counts(counts: list[int] | None) -> tuple[int, ...] | None:
    return None if counts is None else tuple(counts)


def check_client_batch(
    *,
    base_offset: int,
    last_offset_delta: int,
    records_count: int,
    attributes: int,
    producer_id: int,
    base_sequence: int,
) -> int:
    """``LogValidator.validateBatch``'s checks of a v2 batch from a client,
    on its header fields: ``CHECK_NONE`` or the CHECK_* code of the first
    that fails (``validator/checks.py`` gives each its error and meter)."""
    count_from_offsets = _j64(_j64(base_offset + last_offset_delta) - base_offset + 1)
    if count_from_offsets <= 0:
        return CHECK_OFFSET_RANGE
    if records_count <= 0:
        return CHECK_COUNT
    if count_from_offsets != records_count:
        return CHECK_COUNT_MISMATCH
    if attributes & batch.CONTROL_FLAG_MASK:
        return CHECK_CONTROL
    if producer_id != batch.NO_PRODUCER_ID and base_sequence < 0:
        return CHECK_SEQUENCE
    return CHECK_NONE


class BatchRejected(Exception):
    """:func:`assign_in_place_v2`'s verdict on a batch that failed the
    validator's checks; the batch is left unchanged. ``check`` is the failed
    client-batch check (CHECK_*), or ``CHECK_NONE`` when records failed:
    ``errors`` and ``error_counts`` are then :func:`walk_v2`'s."""

    def __init__(
        self,
        check: int,
        errors: list[tuple[int, int, int, int, int]] | None,
        error_counts: tuple[int, ...] | None,
    ) -> None:
        super().__init__(check, errors, error_counts)
        self.check = check
        self.errors = errors
        self.error_counts = error_counts


def assign_in_place_v2(
    buf: WritableBuffer,
    *,
    next_offset: int,
    partition_leader_epoch: int,
    now: int,
    before_max: int,
    after_max: int,
    compacted: bool,
    log_append_time: bool,
    client_origin: bool,
    error_limit: int,
) -> tuple[int, int, int, int, int, int, int, int]:
    """``LogValidator.assignOffsetsNonCompressed`` for the v2 batch at the
    start of ``buf`` (uncompressed, going to an uncompressed v2 log): the
    rules of the validator's in-place v2 path, all of them, for every caller.

    1. ``validateBatch``: a client's batch (``client_origin``) passes
       :func:`check_client_batch` (the other checks of ``validateBatch`` hold
       for one batch already at magic 2);
    2. ``validateRecord`` for every record (:func:`walk_v2`: structure, key
       on a compacted topic, ``validateTimestamp``), then
       ``processRecordErrors``: any failed record rejects the batch;
    3. the header, in place: base offset so that the last offset is
       ``next_offset + records_count - 1``, the partition leader epoch, and
       ``setMaxTimestamp`` (LogAppendTime topic: type LogAppendTime, now;
       else type CreateTime, the records' max timestamp), which rewrites the
       attributes and the CRC only when the type or value changes;
    4. the result's max timestamp and its shallow offset (KAFKA-16310: the
       last offset, -1 without a timestamp; now and the last offset on a
       LogAppendTime topic).

    A failed check or record raises :class:`BatchRejected` and changes
    nothing (``validator/checks.py`` ``report_rejected_v2`` turns it into
    Kafka's error, messages and meters); a structural error of the records
    raises what :func:`walk_v2` raises. ``buf`` must hold the whole batch
    (the framing of ``analyzeAndValidateRecords`` made sure), else ValueError.

    Returns ``(records_count, max_timestamp, shallow_offset_of_max_timestamp,
    attributes, batch_max_timestamp, producer_id, producer_epoch,
    base_sequence)``: the validation's figures, then the patched header's
    fields a ``BatchInfo`` needs.
    """
    size = len(memoryview(buf))
    if size < batch.RECORDS_OFFSET:
        raise ValueError("the buffer does not hold a whole v2 batch")
    h = batch.read_header(buf, 0)
    end = h.size_in_bytes
    if end < batch.RECORDS_OFFSET or end > size:
        raise ValueError("the buffer does not hold a whole v2 batch")
    count = h.records_count
    if client_origin:
        failed = check_client_batch(
            base_offset=h.base_offset, last_offset_delta=h.last_offset_delta,
            records_count=count, attributes=h.attributes, producer_id=h.producer_id,
            base_sequence=h.base_sequence,
        )  # fmt: skip
        if failed:
            raise BatchRejected(failed, None, None)
    lat_batch = h.timestamp_type is batch.TimestampType.LOG_APPEND_TIME
    max_ts, _min, _consecutive, _canonical, errors, counts = walk_v2(
        buf, batch.RECORDS_OFFSET, end, count=count, base_offset=h.base_offset,
        base_timestamp=h.base_timestamp, lat_batch=lat_batch,
        batch_max_timestamp=h.max_timestamp, now=now, before_max=before_max,
        after_max=after_max, create_time=not log_append_time, compacted=compacted,
        want_canonical=False, error_limit=error_limit,
    )  # fmt: skip
    if counts is not None:
        raise BatchRejected(CHECK_NONE, errors, counts)
    last_offset = next_offset + count - 1
    batch.set_last_offset(buf, 0, last_offset)
    batch.set_partition_leader_epoch(buf, 0, partition_leader_epoch)
    if log_append_time:
        batch.set_max_timestamp(buf, 0, batch.TimestampType.LOG_APPEND_TIME, now)
        max_timestamp, shallow = now, last_offset
    else:
        batch.set_max_timestamp(buf, 0, batch.TimestampType.CREATE_TIME, max_ts)
        max_timestamp, shallow = max_ts, (last_offset if max_ts > batch.NO_TIMESTAMP else -1)
    patched = batch.read_header(buf, 0)
    return (
        count, max_timestamp, shallow, patched.attributes, patched.max_timestamp, h.producer_id,
        h.producer_epoch, h.base_sequence,
    )  # fmt: skip


def reencode_v2(
    buf: ReadableBuffer,
    pos: int,
    end: int,
    *,
    count: int,
    base_timestamp: int,
    lat_batch: bool,
    batch_max_timestamp: int,
    out: WritableBuffer,
    out_pos: int,
) -> int:
    """Write the ``count`` (already walked) records of ``buf[pos:end]`` into
    ``out`` at ``out_pos`` as ``MemoryRecordsBuilder`` writes them: offset
    deltas 0..n-1, timestamp deltas from the first record's timestamp,
    attributes 0, key/value/headers as they were. Returns the end position.
    ``out`` needs ``(end - pos) + 17 * count`` bytes at most (timestamp, offset
    and length varints at full width).
    """
    first_ts = 0
    for index in range(count):
        body, p = read_varint(buf, pos, end)
        rec_end = p + body
        p += 1
        ts_delta, p = read_varlong(buf, p, rec_end)
        _, p = read_varint(buf, p, rec_end)
        ts = batch_max_timestamp if lat_batch else _j64(base_timestamp + ts_delta)
        if index == 0:
            first_ts = ts
        new_delta = _j64(ts - first_ts)
        key_len, p = read_varint(buf, p, rec_end)
        key_start = p
        if key_len > 0:
            p += key_len
        key_end = p
        value_len, p = read_varint(buf, p, rec_end)
        value_start = p
        if value_len > 0:
            p += value_len
        value_end = p
        headers, p = read_varint(buf, p, rec_end)
        header_spans = []
        for _ in range(headers):
            hk, p = read_varint(buf, p, rec_end)
            hk_start = p
            p += hk
            hv, p = read_varint(buf, p, rec_end)
            hv_start = p
            if hv > 0:
                p += hv
            header_spans.append((hk_start, hk, hv_start, hv))
        pos = rec_end
        # body size of the re-encoded record
        size = 1 + _varlong_size(new_delta) + _varint_size(index)
        size += 1 if key_len < 0 else _varint_size(key_len) + key_len
        size += 1 if value_len < 0 else _varint_size(value_len) + value_len
        size += _varint_size(headers)
        for _hk_start, hk, _hv_start, hv in header_spans:
            size += _varint_size(hk) + hk
            size += 1 if hv < 0 else _varint_size(hv) + hv
        if out_pos + _varint_size(size) + size > len(out):
            raise ValueError("output buffer too small")
        q = _write_varint(out, out_pos, size)
        out[q] = 0
        q = _write_varlong(out, q + 1, new_delta)
        q = _write_varint(out, q, index)
        if key_len < 0:
            q = _write_varint(out, q, -1)
        else:
            q = _write_varint(out, q, key_len)
            out[q : q + key_len] = buf[key_start:key_end]
            q += key_len
        if value_len < 0:
            q = _write_varint(out, q, -1)
        else:
            q = _write_varint(out, q, value_len)
            out[q : q + value_len] = buf[value_start:value_end]
            q += value_len
        q = _write_varint(out, q, headers)
        for hk_start, hk, hv_start, hv in header_spans:
            q = _write_varint(out, q, hk)
            out[q : q + hk] = buf[hk_start : hk_start + hk]
            q += hk
            if hv < 0:
                q = _write_varint(out, q, -1)
            else:
                q = _write_varint(out, q, hv)
                out[q : q + hv] = buf[hv_start : hv_start + hv]
                q += hv
        out_pos = q
    return out_pos


# ---------------------------------------------------------------------------
# legacy entries
# ---------------------------------------------------------------------------


def _legacy_kv(
    buf: ReadableBuffer, rec: int, rec_end: int, magic: int
) -> tuple[int, int, int, int]:
    """(key position, key length, value position, value length) of the legacy
    record at ``rec``; lengths < 0 mean null. Raises CorruptRecordError when a
    length runs past the record (Kafka would fail later, on first access)."""
    p = rec + (6 if magic == 0 else 14)
    if p + 4 > rec_end:
        raise CorruptRecordError("Record is corrupt (key size past the end of the record)")
    key_len = _i32(buf, p)
    p += 4
    key_pos = p
    if key_len > 0:
        p += key_len
    if p + 4 > rec_end:
        raise CorruptRecordError("Record is corrupt (value size past the end of the record)")
    value_len = _i32(buf, p)
    p += 4
    value_pos = p
    if value_len > 0:
        p += value_len
    if p > rec_end:
        raise CorruptRecordError("Record is corrupt (value past the end of the record)")
    return key_pos, key_len, value_pos, value_len


_ErrorSink = tuple[list[tuple[int, int, int, int, int]], list[int], int]
LegacyWalk = tuple[
    int,
    int,
    int,
    int,
    int,
    bool,
    int,
    list[tuple[int, int, int, int, int]] | None,
    tuple[int, ...] | None,
]


def walk_legacy(
    buf: ReadableBuffer,
    pos: int,
    end: int,
    *,
    wrapper_magic: int,
    wrapper_offset: int,
    wrapper_timestamp: int,
    wrapper_lat: bool,
    now: int,
    before_max: int,
    after_max: int,
    create_time: bool,
    compacted: bool,
    out: WritableBuffer | None,
    out_pos: int,
    error_limit: int,
) -> LegacyWalk:
    """Validate legacy entries and, when ``out`` is given, encode them as v2
    records (offset deltas 0.., timestamp deltas from the first record).

    ``wrapper_magic`` -1: ``buf[pos:end]`` is an uncompressed message set
    already framed and CRC-checked by :func:`scan_entries`; every entry is its
    own batch, so the walk stops at the first entry with a record error and
    its ``batch_index`` is 0; an entry whose magic differs from the first
    entry's raises nothing here but returns ``ERR_MAGIC`` (the caller turns it
    into the batch-level InvalidRecordError, ``validateBatch`` check 1).

    ``wrapper_magic`` 0/1: ``buf[pos:end]`` is a decompressed wrapper value
    (``AbstractLegacyRecordBatch.DeepRecordsIterator``): inner size < 14 ->
    CorruptRecordError, a trailing partial entry is ignored, no entry ->
    InvalidRecordError, v1 absolute offsets from the wrapper offset (0 = the
    librdkafka quirk), inner compressed -> InvalidRecordError, inner magic !=
    wrapper magic -> ERR_MAGIC, inner CRC mismatch -> ERR_CORRUPT (fatal).

    Returns ``(records, consumed_end, out_end, max_timestamp, min_timestamp,
    offsets_consecutive, first_timestamp, errors, error_counts)``; the
    aggregates cover the records without error (max only for magic > 0);
    ``errors`` and ``error_counts`` as in :func:`walk_v2` (an ERR_CORRUPT, which
    ends the walk, is always listed, past ``error_limit`` too).
    """
    inner = wrapper_magic >= 0
    base = 0
    stop = end
    if inner:
        # first pass: frame the inner entries (the Java iterator reads them all
        # before handing out the first one)
        p = pos
        n = 0
        last_inner_offset = 0
        while end - p >= 12:
            size = _i32(buf, p + 8)
            if size < 14:
                raise CorruptRecordError(
                    "Record size is less than the minimum record overhead (14)"
                )
            if end - p - 12 < size:
                break
            last_inner_offset = _i64(buf, p)
            n += 1
            p += 12 + size
        stop = p
        if n == 0:
            raise InvalidRecordError("Found invalid compressed record set with no inner records")
        if wrapper_magic == 1:
            if wrapper_offset == 0:
                base = 0
            elif wrapper_offset < last_inner_offset:
                raise InvalidRecordError(
                    "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset "
                    f"'{last_inner_offset}' and it is not zero."
                )
            else:
                base = wrapper_offset - last_inner_offset
    first_magic = wrapper_magic
    max_ts = -1
    min_ts = 2**63 - 1
    first_ts = -1
    consecutive = True
    errors: list[tuple[int, int, int, int, int]] = []
    counts = [0] * ERROR_KINDS
    result = (errors, counts, error_limit)

    index = 0
    p = pos
    while p < stop:
        size = _i32(buf, p + 8)
        rec = p + 12
        rec_end = rec + size
        stored_offset = _i64(buf, p)
        magic = buf[rec + 4]
        if magic > 127:
            magic -= 256
        attributes = buf[rec + 5]
        entry_pos = p
        p = rec_end
        if inner:
            offset = base + stored_offset if wrapper_magic == 1 else stored_offset
            if attributes & 0x07:
                raise InvalidRecordError("Inner messages must not be compressed")
            if magic != wrapper_magic:
                _add_error(result, (index, ERR_MAGIC, offset, -1, entry_pos))
                index += 1
                continue
            if size < 14 or crc32(buf, rec + 4, rec_end) != _u32(buf, rec):
                _add_error(result, (index, ERR_CORRUPT, offset, -1, entry_pos), always=True)
                return _legacy_result(
                    result, index, stop, out_pos=out_pos, max_ts=max_ts, min_ts=min_ts,
                    consecutive=consecutive, first_ts=first_ts,
                )  # fmt: skip
        else:
            offset = stored_offset
            if first_magic < 0:
                first_magic = magic
            elif magic != first_magic:
                _add_error(result, (0, ERR_MAGIC, offset, -1, entry_pos), always=True)
                return _legacy_result(
                    result, index, entry_pos, out_pos=out_pos, max_ts=max_ts, min_ts=min_ts,
                    consecutive=consecutive, first_ts=first_ts,
                )  # fmt: skip
        if magic == 0:
            ts = -1
        elif inner and wrapper_lat:
            ts = wrapper_timestamp
        else:
            ts = _i64(buf, rec + 6)
        key_pos, key_len, value_pos, value_len = _legacy_kv(buf, rec, rec_end, magic)
        # legacy batch timestamp type: the wrapper's (inner) or the entry's own bit
        if inner:
            lat_batch = wrapper_lat
        else:
            lat_batch = magic > 0 and bool(attributes & 0x08)
        if compacted and key_len < 0:
            code = ERR_NO_KEY
        else:
            code = _check_timestamp(
                ts, lat_batch, now=now, before_max=before_max, after_max=after_max,
                create_time=create_time,
            )  # fmt: skip
        if code:
            _add_error(result, (index if inner else 0, code, offset, ts, entry_pos), not inner)
            if not inner:
                return _legacy_result(
                    result, index, entry_pos, out_pos=out_pos, max_ts=max_ts, min_ts=min_ts,
                    consecutive=consecutive, first_ts=first_ts,
                )  # fmt: skip
            index += 1
            continue
        if magic > 0 and ts > max_ts:
            max_ts = ts
        min_ts = min(min_ts, ts)
        if offset != index:
            consecutive = False
        if index == 0:
            first_ts = ts
        if out is not None:
            out_pos = _write_v2_record(
                out,
                out_pos,
                offset_delta=index,
                ts_delta=_j64(ts - first_ts),
                buf=buf,
                key_pos=key_pos,
                key_len=key_len,
                value_pos=value_pos,
                value_len=value_len,
            )
        index += 1
    return _legacy_result(
        result, index, stop, out_pos=out_pos, max_ts=max_ts, min_ts=min_ts,
        consecutive=consecutive, first_ts=first_ts,
    )  # fmt: skip


def _add_error(
    sink: _ErrorSink, error: tuple[int, int, int, int, int], always: bool = False
) -> None:
    """Count ``error``; list it while fewer than the limit are listed (or ``always``)."""
    errors, counts, limit = sink
    counts[error[1]] += 1
    if always or len(errors) < limit:
        errors.append(error)


def _legacy_result(
    sink: _ErrorSink,
    records: int,
    consumed: int,
    *,
    out_pos: int,
    max_ts: int,
    min_ts: int,
    consecutive: bool,
    first_ts: int,
) -> LegacyWalk:
    errors, counts, _ = sink
    if not any(counts):
        return records, consumed, out_pos, max_ts, min_ts, consecutive, first_ts, None, None
    return (
        records, consumed, out_pos, max_ts, min_ts, consecutive, first_ts, errors, tuple(counts),
    )  # fmt: skip


def _write_v2_record(
    out: WritableBuffer,
    q: int,
    *,
    offset_delta: int,
    ts_delta: int,
    buf: ReadableBuffer,
    key_pos: int,
    key_len: int,
    value_pos: int,
    value_len: int,
) -> int:
    """One v2 record without headers (``DefaultRecord.writeTo``)."""
    size = 1 + _varlong_size(ts_delta) + _varint_size(offset_delta) + 1
    size += 1 if key_len < 0 else _varint_size(key_len) + key_len
    size += 1 if value_len < 0 else _varint_size(value_len) + value_len
    if q + _varint_size(size) + size > len(out):
        raise ValueError("output buffer too small")
    q = _write_varint(out, q, size)
    out[q] = 0
    q = _write_varlong(out, q + 1, ts_delta)
    q = _write_varint(out, q, offset_delta)
    if key_len < 0:
        q = _write_varint(out, q, -1)
    else:
        q = _write_varint(out, q, key_len)
        out[q : q + key_len] = buf[key_pos : key_pos + key_len]
        q += key_len
    if value_len < 0:
        q = _write_varint(out, q, -1)
    else:
        q = _write_varint(out, q, value_len)
        out[q : q + value_len] = buf[value_pos : value_pos + value_len]
        q += value_len
    out[q] = 0  # no headers
    return q + 1


def v2_to_legacy(
    buf: ReadableBuffer,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    lat_batch: bool,
    batch_max_timestamp: int,
    to_magic: int,
    renumber_from: int,
    relative_offsets: bool,
    first_offset: int,
    log_append_time: int,
    clamp_timestamps: bool,
    out: WritableBuffer,
    out_pos: int,
) -> tuple[int, int, int, int, int, int, bool]:
    """Write v2 records as v0/v1 log entries (``MemoryRecordsBuilder`` with a
    legacy magic, as ``RecordsUtil.convertRecordBatch`` drives it).

    ``renumber_from`` >= 0 gives the written records offsets renumber_from,
    renumber_from + 1, ... (the validator's rebuild); -1 keeps each record's
    own offset (down-conversion). Records with offset < ``first_offset`` are
    skipped (pass ``-2**63`` to keep all). Entry offsets are absolute, or
    relative to the first written record when ``relative_offsets`` (v1 inside
    a compressed wrapper). ``log_append_time``
    >= 0 stamps v1 records LogAppendTime with that time (bit 3 set); otherwise
    the record's own timestamp is kept (CreateTime). A timestamp < -1 cannot be
    written by Kafka's builder; with ``clamp_timestamps`` it is written as -1,
    else the walk stops and reports it (see the return value). Headers are
    dropped (``RecordsUtil`` ignores them); ``had_headers`` reports them.
    ``out`` needs ``(end - pos) + 27 * count`` bytes at most.

    Returns ``(written, out_end, first_written_offset, last_written_offset,
    max_timestamp, offset_of_max_timestamp, had_headers)``; when a timestamp
    < -1 stops the walk, ``written`` is ``-1 - index`` of that record.
    """
    written = 0
    first_written = -1
    last_written = -1
    max_ts = -1
    offset_of_max = -1
    had_headers = False
    attributes = 0x08 if (to_magic == 1 and log_append_time >= 0) else 0
    for index in range(count):
        body, p = read_varint(buf, pos, end)
        rec_end = p + body
        p += 1
        ts_delta, p = read_varlong(buf, p, rec_end)
        offset_delta, p = read_varint(buf, p, rec_end)
        key_len, p = read_varint(buf, p, rec_end)
        key_pos = p
        if key_len > 0:
            p += key_len
        value_len, p = read_varint(buf, p, rec_end)
        value_pos = p
        if value_len > 0:
            p += value_len
        headers, p = read_varint(buf, p, rec_end)
        if headers > 0:
            had_headers = True
        pos = rec_end
        offset = _j64(base_offset + offset_delta)
        if offset < first_offset:
            continue
        if renumber_from >= 0:
            offset = renumber_from + written
        ts = batch_max_timestamp if lat_batch else _j64(base_timestamp + ts_delta)
        if to_magic == 1 and log_append_time >= 0:
            ts = log_append_time
        if ts < -1:
            if not clamp_timestamps:
                return (
                    -1 - index,
                    out_pos,
                    first_written,
                    last_written,
                    max_ts,
                    offset_of_max,
                    had_headers,
                )
            ts = -1
        if written == 0:
            first_written = offset
        entry_offset = offset - first_written if relative_offsets else offset
        k = key_len if key_len >= 0 else 0
        v = value_len if value_len >= 0 else 0
        record_size = (14 if to_magic == 0 else 22) + k + v
        q = out_pos
        if q + 12 + record_size > len(out):
            raise ValueError("output buffer too small")
        out[q : q + 8] = entry_offset.to_bytes(8, "big", signed=True)
        out[q + 8 : q + 12] = record_size.to_bytes(4, "big", signed=True)
        r = q + 16
        out[r] = to_magic
        out[r + 1] = attributes
        r += 2
        if to_magic == 1:
            out[r : r + 8] = ts.to_bytes(8, "big", signed=True)
            r += 8
        out[r : r + 4] = (key_len if key_len >= 0 else -1).to_bytes(4, "big", signed=True)
        r += 4
        if key_len > 0:
            out[r : r + key_len] = buf[key_pos : key_pos + key_len]
            r += key_len
        out[r : r + 4] = (value_len if value_len >= 0 else -1).to_bytes(4, "big", signed=True)
        r += 4
        if value_len > 0:
            out[r : r + value_len] = buf[value_pos : value_pos + value_len]
            r += value_len
        out[q + 12 : q + 16] = crc32(out, q + 16, r).to_bytes(4, "big")
        out_pos = r
        written += 1
        last_written = offset
        if to_magic > 0 and ts > max_ts:
            max_ts = ts
            offset_of_max = offset
    return written, out_pos, first_written, last_written, max_ts, offset_of_max, had_headers
