"""Port of Kafka's ``clients/src/test/java/org/apache/kafka/common/compress/Lz4CompressionTest.java``
(3.9), plus the reader rules of ``Lz4BlockInputStream`` it does not cover.

Kafka's ``Lz4BlockOutputStream(out, blockSize, level, blockChecksum, broken)``
is our ``compress(LZ4, ..., magic=0 or 1)`` for the header checksum and level;
its ``blockChecksum`` option (never used by Kafka's own writers) is rebuilt
here from our frame with :func:`with_block_checksums`, and ``close=False``
(flush without close) is our frame without its end mark. Its reader's
``ignoreFlagDescriptorChecksum`` is our ``decompress(..., magic=0)``.
``testSkip`` has no counterpart (we decompress whole streams, no InputStream).
"""

from __future__ import annotations

import functools
import random
import re
import struct
from typing import NamedTuple

import lz4.block
import lz4.frame
import pytest
import xxhash

from broker.errors import InvalidRecordError
from broker.records import codec_lz4, codecs
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, CompressionType

LZ4 = CompressionType.LZ4
MIN_LEVEL, DEFAULT_LEVEL, MAX_LEVEL = 1, 9, 17
INCOMPRESSIBLE = 0x80000000


def decompress(frame: bytes | memoryview, *, ignore: bool = False) -> bytes:
    magic = MAGIC_V0 if ignore else MAGIC_V1
    return bytes(codecs.decompress(LZ4, frame, max_size=1 << 30, magic=magic))


def compress(payload: bytes, *, broken: bool = False, level: int = DEFAULT_LEVEL) -> bytes:
    return codecs.compress(LZ4, payload, level=level, magic=MAGIC_V0 if broken else MAGIC_V2)


def split_frame(frame: bytes) -> tuple[bytes, list[tuple[int, bytes]]]:
    """(header, [(block size word, block data)]) of a frame without block checksums."""
    header_size = 15 if frame[4] & 0x08 else 7
    blocks, pos = [], header_size
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word & ~INCOMPRESSIBLE == 0:
            return frame[:header_size], blocks
        size = word & ~INCOMPRESSIBLE
        blocks.append((word, frame[pos : pos + size]))
        pos += size


def rebuild(
    frame: bytes,
    *,
    flg_set: int = 0,
    flg_clear: int = 0,
    content_size: int | None = None,
    block_checksum: bool = False,
    broken: bool = False,
    close: bool = True,
    suffix: bytes = b"",
) -> bytes:
    """``frame`` with another descriptor: FLG bits changed, an optional content
    size, block checksums (xxh32 of each block, ``Lz4BlockOutputStream.writeBlock``),
    the header checksum recomputed (correct or Kafka's broken one)."""
    header, blocks = split_frame(frame)
    flg = (header[4] | flg_set) & ~flg_clear
    if block_checksum:
        flg |= 0x10
    descriptor = bytes((flg, header[5]))
    if content_size is not None:
        flg_descriptor = bytes((flg | 0x08, header[5]))
        descriptor = flg_descriptor + struct.pack("<Q", content_size)
    covered = header[:4] + descriptor if broken else descriptor
    hc = (xxhash.xxh32_intdigest(covered) >> 8) & 0xFF
    out = bytearray(header[:4] + descriptor + bytes((hc,)))
    for word, data in blocks:
        out += struct.pack("<I", word) + data
        if block_checksum:
            out += struct.pack("<I", xxhash.xxh32_intdigest(data))
    if close:
        out += b"\x00\x00\x00\x00" + suffix
    return bytes(out)


# -- Kafka's parameterised arguments (Lz4ArgumentsProvider) -----------------------


class Args(NamedTuple):
    broken: bool  # useBrokenFlagDescriptorChecksum
    ignore: bool  # ignoreFlagDescriptorChecksum
    level: int
    block_checksum: bool
    close: bool
    payload_name: str

    @property
    def payload(self) -> bytes:
        return PAYLOADS[self.payload_name]


def _payloads() -> dict[str, bytes]:
    rng = random.Random(0)
    payloads = {"empty": b"", "onebyte": b"\x01"}
    for size in (1000, 1 << 16, (1 << 10) * 96):
        payloads[f"random{size}"] = rng.randbytes(size)
        payloads[f"ones{size}"] = b"\x01" * size
    return payloads


PAYLOADS = _payloads()
ARGS = [
    Args(broken, ignore, level, block_checksum, close, name)
    for name in PAYLOADS
    for broken in (False, True)
    for ignore in (False, True)
    for block_checksum in (False, True)
    for close in (False, True)
    for level in (MIN_LEVEL, DEFAULT_LEVEL, MAX_LEVEL)
]


