"""Codec throughput at Kafka's default levels, and what bounding costs.

For two record-like payloads -- 10,000 records of 100 B (about 1 MB) and
10,000 of 1 KB (about 10 MB), JSON-ish text so the ratios are realistic --
and every codec it prints:

* compress and decompress MB/s of ``broker.records.codecs`` (uncompressed
  bytes per second);
* ``decompress (bounded) / library``: our ``decompress(max_size=...)``
  against the plain library call on the same bytes (``zlib.decompress``,
  the chunks of ``cramjam.snappy.decompress_raw``, ``lz4.frame.decompress``,
  zstandard's ``decompressobj``), goal <= 1.05x: what framing checks and the
  output bound cost. Measured with a generous bound (4x the payload, as a
  caller sets it) and with a tight one (exactly the payload: lz4 then
  decodes in bounded steps instead of one call);
* ``compress / library``: the same for compression (no goal; for the record).

Timing on a shared machine: the allocator is warmed first (a 16 MiB block
allocated and freed raises glibc's dynamic mmap threshold, so that multi-MB
buffers are reused instead of being mapped and page-faulted afresh on every
call -- otherwise whichever side runs first pays thousands of page faults
per call), and the two sides of every ratio run alternately, best of
several rounds each.

Helpers for other benchmarks (the validator's goals are stated against
these baselines, measured in the same run):

* :func:`record_payload` -- the record-like bytes used here;
* :func:`decompress_only_seconds` -- seconds to decompress a payload;
* :func:`decompress_compress_seconds` -- seconds to decompress it and
  compress the result again (same or another codec), the floor of any
  conversion.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from collections.abc import Callable
from typing import Any

import cramjam
import lz4.frame
import zstandard

from bench.common import Report, best_of, note_rounds, rounds_of
from broker.records import codecs
from broker.records.batch import MAGIC_V2, CompressionType

CODECS = (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD)
PAYLOADS = {"10k x 100 B": (10_000, 100), "10k x 1 KB": (10_000, 1000)}

_WORDS = (
    *("alpha", "beta", "gamma", "delta", "kafka", "broker", "topic", "partition"),
    *("offset", "leader", "replica", "user", "event", "click", "view", "purchase"),
    *("session", "search", "cart", "checkout", "login", "logout"),
)


def record_payload(count: int, record_size: int, *, seed: int = 42) -> bytes:
    """``count`` JSON records of exactly ``record_size`` bytes each, concatenated."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        record = {
            "id": i,
            "user": f"user-{rng.randrange(100_000)}",
            "event": rng.choice(_WORDS),
            "ts": 1_700_000_000_000 + rng.randrange(10**7),
            "tags": [rng.choice(_WORDS) for _ in range(3)],
            "score": round(rng.random() * 100, 3),
            "text": "",
        }
        line = json.dumps(record)
        while len(line) < record_size:
            record["text"] += " " + " ".join(rng.choice(_WORDS) for _ in range(6))
            line = json.dumps(record)
        records.append(line[:record_size].encode())
    return b"".join(records)


def warm_allocator() -> None:
    """Allocate and free 16 MiB once: glibc then serves buffers of up to 16 MiB
    from its heap (and reuses them) instead of mapping fresh pages per call."""
    block = bytearray(16 * 1024 * 1024)
    del block


def paired_best(
    first: Callable[[], Any], second: Callable[[], Any], *, rounds: int
) -> tuple[float, float]:
    """Best-of seconds of ``first`` and ``second``, run alternately so that
    load changes on a shared machine hit both sides alike."""
    first()
    second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        times[0].extend(rounds_of(first, repeat=1))
        times[1].extend(rounds_of(second, repeat=1))
    note_rounds(times[0])
    note_rounds(times[1])
    return min(times[0]), min(times[1])


def decompress_only(
    codec: int, compressed: bytes, *, max_size: int, magic: int = MAGIC_V2
) -> Callable[[], bytearray]:
    """A callable decompressing ``compressed`` with ``broker.records.codecs``."""
    return lambda: codecs.decompress(codec, compressed, max_size=max_size, magic=magic)


