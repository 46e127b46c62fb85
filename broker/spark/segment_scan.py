"""Reading one segment file that may be damaged: framing, batch facts, records.

Every entry of a ``.log``, whatever its magic, starts with::

    Offset int64 | Size int32 | ... | Magic int8 (entry byte 16)

(v2 layout in ``broker/records/batch.py``, v0/v1 in ``broker/records/legacy.py``).
Kafka's ``FileLogInputStream`` stops at the first entry it cannot frame;
a pipeline reading old or damaged logs must not, so framing here yields
:class:`Span` s: an entry, or a range of bytes that could not be read with
the reason. After an unreadable range the walk resumes at the next offset
index position that holds a plausible batch (sane header, CRC matching):
index entries point at batch starts (``OffsetIndex.java``), which is the only
resynchronisation point a segment offers. With no such position left, the
rest of the file is one unreadable span (a torn tail when a batch runs past
the end of the file).

A framed entry is then read at one of two depths:

* :func:`batch_facts` -- one row of facts per batch (counts, sizes,
  timestamps, CRC) without materialising records: v2 records are walked by
  the compiled twin (``broker.records.scan.walk_v2``), legacy wrappers are
  decompressed and read by ``broker.records.iterate``;
* :func:`batch_records` -- the records themselves (``iterate.Batch.records``).

A batch whose records cannot be decoded (bad compression, broken record
structure) is reported with its error; the walk goes on with the next entry,
whose position the intact framing gives.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType

from broker.errors import InvalidRecordError, KafkaError
from broker.records import batch as v2
from broker.records import codecs, legacy
from broker.records import scan as hot
from broker.records.batch import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES, legacy_records, v2_records
from broker.records.record import Record

_OFFSET_SIZE = struct.Struct(">qi")

#: bytes needed to read an entry's offset, size and magic
HEADER_SIZE_UP_TO_MAGIC = 17
#: smallest entry of each magic (``LegacyRecord.RECORD_OVERHEAD_V0/V1`` + 12, v2 header)
MIN_ENTRY_SIZE = {0: LOG_OVERHEAD + 14, 1: LOG_OVERHEAD + 22, 2: RECORD_BATCH_OVERHEAD}
#: smallest entry the framing accepts: Kafka frames any size field >= 14
#: (``FileLogInputStream``) and leaves a too-small v1 record to ``isValid``;
#: a v2 entry shorter than its header cannot be read at all
MIN_FRAMED_SIZE = {0: LOG_OVERHEAD + 14, 1: LOG_OVERHEAD + 14, 2: RECORD_BATCH_OVERHEAD}

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

#: errors a damaged batch can raise while it is decoded: the codecs and record
#: readers raise KafkaError subclasses; struct/Index errors guard reads of
#: fields that a corrupt length pushed past the end of the entry
DECODE_ERRORS: tuple[type[BaseException], ...] = (KafkaError, struct.error, IndexError, ValueError)


def codec_name(codec: int) -> str:
    return CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else f"unknown-{codec}"


@dataclass(frozen=True, slots=True)
class Span:
    """An entry (``magic`` 0-2, ``problem`` None) or an unreadable byte range
    (``magic`` -1, ``problem`` says why)."""

    position: int
    size: int
    magic: int
    problem: str | None = None

    @property
    def readable(self) -> bool:
        return self.problem is None


class SegmentBytes:
    """A ``.log`` mapped read-only (nothing is copied; an empty file maps to b"")."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._mm: mmap.mmap | None = None
        fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(fd).st_size
            if self.size:
                self._mm = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)

    @property
    def buf(self) -> ReadableBuffer:
        return self._mm if self._mm is not None else b""

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def __enter__(self) -> SegmentBytes:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def is_plausible_start(buf: ReadableBuffer, pos: int, file_size: int) -> bool:
    """Whether a whole, CRC-valid entry of a known magic starts at ``pos``."""
    if pos < 0 or file_size - pos < HEADER_SIZE_UP_TO_MAGIC:
        return False
    _offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
    magic = buf[pos + v2.MAGIC_OFFSET]
    if magic > MAGIC_V2:
        return False
    total = size + LOG_OVERHEAD
    if total < MIN_ENTRY_SIZE[magic] or pos + total > file_size:
        return False
    if magic == MAGIC_V2:
        return v2.is_valid(buf, pos, total)
    return legacy.is_valid(buf, pos, total)