@functools.cache
def _compressed(name: str, broken: bool, level: int, block_checksum: bool, close: bool) -> bytes:
    frame = compress(PAYLOADS[name], broken=broken, level=level)
    if block_checksum or not close:
        frame = rebuild(frame, block_checksum=block_checksum, broken=broken, close=close)
    return frame


def compressed_bytes(args: Args) -> bytes:
    return _compressed(args.payload_name, args.broken, args.level, args.block_checksum, args.close)


def check_decompression(frame: bytes | memoryview, args: Args) -> None:
    """``testDecompression``: a broken header checksum read strictly fails first,
    then a missing end mark; otherwise the payload comes back whole."""
    if args.broken and not args.ignore:
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.DESCRIPTOR_HASH_MISMATCH)):
            decompress(frame, ignore=args.ignore)
    elif not args.close:
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.PREMATURE_EOS)):
            decompress(frame, ignore=args.ignore)
    else:
        assert decompress(frame, ignore=args.ignore) == args.payload


# -- the tests -----------------------------------------------------------------------


def test_lz4_framing_magic_v0() -> None:
    frame = compress(b"", broken=True)
    assert frame[6] == codec_lz4.header_checksum(frame[:6])  # broken: over magic + FLG + BD
    assert frame[6] != codec_lz4.header_checksum(frame[4:6])
    assert decompress(frame, ignore=True) == b""  # magic 0 ignores the header checksum
    assert decompress(frame[:6] + b"\x00" + frame[7:], ignore=True) == b""


def test_lz4_framing_magic_v1() -> None:
    for magic in (MAGIC_V1, MAGIC_V2):
        frame = codecs.compress(LZ4, b"", magic=magic)
        assert frame[6] == codec_lz4.header_checksum(frame[4:6])
        assert codecs.decompress(LZ4, frame, max_size=0, magic=magic) == b""
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.DESCRIPTOR_HASH_MISMATCH)):
            codecs.decompress(LZ4, frame[:6] + b"\x00" + frame[7:], max_size=0, magic=magic)


def test_compression_decompression() -> None:
    data = b"data" * 256
    for magic in (MAGIC_V0, MAGIC_V1, MAGIC_V2):
        for level in (MIN_LEVEL, DEFAULT_LEVEL, MAX_LEVEL):
            frame = codecs.compress(LZ4, data, level=level, magic=magic)
            assert codecs.decompress(LZ4, frame, max_size=len(data), magic=magic) == data


def test_compression_levels() -> None:
    for level in (MIN_LEVEL - 1, MAX_LEVEL + 1):
        with pytest.raises(ValueError):
            codecs.compress(LZ4, b"data", level=level)
    for level in (MIN_LEVEL, MAX_LEVEL):
        codecs.compress(LZ4, b"data", level=level)


@pytest.mark.parametrize("ignore", [False, True])
def test_header_premature_end(ignore: bool) -> None:
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.PREMATURE_EOS)):
        decompress(b"\x00\x00", ignore=ignore)


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_not_supported(args: Args) -> None:
    frame = bytearray(compressed_bytes(args))
    frame[0] = 0x00
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.NOT_SUPPORTED)):
        decompress(bytes(frame), ignore=args.ignore)


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_bad_frame_checksum(args: Args) -> None:
    frame = bytearray(compressed_bytes(args))
    frame[6] = 0xFF
    if args.ignore:
        check_decompression(bytes(frame), args._replace(broken=False))
    else:
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.DESCRIPTOR_HASH_MISMATCH)):
            decompress(bytes(frame), ignore=args.ignore)


@pytest.mark.parametrize(
    "args", [a for a in ARGS if a.close and (a.ignore or not a.broken)], ids=str
)
def test_bad_block_size(args: Args) -> None:
    frame = bytearray(compressed_bytes(args))
    (size,) = struct.unpack_from("<I", frame, 7)
    struct.pack_into("<I", frame, 7, (size & INCOMPRESSIBLE) | (1 << 24))
    with pytest.raises(InvalidRecordError, match="exceeded max"):
        decompress(bytes(frame), ignore=args.ignore)


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_compression(args: Args) -> None:
    frame = compressed_bytes(args)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flg, bd = frame[4], frame[5]
    assert (flg >> 6) & 3 == 1
    assert flg & 3 == 0
    assert 4 <= (bd >> 4) & 7 <= 7
    assert bd & 15 == 0
    assert (bd >> 7) & 1 == 0
    offset = 6 + (8 if (flg >> 3) & 1 else 0)
    covered = frame[:offset] if args.broken else frame[4:offset]
    assert frame[offset] == (xxhash.xxh32_intdigest(covered) >> 8) & 0xFF
    if args.close:
        assert frame[-4:] == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_array_backed_buffer(args: Args) -> None:
    check_decompression(compressed_bytes(args), args)


