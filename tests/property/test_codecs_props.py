"""Hypothesis: codec round trips for every codec x level x magic, the output
bound, and that mangled streams fail with InvalidRecordError only."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.errors import InvalidRecordError
from broker.records import codecs
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, CompressionType

MAGICS = st.sampled_from([MAGIC_V0, MAGIC_V1, MAGIC_V2])
LEVELS = {
    CompressionType.GZIP: st.one_of(st.just(-1), st.integers(1, 9), st.none()),
    CompressionType.SNAPPY: st.none(),
    CompressionType.LZ4: st.one_of(st.integers(1, 17), st.none()),
    # the slowest levels (19..22) and the extreme negative ones are all legal
    CompressionType.ZSTD: st.one_of(st.integers(-131072, 22), st.integers(-5, 22), st.none()),
}


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    """Random bytes, record-like text, or long runs; sometimes past a block boundary."""
    kind = draw(st.sampled_from(["binary", "text", "runs"]))
    if kind == "binary":
        return draw(st.binary(max_size=70_000))
    if kind == "text":
        words = st.sampled_from([b"kafka", b"offset", b"record", b"{", b"}", b'"', b" ", b"\n"])
        parts = draw(st.lists(words, max_size=400))
        return b"".join(parts) * draw(st.integers(1, 300))
    runs = draw(st.lists(st.tuples(st.binary(min_size=1, max_size=3), st.integers(1, 40_000))))
    return b"".join(chunk * count for chunk, count in runs[:8])


@st.composite
def codec_cases(draw: st.DrawFn) -> tuple[CompressionType, int | None, int]:
    codec = draw(st.sampled_from(list(LEVELS)))
    return codec, draw(LEVELS[codec]), draw(MAGICS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=codec_cases(), data=payloads())
def test_round_trip(case: tuple[CompressionType, int | None, int], data: bytes) -> None:
    codec, level, magic = case
    packed = codecs.compress(codec, data, level=level, magic=magic)
    assert codecs.decompress(codec, packed, max_size=len(data), magic=magic) == data


@settings(max_examples=100, deadline=None)
@given(
    codec=st.sampled_from(list(LEVELS)),
    data=payloads(),
    max_size=st.integers(0, 200_000),
)
def test_output_never_exceeds_max_size(codec: CompressionType, data: bytes, max_size: int) -> None:
    packed = codecs.compress(codec, data)
    try:
        result = codecs.decompress(codec, packed, max_size=max_size)
    except InvalidRecordError as exc:
        assert len(data) > max_size
        assert "exceeds" in str(exc)
    else:
        assert len(data) <= max_size
        assert result == data


@st.composite
def mangled(draw: st.DrawFn) -> tuple[CompressionType, int, bytes]:
    codec = draw(st.sampled_from(list(LEVELS)))
    magic = draw(MAGICS)
    frame = bytearray(codecs.compress(codec, draw(payloads()), magic=magic))
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        position = draw(st.integers(0, len(frame)))
        if action == "flip" and position < len(frame):
            frame[position] ^= draw(st.integers(1, 255))
        elif action == "truncate":
            del frame[position:]
        elif action == "insert":
            frame[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del frame[position : position + draw(st.integers(1, 8))]
    return codec, magic, bytes(frame)


@settings(max_examples=200, deadline=None)
@given(case=mangled())
def test_mangled_streams_fail_only_with_invalid_record(
    case: tuple[CompressionType, int, bytes],
) -> None:
    codec, magic, frame = case
    try:
        result = codecs.decompress(codec, frame, max_size=1 << 20, magic=magic)
    except InvalidRecordError as exc:
        assert str(exc).startswith(codec.name.lower() + ": ")
    else:
        assert isinstance(result, (bytes, bytearray))
        assert len(result) <= 1 << 20
