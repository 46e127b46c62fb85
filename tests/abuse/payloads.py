"""Hostile produce payloads: small requests that ask the broker for a lot of work.

Each builder returns the records bytes of one partition (what goes into a
ProduceRequest's ``records`` field); the tests and ``bench/bench_abuse.py``
send them. All of them are *valid framing* (right sizes and CRCs), so they
reach the validator; what makes them expensive is what the validator finds
inside. They are the cases issue 18 measured against the broker at bed2236:

* :func:`legacy_gzip_lat_bomb` -- one magic-1 gzip wrapper with the
  LogAppendTime bit set around ``count`` identical 34-byte inner messages
  (null key, null value). Every inner message fails the timestamp-type check:
  INVALID_TIMESTAMP with one record error per message (the wrapper's
  timestamp is -1, so this needs no topic config). 1.97 M messages
  inflate to 67 MB (just under the default 64 MiB decompression bound) from
  about 195 KB of gzip.
* :func:`keyless_zstd_bomb` -- one v2 zstd batch of ``count`` identical
  keyless records (offset delta 0, timestamp delta 0, null key, empty value),
  for a ``cleanup.policy=compact`` topic: every record fails the key check
  (INVALID_RECORD). 4 M records are 28 MB of records in a few KB of zstd.
* :func:`recompress_bomb` -- a v2 batch of highly compressible records in one
  codec for a topic whose ``compression.type`` is another: valid data that
  the broker must inflate, walk and compress again (a legitimate but large
  rebuild).
"""

from __future__ import annotations

import random
import struct
import time
import zlib

from broker.records import codecs
from broker.records.batch import CompressionType, TimestampType
from broker.records.builder import assemble_v2_batch
from broker.records.legacy_builder import wrap_legacy

#: a v1 inner message with offset 0, null key and null value:
#: offset(8) size(4) crc(4) magic(1) attributes(1) timestamp(8) key len(4) value len(4)
_V1_INNER_SIZE = 34


def _v1_inner(timestamp: int) -> bytes:
    body = struct.pack(">bbqii", 1, 0, timestamp, -1, -1)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", 0, len(body) + 4, crc) + body


def legacy_gzip_lat_bomb(count: int = 1_970_000) -> bytes:
    """Magic 1, gzip, LogAppendTime wrapper with no timestamp (-1), ``count``
    identical inner messages. On a CreateTime topic a record without a
    timestamp in a LogAppendTime batch fails ``validateTimestamp``'s second
    branch, so every inner message is a record error with the default config."""
    ts = -1
    inner = _v1_inner(ts) * count
    return bytes(
        wrap_legacy(
            inner,
            magic=1,
            compression_type=CompressionType.GZIP,
            level=9,
            last_offset=0,
            timestamp=ts,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
        )
    )


#: a v2 record: length 6, attributes 0, timestamp delta 0, offset delta 0,
#: key null (-1), value empty (0), no headers
_KEYLESS_RECORD = bytes([6 << 1, 0, 0, 0, 1, 0, 0])


def keyless_zstd_bomb(count: int = 4_000_000, *, now_ms: int | None = None) -> bytes:
    """One zstd v2 batch of ``count`` identical keyless records."""
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    return bytes(
        assemble_v2_batch(
            _KEYLESS_RECORD * count,
            num_records=count,
            base_offset=0,
            last_offset_delta=count - 1,
            base_timestamp=ts,
            max_timestamp=ts,
            compression_type=CompressionType.ZSTD,
            level=19,
        )
    )


def _record(offset_delta: int, value: bytes) -> bytes:
    from broker.records.record import encode_v2_record

    return encode_v2_record(offset_delta, 0, b"k", value)


def recompress_bomb(
    inflated_bytes: int = 32 << 20,
    *,
    codec: int = CompressionType.ZSTD,
    value_size: int = 1000,
    now_ms: int | None = None,
) -> bytes:
    """A valid ``codec`` batch of about ``inflated_bytes`` of repetitive records."""
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    value = b"x" * value_size
    one = len(_record(0, value))
    count = max(1, inflated_bytes // one)
    body = b"".join(_record(i, value) for i in range(count))
    return bytes(
        assemble_v2_batch(
            body,
            num_records=count,
            base_offset=0,
            last_offset_delta=count - 1,
            base_timestamp=ts,
            max_timestamp=ts,
            compression_type=codec,
            level=19 if codec == CompressionType.ZSTD else None,
        )
    )


def inflated_size(records: bytes) -> int:
    """What the single batch/wrapper of ``records`` decompresses to (for reports)."""
    attributes_v2 = records[21 + 1] if records[16] == 2 else None
    if attributes_v2 is not None:
        codec = attributes_v2 & 0x07
        return len(codecs.decompress(codec, memoryview(records)[61:], max_size=1 << 31))
    codec = records[17] & 0x07
    value_len = struct.unpack_from(">i", records, 30)[0]
    return len(
        codecs.decompress(
            codec, memoryview(records)[34 : 34 + value_len], max_size=1 << 31, magic=1
        )
    )


def codec_bomb(codec: int, inflated_bytes: int = 70 << 20) -> bytes:
    """One v2 batch of ``codec`` holding one record whose value is
    ``inflated_bytes`` zeros: past the default 64 MiB decompression bound,
    so the answer is INVALID_RECORD ("decompressed size exceeds the limit")
    after the broker decoded up to the bound."""
    from broker.records.record import encode_v2_record

    body = encode_v2_record(0, 0, b"k", bytes(inflated_bytes))
    return bytes(
        assemble_v2_batch(
            body,
            num_records=1,
            base_offset=0,
            last_offset_delta=0,
            base_timestamp=int(time.time() * 1000),
            max_timestamp=int(time.time() * 1000),
            compression_type=codec,
        )
    )


def short_count_bomb(count: int = 4_000_000) -> bytes:
    """A zstd batch that declares ``count`` records (consistent with its
    last offset delta) but holds one record fewer: the walk reads them all
    and finds the end early (INVALID_RECORD, "premature EOF")."""
    ts = int(time.time() * 1000)
    return bytes(
        assemble_v2_batch(
            _KEYLESS_RECORD * (count - 1),
            num_records=count,
            base_offset=0,
            last_offset_delta=count - 1,
            base_timestamp=ts,
            max_timestamp=ts,
            compression_type=CompressionType.ZSTD,
            level=19,
        )
    )


def mutated(batch: bytes, rng: random.Random, flips: int = 3) -> bytes:
    """``batch`` (one v2 batch) with ``flips`` random bytes changed after the
    CRC field and the CRC recomputed, so that the broker's CRC check passes
    and its structure checks meet the damage."""
    from broker.records.batch import write_crc

    out = bytearray(batch)
    for _ in range(flips):
        out[rng.randrange(21, len(out))] = rng.randrange(256)
    write_crc(out, 0, len(out))
    return bytes(out)


def mutated_legacy(entry: bytes, rng: random.Random, flips: int = 3) -> bytes:
    """One legacy entry (a v0/v1 message or a compressed wrapper) with bytes
    changed after its CRC field and the CRC-32 recomputed."""
    out = bytearray(entry)
    for _ in range(flips):
        out[rng.randrange(16, len(out))] = rng.randrange(256)
    out[12:16] = zlib.crc32(out[16:]).to_bytes(4, "big")
    return bytes(out)
