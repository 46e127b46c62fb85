"""The bounded output every decoder writes into, and the errors codecs raise.

A compressed batch is a few bytes that can stand for gigabytes. Kafka's
readers decompress lazily as records are read, with no bound on the total
(deviation "Decompression is bounded", ``docs/deviations.md``); ours decode a
whole stream at once and are told ``max_size``, the most bytes the caller
accepts. :class:`BoundedOutput` is the one place that bound is enforced for
the codecs that cannot know their output size for sure up front (gzip,
zstd, lz4 when the block sizes do not settle it):

* a stream that comes whole in the decoder's first step is returned as the
  library made it, without a copy;
* otherwise, a decoder that knows roughly how much is coming (gzip's ISIZE
  field, the block bounds of an lz4 frame) says so, and the buffer is
  allocated once at ``min(expected, max_size)``; pieces handed to
  :meth:`BoundedOutput.append` are copied into it in place (without the GIL
  for large ones) -- no reallocation, no copy of what is already there;
* whatever comes beyond is appended; a decoder asks :meth:`BoundedOutput.room`
  how much its next step may produce (one byte past the limit at most) and
  the buffer refuses, before growing, anything that takes it past
  ``max_size``.

So the buffer never holds more than ``max_size`` bytes and a decoder never
asks its library for more than one step: a bomb costs ``max_size`` plus one
step of memory.

Every failure on a client's bytes is an :class:`InvalidRecordError` whose
message starts with the codec's name (Kafka answers UNKNOWN_SERVER_ERROR
there; deviation "Undecodable compressed payloads").
"""

from __future__ import annotations

from broker.errors import InvalidRecordError
from broker.records import scan
from broker.records.buffers import ReadableBuffer


def corrupt(codec: str, problem: str) -> InvalidRecordError:
    """The error for a stream ``codec`` cannot decode."""
    return InvalidRecordError(f"{codec}: {problem}")


class DecompressedSizeExceeded(InvalidRecordError):
    """A stream that would decompress to more than ``max_size`` bytes."""

    def __init__(self, codec: str, max_size: int) -> None:
        super().__init__(f"{codec}: decompressed size exceeds the limit of {max_size} bytes")
        self.max_size = max_size


def exceeds(codec: str, max_size: int) -> DecompressedSizeExceeded:
    """The error for a stream that would decompress to more than ``max_size``."""
    return DecompressedSizeExceeded(codec, max_size)


class BoundedOutput:
    """Decompressed bytes of one stream, never more than ``max_size``."""

    __slots__ = ("_buffer", "_expected", "_first", "codec", "max_size", "size")

    def __init__(self, codec: str, max_size: int, expected: int = 0) -> None:
        self.codec = codec
        self.max_size = max_size
        self.size = 0
        #: the first piece, kept as the decoder made it while it is the only one:
        #: a stream that comes whole in one step is returned without a copy (a
        #: copy costs as much as lz4's decoding)
        self._first: bytes | None = None
        #: from the second piece on, ``_buffer[:size]`` is the output; beyond it,
        #: room allocated for ``expected`` bytes, not zero-filled: a decoder on a
        #: worker thread must not hold the GIL for a 64 MB memset (long enough to
        #: stall the event loop visibly; docs/performance.md)
        self._buffer: bytearray | None = None
        self._expected = max(0, min(expected, max_size))

    def room(self, step: int) -> int:
        """How many bytes the next step may produce: at most ``step``, and
        one byte past the limit so that an overflow is seen (never 0)."""
        return min(step, self.max_size + 1 - self.size)

    def append(self, piece: ReadableBuffer) -> None:
        """Add ``piece``; raise instead if it takes the output past ``max_size``."""
        with memoryview(piece) as view:
            end = self.size + view.nbytes
            if end > self.max_size:
                raise exceeds(self.codec, self.max_size)
            if self.size == 0 and self._buffer is None and isinstance(piece, bytes):
                self._first = piece  # immutable: safe to keep without a copy
                self.size = end
                return
            # without the GIL for a large piece (a worker's 1 MB step into fresh
            # pages held it, and a loop waiting for it lost a whole switch
            # interval: lz4 bombs multiplied the good producers' p99;
            # docs/performance.md)
            scan.copy_into(self._room_for(end), self.size, view)
        self.size = end

    def _room_for(self, end: int) -> bytearray:
        """The buffer, with room for ``end`` bytes (the first piece moved in)."""
        buffer = self._buffer
        if buffer is None:
            buffer = self._buffer = scan.new_buffer(max(self._expected, end))
            if self._first:
                scan.copy_into(buffer, 0, self._first)
            self._first = None
        elif end > len(buffer):
            # grow (at least double) into a new, not zero-filled buffer: a
            # bytearray's own growth copies the old bytes holding the GIL
            grown = scan.new_buffer(min(self.max_size, max(end, 2 * len(buffer))))
            scan.copy_into(grown, 0, memoryview(buffer)[: self.size])
            buffer = self._buffer = grown
        return buffer

    def result(self) -> bytes | bytearray:
        """The output, trimmed to what was produced."""
        buffer = self._buffer
        if buffer is None:
            return b"" if self._first is None else self._first
        if len(buffer) > self.size:
            del buffer[self.size :]
        return buffer
