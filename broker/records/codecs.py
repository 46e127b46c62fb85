"""Compression codecs of record batches: the one entry point per direction.

::

    compress(compression_type, data, *, level=None, magic=MAGIC_V2) -> bytes
    decompress(compression_type, data, *, max_size, magic=MAGIC_V2) -> bytes | bytearray
    default_level(compression_type) -> int

``compression_type`` is the codec id of the attribute bits
(:class:`broker.records.batch.CompressionType`); the payload is what follows
the batch header (v2) or the wrapper's value (v0/v1)::

    id  codec   framing (module)                               level (Kafka topic config)
    1   gzip    RFC 1952 members, JDK rules (codec_gzip)       compression.gzip.level -1, 1..9; -1
    2   snappy  xerial stream, raw block read (codec_snappy)   none
    3   lz4     Kafka's LZ4 frame (codec_lz4)                  compression.lz4.level 1..17; 9
    4   zstd    zstd frames (codec_zstd)                       compression.zstd.level -131072..22; 3

``level`` None means Kafka's default; levels map exactly as Kafka maps them
(gzip -1 = zlib's 6; lz4 9 = LZ4's fast compressor, any other level = HC at
that level). ``magic`` only matters for lz4 (magic 0 frames carry Kafka's old
broken header checksum: written broken, not checked on read).

Errors. Our mistakes are ``ValueError``: codec 0 (NONE: callers never
compress or decompress it), an id outside 0..7, a level outside the codec's
range (or any level for snappy), a magic outside 0..2, a negative
``max_size``. The client's mistakes are
:class:`~broker.errors.InvalidRecordError` (INVALID_RECORD, non-retriable:
the same bytes can never decode): ids 5-7, and any stream that cannot be
decoded, with a message naming the codec and the problem. No library
exception escapes ``decompress``. Kafka answers UNKNOWN_SERVER_ERROR in both
cases (deviation "Undecodable compressed payloads").

Bound. ``decompress`` returns at most ``max_size`` bytes; a stream that
would decompress to more raises InvalidRecordError ("... exceeds ...")
without being inflated further than ``max_size`` (+ one decoding step);
snappy and zstd reject a stream whose declared sizes are too large before
decompressing anything (deviation "Decompression is bounded").

Result. ``decompress`` returns a new buffer owned by the caller: ``bytes``
when the library's own output is returned as it is (the one-call paths:
gzip with a truthful ISIZE, lz4 with room to spare, zstd), ``bytearray``
when we assembled it (snappy, the stepped paths). Treat it as read-only
bytes (``memoryview``, ``struct.unpack_from``, slicing); ``bytes(result)``
or ``bytearray(result)`` if a fixed type is needed. ``compress`` returns
``bytes``. Both accept any contiguous buffer (``bytes``, ``bytearray``,
``memoryview``, ``mmap``) without copying it. The libraries release the
GIL while they work.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.block
import zstandard

from broker.errors import InvalidRecordError
from broker.records import codec_gzip, codec_lz4, codec_snappy, codec_zstd
from broker.records.batch import MAGIC_V0, MAGIC_V2, CompressionType
from broker.records.buffers import ReadableBuffer
from broker.records.codec_output import corrupt

#: gzip levels (``CompressionType.GZIP``: Deflater.BEST_SPEED..BEST_COMPRESSION,
#: or DEFAULT_COMPRESSION -1)
GZIP_MIN_LEVEL = 1
GZIP_MAX_LEVEL = 9
GZIP_DEFAULT_LEVEL = -1

_DEFAULT_LEVELS = {
    CompressionType.GZIP: GZIP_DEFAULT_LEVEL,
    CompressionType.LZ4: codec_lz4.DEFAULT_LEVEL,
    CompressionType.ZSTD: codec_zstd.DEFAULT_LEVEL,
}

#: what the libraries raise on bad input. The codec modules turn these into
#: InvalidRecordError where they call the library; this net is the guarantee
#: that none escapes even where they do not.
_LIBRARY_ERRORS: tuple[type[BaseException], ...] = (
    zlib.error,
    RuntimeError,
    zstandard.ZstdError,
    cramjam.DecompressionError,
    lz4.block.LZ4BlockError,
    struct.error,
    IndexError,
    OverflowError,
)


def compress(
    compression_type: int,
    data: ReadableBuffer,
    *,
    level: int | None = None,
    magic: int = MAGIC_V2,
) -> bytes:
    """``data`` compressed by ``compression_type`` the way Kafka writes it."""
    codec = _codec(compression_type)
    _check_magic(magic)
    resolved = resolve_level(codec, level)
    view = _byte_view(data)
    if codec is CompressionType.GZIP:
        return codec_gzip.compress(view, resolved)
    if codec is CompressionType.SNAPPY:
        return codec_snappy.compress(view)
    if codec is CompressionType.LZ4:
        return codec_lz4.compress(view, resolved, broken_header_checksum=magic == MAGIC_V0)
    return codec_zstd.compress(view, resolved)


def decompress(
    compression_type: int,
    data: ReadableBuffer,
    *,
    max_size: int,
    magic: int = MAGIC_V2,
) -> bytes | bytearray:
    """The content of ``data``, at most ``max_size`` bytes (see the module docstring)."""
    codec = _codec(compression_type)
    _check_magic(magic)
    if max_size < 0:
        raise ValueError(f"max_size must be >= 0, got {max_size}")
    view = _byte_view(data)
    try:
        if codec is CompressionType.GZIP:
            return codec_gzip.decompress(view, max_size)
        if codec is CompressionType.SNAPPY:
            return codec_snappy.decompress(view, max_size)
        if codec is CompressionType.LZ4:
            return codec_lz4.decompress(view, max_size, ignore_header_checksum=magic == MAGIC_V0)
        return codec_zstd.decompress(view, max_size)
    except _LIBRARY_ERRORS as exc:
        raise corrupt(codec.name.lower(), f"undecodable stream ({exc!r})") from None


def size_hint(compression_type: int, data: ReadableBuffer) -> int:
    """What the stream says it decompresses to, where a decoder would only
    learn it by stepping through the stream: gzip's ISIZE (mod 2^32, and
    a liar's word; the bound is still enforced while decoding). 0 when the
    codec checks its declared sizes itself before decoding (snappy, zstd,
    lz4) or the stream says nothing. A caller uses it to decide where to
    decode (``validator/inline.py``), never to accept or refuse a stream."""
    if compression_type == CompressionType.GZIP:
        return codec_gzip.expected_size(_byte_view(data))
    return 0


def default_level(compression_type: int) -> int:
    """Kafka's default level of a codec: gzip -1 (= zlib 6), lz4 9, zstd 3."""
    codec = _codec(compression_type)
    if codec not in _DEFAULT_LEVELS:
        raise ValueError(f"compression levels are not defined for {codec.name.lower()}")
    return _DEFAULT_LEVELS[codec]