def frame(
    buf: ReadableBuffer,
    file_size: int,
    start: int = 0,
    stop: int | None = None,
    resync_positions: Sequence[int] = (),
) -> Iterator[Span]:
    """Spans of the entries starting in ``[start, stop)`` (see the module docstring).

    ``resync_positions`` (sorted) are where the walk may resume after bytes it
    cannot frame: the offset index positions of the segment.
    """
    end = file_size if stop is None else min(stop, file_size)
    pos = start
    while pos < end:
        remaining = file_size - pos
        problem: str | None = None
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            problem = f"torn tail: {remaining} bytes after the last entry, too few for a header"
        else:
            _offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
            magic = buf[pos + v2.MAGIC_OFFSET]
            total = size + LOG_OVERHEAD
            if magic > MAGIC_V2:
                problem = f"invalid magic {magic - 256 if magic > 127 else magic}"
            elif total < MIN_FRAMED_SIZE[magic]:
                problem = f"size field {size} is too small for a magic v{magic} entry"
            elif total > remaining:
                problem = f"torn tail: entry declares {total} bytes, {remaining} remain in the file"
            else:
                yield Span(pos, total, magic)
                pos += total
                continue
        resume = _resume_position(buf, file_size, pos, resync_positions)
        yield Span(pos, resume - pos, -1, problem)
        pos = resume


def _resume_position(
    buf: ReadableBuffer, file_size: int, pos: int, resync_positions: Sequence[int]
) -> int:
    i = bisect.bisect_right(resync_positions, pos)
    while i < len(resync_positions):
        candidate = resync_positions[i]
        if candidate >= file_size:
            break
        if is_plausible_start(buf, candidate, file_size):
            return candidate
        i += 1
    return file_size


# ---------------------------------------------------------------------------
# batch facts
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class BatchFacts:
    """What one entry says about itself and its records (None: not known).

    ``base_offset`` is the first record's offset (Kafka's ``baseOffset()``;
    for a legacy wrapper that needs decompression); ``max_timestamp`` and
    ``min_timestamp`` cover the records that have a timestamp (>= 0),
    ``no_timestamp_records`` counts the others; ``header_max_timestamp`` is
    the batch's own max timestamp field (v2) or the entry's timestamp (v1).
    ``uncompressed_bytes`` is the entry's size with its records stored
    uncompressed (header + the decompressed records section).
    """

    position: int
    size: int
    magic: int | None = None
    codec: int | None = None
    timestamp_type: int | None = None
    base_offset: int | None = None
    last_offset: int | None = None
    record_count: int | None = None
    uncompressed_bytes: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    no_timestamp_records: int | None = None
    header_max_timestamp: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    base_sequence: int | None = None
    partition_leader_epoch: int | None = None
    is_transactional: bool | None = None
    is_control: bool | None = None
    crc_valid: bool | None = None
    error: str | None = None


def unreadable_facts(span: Span) -> BatchFacts:
    return BatchFacts(span.position, span.size, error=span.problem)