@pytest.mark.parametrize("args", ARGS, ids=str)
def test_array_backed_buffer_slice(args: Args) -> None:
    frame = compressed_bytes(args)
    for before, after in ((12, 123), (12 + 42, 0)):
        backing = bytearray(before) + frame + bytearray(after)
        check_decompression(memoryview(backing)[before : before + len(frame)], args)


# -- reader rules beyond Kafka's test ---------------------------------------------


def test_dependent_blocks_are_rejected() -> None:
    frame = rebuild(compress(b"abc" * 1000), flg_clear=0x20)
    with pytest.raises(InvalidRecordError, match="lz4: Dependent block stream is unsupported"):
        decompress(frame)
    linked = lz4.frame.compress(b"abc" * 100_000, block_linked=True, store_size=False)
    with pytest.raises(InvalidRecordError, match="Dependent block stream is unsupported"):
        decompress(linked)


@pytest.mark.parametrize(
    ("flg_set", "flg_clear", "bd", "problem"),
    [
        (0x01, 0, 0x40, "Reserved bits must be 0"),
        (0x02, 0, 0x40, "Reserved bits must be 0"),
        (0x80, 0x40, 0x40, "Version 2 is unsupported"),
        (0, 0x40, 0x40, "Version 0 is unsupported"),
        (0, 0, 0x41, "Reserved2 field must be 0"),
        (0, 0, 0x30, "Block size value must be between 4 and 7"),
        (0, 0, 0xC0, "Reserved3 field must be 0"),
    ],
)
def test_bad_descriptors(flg_set: int, flg_clear: int, bd: int, problem: str) -> None:
    frame = bytearray(rebuild(compress(b"abc"), flg_set=flg_set, flg_clear=flg_clear))
    frame[5] = bd
    frame[6] = codec_lz4.header_checksum(bytes(frame[4:6]))
    with pytest.raises(InvalidRecordError, match=problem):
        decompress(bytes(frame))


def test_content_size_is_skipped_and_covered_by_the_header_checksum() -> None:
    data = bytes(range(256)) * 300
    frame = rebuild(compress(data), content_size=12345)  # a wrong value: Kafka never reads it
    assert decompress(frame) == data
    broken = bytearray(frame)
    broken[8] ^= 1  # inside the content size: the header checksum no longer matches
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.DESCRIPTOR_HASH_MISMATCH)):
        decompress(bytes(broken))
    assert decompress(bytes(broken), ignore=True) == data
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.PREMATURE_EOS)):
        decompress(frame[:10])


def test_content_checksum_is_read_but_not_verified() -> None:
    data = b"kafka" * 5000
    frame = rebuild(compress(data), flg_set=0x04, suffix=b"\xde\xad\xbe\xef")
    assert decompress(frame) == data
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.PREMATURE_EOS)):
        decompress(frame[:-1])


def test_block_checksums_are_verified() -> None:
    data = random.Random(1).randbytes(100_000) + b"x" * 100_000
    frame = rebuild(compress(data), block_checksum=True)
    assert decompress(frame) == data
    for position in (7 + 4 + 65536, len(frame) - 4 - 1):  # first block's checksum, last one's
        corrupted = bytearray(frame)
        corrupted[position] ^= 0x01
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.BLOCK_HASH_MISMATCH)):
            decompress(bytes(corrupted))
    with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.PREMATURE_EOS)):
        decompress(frame[: 7 + 4 + 65536 + 2])


def test_larger_block_maximum_sizes_are_accepted() -> None:
    data = b"abcdefgh" * 600_000
    for block_size in (lz4.frame.BLOCKSIZE_MAX256KB, lz4.frame.BLOCKSIZE_MAX4MB):
        frame = lz4.frame.compress(
            data, block_size=block_size, block_linked=False, store_size=False
        )
        assert decompress(frame) == data


def test_bytes_after_the_end_mark_are_ignored() -> None:
    assert decompress(compress(b"records") + b"trailing garbage") == b"records"


def test_uncompressed_flag_with_size_zero_is_an_end_mark() -> None:
    frame = compress(b"records")
    assert decompress(frame[:-4] + struct.pack("<I", INCOMPRESSIBLE)) == b"records"


def test_corrupt_compressed_block() -> None:
    frame = bytearray(compress(b"abc" * 10_000))
    frame[12:20] = b"\xff" * 8
    with pytest.raises(InvalidRecordError, match=r"^lz4: invalid lz4 block"):
        decompress(bytes(frame))


def test_block_larger_than_the_block_maximum_when_decompressed() -> None:
    # A 64 KiB-maximum frame whose single compressed block inflates to 128 KiB.
    block = lz4.block.compress(b"\x00" * 131072, store_size=False)
    frame = compress(b"")[:7] + struct.pack("<I", len(block)) + block + b"\x00" * 4
    with pytest.raises(InvalidRecordError, match=r"^lz4: invalid lz4 block"):
        decompress(frame)
