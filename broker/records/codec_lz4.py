"""lz4 (codec 3): Kafka's subset of the LZ4 frame format.

Source: ``clients/.../compress/Lz4BlockOutputStream.java`` /
``Lz4BlockInputStream.java`` (before 3.8: ``KafkaLZ4Block*``) and
``Lz4Compression.java``. Integers little-endian::

    Magic    uint32  0x184D2204          (04 22 4D 18)
    FLG      int8    bits 6-7 version = 01, bit 5 block independence,
                     bit 4 block checksum, bit 3 content size,
                     bit 2 content checksum, bits 0-1 reserved = 0
    BD       int8    bits 4-6 block max size code 4..7 (64 KiB, 256 KiB,
                     1 MiB, 4 MiB = 1 << (2 * code + 8)); bits 0-3 and 7 = 0
    [ContentSize uint64]                 if FLG bit 3 (skipped)
    HC       int8    (xxh32(FLG .. ContentSize, seed 0) >> 8) & 0xFF
    blocks:
      BlockSize uint32  bit 31 set = stored uncompressed; 0 = end mark
      Data      BlockSize bytes (an LZ4 block, or the raw bytes)
      [BlockChecksum uint32  xxh32 of Data]   if FLG bit 4
    EndMark  uint32  0
    [ContentChecksum uint32]                  if FLG bit 2 (read, never verified)

Kafka writes FLG 0x60, BD 0x40 (64 KiB blocks), no checksums, no content
size, and stores a block raw when compressing does not shrink it. Magic v0
batches carry the header checksum of Kafka before 0.10 (KAFKA-3160), taken
over Magic + FLG + BD: it is written that way for magic 0 and not checked
when reading magic 0; magic 1 and 2 write and verify the correct one.
Level 9 (Kafka's default) uses LZ4's fast compressor, any other level the
HC compressor at that level (``Lz4BlockOutputStream``'s constructor).

Reading checks what ``Lz4BlockInputStream`` checks, with its messages:
version 1, reserved bits 0, independent blocks only ("Dependent block
stream is unsupported"), block code 4..7, the header checksum (except for
magic 0), every block within the block maximum, block checksums when
flagged; a frame must end with the end mark; bytes after it are ignored.

The frame is scanned block header by block header in Python (a few hundred
steps for megabytes), which settles all of the above and gives an upper
bound of the output: raw blocks count their size, compressed blocks the
block maximum. The blocks are then decompressed by liblz4's frame decoder
(python-lz4, GIL released), fed a canonical header in place of the original
one (the checks above are done; the decoder must neither re-check a magic v0
header checksum nor verify a content size or content checksum Kafka
ignores), the original block bytes without a copy, and a plain end mark
(Kafka also ends on 0x80000000, liblz4 does not). The decoder verifies
block checksums natively. When twice the bound fits in ``max_size`` the
output is produced in one call (python-lz4 holds it twice for a moment);
otherwise in steps of :data:`OUTPUT_STEP` into a :class:`BoundedOutput`
allocated once at the bound (at most ``max_size``).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import NamedTuple

import lz4.block
import lz4.frame

from broker.errors import InvalidRecordError
from broker.records.codec_output import BoundedOutput, corrupt, exceeds

NAME = "lz4"

MAGIC = 0x184D2204
#: Kafka's default level (``CompressionType.LZ4.defaultLevel()``): the fast compressor
DEFAULT_LEVEL = 9
MIN_LEVEL = 1
MAX_LEVEL = 17

FLG_VERSION_MASK = 0xC0
FLG_VERSION_1 = 0x40
FLG_BLOCK_INDEPENDENCE = 0x20
FLG_BLOCK_CHECKSUM = 0x10
FLG_CONTENT_SIZE = 0x08
FLG_CONTENT_CHECKSUM = 0x04
FLG_RESERVED = 0x03
BD_BLOCK_SIZE_64KB = 4
UNCOMPRESSED_FLAG = 0x80000000
_BLOCK_SIZE_MASK = 0x7FFFFFFF

#: what Kafka writes: version 1, independent blocks, nothing else
KAFKA_FLG = FLG_VERSION_1 | FLG_BLOCK_INDEPENDENCE
KAFKA_BD = BD_BLOCK_SIZE_64KB << 4
KAFKA_BLOCK_SIZE = 1 << (2 * BD_BLOCK_SIZE_64KB + 8)
END_MARK = b"\x00\x00\x00\x00"

#: ``Lz4BlockInputStream`` messages
PREMATURE_EOS = "Stream ended prematurely"
NOT_SUPPORTED = "Stream unsupported (invalid magic bytes)"
BLOCK_HASH_MISMATCH = "Block checksum mismatch"
DESCRIPTOR_HASH_MISMATCH = "Stream frame descriptor corrupted"

#: most output bytes one decoding step produces on the bounded path
OUTPUT_STEP = 1024 * 1024

_UINT32 = struct.Struct("<I")
_MAGIC_BYTES = _UINT32.pack(MAGIC)
_MASK32 = 0xFFFFFFFF
_PRIME1 = 2654435761
_PRIME2 = 2246822519
_PRIME3 = 3266489917
_PRIME4 = 668265263
_PRIME5 = 374761393


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (the xxHash spec). Pure Python: used for frame
    headers only (a few bytes); block checksums are verified by liblz4."""
    size = len(data)
    pos = 0
    if size >= 16:
        v1 = (seed + _PRIME1 + _PRIME2) & _MASK32
        v2 = (seed + _PRIME2) & _MASK32
        v3 = seed & _MASK32
        v4 = (seed - _PRIME1) & _MASK32
        while pos <= size - 16:
            lanes = struct.unpack_from("<4I", data, pos)
            v1 = _round(v1, lanes[0])
            v2 = _round(v2, lanes[1])
            v3 = _round(v3, lanes[2])
            v4 = _round(v4, lanes[3])
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK32
    else:
        acc = (seed + _PRIME5) & _MASK32
    acc = (acc + size) & _MASK32
    while pos + 4 <= size:
        acc = (acc + _UINT32.unpack_from(data, pos)[0] * _PRIME3) & _MASK32
        acc = (_rotl(acc, 17) * _PRIME4) & _MASK32
        pos += 4
    while pos < size:
        acc = (acc + data[pos] * _PRIME5) & _MASK32
        acc = (_rotl(acc, 11) * _PRIME1) & _MASK32
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _PRIME2) & _MASK32
    acc ^= acc >> 13
    acc = (acc * _PRIME3) & _MASK32
    acc ^= acc >> 16
    return acc


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _PRIME2) & _MASK32
    return (_rotl(acc, 13) * _PRIME1) & _MASK32


