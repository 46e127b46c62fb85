"""Decompression bombs, garbage and truncation: every decoder stays bounded and
fails with InvalidRecordError only.

Bombs are real: 2 GiB of zeros (or of a repeated pattern) compressed by each
codec -- built cheaply by streaming or by repeating one compressed block --
decompressed with a limit of 8 MiB. The test asserts the error and that the
Python-level peak allocation (tracemalloc: bytes, bytearrays, python-lz4's
buffers) stays near the limit, far below the bomb; a subprocess test checks
the resident set, which also covers the libraries' own C allocations.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Callable

import cramjam
import lz4.block
import pytest
import zstandard

from broker.errors import InvalidRecordError
from broker.records import codec_lz4, codec_snappy, codecs
from broker.records.batch import MAGIC_V0, MAGIC_V2, CompressionType

GZIP = CompressionType.GZIP
SNAPPY = CompressionType.SNAPPY
LZ4 = CompressionType.LZ4
ZSTD = CompressionType.ZSTD

GIB = 1 << 30
MIB = 1 << 20
LIMIT = 8 * MIB
BOMB_SIZE = 2 * GIB


# -- bomb builders (each a valid stream a bound-less reader would inflate) -------


def gzip_single_member_bomb() -> bytes:
    """One member: a 1 MiB-of-zeros deflate block, full-flushed so it can be
    repeated verbatim, 2048 times; then the final block and a true trailer."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = deflater.compress(bytes(MIB)) + deflater.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH)
    crc = 0
    zeros = bytes(16 * MIB)
    for _ in range(BOMB_SIZE // len(zeros)):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, BOMB_SIZE & 0xFFFFFFFF)
    return header + block * (BOMB_SIZE // MIB) + final + trailer


def gzip_multi_member_bomb() -> bytes:
    """32 members of 64 MiB of zeros each."""
    member = zlib.compress(bytes(64 * MIB), 9, wbits=31)
    return member * (BOMB_SIZE // (64 * MIB))


def snappy_xerial_bomb() -> bytes:
    """256 MiB of zeros in 32 KiB chunks (snappy's ratio tops out near 21:1,
    so 2 GiB would be 100 MB of input: the declared lengths are what matter)."""
    chunk = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    return codec_snappy.HEADER + (struct.pack(">i", len(chunk)) + chunk) * 8192


def snappy_raw_declared_bomb() -> bytes:
    """A raw block that declares 4 GiB - 1 bytes (varint ff ff ff ff 0f)."""
    return b"\xff\xff\xff\xff\x0f" + b"\x00" * 64


def lz4_bomb(magic: int) -> bytes:
    """Kafka's frame: 32768 compressed 64 KiB blocks of zeros."""
    block = lz4.block.compress(bytes(64 * 1024), store_size=False)
    header = codec_lz4.kafka_header(broken_header_checksum=magic == MAGIC_V0)
    return header + (struct.pack("<I", len(block)) + block) * 32768 + codec_lz4.END_MARK


def zstd_stream_bomb(pattern: bytes) -> bytes:
    """2 GiB of ``pattern`` through zstd's streaming compressor (no content size)."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = pattern * (MIB // len(pattern))
    parts = [compressor.compress(chunk) for _ in range(BOMB_SIZE // MIB)]
    parts.append(compressor.flush())
    return b"".join(parts)


BOMBS: dict[str, tuple[int, int, Callable[[], bytes]]] = {
    "gzip-single-member": (GZIP, MAGIC_V2, gzip_single_member_bomb),
    "gzip-multi-member": (GZIP, MAGIC_V2, gzip_multi_member_bomb),
    "snappy-xerial": (SNAPPY, MAGIC_V2, snappy_xerial_bomb),
    "snappy-raw-declared": (SNAPPY, MAGIC_V2, snappy_raw_declared_bomb),
    "lz4-v2": (LZ4, MAGIC_V2, lambda: lz4_bomb(MAGIC_V2)),
    "lz4-v0": (LZ4, MAGIC_V0, lambda: lz4_bomb(MAGIC_V0)),
    "zstd-zeros": (ZSTD, MAGIC_V2, lambda: zstd_stream_bomb(b"\x00")),
    "zstd-pattern": (ZSTD, MAGIC_V2, lambda: zstd_stream_bomb(b"0123456789abcdef")),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_bombs_stop_at_the_limit(name: str) -> None:
    codec, magic, build = BOMBS[name]
    bomb = build()
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRecordError, match=f"^{codec.name.lower()}: .*exceeds"):
            codecs.decompress(codec, bomb, max_size=LIMIT, magic=magic)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * LIMIT, f"{name}: peak {peak} bytes for a limit of {LIMIT}"


_RSS_SCRIPT = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from tests.unit.records import test_codec_bombs as t
from broker.errors import InvalidRecordError
from broker.records import codecs
growth = {}
for name, (codec, magic, build) in t.BOMBS.items():
    bomb = build()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        codecs.decompress(codec, bomb, max_size=t.LIMIT, magic=magic)
        growth[name] = "no error"
    except InvalidRecordError:
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        growth[name] = (after - before) * 1024
    del bomb
print(json.dumps(growth))
"""


@pytest.mark.slow
def test_bombs_do_not_grow_the_resident_set() -> None:
    """ru_maxrss is a high-water mark, so each bomb runs after the previous
    ones: its growth is an upper bound of what the decoder kept resident."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    result = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, root],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    growth = json.loads(result.stdout)
    for name, grown in growth.items():
        assert grown != "no error", name
        assert grown < 4 * LIMIT + 64 * MIB, f"{name}: resident set grew by {grown} bytes"


# -- garbage ---------------------------------------------------------------------


def sample() -> bytes:
    return b"".join(b'{"offset": %d, "value": "v-%d"}' % (i, i * 31) for i in range(3000))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_after_the_header(codec: int) -> None:
    data = sample()
    frame = codecs.compress(codec, data)
    header = {GZIP: 10, SNAPPY: 20, LZ4: 11, ZSTD: 9}[codec]
    garbage = os.urandom(len(frame) - header)
    with pytest.raises(InvalidRecordError, match=f"^{codec.name.lower()}: "):
        codecs.decompress(codec, frame[:header] + garbage, max_size=len(data))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize("size", [1, 2, 7, 16, 17, 100, 5000])
def test_random_bytes(codec: int, size: int) -> None:
    garbage = os.urandom(size)
    try:
        result = codecs.decompress(codec, garbage, max_size=1 << 20)
    except InvalidRecordError as exc:
        assert str(exc).startswith(codec.name.lower() + ": ")
    else:
        # Random bytes can be a valid tiny stream (a raw snappy block of length 0...).
        assert isinstance(result, (bytes, bytearray))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_bit_flips_in_the_middle(codec: int) -> None:
    data = sample()
    frame = codecs.compress(codec, data)
    for position in range(len(frame) // 4, len(frame), max(1, len(frame) // 50)):
        corrupted = bytearray(frame)
        corrupted[position] ^= 0x55
        try:
            result = codecs.decompress(codec, bytes(corrupted), max_size=len(data) * 2)
        except InvalidRecordError:
            continue
        assert isinstance(result, (bytes, bytearray))  # a flip in an ignored or stored byte


# -- truncation at every position ------------------------------------------------


@pytest.mark.parametrize(
    ("codec", "magic"),
    [(GZIP, MAGIC_V2), (SNAPPY, MAGIC_V2), (LZ4, MAGIC_V0), (LZ4, MAGIC_V2), (ZSTD, MAGIC_V2)],
)
def test_truncation_at_every_position(codec: int, magic: int) -> None:
    data = sample()[:40_000] + os.urandom(3000)  # two snappy chunks, one raw lz4 tail
    frame = codecs.compress(codec, data, magic=magic)
    outcomes = set()
    for cut in range(len(frame)):
        try:
            result = codecs.decompress(codec, frame[:cut], max_size=len(data), magic=magic)
        except InvalidRecordError as exc:
            assert str(exc).startswith(codec.name.lower() + ": ")
            outcomes.add("error")
        else:
            # Only whole chunks can be dropped silently: snappy-java stops after
            # the last complete chunk, zstd-jni on an empty input.
            assert data.startswith(result), cut
            outcomes.add("prefix")
    assert "error" in outcomes