def decompress_compress(
    codec: int,
    compressed: bytes,
    *,
    max_size: int,
    target: int | None = None,
    level: int | None = None,
    magic: int = MAGIC_V2,
) -> Callable[[], bytes]:
    """A callable decompressing ``compressed`` then compressing the result with
    ``target`` (default: the same codec) at ``level`` (default: Kafka's)."""
    target_codec = codec if target is None else target

    def run() -> bytes:
        data = codecs.decompress(codec, compressed, max_size=max_size, magic=magic)
        return codecs.compress(target_codec, data, level=level, magic=magic)

    return run


def decompress_only_seconds(
    codec: int, compressed: bytes, *, max_size: int, magic: int = MAGIC_V2, repeat: int = 5
) -> float:
    """Best-of seconds for one :func:`decompress_only` call."""
    return best_of(
        decompress_only(codec, compressed, max_size=max_size, magic=magic), repeat=repeat
    )


def decompress_compress_seconds(
    codec: int,
    compressed: bytes,
    *,
    max_size: int,
    target: int | None = None,
    level: int | None = None,
    magic: int = MAGIC_V2,
    repeat: int = 5,
) -> float:
    """Best-of seconds for one :func:`decompress_compress` call."""
    run = decompress_compress(
        codec, compressed, max_size=max_size, target=target, level=level, magic=magic
    )
    return best_of(run, repeat=repeat)


def library_decompress(codec: int, compressed: bytes) -> Callable[[], Any]:
    """The plain library call that decodes ``compressed`` (no bound, no Kafka checks)."""
    if codec == CompressionType.GZIP:
        return lambda: zlib.decompress(compressed, wbits=31)
    if codec == CompressionType.SNAPPY:
        spans = []
        pos = 16
        while pos < len(compressed):
            (length,) = struct.unpack_from(">i", compressed, pos)
            spans.append((pos + 4, pos + 4 + length))
            pos += 4 + length
        view = memoryview(compressed)
        return lambda: b"".join(cramjam.snappy.decompress_raw(view[a:b]) for a, b in spans)
    if codec == CompressionType.LZ4:
        return lambda: lz4.frame.decompress(compressed)
    decompressor = zstandard.ZstdDecompressor()
    return lambda: decompressor.decompressobj().decompress(compressed)


def library_compress(codec: int, data: bytes) -> Callable[[], Any]:
    """The plain library call closest to what ``codecs.compress`` writes."""
    if codec == CompressionType.GZIP:
        return lambda: zlib.compress(data, -1, wbits=31)
    if codec == CompressionType.SNAPPY:
        view = memoryview(data)
        return lambda: [
            cramjam.snappy.compress_raw(view[i : i + 32768]) for i in range(0, len(data), 32768)
        ]
    if codec == CompressionType.LZ4:
        return lambda: lz4.frame.compress(
            data,
            compression_level=0,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            store_size=False,
        )
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=False)
    return lambda: compressor.compress(data)


def main(report: Report) -> None:
    warm_allocator()
    for label, (count, record_size) in PAYLOADS.items():
        data = record_payload(count, record_size)
        mb = len(data) / 1e6
        rounds = 30 if len(data) < 5_000_000 else 10
        report.value(f"{label}: payload", mb, "MB")
        for codec in CODECS:
            name = f"{label} {codec.name.lower()}"
            compressed = codecs.compress(codec, data)
            report.value(f"{name} ratio", len(data) / len(compressed), ":1")
            library = library_decompress(codec, compressed)
            for bound, max_size in (("bounded", 4 * len(data)), ("tight bound", len(data))):
                assert codecs.decompress(codec, compressed, max_size=max_size) == data
                ours, lib = paired_best(
                    decompress_only(codec, compressed, max_size=max_size), library, rounds=rounds
                )
                if bound == "bounded":
                    report.value(f"{name} decompress", mb / ours, "MB/s")
                report.ratio(
                    f"{name} decompress ({bound}) / library",
                    ours,
                    lib,
                    goal="<= 1.05x",
                    ok=ours / lib <= 1.05,
                )
            ours_compress, lib_compress = paired_best(
                lambda c=codec, d=data: codecs.compress(c, d),
                library_compress(codec, data),
                rounds=max(3, rounds // 3),
            )
            report.value(f"{name} compress", mb / ours_compress, "MB/s")
            report.ratio(f"{name} compress / library", ours_compress, lib_compress)