def header_facts(buf: ReadableBuffer, span: Span, verify_crc: bool) -> BatchFacts:
    """The facts of the entry's header alone (no record is read).

    For a legacy wrapper ``base_offset`` and ``record_count`` stay None.
    """
    pos, size = span.position, span.size
    if span.magic == MAGIC_V2:
        h = v2.read_header(buf, pos)
        return BatchFacts(
            position=pos,
            size=size,
            magic=MAGIC_V2,
            codec=h.compression_type,
            timestamp_type=int(h.timestamp_type),
            base_offset=h.base_offset,
            last_offset=h.last_offset,
            record_count=h.records_count,
            header_max_timestamp=h.max_timestamp,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            partition_leader_epoch=h.partition_leader_epoch,
            is_transactional=h.is_transactional,
            is_control=h.is_control_batch,
            crc_valid=v2.is_valid(buf, pos, size) if verify_crc else None,
        )
    lh = legacy.read_entry_header(buf, pos)
    compressed = lh.compression_type != CompressionType.NONE
    return BatchFacts(
        position=pos,
        size=size,
        magic=lh.magic,
        codec=lh.compression_type,
        timestamp_type=int(lh.timestamp_type),
        base_offset=None if compressed else lh.offset,
        last_offset=lh.offset,
        record_count=None if compressed else 1,
        header_max_timestamp=lh.timestamp,
        producer_id=v2.NO_PRODUCER_ID,
        producer_epoch=v2.NO_PRODUCER_EPOCH,
        base_sequence=v2.NO_SEQUENCE,
        partition_leader_epoch=v2.NO_PARTITION_LEADER_EPOCH,
        is_transactional=False,
        is_control=False,
        crc_valid=legacy.is_valid(buf, pos, size) if verify_crc else None,
    )


