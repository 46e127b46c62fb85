"""The bounded output every decoder writes into, and the errors codecs raise.

A compressed batch is a few bytes that can stand for gigabytes. Kafka's
readers decompress lazily as records are read, with no bound on the total
(deviation "Decompression is bounded", ``docs/deviations.md``); ours decode a
whole stream at once and are told ``max_size``, the most bytes the caller
accepts. :class:`BoundedOutput` is the one place that bound is enforced for
the codecs that cannot know their output size up front (gzip, zstd, lz4 when
the block sizes do not settle it): a decoder asks :meth:`BoundedOutput.room`
how much it may produce in its next step, hands the piece to
:meth:`BoundedOutput.append`, and the append raises as soon as the total
passes ``max_size``. The buffer therefore never holds more than
``max_size + 1`` bytes, and a decoder never asks its library for more than
one step at a time, so a bomb costs ``max_size`` plus one step of memory.

Every failure on a client's bytes is an :class:`InvalidRecordError` whose
message starts with the codec's name (Kafka answers UNKNOWN_SERVER_ERROR
there; deviation "Undecodable compressed payloads").
"""

from __future__ import annotations

from broker.errors import InvalidRecordError
from broker.records.buffers import ReadableBuffer


def corrupt(codec: str, problem: str) -> InvalidRecordError:
    """The error for a stream ``codec`` cannot decode."""
    return InvalidRecordError(f"{codec}: {problem}")


def exceeds(codec: str, max_size: int) -> InvalidRecordError:
    """The error for a stream that would decompress to more than ``max_size``."""
    return InvalidRecordError(f"{codec}: decompressed size exceeds the limit of {max_size} bytes")


class BoundedOutput:
    """Decompressed bytes of one stream, never more than ``max_size + 1``."""

    __slots__ = ("buffer", "codec", "max_size")

    def __init__(self, codec: str, max_size: int) -> None:
        self.codec = codec
        self.max_size = max_size
        self.buffer = bytearray()

    def room(self, step: int) -> int:
        """How many bytes the next step may produce: at most ``step``, and
        one byte past the limit so that an overflow is seen (never 0)."""
        return min(step, self.max_size + 1 - len(self.buffer))

    def append(self, piece: ReadableBuffer) -> None:
        """Add ``piece`` (at most :meth:`room` bytes); raise once past the limit."""
        self.buffer += piece
        if len(self.buffer) > self.max_size:
            raise exceeds(self.codec, self.max_size)
