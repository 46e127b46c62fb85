"""An encoded message as the segments a server writes out.

::

    Encoded.segments = [bytearray, records?, bytearray, records?, ..., bytearray?]
    Encoded.size     = sum(len(segment) for segment in segments)

The generator coalesces everything it writes into ``bytearray`` segments;
a ``records`` value (a ``bytes``/``memoryview`` or any object with
``__len__``, e.g. a file slice the server sends with ``sendfile``) is placed
in the list as it was given, never copied. A server writes a 4-byte size
prefix (``encode_response`` already puts one in the first segment) and then
the segments with ``writev``/``sendfile``.
"""

from __future__ import annotations

from collections.abc import Sized


class Encoded:
    __slots__ = ("segments", "size")

    def __init__(self, segments: list[Sized], size: int) -> None:
        self.segments = segments
        self.size = size

    def to_bytes(self) -> bytes:
        """All segments joined (tests and small messages; every segment must be bytes-like)."""
        return b"".join(self.segments)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"Encoded(size={self.size}, segments={len(self.segments)})"
