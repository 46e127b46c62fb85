"""Down-conversion of stored batches for Fetch v0-v3 consumers
(``RecordsUtil.downConvert`` driven the way ``LazyDownConversionRecords``
drives it).

Per batch, in log order:

* ``to_magic`` < 2: control batches are dropped (v0/v1 have no markers); a
  ZSTD batch cannot be written in v0/v1: before any output ->
  UnsupportedCompressionTypeError (Kafka answers the fetch with
  UNSUPPORTED_COMPRESSION_TYPE), after some output -> conversion stops there
  (Kafka sends what it has and the consumer meets the error on its next fetch
  from that offset).
* a batch already at or below ``to_magic`` is copied as it is.
* a v2 batch becomes a v0/v1 message set with the batch's codec (one
  compressed wrapper, v1 inner offsets relative) or, uncompressed, one entry per
  record -- then records below ``first_offset`` are dropped (librdkafka relies
  on this); timestamps: LogAppendTime batches stamp the batch max timestamp;
  headers are dropped. The per-record encoding is one compiled call
  (``scan.v2_to_legacy``).

Bounded by ``max_bytes`` of *source* batches (KIP-283 chunking): the first
batch that yields output is always converted so a consumer makes progress;
later batches only while the running source size stays within ``max_bytes``.

Stats (``RecordValidationStats`` as FetchMessageConversionsPerSec and the
fetch TemporaryMemoryBytes / MessageConversionsTimeMs count them):
temporary_memory_bytes = size of every batch taken + the uncompressed bytes
written for each converted one; num_records_converted = records written by
the builders; conversion_time_nanos = the whole call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.errors import UnsupportedCompressionTypeError
from broker.records import codecs, scan
from broker.records.batch import (
    MAGIC_V1,
    MAGIC_V2,
    RECORDS_OFFSET,
    CompressionType,
    TimestampType,
)
from broker.records.buffers import ReadableBuffer
from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES, Batch, iter_batches
from broker.records.legacy_builder import build_legacy, header_size, wrap_legacy
from broker.records.record import SimpleRecord
from broker.records.stats import RecordValidationStats

_LONG_MIN = -(2**63)


@dataclass(frozen=True, slots=True)
class ConvertedRecords:
    #: the converted record set; handed to the response as it is, not copied again
    records: bytes | bytearray
    stats: RecordValidationStats
    #: bytes of source batches consumed (the caller's next read position)
    source_bytes: int


def down_convert(
    buf: ReadableBuffer,
    to_magic: int,
    first_offset: int,
    *,
    max_bytes: int,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> ConvertedRecords:
    """Convert the batches of ``buf`` (log bytes) to ``to_magic`` (0 or 1)."""
    start = clock()
    out = bytearray()
    temporary = 0
    converted = 0
    source_used = 0
    size_so_far = 0
    produced = False
    for b in iter_batches(buf, file=True):
        size = b.size_in_bytes
        if produced and size_so_far + size > max_bytes:
            break
        if to_magic < MAGIC_V2:
            if b.magic >= MAGIC_V2 and b.header().is_control_batch:
                size_so_far += size
                source_used = b.position + size
                continue
            if b.compression_type == CompressionType.ZSTD:
                if not produced:
                    raise UnsupportedCompressionTypeError(
                        "Down-conversion of zstandard-compressed batches is not supported"
                    )
                break
        size_so_far += size
        source_used = b.position + size
        if b.magic <= to_magic:
            temporary += size
            with memoryview(buf) as view:
                out += view[b.position : b.position + size]
            produced = True
            continue
        piece, written, uncompressed = _convert_batch(
            b, to_magic, first_offset, max_decompressed_bytes
        )
        if written == 0:
            continue
        temporary += size + uncompressed
        converted += written
        out += piece
        produced = True
    stats = RecordValidationStats(temporary, converted, clock() - start)
    # ``out`` itself, not a copy: copying a fresh megabyte (page faults and
    # all) cost about as much as converting it (py-spy, bench/bench_consume.py)
    return ConvertedRecords(out, stats, source_used)


def _convert_batch(
    b: Batch, to_magic: int, first_offset: int, max_decompressed_bytes: int
) -> tuple[ReadableBuffer, int, int]:
    """(converted bytes, records written, builder.uncompressedBytesWritten); the
    bytes are a view or a buffer of their own, copied once into the output."""
    if b.magic < MAGIC_V2:
        return _convert_legacy(b, to_magic, first_offset, max_decompressed_bytes)
    h = b.header()
    codec = h.compression_type
    lat = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    end = b.position + h.size_in_bytes
    if codec != CompressionType.NONE:
        with memoryview(b.buf) as view:
            data: ReadableBuffer = codecs.decompress(
                codec, view[b.position + RECORDS_OFFSET : end], max_size=max_decompressed_bytes
            )
        pos, stop = 0, len(data)
    else:
        data, pos, stop = b.buf, b.position + RECORDS_OFFSET, end
    # walk first: the structure checks of the reader (the conversion loop trusts them)
    scan.walk_v2(
        data, pos, stop, count=h.records_count, base_offset=h.base_offset,
        base_timestamp=h.base_timestamp, lat_batch=lat, batch_max_timestamp=h.max_timestamp,
        now=0, before_max=2**63 - 1, after_max=2**63 - 1, create_time=False, compacted=False,
        want_canonical=False, error_limit=0,
    )  # fmt: skip
    # a legacy entry is at most 27 bytes longer than the v2 record it comes from
    out = scan.new_buffer((stop - pos) + 34 * max(h.records_count, 0) + 64)
    keep_from = first_offset if codec == CompressionType.NONE else _LONG_MIN
    written, out_end, _first_written, last_written, max_ts, _, _ = scan.v2_to_legacy(
        data, pos, stop, count=h.records_count, base_offset=h.base_offset,
        base_timestamp=h.base_timestamp, lat_batch=lat, batch_max_timestamp=h.max_timestamp,
        to_magic=to_magic, renumber_from=-1,
        relative_offsets=codec != CompressionType.NONE and to_magic >= MAGIC_V1,
        first_offset=keep_from, log_append_time=h.max_timestamp if lat else -1,
        clamp_timestamps=True, out=out, out_pos=0,
    )  # fmt: skip
    if written <= 0:
        return b"", 0, 0
    uncompressed = out_end + header_size(to_magic, codec)
    if codec == CompressionType.NONE:
        return memoryview(out)[:out_end], written, uncompressed
    wrapper = wrap_legacy(
        memoryview(out)[:out_end],
        magic=to_magic,
        compression_type=codec,
        level=None,
        last_offset=last_written,
        timestamp=h.max_timestamp if lat else max_ts,
        timestamp_type=h.timestamp_type,
    )
    return wrapper, written, uncompressed


def _convert_legacy(
    b: Batch, to_magic: int, first_offset: int, max_decompressed_bytes: int
) -> tuple[ReadableBuffer, int, int]:
    """v1 -> v0 (slow path; this broker never stores legacy batches itself)."""
    h = b.legacy_header()
    records = b.records(max_decompressed_bytes=max_decompressed_bytes)
    if h.compression_type == CompressionType.NONE:
        records = [r for r in records if r.offset >= first_offset]
    if not records:
        return b"", 0, 0
    lat = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    built = build_legacy(
        [SimpleRecord(max(r.timestamp, -1), r.key, r.value) for r in records],
        magic=to_magic,
        base_offset=records[0].offset,
        offsets=[r.offset for r in records],
        compression_type=h.compression_type,
        timestamp_type=h.timestamp_type,
        log_append_time=h.timestamp if lat else -1,
    )
    return built.buffer, built.num_records, built.uncompressed_bytes_written