@functools.lru_cache(maxsize=64)
def header_checksum(descriptor: bytes) -> int:
    """The HC byte over ``descriptor``: FLG .. content size (correct), or
    Magic .. BD (Kafka's broken magic v0 variant)."""
    return (xxh32(descriptor) >> 8) & 0xFF


def kafka_header(broken_header_checksum: bool) -> bytes:
    """The 7 header bytes Kafka writes (``Lz4BlockOutputStream.writeHeader``)."""
    descriptor = bytes((KAFKA_FLG, KAFKA_BD))
    covered = _MAGIC_BYTES + descriptor if broken_header_checksum else descriptor
    return _MAGIC_BYTES + descriptor + bytes((header_checksum(covered),))


def compress(data: memoryview, level: int, broken_header_checksum: bool) -> bytes:
    """Kafka's frame of ``data`` at ``level`` (9 = fast compressor, else HC)."""
    parts: list[bytes | memoryview] = [kafka_header(broken_header_checksum)]
    for start in range(0, len(data), KAFKA_BLOCK_SIZE):
        block = data[start : start + KAFKA_BLOCK_SIZE]
        if level == DEFAULT_LEVEL:
            packed = lz4.block.compress(block, mode="default", store_size=False)
        else:
            packed = lz4.block.compress(
                block, mode="high_compression", compression=level, store_size=False
            )
        if len(packed) >= len(block):
            parts.append(_UINT32.pack(len(block) | UNCOMPRESSED_FLAG))
            parts.append(block)
        else:
            parts.append(_UINT32.pack(len(packed)))
            parts.append(packed)
    parts.append(END_MARK)
    return b"".join(parts)


class _Frame(NamedTuple):
    """What the scan of a frame learned."""

    flg: int
    bd: int
    blocks_start: int  # first block header
    blocks_end: int  # after the end mark
    bound: int  # most bytes the blocks can decompress to
    stored: int  # bytes of the blocks stored raw: the least the output can be


def decompress(data: memoryview, max_size: int, ignore_header_checksum: bool) -> bytes | bytearray:
    """The content of a Kafka lz4 frame (see the module docstring)."""
    frame = _scan(data, ignore_header_checksum)
    if frame.stored > max_size:
        raise exceeds(NAME, max_size)
    if frame.bound == 0:
        return b""
    context = lz4.frame.create_decompression_context()
    # The blocks without their end mark: Kafka ends a frame on any block size
    # word whose low 31 bits are 0, liblz4 only on 0 (it reads 0x80000000 as
    # an empty raw block), so the decoder gets a plain end mark of its own.
    blocks = data[frame.blocks_start : frame.blocks_end - len(END_MARK)]
    try:
        lz4.frame.decompress_chunk(
            context, _canonical_header(frame.flg & FLG_BLOCK_CHECKSUM, frame.bd)
        )
        if 2 * frame.bound <= max_size:
            output, read, _ = lz4.frame.decompress_chunk(context, blocks, max_length=frame.bound)
            if read != len(blocks):
                raise corrupt(NAME, "blocks decompress to more than their bound")
            _finish(context)
            result: bytes = output
            return result
        bounded = BoundedOutput(NAME, max_size, expected=frame.bound)
        pos = 0
        while True:
            room = bounded.room(OUTPUT_STEP)
            piece, read, _ = lz4.frame.decompress_chunk(context, blocks[pos:], max_length=room)
            bounded.append(piece)
            pos += read
            if len(piece) < room:  # the decoder is done with the input it was given
                if pos < len(blocks):
                    raise corrupt(NAME, "the decoder stopped inside the blocks")
                _finish(context)
                return bounded.result()
    except RuntimeError as exc:
        if "blockChecksum_invalid" in str(exc):
            raise corrupt(NAME, BLOCK_HASH_MISMATCH) from None
        raise corrupt(NAME, f"invalid lz4 block ({exc})") from None


