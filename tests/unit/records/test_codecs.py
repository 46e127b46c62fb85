"""broker.records.codecs: the API contract, levels, and each codec's framing rules."""

from __future__ import annotations

import mmap
import os
import struct
import zlib

import cramjam
import lz4.block
import pytest
import xxhash
import zstandard

from broker.errors import ErrorCode, InvalidRecordError
from broker.records import codec_lz4, codec_snappy, codec_zstd, codecs
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, CompressionType

GZIP = CompressionType.GZIP
SNAPPY = CompressionType.SNAPPY
LZ4 = CompressionType.LZ4
ZSTD = CompressionType.ZSTD
CODECS = (GZIP, SNAPPY, LZ4, ZSTD)
MAGICS = (MAGIC_V0, MAGIC_V1, MAGIC_V2)
BIG = 1 << 30


def text(size: int) -> bytes:
    """Record-like, compressible bytes of exactly ``size`` bytes."""
    line = b'{"user": "user-%d", "event": "click", "page": "/p/%d"}\n'
    out = b"".join(line % (i, i * 7919 % 10007) for i in range(size // 40 + 1))
    return out[:size]


def roundtrip(codec: int, data: bytes, magic: int = MAGIC_V2, level: int | None = None) -> bytes:
    packed = codecs.compress(codec, data, level=level, magic=magic)
    return bytes(codecs.decompress(codec, packed, max_size=len(data), magic=magic))


# -- API -------------------------------------------------------------------------


def test_default_levels_are_kafkas() -> None:
    assert codecs.default_level(GZIP) == -1
    assert codecs.default_level(LZ4) == 9
    assert codecs.default_level(ZSTD) == 3


@pytest.mark.parametrize("codec", [CompressionType.NONE, SNAPPY])
def test_default_level_undefined(codec: int) -> None:
    with pytest.raises(ValueError):
        codecs.default_level(codec)


def test_none_is_not_a_codec() -> None:
    with pytest.raises(ValueError):
        codecs.compress(CompressionType.NONE, b"abc")
    with pytest.raises(ValueError):
        codecs.decompress(CompressionType.NONE, b"abc", max_size=BIG)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids_are_invalid_record(codec_id: int) -> None:
    with pytest.raises(InvalidRecordError, match=f"Unknown compression type id: {codec_id}") as e:
        codecs.decompress(codec_id, b"abc", max_size=BIG)
    assert e.value.code is ErrorCode.INVALID_RECORD
    with pytest.raises(InvalidRecordError):
        codecs.compress(codec_id, b"abc")
    with pytest.raises(InvalidRecordError):
        codecs.default_level(codec_id)


@pytest.mark.parametrize("codec_id", [-1, 8, 255])
def test_ids_outside_the_attribute_bits_are_our_bug(codec_id: int) -> None:
    with pytest.raises(ValueError):
        codecs.decompress(codec_id, b"abc", max_size=BIG)


@pytest.mark.parametrize(
    ("codec", "level"),
    [(GZIP, 0), (GZIP, 10), (GZIP, -2), (LZ4, 0), (LZ4, 18), (ZSTD, -131073), (ZSTD, 23)],
)
def test_levels_outside_kafkas_ranges(codec: int, level: int) -> None:
    with pytest.raises(ValueError, match="doesn't support given compression level"):
        codecs.compress(codec, b"abc", level=level)


def test_snappy_has_no_level() -> None:
    with pytest.raises(ValueError):
        codecs.compress(SNAPPY, b"abc", level=1)


@pytest.mark.parametrize(
    ("codec", "level"),
    [
        *[(GZIP, -1), (GZIP, 1), (GZIP, 9), (LZ4, 1), (LZ4, 9), (LZ4, 17)],
        *[(ZSTD, -131072), (ZSTD, -1), (ZSTD, 0), (ZSTD, 3), (ZSTD, 22)],
    ],
)
def test_every_kafka_level_round_trips(codec: int, level: int) -> None:
    data = text(70_000)
    assert roundtrip(codec, data, level=level) == data


def test_bad_magic_and_max_size_are_our_bug() -> None:
    with pytest.raises(ValueError):
        codecs.compress(LZ4, b"abc", magic=3)
    with pytest.raises(ValueError):
        codecs.decompress(LZ4, b"abc", max_size=BIG, magic=-1)
    with pytest.raises(ValueError):
        codecs.decompress(GZIP, b"abc", max_size=-1)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [5, 300_000])
def test_decompress_returns_a_new_bytes_like(codec: int, size: int) -> None:
    data = text(size)
    packed = codecs.compress(codec, data)
    for max_size in (size, 10 * size):  # tight: stepped paths; roomy: one-call paths
        first = codecs.decompress(codec, packed, max_size=max_size)
        second = codecs.decompress(codec, packed, max_size=max_size)
        assert type(first) in (bytes, bytearray)
        assert first == second == data
        assert first is not second


@pytest.mark.parametrize("codec", CODECS)
def test_any_buffer_is_accepted(codec: int) -> None:
    data = text(5000)
    packed = codecs.compress(codec, memoryview(bytearray(data)))
    with mmap.mmap(-1, len(packed) + 7) as region:
        region[7:] = packed
        view = memoryview(region)[7:]
        try:
            assert codecs.decompress(codec, view, max_size=len(data)) == data
        finally:
            view.release()
    framed = b"....." + packed + b"...."
    inner = memoryview(framed)[5 : 5 + len(packed)]
    assert codecs.decompress(codec, inner, max_size=len(data)) == data


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize(
    "size",
    [0, 1, 32767, 32768, 32769, 3 * 32768, 65535, 65536, 65537, 3 * 65536 + 5, 600_000],
)
def test_round_trip_across_block_boundaries(codec: int, magic: int, size: int) -> None:
    data = text(size)
    packed = codecs.compress(codec, data, magic=magic)
    # A tight limit takes the stepped paths, a roomy one the one-call paths.
    for max_size in (size, 4 * size + 2):
        assert codecs.decompress(codec, packed, max_size=max_size, magic=magic) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_incompressible(codec: int) -> None:
    data = os.urandom(200_000)
    assert roundtrip(codec, data) == data


@pytest.mark.parametrize("codec", CODECS)
def test_exactly_max_size_passes_one_byte_less_exceeds(codec: int) -> None:
    data = text(300_000)
    packed = codecs.compress(codec, data)
    assert codecs.decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(InvalidRecordError, match=f"^{codec.name.lower()}: .*exceeds"):
        codecs.decompress(codec, packed, max_size=len(data) - 1)
    with pytest.raises(InvalidRecordError, match="exceeds"):
        codecs.decompress(codec, packed, max_size=0)


# -- gzip ------------------------------------------------------------------------


def gzip_member(data: bytes, *, flags: int = 0, extra: bytes = b"", level: int = 6) -> bytes:
    """A gzip member with a hand-written header (RFC 1952)."""
    header = bytearray(b"\x1f\x8b\x08" + bytes((flags,)) + b"\x00\x00\x00\x00\x00\xff")
    if flags & 0x04:
        header += struct.pack("<H", len(extra)) + extra
    if flags & 0x08:
        header += b"name.txt\x00"
    if flags & 0x10:
        header += b"a comment\x00"
    if flags & 0x02:
        header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return bytes(header) + body + trailer


def gunzip(payload: bytes, max_size: int = BIG) -> bytes:
    return bytes(codecs.decompress(GZIP, payload, max_size=max_size))


def test_gzip_default_level_is_zlib_6() -> None:
    data = text(200_000)
    assert codecs.compress(GZIP, data) == codecs.compress(GZIP, data, level=6)
    assert codecs.compress(GZIP, data, level=1) != codecs.compress(GZIP, data, level=9)
    assert codecs.compress(GZIP, data, level=9) == zlib.compress(data, 9, wbits=31)


def test_gzip_multi_member() -> None:
    a, b = text(1000), os.urandom(70_000)
    payload = gzip_member(a) + gzip_member(b) + gzip_member(b"")
    assert gunzip(payload) == a + b
    assert gunzip(payload, max_size=len(a + b)) == a + b
    # the last member's ISIZE equals the first member's size: not a single member
    assert gunzip(gzip_member(a) + gzip_member(a)) == a + a


@pytest.mark.parametrize("wrong", [0, 1, 999, 1001, 10**6, 0xFFFFFFFF])
def test_gzip_isize_is_only_a_hint(wrong: int) -> None:
    data = text(1000)
    member = gzip_member(data)
    lying = member[:-4] + struct.pack("<I", wrong)
    with pytest.raises(InvalidRecordError, match="gzip: corrupt gzip trailer"):
        gunzip(lying)
    # trailing bytes that are not a member spoil the hint but not the stream
    for max_size in (len(data), BIG):
        assert gunzip(member + struct.pack("<I", wrong), max_size=max_size) == data


def test_gzip_optional_header_fields() -> None:
    data = text(5000)
    payload = gzip_member(data, flags=0x02 | 0x04 | 0x08 | 0x10, extra=b"XY\x02\x00hi")
    assert gunzip(payload) == data


def test_gzip_reserved_flag_bits_are_ignored_like_the_jdk() -> None:
    # zlib's own gzip mode refuses these; GZIPInputStream never looks at them.
    data = text(3000)
    assert gunzip(gzip_member(data, flags=0xE0)) == data


def test_gzip_corrupt_header_crc() -> None:
    payload = bytearray(gzip_member(b"abc", flags=0x02))
    payload[10] ^= 0xFF
    with pytest.raises(InvalidRecordError, match="gzip: corrupt gzip header"):
        gunzip(bytes(payload))


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "truncated gzip header"),
        (b"\x1f\x8b\x08\x00", "truncated gzip header"),
        (b"PK\x03\x04" + b"\x00" * 20, "not in gzip format"),
        (b"\x1f\x8b\x07\x00" + b"\x00" * 20, "unsupported compression method"),
        (b"\x1f\x8b\x08\x08" + b"\x00" * 6 + b"no terminator", "truncated gzip header"),
    ],
)
def test_gzip_bad_first_header(payload: bytes, problem: str) -> None:
    with pytest.raises(InvalidRecordError, match=f"gzip: {problem}"):
        gunzip(payload)


