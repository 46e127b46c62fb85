"""gzip (codec 1): RFC 1952 members, read the way the JDK reads them.

Kafka wraps ``java.util.zip.GZIPInputStream`` / ``GZIPOutputStream``
(``clients/.../compress/GzipCompression.java``, ``GzipOutputStream.java``).
One member, integers little-endian::

    ID1 ID2   2 bytes  1F 8B
    CM        int8     8 = deflate; anything else is unreadable
    FLG       int8     bit 1 FHCRC, bit 2 FEXTRA, bit 3 FNAME, bit 4 FCOMMENT
                       (the other bits are not looked at, as in the JDK)
    MTIME XFL OS       6 bytes, skipped
    XLEN + XLEN bytes          if FEXTRA
    zero-terminated name       if FNAME
    zero-terminated comment    if FCOMMENT
    CRC16     int16    if FHCRC: low 16 bits of the CRC-32 of the header so far
    deflate data (RFC 1951, raw)
    CRC32     uint32   CRC-32 of the member's output
    ISIZE     uint32   the member's output size mod 2^32

Reading follows ``GZIPInputStream``: the first header must be valid; a
truncated or corrupt deflate stream or trailer is an error; after a
trailer, remaining bytes that parse as a header start another member
(multi-member streams), and remaining bytes that do not are ignored
(``readTrailer`` swallows the header's IOException). Like the JDK we parse
headers and trailers ourselves and inflate raw deflate data, so the rules
above are the JDK's rather than zlib's (zlib's gzip mode rejects reserved
flag bits the JDK accepts).

Inflating is done in steps of at most :data:`OUTPUT_STEP` output bytes fed
with at most :data:`INPUT_STEP` input bytes, so the output stays within
``max_size`` and zlib never copies more than one input step aside
(``unconsumed_tail``). zlib releases the GIL while it inflates.

Writing: one member by ``zlib.compress`` at the Kafka level (-1 = zlib's
default, 6), header MTIME 0; the JDK writes the same layout (its OS byte
differs, which no reader looks at).
"""

from __future__ import annotations

import struct
import zlib

from broker.records.codec_output import BoundedOutput, corrupt

NAME = "gzip"

#: most output bytes one inflate step may produce (bounds memory per step)
OUTPUT_STEP = 256 * 1024
#: most input bytes handed to zlib per step
INPUT_STEP = 256 * 1024

_FHCRC = 0x02
_FEXTRA = 0x04
_FNAME = 0x08
_FCOMMENT = 0x10
_FIXED_HEADER_SIZE = 10
_TRAILER = struct.Struct("<II")
_SCAN_STEP = 4096


class _BadHeader(Exception):
    """A member header the JDK would refuse (internal: turned into an error
    for the first member, into end-of-stream for later ones)."""


def compress(data: memoryview, level: int) -> bytes:
    """One gzip member of ``data`` at zlib ``level`` (-1 or 1..9)."""
    return zlib.compress(data, level, wbits=31)


def decompress(data: memoryview, max_size: int) -> bytearray:
    """All members of ``data``, as ``GZIPInputStream`` reads them."""
    output = BoundedOutput(NAME, max_size)
    end = len(data)
    try:
        pos = _header_end(data, 0)
    except _BadHeader as exc:
        raise corrupt(NAME, str(exc)) from None
    while True:
        pos = _inflate_member(data, pos, output)
        if pos >= end:
            return output.buffer
        try:
            pos = _header_end(data, pos)
        except _BadHeader:
            # GZIPInputStream.readTrailer: bytes after a member that are not a
            # gzip header are ignored, not an error.
            return output.buffer


def _header_end(data: memoryview, pos: int) -> int:
    """Position after the member header at ``pos`` (``GZIPInputStream.readHeader``)."""
    end = len(data)
    if end - pos < _FIXED_HEADER_SIZE:
        raise _BadHeader("truncated gzip header")
    if data[pos] != 0x1F or data[pos + 1] != 0x8B:
        raise _BadHeader("not in gzip format")
    if data[pos + 2] != zlib.DEFLATED:
        raise _BadHeader("unsupported compression method")
    flags = data[pos + 3]
    cursor = pos + _FIXED_HEADER_SIZE
    if flags & _FEXTRA:
        if end - cursor < 2:
            raise _BadHeader("truncated gzip header")
        cursor += 2 + (data[cursor] | data[cursor + 1] << 8)
        if cursor > end:
            raise _BadHeader("truncated gzip header")
    if flags & _FNAME:
        cursor = _skip_zero_terminated(data, cursor)
    if flags & _FCOMMENT:
        cursor = _skip_zero_terminated(data, cursor)
    if flags & _FHCRC:
        if end - cursor < 2:
            raise _BadHeader("truncated gzip header")
        stored = data[cursor] | data[cursor + 1] << 8
        if zlib.crc32(data[pos:cursor]) & 0xFFFF != stored:
            raise _BadHeader("corrupt gzip header")
        cursor += 2
    return cursor


def _skip_zero_terminated(data: memoryview, pos: int) -> int:
    end = len(data)
    while pos < end:
        found = bytes(data[pos : pos + _SCAN_STEP]).find(0)
        if found >= 0:
            return pos + found + 1
        pos += _SCAN_STEP
    raise _BadHeader("truncated gzip header")


def _inflate_member(data: memoryview, pos: int, output: BoundedOutput) -> int:
    """Inflate the deflate data at ``pos``, check the trailer; return the
    position after the trailer."""
    end = len(data)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    crc = 0
    size = 0
    while not inflater.eof:
        chunk: bytes | memoryview = inflater.unconsumed_tail
        if not chunk:
            if pos >= end:
                raise corrupt(NAME, "unexpected end of deflate data")
            chunk = data[pos : pos + INPUT_STEP]
            pos += len(chunk)
        try:
            piece = inflater.decompress(chunk, output.room(OUTPUT_STEP))
        except zlib.error as exc:
            raise corrupt(NAME, f"invalid deflate data ({exc})") from None
        if piece:
            crc = zlib.crc32(piece, crc)
            size += len(piece)
            output.append(piece)
    # The deflate data ended inside the last chunk handed to zlib; what it
    # did not use starts the trailer.
    pos -= len(inflater.unused_data)
    if end - pos < _TRAILER.size:
        raise corrupt(NAME, "truncated gzip trailer")
    stored_crc, stored_size = _TRAILER.unpack_from(data, pos)
    if stored_crc != crc or stored_size != size & 0xFFFFFFFF:
        raise corrupt(NAME, "corrupt gzip trailer")
    return pos + _TRAILER.size