def batch_facts(
    buf: ReadableBuffer,
    span: Span,
    *,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> BatchFacts:
    """Header facts plus what the records say (counts, timestamps, sizes)."""
    if not span.readable:
        return unreadable_facts(span)
    facts = header_facts(buf, span, verify_crc)
    try:
        if span.magic == MAGIC_V2:
            _v2_record_facts(buf, span, facts, max_decompressed_bytes)
        else:
            _legacy_record_facts(buf, span, facts, max_decompressed_bytes)
    except DECODE_ERRORS as exc:
        facts.error = f"undecodable batch: {exc}"
    return facts


def _set_timestamps(facts: BatchFacts, timestamps: Sequence[int]) -> None:
    stamped = [t for t in timestamps if t >= 0]
    facts.no_timestamp_records = len(timestamps) - len(stamped)
    facts.min_timestamp = min(stamped) if stamped else None
    facts.max_timestamp = max(stamped) if stamped else None


def _walk_structure(
    data: ReadableBuffer, pos: int, stop: int, count: int, h: v2.RecordBatchHeader
) -> tuple[int, int]:
    """Every record's structure checked by the compiled walk; (max, min)
    timestamp. No timestamp check (create_time False, lat False), so no
    record is left out of min/max and none raises for its timestamp."""
    max_ts, min_ts, _consecutive, _canonical, _errors, _counts = hot.walk_v2(
        data, pos, stop, count=count, base_offset=h.base_offset,
        base_timestamp=h.base_timestamp, lat_batch=False, batch_max_timestamp=h.max_timestamp,
        now=0, before_max=0, after_max=0, create_time=False, compacted=False,
        want_canonical=False, error_limit=0,
    )  # fmt: skip
    return max_ts, min_ts


def _v2_record_facts(
    buf: ReadableBuffer, span: Span, facts: BatchFacts, max_decompressed_bytes: int
) -> None:
    h = v2.read_header(buf, span.position)
    end = span.position + span.size
    count = h.records_count
    if h.compression_type != CompressionType.NONE:
        with memoryview(buf) as view:
            data: ReadableBuffer = codecs.decompress(
                h.compression_type,
                view[span.position + RECORDS_OFFSET : end],
                max_size=max_decompressed_bytes,
            )
        p, stop = 0, len(data)
    else:
        data, p, stop = buf, span.position + RECORDS_OFFSET, end
    facts.uncompressed_bytes = RECORD_BATCH_OVERHEAD + stop - p
    max_ts, min_ts = _walk_structure(data, p, stop, count, h)
    if count <= 0:
        _set_timestamps(facts, [])
    elif h.timestamp_type is TimestampType.LOG_APPEND_TIME:
        _set_timestamps(facts, [h.max_timestamp] * count)
    elif min_ts >= 0:
        facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp = 0, min_ts, max_ts
    elif max_ts < 0:
        facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp = count, None, None
    else:  # some records with a timestamp, some without: count them one by one
        records = v2_records(buf, span.position, max_decompressed_bytes)
        _set_timestamps(facts, [r.timestamp for r in records])


def _legacy_record_facts(
    buf: ReadableBuffer, span: Span, facts: BatchFacts, max_decompressed_bytes: int
) -> None:
    magic = span.magic
    if span.size < MIN_ENTRY_SIZE[magic]:
        raise ValueError(f"record of {span.size - LOG_OVERHEAD} bytes is too small for v{magic}")
    if facts.codec != CompressionType.NONE and _wrapper_facts(
        buf, span, facts, max_decompressed_bytes
    ):
        return
    records = legacy_records(buf, span.position, span.size, max_decompressed_bytes)
    facts.base_offset = records[0].offset
    facts.record_count = len(records)
    if facts.codec == CompressionType.NONE:
        facts.uncompressed_bytes = span.size
    else:
        _key_pos, _key_len, _value_pos, value_len = legacy.key_value_spans(
            buf, span.position, span.size
        )
        facts.uncompressed_bytes = span.size - value_len + sum(r.size_in_bytes for r in records)
    _set_timestamps(
        facts, [r.timestamp for r in records] if magic > MAGIC_V0 else [-1] * len(records)
    )


def _wrapper_facts(
    buf: ReadableBuffer, span: Span, facts: BatchFacts, max_decompressed_bytes: int
) -> bool:
    """Facts of a compressed v0/v1 wrapper from the compiled inner walk
    (``scan.walk_legacy``) instead of one ``Record`` per inner record.

    The same reading rules as ``iterate.legacy_records`` (``AbstractLegacyRecordBatch.java``):
    ZSTD or a null value refused, a trailing partial inner entry ignored,
    v1 offsets from the wrapper offset (0: the librdkafka quirk). Returns
    False -- leaving the batch to the Record path -- when the walk reports
    something that path reads differently (an inner CRC or magic mismatch,
    which it does not check) or when timestamps are mixed with -1.
    """
    lh = legacy.read_entry_header(buf, span.position)
    if lh.compression_type == CompressionType.ZSTD:
        return False  # the Record path raises Kafka's error for it
    _key_pos, _key_len, value_pos, value_len = legacy.key_value_spans(buf, span.position, span.size)
    if value_len < 0:
        return False
    with memoryview(buf) as view:
        data = codecs.decompress(
            lh.compression_type,
            view[value_pos : value_pos + value_len],
            max_size=max_decompressed_bytes,
            magic=lh.magic,
        )
    count, stop, _out, max_ts, min_ts, _consecutive, _first_ts, _errors, counts = hot.walk_legacy(
        data,
        0,
        len(data),
        wrapper_magic=lh.magic,
        wrapper_offset=lh.offset,
        wrapper_timestamp=lh.timestamp,
        wrapper_lat=False,
        now=0,
        before_max=0,
        after_max=0,
        create_time=False,
        compacted=False,
        out=None,
        out_pos=0,
        error_limit=0,
    )
    if counts:
        return False
    first_inner = _OFFSET_SIZE.unpack_from(data, 0)[0]
    last_inner = _last_inner_offset(data, stop)
    if lh.magic == MAGIC_V0 or lh.offset == 0:
        facts.base_offset = first_inner
    else:
        facts.base_offset = lh.offset - last_inner + first_inner
    facts.record_count = count
    facts.uncompressed_bytes = span.size - value_len + stop
    if lh.magic == MAGIC_V0:
        facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp = count, None, None
    elif lh.timestamp_type is TimestampType.LOG_APPEND_TIME:
        _set_timestamps(facts, [lh.timestamp] * count)
    elif min_ts >= 0:
        facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp = 0, min_ts, max_ts
    elif max_ts < 0:
        facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp = count, None, None
    else:
        return False
    return True


def _last_inner_offset(data: ReadableBuffer, stop: int) -> int:
    """Stored offset of the last whole inner entry ending at ``stop``."""
    p = 0
    last = 0
    unpack = _OFFSET_SIZE.unpack_from
    while p < stop:
        last, size = unpack(data, p)
        p += LOG_OVERHEAD + size
    return int(last)


RecordTuple = tuple[int, int, int, "bytes | None", "bytes | None", list[tuple[str, "bytes | None"]]]


def v2_record_tuples(
    buf: ReadableBuffer, span: Span, max_decompressed_bytes: int
) -> list[RecordTuple]:
    """The records of the v2 batch at ``span`` as (offset, timestamp,
    timestamp type, key, value, headers) tuples: what ``iterate.v2_records``
    reads, without a ``Record`` object per record.

    The batch is first walked by the compiled twin with ``DefaultRecord``'s
    structure rules (``scan.walk_v2``: the same errors as ``v2_records``);
    the fields are then cut out with its varint readers.
    """
    h = v2.read_header(buf, span.position)
    count = h.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    end = span.position + span.size
    if h.compression_type != CompressionType.NONE:
        with memoryview(buf) as view:
            data: ReadableBuffer = codecs.decompress(
                h.compression_type,
                view[span.position + RECORDS_OFFSET : end],
                max_size=max_decompressed_bytes,
            )
        p, stop = 0, len(data)
    else:
        data, p, stop = buf, span.position + RECORDS_OFFSET, end
    if count == 0:
        return []
    _walk_structure(data, p, stop, count, h)
    lat = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    ts_type = int(h.timestamp_type)
    base_offset, base_ts, max_ts = h.base_offset, h.base_timestamp, h.max_timestamp
    read_varint, read_varlong = hot.read_varint, hot.read_varlong
    out: list[RecordTuple] = []
    append = out.append
    for _ in range(count):
        length, q = read_varint(data, p, stop)
        record_end = q + length
        ts_delta, q = read_varlong(data, q + 1, record_end)
        offset_delta, q = read_varint(data, q, record_end)
        key_len, q = read_varint(data, q, record_end)
        key = None
        if key_len >= 0:
            key = bytes(data[q : q + key_len])
            q += key_len
        value_len, q = read_varint(data, q, record_end)
        value = None
        if value_len >= 0:
            value = bytes(data[q : q + value_len])
            q += value_len
        header_count, q = read_varint(data, q, record_end)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(header_count):
            hk_len, q = read_varint(data, q, record_end)
            hkey = bytes(data[q : q + hk_len]).decode("utf-8", "surrogateescape")
            q += hk_len
            hv_len, q = read_varint(data, q, record_end)
            hvalue = None
            if hv_len >= 0:
                hvalue = bytes(data[q : q + hv_len])
                q += hv_len
            headers.append((hkey, hvalue))
        p = record_end
        append(
            (
                base_offset + offset_delta,
                max_ts if lat else base_ts + ts_delta,
                ts_type,
                key,
                value,
                headers,
            )
        )
    return out


def record_tuples(
    buf: ReadableBuffer, span: Span, *, max_decompressed_bytes: int
) -> list[RecordTuple]:
    """The records of a readable span as tuples (see :func:`v2_record_tuples`)."""
    if span.magic == MAGIC_V2:
        return v2_record_tuples(buf, span, max_decompressed_bytes)
    return [
        (r.offset, r.timestamp, int(r.timestamp_type), r.key, r.value, [])
        for r in batch_records(buf, span, max_decompressed_bytes=max_decompressed_bytes)
    ]


def batch_records(
    buf: ReadableBuffer,
    span: Span,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[Record]:
    """The records of a readable span (raises what the record readers raise)."""
    if span.magic == MAGIC_V2:
        return v2_records(buf, span.position, max_decompressed_bytes)
    if span.size < MIN_ENTRY_SIZE[span.magic]:
        raise ValueError(
            f"record of {span.size - LOG_OVERHEAD} bytes is too small for v{span.magic}"
        )
    return legacy_records(buf, span.position, span.size, max_decompressed_bytes)