def resolve_level(compression_type: int, level: int | None) -> int:
    """``level`` checked against the codec's range (None: the default).

    Snappy has no levels: its result is 0 and only None is accepted.
    """
    codec = _codec(compression_type)
    if codec is CompressionType.SNAPPY:
        if level is not None:
            raise ValueError("snappy has no compression levels")
        return 0
    if level is None:
        return _DEFAULT_LEVELS[codec]
    if codec is CompressionType.GZIP:
        valid = GZIP_MIN_LEVEL <= level <= GZIP_MAX_LEVEL or level == GZIP_DEFAULT_LEVEL
    elif codec is CompressionType.LZ4:
        valid = codec_lz4.MIN_LEVEL <= level <= codec_lz4.MAX_LEVEL
    else:
        valid = codec_zstd.MIN_LEVEL <= level <= codec_zstd.MAX_LEVEL
    if not valid:
        raise ValueError(f"{codec.name.lower()} doesn't support given compression level: {level}")
    return level


_CODECS = {codec.value: codec for codec in CompressionType if codec is not CompressionType.NONE}


def _codec(compression_type: int) -> CompressionType:
    codec = _CODECS.get(compression_type)
    if codec is not None:
        return codec
    if not 0 <= compression_type <= 7:
        raise ValueError(f"compression type id must be 0..7, got {compression_type}")
    if compression_type > CompressionType.ZSTD:
        # CompressionType.forId throws IllegalArgumentException (-> UNKNOWN_SERVER_ERROR).
        raise InvalidRecordError(f"Unknown compression type id: {compression_type}")
    raise ValueError("NONE is not a codec: uncompressed records are not passed here")


def _check_magic(magic: int) -> None:
    if not MAGIC_V0 <= magic <= MAGIC_V2:
        raise ValueError(f"magic must be 0..2, got {magic}")


def _byte_view(data: ReadableBuffer) -> memoryview:
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view