def test_gzip_trailing_bytes_that_are_not_a_header_are_ignored() -> None:
    # GZIPInputStream.readTrailer swallows the IOException of the next header.
    data = text(4000)
    for trailing in (b"\x00", b"\x1f", b"\x1f\x8b", b"garbage after the member", b"\x1f\x8b\x09"):
        assert gunzip(gzip_member(data) + trailing) == data


def test_gzip_second_member_with_bad_deflate_data_fails() -> None:
    second = bytearray(gzip_member(os.urandom(500)))
    second[10:20] = b"\xff" * 10
    with pytest.raises(InvalidRecordError, match="gzip: invalid deflate data"):
        gunzip(gzip_member(b"first") + bytes(second))


def test_gzip_bad_trailer() -> None:
    data = text(2000)
    good = gzip_member(data)
    bad_crc = good[:-8] + struct.pack("<I", zlib.crc32(data) ^ 1) + good[-4:]
    bad_size = good[:-4] + struct.pack("<I", len(data) + 1)
    for payload in (bad_crc, bad_size):
        with pytest.raises(InvalidRecordError, match="gzip: corrupt gzip trailer"):
            gunzip(payload)
    with pytest.raises(InvalidRecordError, match="gzip: unexpected end of gzip stream"):
        gunzip(good[:-3])
    with pytest.raises(InvalidRecordError, match="gzip: unexpected end of gzip stream"):
        gunzip(good[: len(good) // 2])


# -- snappy ----------------------------------------------------------------------


def xerial_chunks(payload: bytes) -> list[bytes]:
    assert payload[:16] == codec_snappy.HEADER
    chunks, pos = [], 16
    while pos < len(payload):
        (length,) = struct.unpack_from(">i", payload, pos)
        chunks.append(payload[pos + 4 : pos + 4 + length])
        pos += 4 + length
    return chunks


def unsnappy(payload: bytes, max_size: int = BIG) -> bytes:
    return bytes(codecs.decompress(SNAPPY, payload, max_size=max_size))


def test_snappy_writes_xerial_chunks_of_32k() -> None:
    data = text(100_000)
    chunks = xerial_chunks(codecs.compress(SNAPPY, data))
    assert len(chunks) == 4
    for i, chunk in enumerate(chunks):
        assert bytes(cramjam.snappy.decompress_raw(chunk)) == data[i * 32768 : (i + 1) * 32768]


def test_snappy_empty_input_is_a_header_only_stream() -> None:
    assert codecs.compress(SNAPPY, b"") == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    assert unsnappy(codec_snappy.HEADER) == b""


@pytest.mark.parametrize("size", [0, 1, 10, 15, 16, 100_000])
def test_snappy_raw_block_as_librdkafka_writes_it(size: int) -> None:
    data = text(size)
    assert unsnappy(bytes(cramjam.snappy.compress_raw(data))) == data


def test_snappy_official_framing_format_is_not_understood() -> None:
    framed = bytes(cramjam.snappy.compress(text(1000)))
    assert framed.startswith(b"\xff\x06\x00\x00sNaPpY")
    with pytest.raises(InvalidRecordError, match=r"^snappy: "):
        unsnappy(framed)


def test_snappy_empty_input_fails() -> None:
    with pytest.raises(InvalidRecordError, match="snappy: cannot decompress empty stream"):
        unsnappy(b"")


def test_snappy_concatenated_streams() -> None:
    a, b = text(40_000), os.urandom(1000)
    assert unsnappy(codecs.compress(SNAPPY, a) + codecs.compress(SNAPPY, b)) == a + b


def test_snappy_magic_head_without_the_rest_of_the_magic_ends_the_stream() -> None:
    a = text(1000)
    payload = codecs.compress(SNAPPY, a) + b"\x82SNA" + b"XXXX" + b"\x00" * 8 + b"junk"
    assert unsnappy(payload) == a


def test_snappy_concatenated_header_checks() -> None:
    a = codecs.compress(SNAPPY, b"abc")
    with pytest.raises(InvalidRecordError, match="insufficient header size"):
        unsnappy(a + codec_snappy.HEADER[:10])
    old = codec_snappy.MAGIC + struct.pack(">ii", 0, 1)
    with pytest.raises(InvalidRecordError, match="incompatible codec version 0"):
        unsnappy(a + old)


def test_snappy_first_header_versions_are_not_checked() -> None:
    payload = codec_snappy.MAGIC + struct.pack(">ii", 7, 99) + codecs.compress(SNAPPY, b"x")[16:]
    assert unsnappy(payload) == b"x"


@pytest.mark.parametrize("trailing", [b"\x00", b"\x00\x00", b"\xff\xff\xff"])
def test_snappy_one_to_three_trailing_bytes_are_ignored(trailing: bytes) -> None:
    assert unsnappy(codecs.compress(SNAPPY, b"records") + trailing) == b"records"


@pytest.mark.parametrize(
    ("chunk_length", "problem"),
    [(-1, "negative"), (512 * 1024 * 1024 + 1, "greater than the maximum"), (0, "truncated")],
)
def test_snappy_bad_chunk_lengths(chunk_length: int, problem: str) -> None:
    payload = codec_snappy.HEADER + struct.pack(">i", chunk_length) + b"\x05abcde"
    with pytest.raises(InvalidRecordError, match=problem):
        unsnappy(payload)


def test_snappy_chunk_cut_short() -> None:
    payload = codecs.compress(SNAPPY, text(1000))
    with pytest.raises(InvalidRecordError, match="failed to read chunk"):
        unsnappy(payload[:-1])


def test_snappy_block_length_mismatch() -> None:
    block = bytearray(cramjam.snappy.compress_raw(b"abcdefgh"))
    block[0] += 1  # the varint length says 9, the tags make 8
    payload = codec_snappy.HEADER + struct.pack(">i", len(block)) + bytes(block)
    with pytest.raises(InvalidRecordError, match=r"^snappy: "):
        unsnappy(payload)


# -- lz4 (Kafka's frame; Lz4CompressionTest is ported in test_lz4_compression.py)


def frame_blocks(frame: bytes) -> list[tuple[bool, bytes]]:
    """(stored raw, data) of each block of a header-7 frame without checksums."""
    blocks, pos = [], 7
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            assert pos == len(frame)
            return blocks
        size = word & 0x7FFFFFFF
        blocks.append((bool(word & 0x80000000), frame[pos : pos + size]))
        pos += size


@pytest.mark.parametrize(("magic", "header"), [(0, "04224d1860401a"), (1, "04224d18604082")])
def test_lz4_headers_are_kafkas(magic: int, header: str) -> None:
    frame = codecs.compress(LZ4, b"", magic=magic)
    assert frame.hex() == header + "00000000"


def test_lz4_level_9_is_the_fast_compressor_other_levels_are_hc() -> None:
    data = text(65536)
    fast = lz4.block.compress(data, mode="default", store_size=False)
    for level in (1, 2, 5, 9, 12, 17):
        ((raw, block),) = frame_blocks(codecs.compress(LZ4, data, level=level))
        assert not raw
        if level == 9:
            assert block == fast
        else:
            expected = lz4.block.compress(
                data, mode="high_compression", compression=level, store_size=False
            )
            assert block == expected
            assert block != fast


def test_lz4_incompressible_blocks_are_stored_raw() -> None:
    data = os.urandom(65536) + text(65536) + os.urandom(10)
    blocks = frame_blocks(codecs.compress(LZ4, data))
    assert [raw for raw, _ in blocks] == [True, False, True]
    assert blocks[0][1] == data[:65536]
    assert blocks[2][1] == data[-10:]


def test_lz4_header_checksum_is_xxh32_second_byte() -> None:
    assert codec_lz4.header_checksum(bytes((0x60, 0x40))) == 0x82
    assert codec_lz4.header_checksum(b"\x04\x22\x4d\x18\x60\x40") == 0x1A


def test_xxh32_matches_the_reference_implementation() -> None:
    for size in (0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 100, 1000):
        data = os.urandom(size)
        for seed in (0, 1, 0xFFFFFFFF):
            assert codec_lz4.xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)


# -- zstd ------------------------------------------------------------------------


def unzstd(payload: bytes, max_size: int = BIG) -> bytes:
    return bytes(codecs.decompress(ZSTD, payload, max_size=max_size))


def test_zstd_frames_carry_no_content_size() -> None:
    for data in (b"", b"x", text(300_000)):
        frame = codecs.compress(ZSTD, data)
        assert frame[:4] == b"\x28\xb5\x2f\xfd"
        assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
        assert frame[4] & 0xE0 == 0  # no content size field, not single segment


def test_zstd_level_0_is_zstds_default() -> None:
    data = text(100_000)
    assert codecs.compress(ZSTD, data, level=0) == codecs.compress(ZSTD, data, level=3)


def test_zstd_frames_with_content_size_and_checksum() -> None:
    data = text(100_000)
    for params in ({}, {"write_checksum": True}, {"write_content_size": False}):
        frame = zstandard.ZstdCompressor(**params).compress(data)
        assert unzstd(frame) == data


def test_zstd_concatenated_and_skippable_frames() -> None:
    a, b = text(10_000), os.urandom(5000)
    skippable = struct.pack("<II", 0x184D2A5E, 5) + b"12345"
    payload = skippable + codecs.compress(ZSTD, a) + skippable + codecs.compress(ZSTD, b)
    assert unzstd(payload) == a + b


def test_zstd_output_past_the_frames_bound_is_still_whole_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The walk's bound is an upper bound by RFC 8878 (no block regenerates
    # more than its maximum); should a decoder ever produce more, the rest is
    # read in bounded steps rather than lost.
    data = text(3 * 1024 * 1024)
    frame = codecs.compress(ZSTD, data)
    monkeypatch.setattr(codec_zstd, "_scan", lambda _: (0, 1000))
    assert unzstd(frame, max_size=len(data)) == data
    with pytest.raises(InvalidRecordError, match=r"zstd: .*exceeds"):
        unzstd(frame, max_size=len(data) - 1)


def test_zstd_empty_input_is_an_empty_stream() -> None:
    # ZstdInputStreamNoFinalizer starts "frame finished": end of input at once is EOF.
    assert unzstd(b"") == b""


def test_zstd_corrupt_checksum() -> None:
    frame = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(text(1000)))
    frame[-1] ^= 0xFF
    with pytest.raises(InvalidRecordError, match=r"^zstd: invalid zstd frame"):
        unzstd(bytes(frame))


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"\x28\xb5\x2f\xfd", "truncated frame header"),
        (b"\x28\xb5\x2f", "truncated frame"),
        (b"PK\x03\x04\x00\x00", "unknown frame descriptor"),
        (struct.pack("<II", 0x184D2A50, 100) + b"short", "truncated skippable frame"),
    ],
)
def test_zstd_bad_frames(payload: bytes, problem: str) -> None:
    with pytest.raises(InvalidRecordError, match=f"zstd: {problem}"):
        unzstd(payload)


def test_zstd_trailing_garbage_fails() -> None:
    with pytest.raises(InvalidRecordError, match="zstd: "):
        unzstd(codecs.compress(ZSTD, b"abc") + b"garbage!")


def test_zstd_declared_content_size_above_the_limit_is_rejected_before_decoding() -> None:
    # Frame header: single segment, 8-byte content size of 2^40, then one empty
    # last raw block. Never decoded: the declared size alone exceeds the limit.
    header = b"\x28\xb5\x2f\xfd" + bytes((0xE0,)) + struct.pack("<Q", 1 << 40)
    frame = header + (1).to_bytes(3, "little")
    with pytest.raises(InvalidRecordError, match=r"zstd: .*exceeds"):
        unzstd(frame, max_size=1 << 20)
