"""snappy (codec 2): xerial snappy-java stream framing, and raw snappy.

Kafka writes ``org.xerial.snappy.SnappyOutputStream`` and reads
``SnappyInputStream`` (``clients/.../compress/SnappyCompression.java``,
snappy-java 1.1.10.5). The stream, integers big-endian::

    Magic          8 bytes  82 53 4E 41 50 50 59 00   (0x82 "SNAPPY" 0x00)
    Version        int32    1
    MinCompatible  int32    1
    then per 32 KiB of input:
    ChunkLength    int32    length of the raw snappy block that follows
    Chunk          raw snappy block (varint32 uncompressed length + tags)

This is not the official snappy framing format (``FF 06 00 00 sNaPpY``),
which snappy-java does not understand either: it falls into the raw path
below and fails there.

Reading (``SnappyInputStream.readHeader`` / ``hasNextChunk``):

* empty input: error ("Cannot decompress empty stream");
* input shorter than 16 bytes, or whose first 8 bytes are not the magic: the
  whole input is ONE raw snappy block (how librdkafka and others write
  snappy). The version fields of the first header are not checked;
* a chunk length equal to the magic's first 4 bytes read as an int starts a
  concatenated stream: 12 more header bytes must follow (else error); if the
  8 bytes are the full magic the version must be >= 1 and reading goes on,
  otherwise the stream ends there and the rest is ignored;
* a negative chunk length or one above 512 MiB is an error, as is a chunk
  cut short; 1-3 bytes left after the last chunk are ignored.

Bound: every raw block starts with its uncompressed length, so the total is
known before anything is decompressed. More than ``max_size`` is rejected
at once; otherwise the output is allocated once, exactly, and every block is
decompressed straight into its place (cramjam, which releases the GIL).

Writing: the 16-byte header (also for empty input, as snappy-java 1.1.10.5
does) and one chunk per 32 KiB of input.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import cramjam

from broker.records import scan
from broker.records.codec_output import corrupt, exceeds

NAME = "snappy"

MAGIC = b"\x82SNAPPY\x00"
HEADER = MAGIC + struct.pack(">ii", 1, 1)
HEADER_SIZE = len(HEADER)
#: snappy-java's ``SnappyOutputStream.DEFAULT_BLOCK_SIZE``
BLOCK_SIZE = 32 * 1024
#: ``SnappyInputStream.MAX_CHUNK_SIZE``
MAX_CHUNK_SIZE = 512 * 1024 * 1024
#: minimum compatible version ``SnappyCodec`` accepts in a concatenated header
MINIMUM_COMPATIBLE_VERSION = 1

_INT32 = struct.Struct(">i")
_MAGIC_HEAD = _INT32.unpack(MAGIC[:4])[0]


class _Chunk(NamedTuple):
    start: int
    stop: int
    uncompressed_length: int


def compress(data: memoryview) -> bytes:
    """snappy-java's stream of ``data``: header, then one chunk per 32 KiB."""
    parts: list[bytes | memoryview] = [HEADER]
    for start in range(0, len(data), BLOCK_SIZE):
        block = memoryview(cramjam.snappy.compress_raw(data[start : start + BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def decompress(data: memoryview, max_size: int) -> bytearray:
    """A xerial stream, or one raw snappy block (see the module docstring)."""
    size = len(data)
    if size == 0:
        raise corrupt(NAME, "cannot decompress empty stream")
    if size < HEADER_SIZE or data[: len(MAGIC)] != MAGIC:
        chunks = [_Chunk(0, size, _uncompressed_length(data, 0, size))]
    else:
        chunks = _xerial_chunks(data, max_size)
    total = sum(chunk.uncompressed_length for chunk in chunks)
    if total > max_size:
        raise exceeds(NAME, max_size)
    # not zero-filled (compiled twin): every chunk is decompressed into its
    # place and one that comes out short raises, so no byte is left unwritten
    output: bytearray = scan.new_buffer(total)
    with memoryview(output) as target:
        written = 0
        for chunk in chunks:
            length = chunk.uncompressed_length
            try:
                produced = cramjam.snappy.decompress_raw_into(
                    data[chunk.start : chunk.stop], target[written : written + length]
                )
            except cramjam.DecompressionError as exc:
                raise corrupt(NAME, f"invalid snappy block ({exc})") from None
            if produced != length:
                raise corrupt(
                    NAME, f"block decompressed to {produced} bytes, its header says {length}"
                )
            written += length
    return output


def _xerial_chunks(data: memoryview, max_size: int) -> list[_Chunk]:
    """Where the chunks of a xerial stream lie (``SnappyInputStream.hasNextChunk``);
    stops with an error as soon as their lengths add up to more than ``max_size``."""
    size = len(data)
    chunks: list[_Chunk] = []
    total = 0
    pos = HEADER_SIZE
    while size - pos >= 4:
        chunk_length: int = _INT32.unpack_from(data, pos)[0]
        pos += 4
        if chunk_length == _MAGIC_HEAD:
            if size - pos < HEADER_SIZE - 4:
                raise corrupt(NAME, "insufficient header size in a concatenated block")
            if data[pos - 4 : pos - 4 + len(MAGIC)] != MAGIC:
                break  # not a header after all: snappy-java ends the stream here
            version: int = _INT32.unpack_from(data, pos + 4)[0]
            if version < MINIMUM_COMPATIBLE_VERSION:
                raise corrupt(NAME, f"compressed with an incompatible codec version {version}")
            pos += HEADER_SIZE - 4
            continue
        if chunk_length < 0:
            raise corrupt(NAME, f"chunk size is negative: {chunk_length}")
        if chunk_length > MAX_CHUNK_SIZE:
            raise corrupt(
                NAME, f"chunk size {chunk_length} is greater than the maximum {MAX_CHUNK_SIZE}"
            )
        if size - pos < chunk_length:
            raise corrupt(NAME, "failed to read chunk: stream truncated")
        stop = pos + chunk_length
        length = _uncompressed_length(data, pos, stop)
        total += length
        if total > max_size:
            raise exceeds(NAME, max_size)
        chunks.append(_Chunk(pos, stop, length))
        pos = stop
    return chunks


def _uncompressed_length(data: memoryview, start: int, stop: int) -> int:
    """The varint32 that opens a raw snappy block (snappy's ``GetUncompressedLength``)."""
    value = 0
    shift = 0
    pos = start
    while True:
        if pos >= stop:
            raise corrupt(NAME, "truncated snappy block length")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise corrupt(NAME, "snappy block length is not a valid varint32")
    if value > 0xFFFFFFFF:
        raise corrupt(NAME, "snappy block length is not a valid varint32")
    return value
