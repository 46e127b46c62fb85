"""zstd (codec 4): plain zstd frames, as zstd-jni streams them.

Kafka writes through ``ZstdOutputStreamNoFinalizer`` and reads through
``ZstdInputStreamNoFinalizer`` (``clients/.../compress/ZstdCompression.java``).
A stream is zero or more frames (RFC 8878), integers little-endian::

    Frame:
      Magic               uint32  0xFD2FB528         (28 B5 2F FD)
      FrameHeaderDescriptor int8  bits 6-7 content size flag, bit 5 single
                                  segment, bit 3 reserved, bit 2 checksum,
                                  bits 0-1 dictionary id size (0, 1, 2, 4)
      [WindowDescriptor   int8]   unless single segment
      [DictionaryId       0-4 bytes]
      [ContentSize        0, 1, 2 (+256), 4 or 8 bytes]
      Blocks: header uint24 = Last(bit 0) | Type(bits 1-2) << 1 | Size << 3
        Type 0 raw: Size bytes; 1 RLE: 1 byte repeated Size times;
        2 compressed: Size bytes; 3 reserved
      [ContentChecksum    uint32] if the checksum flag is set
    Skippable frame:
      Magic uint32 0x184D2A50..0x184D2A5F, Size uint32, Size bytes

zstd-jni streams without a pledged size, so Kafka's frames carry no content
size; other clients write it. Both are read, and so are concatenated and
skippable frames (zstd-jni decodes frame after frame until the input ends).
Empty input is an empty stream (zstd-jni returns end-of-stream at once).

Reading: the frames are first walked header by header in Python (a handful
of steps per megabyte), which finds truncation -- zstd's streaming decoder
would just stop producing, where zstd-jni says "Truncated source" -- and
two sizes: what the frames declare (content sizes, raw and RLE blocks;
more than ``max_size`` is rejected before anything is decompressed) and
what they can at most produce (those, plus the block maximum -- 128 KiB or
the window -- per compressed block). The frames are then decoded by
python-zstandard's streaming reader (GIL released) in one read of that
bound, capped at ``max_size + 1`` (the library allocates it without
zeroing it and trims it to what came); anything past it -- only when the
bound was capped -- comes in steps of :data:`OUTPUT_STEP` into a
:class:`BoundedOutput` and is refused once over the limit.
The decoder keeps a window buffer of the size a frame declares (zstd's
default limit, 128 MiB, as in zstd-jni); that buffer is allocated lazily by
the library and only touched as output is produced.

Writing: one frame without a content size field (as zstd-jni writes), no
checksum, at the Kafka level (``compression.zstd.level``, -131072..22,
default 3).
"""

from __future__ import annotations

import struct
import threading

import zstandard

from broker.records.codec_output import BoundedOutput, corrupt, exceeds

NAME = "zstd"

#: Kafka's default level (``CompressionType.ZSTD.defaultLevel()``)
DEFAULT_LEVEL = 3
#: ``Zstd.minCompressionLevel()`` / ``Zstd.maxCompressionLevel()``
MIN_LEVEL = -131072
MAX_LEVEL = 22

FRAME_MAGIC = 0xFD2FB528
SKIPPABLE_MAGIC = 0x184D2A50
SKIPPABLE_MAGIC_MASK = 0xFFFFFFF0

#: most output bytes one decoding step produces
OUTPUT_STEP = 1024 * 1024
#: RFC 8878 Block_Maximum_Size cap: no block regenerates more
BLOCK_SIZE_MAX = 128 * 1024

_UINT32 = struct.Struct("<I")
_DICTIONARY_ID_SIZES = (0, 1, 2, 4)
_CONTENT_SIZE_SIZES = (0, 2, 4, 8)
_BLOCK_RAW = 0
_BLOCK_RLE = 1
_BLOCK_COMPRESSED = 2

_local = threading.local()


def compress(data: memoryview, level: int) -> bytes:
    """One zstd frame of ``data``, without content size, like zstd-jni's stream."""
    # A compressor holds tables sized by its level; it is made per call (as
    # Kafka makes a ZstdOutputStream per batch) rather than kept per thread.
    compressor = zstandard.ZstdCompressor(level=level, write_content_size=False)
    return compressor.compress(data)


