"""The bounded output every decoder writes into, and the errors codecs raise.

A compressed batch is a few bytes that can stand for gigabytes. Kafka's
readers decompress lazily as records are read, with no bound on the total
(deviation "Decompression is bounded", ``docs/deviations.md``); ours decode a
whole stream at once and are told ``max_size``, the most bytes the caller
accepts. :class:`BoundedOutput` is the one place that bound is enforced for
the codecs that cannot know their output size for sure up front (gzip,
zstd, lz4 when the block sizes do not settle it):

* a decoder that knows roughly how much is coming (gzip's ISIZE field, the
  block bounds of an lz4 frame) says so, and the buffer is allocated once
  at ``min(expected, max_size)``; pieces handed to
  :meth:`BoundedOutput.append` are copied into it in place -- no
  reallocation, no copy of what is already there;
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

    __slots__ = ("buffer", "codec", "max_size", "size")

    def __init__(self, codec: str, max_size: int, expected: int = 0) -> None:
        self.codec = codec
        self.max_size = max_size
        #: ``buffer[:size]`` is the output so far; beyond it, preallocated room,
        #: not zero-filled: a decoder on a worker thread must not hold the GIL for
        #: a 64 MB memset (30-40 ms during which the event loop cannot run)
        self.buffer: bytearray = scan.new_buffer(max(0, min(expected, max_size)))
        self.size = 0

    def room(self, step: int) -> int:
        """How many bytes the next step may produce: at most ``step``, and
        one byte past the limit so that an overflow is seen (never 0)."""
        return min(step, self.max_size + 1 - self.size)

    def append(self, piece: ReadableBuffer) -> None:
        """Add ``piece``; raise instead if it takes the output past ``max_size``."""
        with memoryview(piece) as view:
            end = self.size + len(view)
            if end > self.max_size:
                raise exceeds(self.codec, self.max_size)
            buffer = self.buffer
            capacity = len(buffer)
            if end > capacity:
                # grow (at least double) into a new, not zero-filled buffer: a
                # bytearray's own growth copies the old bytes holding the GIL
                grown = scan.new_buffer(min(self.max_size, max(end, 2 * capacity)))
                scan.copy_into(grown, 0, memoryview(buffer)[: self.size])
                buffer = self.buffer = grown
            # without the GIL for a large piece (a worker's 1 MB step into fresh
            # pages held it ~0.5 ms, and a loop waiting for it a whole 5 ms switch
            # interval: lz4 bombs took the good producers' p99 from 0.2 to 4 ms)
            scan.copy_into(buffer, self.size, view)
        self.size = end

    def result(self) -> bytearray:
        """The output, trimmed to what was produced."""
        if len(self.buffer) > self.size:
            del self.buffer[self.size :]
        return self.buffer