def _finish(context: object) -> None:
    _, _, end_of_frame = lz4.frame.decompress_chunk(context, END_MARK)
    if not end_of_frame:
        raise corrupt(NAME, "the blocks do not end at the end mark")


@functools.lru_cache(maxsize=16)
def _canonical_header(block_checksum: int, bd: int) -> bytes:
    descriptor = bytes((KAFKA_FLG | block_checksum, bd))
    return _MAGIC_BYTES + descriptor + bytes((header_checksum(descriptor),))


def _scan(data: memoryview, ignore_header_checksum: bool) -> _Frame:
    """Check the header and walk the block headers (``Lz4BlockInputStream``'s
    ``readHeader`` and ``readBlock`` without the decompression)."""
    size = len(data)
    if size < 6:
        raise corrupt(NAME, PREMATURE_EOS)
    if _UINT32.unpack_from(data, 0)[0] != MAGIC:
        raise corrupt(NAME, NOT_SUPPORTED)
    flg = data[4]
    bd = data[5]
    if flg not in _VALID_FLG:
        _check_flg(flg)
    if bd not in _VALID_BD:
        _check_bd(bd)
    pos = 6
    if flg & FLG_CONTENT_SIZE:
        if size - pos < 8:
            raise corrupt(NAME, PREMATURE_EOS)
        pos += 8
    if pos >= size:
        raise corrupt(NAME, PREMATURE_EOS)
    if not ignore_header_checksum and data[pos] != header_checksum(bytes(data[4:pos])):
        raise corrupt(NAME, DESCRIPTOR_HASH_MISMATCH)
    pos += 1
    blocks_start = pos
    max_block = 1 << (2 * ((bd >> 4) & 0x07) + 8)
    trailer = 4 if flg & FLG_BLOCK_CHECKSUM else 0
    bound = 0
    stored = 0
    unpack = _UINT32.unpack_from
    while True:
        if size - pos < 4:
            raise corrupt(NAME, PREMATURE_EOS)
        (word,) = unpack(data, pos)
        pos += 4
        block_size = word & _BLOCK_SIZE_MASK
        if not block_size:
            break
        if block_size > max_block:
            raise corrupt(NAME, f"Block size {block_size} exceeded max: {max_block}")
        pos += block_size + trailer
        if pos > size:
            raise corrupt(NAME, PREMATURE_EOS)
        if word & UNCOMPRESSED_FLAG:
            stored += block_size
            bound += block_size
        else:
            bound += max_block
    blocks_end = pos
    if flg & FLG_CONTENT_CHECKSUM and size - pos < 4:
        raise corrupt(NAME, PREMATURE_EOS)
    return _Frame(flg, bd, blocks_start, blocks_end, bound, stored)


def _check_flg(flg: int) -> None:
    """``Lz4BlockOutputStream.FLG.validate``."""
    if flg & FLG_RESERVED:
        raise corrupt(NAME, "Reserved bits must be 0")
    if not flg & FLG_BLOCK_INDEPENDENCE:
        raise corrupt(NAME, "Dependent block stream is unsupported")
    if flg & FLG_VERSION_MASK != FLG_VERSION_1:
        raise corrupt(NAME, f"Version {flg >> 6} is unsupported")


def _check_bd(bd: int) -> None:
    """``Lz4BlockOutputStream.BD.validate``."""
    if bd & 0x0F:
        raise corrupt(NAME, "Reserved2 field must be 0")
    code = (bd >> 4) & 0x07
    if code < 4 or code > 7:
        raise corrupt(NAME, "Block size value must be between 4 and 7")
    if bd & 0x80:
        raise corrupt(NAME, "Reserved3 field must be 0")


def _passes(check: Callable[[int], None], value: int) -> bool:
    try:
        check(value)
    except InvalidRecordError:
        return False
    return True


#: every FLG / BD byte the checks accept, so a frame's header costs a set lookup
_VALID_FLG = frozenset(value for value in range(256) if _passes(_check_flg, value))
_VALID_BD = frozenset(value for value in range(256) if _passes(_check_bd, value))
