"""Iterating batches and records of any magic (the slow path).

Used by dump-log, Spark, tests and down-conversion tests -- never by the
produce hot path. Batches are framed with :mod:`broker.records.entries`
(``ByteBufferLogInputStream`` / ``FileLogInputStream`` rules); records are
materialised as :class:`broker.records.record.Record`.

Reading rules (Kafka's iterators):

* v2 (``DefaultRecordBatch.RecordIterator``): negative count ->
  InvalidRecordError; the records run to exactly the end of the (decompressed)
  records section: too few -> "premature EOF", too many -> "records still
  remaining"; count 0 -> no records.
* legacy uncompressed: the entry is its own single record.
* legacy compressed (``AbstractLegacyRecordBatch.DeepRecordsIterator``): ZSTD
  or a null wrapper value -> InvalidRecordError; inner size < 14 ->
  CorruptRecordError; a trailing partial inner entry is ignored; no inner
  entry -> InvalidRecordError; v1 absolute offset = wrapper offset - last
  inner offset + inner offset (wrapper offset 0: inner offsets as they are, the
  librdkafka quirk; wrapper offset < last inner -> InvalidRecordError); inner
  v1 records take the wrapper's timestamp type (and its timestamp under
  LogAppendTime); an inner compressed record -> InvalidRecordError.

Every decompression is bounded by ``max_decompressed_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records import batch as v2
from broker.records import codecs, legacy
from broker.records.batch import (
    LOG_OVERHEAD,
    MAGIC_V1,
    MAGIC_V2,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.entries import Entry, iter_buffer_entries, iter_file_entries
from broker.records.record import Record, decode_v2_record

#: default bound of one decompressed batch for the slow-path readers
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Batch:
    """One entry of a record set, any magic."""

    buf: ReadableBuffer
    entry: Entry

    @property
    def magic(self) -> int:
        return self.entry.magic

    @property
    def position(self) -> int:
        return self.entry.position

    @property
    def size_in_bytes(self) -> int:
        return self.entry.size_in_bytes

    def header(self) -> v2.RecordBatchHeader:
        return v2.read_header(self.buf, self.entry.position)

    def legacy_header(self) -> legacy.LegacyEntryHeader:
        return legacy.read_entry_header(self.buf, self.entry.position)

    @property
    def compression_type(self) -> int:
        if self.magic >= MAGIC_V2:
            return self.header().compression_type
        return self.legacy_header().compression_type

    @property
    def is_valid(self) -> bool:
        from broker.records.entries import is_valid_entry

        return is_valid_entry(self.buf, self.entry)

    def records(
        self, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> list[Record]:
        if self.magic >= MAGIC_V2:
            return v2_records(self.buf, self.entry.position, max_decompressed_bytes)
        return legacy_records(
            self.buf, self.entry.position, self.entry.size_in_bytes, max_decompressed_bytes
        )


def iter_batches(
    buf: ReadableBuffer, start: int = 0, end: int | None = None, *, file: bool = False
) -> Iterator[Batch]:
    """Batches of a produce request's records (or, with ``file``, of segment bytes)."""
    entries = iter_file_entries(buf, start, end) if file else iter_buffer_entries(buf, start, end)
    for entry in entries:
        yield Batch(buf, entry)


def iter_records(
    buf: ReadableBuffer,
    start: int = 0,
    end: int | None = None,
    *,
    file: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[Record]:
    """Every record of every batch, deep (inner records of legacy wrappers)."""
    for b in iter_batches(buf, start, end, file=file):
        yield from b.records(max_decompressed_bytes=max_decompressed_bytes)


def v2_records(buf: ReadableBuffer, pos: int, max_decompressed_bytes: int) -> list[Record]:
    """The records of the v2 batch at ``pos``."""
    h = v2.read_header(buf, pos)
    if h.records_count < 0:
        raise InvalidRecordError(f"Found invalid record count {h.records_count} in magic v2 batch")
    if h.records_count == 0:
        return []
    end = pos + h.size_in_bytes
    if h.compression_type != CompressionType.NONE:
        with memoryview(buf) as view:
            data: ReadableBuffer = codecs.decompress(
                h.compression_type,
                view[pos + RECORDS_OFFSET : end],
                max_size=max_decompressed_bytes,
            )
        p, stop = 0, len(data)
    else:
        data, p, stop = buf, pos + RECORDS_OFFSET, end
    lat = h.max_timestamp if h.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    out: list[Record] = []
    for _ in range(h.records_count):
        if p >= stop:
            raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
        record, p = decode_v2_record(
            data,
            p,
            stop,
            base_offset=h.base_offset,
            base_timestamp=h.base_timestamp,
            base_sequence=h.base_sequence,
            log_append_time=lat,
        )
        out.append(record)
    if p != stop:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return out


def legacy_records(
    buf: ReadableBuffer, pos: int, size_in_bytes: int, max_decompressed_bytes: int
) -> list[Record]:
    """The records of the legacy entry at ``pos`` (deep for a wrapper)."""
    h = legacy.read_entry_header(buf, pos)
    if h.compression_type == CompressionType.NONE:
        return [legacy.read_record(buf, pos, size_in_bytes)]
    if h.magic not in (0, 1):
        raise InvalidRecordError(
            f"Invalid wrapper magic found in legacy deep record iterator {h.magic}"
        )
    if h.compression_type == CompressionType.ZSTD:
        raise InvalidRecordError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {h.magic}"
        )
    _, _, value_pos, value_len = legacy.key_value_spans(buf, pos, size_in_bytes)
    if value_len < 0:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {h.magic})"
        )
    with memoryview(buf) as view:
        inner = codecs.decompress(
            h.compression_type,
            view[value_pos : value_pos + value_len],
            max_size=max_decompressed_bytes,
            magic=h.magic,
        )
    spans: list[tuple[int, int, int]] = []  # (position, size, stored offset)
    p = 0
    end = len(inner)
    while end - p >= LOG_OVERHEAD:
        offset = int.from_bytes(inner[p : p + 8], "big", signed=True)
        size = int.from_bytes(inner[p + 8 : p + 12], "big", signed=True)
        if size < legacy.MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"Record size is less than the minimum record overhead ({legacy.MIN_RECORD_SIZE})"
            )
        if end - p - LOG_OVERHEAD < size:
            break
        spans.append((p, size + LOG_OVERHEAD, offset))
        p += size + LOG_OVERHEAD
    if not spans:
        raise InvalidRecordError("Found invalid compressed record set with no inner records")
    base = 0
    if h.magic == MAGIC_V1 and h.offset != 0:
        last_inner = spans[-1][2]
        if h.offset < last_inner:
            raise InvalidRecordError(
                "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                f"'{h.offset}' is less than the last inner message offset '{last_inner}' "
                "and it is not zero."
            )
        base = h.offset - last_inner
    out: list[Record] = []
    for entry_pos, entry_size, stored in spans:
        inner_magic = inner[entry_pos + legacy.RECORD_MAGIC_OFFSET]
        absolute = base + stored if h.magic == MAGIC_V1 else stored
        if inner[entry_pos + legacy.RECORD_ATTRIBUTES_OFFSET] & 0x07:
            raise InvalidRecordError("Inner messages must not be compressed")
        wrapper_type = h.timestamp_type if inner_magic == MAGIC_V1 else None
        out.append(
            legacy.read_record(
                inner,
                entry_pos,
                entry_size,
                offset=absolute,
                wrapper_timestamp=h.timestamp if inner_magic == MAGIC_V1 else None,
                wrapper_timestamp_type=wrapper_type,
            )
        )
    return out
