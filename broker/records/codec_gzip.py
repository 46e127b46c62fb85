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
(``readTrailer`` swallows the header's IOException). Headers are parsed
here by the JDK's rules; zlib's gzip mode then inflates the member and
checks its trailer (CRC-32 computed as it inflates, no second pass). The
one place the two disagree, the reserved flag bits the JDK ignores and
zlib refuses, is bridged by handing zlib the header with those bits
cleared.

Bound and speed. CPython's zlib cannot inflate into a buffer of ours, and a
call limited to ``n`` output bytes may hold them twice while it joins its
internal blocks. The usual stream -- one member whose ISIZE (the last four
bytes) tells its size -- is inflated in one call limited to that size + 1,
when twice that is within ``max_size``; it is returned as zlib made it. Any
other stream (several members, ISIZE wrong or too large for that) is
inflated in steps of at most :data:`OUTPUT_STEP` output bytes fed with at
most :data:`INPUT_STEP` input bytes into a :class:`BoundedOutput` sized by
the ISIZE hint, so the output stays within ``max_size`` and zlib never
copies more than one input step aside (``unconsumed_tail``). zlib releases
the GIL while it inflates.

Writing: one member by ``zlib.compress`` at the Kafka level (-1 = zlib's
default, 6), header MTIME 0; the JDK writes the same layout (its OS byte
differs, which no reader looks at).
"""

from __future__ import annotations

import zlib

from broker.errors import InvalidRecordError
from broker.records.codec_output import BoundedOutput, corrupt

NAME = "gzip"

#: most output bytes one inflate step may produce (bounds memory per step; 64 KiB
#: steps cost clearly more over one zlib call for multi-MB outputs, 1 MiB steps
#: little: ``bench codecs``, "tight bound", docs/performance.md; zlib releases
#: the GIL inside a step)
OUTPUT_STEP = 1024 * 1024
#: most input bytes handed to zlib per step (what ``unconsumed_tail`` may copy aside)
INPUT_STEP = 256 * 1024

_FHCRC = 0x02
_FEXTRA = 0x04
_FNAME = 0x08
_FCOMMENT = 0x10
_RESERVED_FLAGS = 0xE0
_FIXED_HEADER_SIZE = 10
#: deflate's largest expansion (a 258-byte match per 2 bits)
_MAX_DEFLATE_RATIO = 1032
_SCAN_STEP = 4096
#: zlib's gzip mode: header, raw deflate, CRC-32 and ISIZE checked by zlib
_GZIP_WBITS = 16 + zlib.MAX_WBITS


class _BadHeader(Exception):
    """A member header the JDK would refuse (internal: turned into an error
    for the first member, into end-of-stream for later ones)."""


def compress(data: memoryview, level: int) -> bytes:
    """One gzip member of ``data`` at zlib ``level`` (-1 or 1..9)."""
    return zlib.compress(data, level, wbits=31)


def decompress(data: memoryview, max_size: int) -> bytes | bytearray:
    """All members of ``data``, as ``GZIPInputStream`` reads them."""
    try:
        header_end = _header_end(data, 0)
    except _BadHeader as exc:
        raise corrupt(NAME, str(exc)) from None
    expected = expected_size(data)
    if expected > 0 and 2 * (expected + 1) <= max_size:
        whole = _single_member(data, header_end, expected)
        if whole is not None:
            return whole
    output = BoundedOutput(NAME, max_size, expected=expected)
    end = len(data)
    pos = 0
    next_header_end: int | None = header_end
    while next_header_end is not None:
        pos = _inflate_member(data, pos, next_header_end, output)
        if pos >= end:
            break
        next_header_end = _next_header_end(data, pos)
    return output.result()


def _single_member(data: memoryview, header_end: int, expected: int) -> bytes | None:
    """The common case in one zlib call: one member whose ISIZE tells the
    truth. zlib may hold its output twice while joining it, which is why the
    caller takes this path only when twice ``expected + 1`` is within the
    limit. None (the stream goes the stepped way) when the member does not
    end there, or another member follows."""
    inflater = zlib.decompressobj(_GZIP_WBITS)
    try:
        inflater.decompress(_zlib_header(data[:header_end]))
        whole = inflater.decompress(data[header_end:], expected + 1)
    except zlib.error as exc:
        raise _zlib_failure(exc) from None
    if not inflater.eof or len(whole) != expected:
        return None
    member_end = len(data) - len(inflater.unused_data)
    if member_end < len(data) and _next_header_end(data, member_end) is not None:
        return None
    return whole


def _next_header_end(data: memoryview, pos: int) -> int | None:
    """Where the header of a member at ``pos`` ends, or None: bytes after a
    member that are not a gzip header end the stream and are ignored
    (``GZIPInputStream.readTrailer`` swallows the header's IOException)."""
    try:
        return _header_end(data, pos)
    except _BadHeader:
        return None


def expected_size(data: memoryview) -> int:
    """The output size to allocate up front: the last member's ISIZE (the
    whole output for the usual single member), never more than deflate can
    produce from this input (1032:1). Only a hint: the output is bounded
    and may still grow or shrink."""
    if len(data) < _FIXED_HEADER_SIZE + 8:
        return 0
    isize = int.from_bytes(data[-4:], "little")
    return min(isize, _MAX_DEFLATE_RATIO * len(data))


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
        if _crc16(data[pos:cursor]) != data[cursor] | data[cursor + 1] << 8:
            raise _BadHeader("corrupt gzip header")
        cursor += 2
    return cursor


def _crc16(header: memoryview | bytearray) -> int:
    return zlib.crc32(header) & 0xFFFF


def _skip_zero_terminated(data: memoryview, pos: int) -> int:
    end = len(data)
    while pos < end:
        found = bytes(data[pos : pos + _SCAN_STEP]).find(0)
        if found >= 0:
            return pos + found + 1
        pos += _SCAN_STEP
    raise _BadHeader("truncated gzip header")


def _zlib_header(header: memoryview) -> bytes | memoryview:
    """The member header as zlib's gzip mode accepts it: zlib refuses the
    reserved flag bits the JDK ignores, so they are cleared (and the header
    CRC, already checked above, recomputed)."""
    if not header[3] & _RESERVED_FLAGS:
        return header
    fixed = bytearray(header)
    fixed[3] &= ~_RESERVED_FLAGS
    if fixed[3] & _FHCRC:
        fixed[-2:] = (_crc16(fixed[:-2])).to_bytes(2, "little")
    return bytes(fixed)


def _inflate_member(data: memoryview, pos: int, header_end: int, output: BoundedOutput) -> int:
    """Inflate the member at ``pos`` whose header ends at ``header_end``;
    return the position after its trailer."""
    end = len(data)
    inflater = zlib.decompressobj(_GZIP_WBITS)
    chunk: bytes | memoryview = _zlib_header(data[pos:header_end])
    pos = header_end
    try:
        while True:
            piece = inflater.decompress(chunk, output.room(OUTPUT_STEP))
            if piece:
                output.append(piece)
            if inflater.eof:
                # The member ended inside the last input handed to zlib; what
                # zlib did not use starts the next member.
                return pos - len(inflater.unused_data)
            chunk = inflater.unconsumed_tail
            if not chunk:
                if pos >= end:
                    raise corrupt(NAME, "unexpected end of gzip stream")
                chunk = data[pos : pos + INPUT_STEP]
                pos += len(chunk)
    except zlib.error as exc:
        raise _zlib_failure(exc) from None


def _zlib_failure(exc: zlib.error) -> InvalidRecordError:
    if "incorrect data check" in str(exc) or "incorrect length check" in str(exc):
        return corrupt(NAME, "corrupt gzip trailer")
    return corrupt(NAME, f"invalid deflate data ({exc})")
