"""How much work a validation may do on the caller's thread (the event loop).

The broker has one event loop: whatever CPU one partition's validation takes,
every other connection waits for. Most produce requests are small and are
validated on the loop, where that is cheapest. A few need far more work than
their size suggests (a few KB of zstd that inflate to 64 MB of records, a
legacy set rebuilt and recompressed with gzip); those must run on a worker
thread, where the codecs and the compiled walks release the GIL.

Which is which is not known before the work starts (a compressed stream need
not declare its size), so the validator is given an *inline budget* in cost
units (about a nanosecond each on this class of machine: walking or copying a
byte of records costs 1) and checks it, before each step that could be long,
against what the step will cost::

    step                                 cost per byte
    walk / copy uncompressed records     1            (raw size, known up front)
    decompress  lz4 snappy zstd gzip     1 1 2 4      (inflated size: the decoder is
                                                       given budget / cost as its bound)
    compress    lz4 snappy zstd gzip     4 2 8 64     (the bytes to compress)

When a step would exceed the budget, :class:`OffloadRequired` is raised
*before* anything is changed (the records are patched in place only at the
end of a path), so the caller can run the whole validation again on a worker
thread with no budget. What a failed inline attempt costs is at most the
budget. The weights come from the codec libraries' relative speeds on 100 B
JSON-like records (``bench/bench_codecs.py``; the speeds are in
docs/performance.md): compressing costs far more than decompressing, gzip
most of all.
"""

from __future__ import annotations

from broker.records.batch import CompressionType

#: cost of inflating one byte, by codec
DECOMPRESS_COST = {
    CompressionType.GZIP: 4,
    CompressionType.SNAPPY: 1,
    CompressionType.LZ4: 1,
    CompressionType.ZSTD: 2,
}
#: cost of compressing one byte, by codec
COMPRESS_COST = {
    CompressionType.NONE: 1,
    CompressionType.GZIP: 64,
    CompressionType.SNAPPY: 2,
    CompressionType.LZ4: 4,
    CompressionType.ZSTD: 8,
}


class OffloadRequired(Exception):
    """The validation would exceed its inline budget; nothing was changed."""


def decompression_bound(budget: int | None, codec: int, max_decompressed_bytes: int) -> int:
    """The bound to give a decoder: the real one, or less when the budget
    says the inflated output must stay smaller to be decoded inline."""
    if budget is None:
        return max_decompressed_bytes
    return min(max_decompressed_bytes, budget // DECOMPRESS_COST[CompressionType(codec)])


def check_compress(budget: int | None, codec: int, size: int) -> None:
    """Raise :class:`OffloadRequired` when compressing ``size`` bytes with
    ``codec`` does not fit the budget."""
    if budget is not None and size * COMPRESS_COST[CompressionType(codec)] > budget:
        raise OffloadRequired(f"compressing {size} bytes with codec {codec} inline")


def check_raw(budget: int | None, size: int) -> None:
    """Raise :class:`OffloadRequired` when walking ``size`` bytes does not fit."""
    if budget is not None and size > budget:
        raise OffloadRequired(f"{size} bytes of records inline")