def decompress(data: memoryview, max_size: int) -> bytes | bytearray:
    """All frames of ``data`` (see the module docstring)."""
    declared, bound = _scan(data)
    if declared > max_size:
        raise exceeds(NAME, max_size)
    if not data:
        return b""
    reader = _decompressor().stream_reader(data, read_across_frames=True)
    try:
        # One read sized by the frames' bound usually takes everything: the
        # library allocates it without zeroing and trims it to what came.
        first = reader.read(max(1, min(bound, max_size + 1)))
        if len(first) > max_size:
            raise exceeds(NAME, max_size)
        piece = reader.read(min(OUTPUT_STEP, max_size + 1 - len(first)))
        if not piece:
            return first
        output = BoundedOutput(NAME, max_size, expected=min(2 * len(first), max_size))
        output.append(first)
        while piece:
            output.append(piece)
            piece = reader.read(output.room(OUTPUT_STEP))
        return output.result()
    except zstandard.ZstdError as exc:
        raise corrupt(NAME, f"invalid zstd frame ({exc})") from None


def _decompressor() -> zstandard.ZstdDecompressor:
    """One decompression context per thread (they are not thread-safe)."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:
        decompressor = zstandard.ZstdDecompressor()
        _local.decompressor = decompressor
    return decompressor


def _scan(data: memoryview) -> tuple[int, int]:
    """Walk the frames; return (declared, bound): the output size the frames
    declare (content sizes, or raw + RLE block sizes of frames without one)
    and the most they can decompress to. Raise if a frame is cut short."""
    size = len(data)
    pos = 0
    declared = 0
    bound = 0
    while pos < size:
        if size - pos < 4:
            raise corrupt(NAME, "truncated frame")
        magic: int = _UINT32.unpack_from(data, pos)[0]
        if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC:
            if size - pos < 8:
                raise corrupt(NAME, "truncated skippable frame")
            pos += 8 + _UINT32.unpack_from(data, pos + 4)[0]
            if pos > size:
                raise corrupt(NAME, "truncated skippable frame")
            continue
        if magic != FRAME_MAGIC:
            raise corrupt(NAME, "unknown frame descriptor")
        pos, frame_declared, frame_bound = _scan_frame(data, pos + 4)
        declared += frame_declared
        bound += frame_bound
    return declared, bound


def _scan_frame(data: memoryview, pos: int) -> tuple[int, int, int]:
    """Walk one frame after its magic; return (end, declared size, bound)."""
    size = len(data)
    if pos >= size:
        raise corrupt(NAME, "truncated frame header")
    descriptor = data[pos]
    pos += 1
    single_segment = bool(descriptor & 0x20)
    content_size_size = _CONTENT_SIZE_SIZES[descriptor >> 6]
    if single_segment and content_size_size == 0:
        content_size_size = 1
    header_rest = (0 if single_segment else 1) + _DICTIONARY_ID_SIZES[descriptor & 0x03]
    if size - pos < header_rest + content_size_size:
        raise corrupt(NAME, "truncated frame header")
    window = 0 if single_segment else _window_size(data[pos])
    pos += header_rest
    content_size: int | None = None
    if content_size_size:
        content_size = int.from_bytes(data[pos : pos + content_size_size], "little")
        if content_size_size == 2:
            content_size += 256
        pos += content_size_size
    if single_segment:
        window = content_size or 0
    block_maximum = min(window, BLOCK_SIZE_MAX)
    declared_blocks = 0
    bound = 0
    while True:
        if size - pos < 3:
            raise corrupt(NAME, "truncated block header")
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        pos += 3
        block_type = (header >> 1) & 0x03
        block_size = header >> 3
        if block_type == _BLOCK_RLE:
            payload = 1
            declared_blocks += block_size
            bound += block_size
        elif block_type == _BLOCK_RAW:
            payload = block_size
            declared_blocks += block_size
            bound += block_size
        elif block_type == _BLOCK_COMPRESSED:
            payload = block_size
            bound += block_maximum
        else:
            raise corrupt(NAME, "reserved block type")
        if size - pos < payload:
            raise corrupt(NAME, "truncated block")
        pos += payload
        if header & 0x01:
            break
    if descriptor & 0x04:
        if size - pos < 4:
            raise corrupt(NAME, "truncated content checksum")
        pos += 4
    if content_size is None:
        return pos, declared_blocks, bound
    return pos, content_size, min(bound, content_size)


def _window_size(descriptor: int) -> int:
    """RFC 8878 Window_Descriptor: 2^(10 + exponent) plus mantissa eighths."""
    base = 1 << (10 + (descriptor >> 3))
    return base + (base >> 3) * (descriptor & 0x07)
