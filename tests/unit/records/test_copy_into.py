"""``scan.copy_into`` (the bounded decoders' copy): both twins copy the same
bytes and refuse the same out-of-range copies, and ``BoundedOutput`` built on
it grows past its first guess and stops at its bound."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.errors import KafkaError
from broker.records import _scan_py, scan
from broker.records.codec_output import BoundedOutput

TWINS = [_scan_py, scan.impl]


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: t.__name__)
@given(size=st.integers(0, 300), offset=st.integers(-2, 310), data=st.binary(max_size=300))
def test_twins_copy_the_same_bytes_or_refuse_alike(
    twin: object, size: int, offset: int, data: bytes
) -> None:
    dst = bytearray(b"\xaa" * size)
    fits = offset >= 0 and len(data) <= size - offset
    if not fits:
        with pytest.raises(ValueError, match="do not fit"):
            twin.copy_into(dst, offset, data)  # type: ignore[attr-defined]
        assert dst == b"\xaa" * size  # nothing written
        return
    twin.copy_into(dst, offset, data)  # type: ignore[attr-defined]
    expected = bytearray(b"\xaa" * size)
    expected[offset : offset + len(data)] = data
    assert dst == expected
    assert len(dst) == size


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: t.__name__)
def test_a_large_copy_from_a_memoryview_slice(twin: object) -> None:
    src = bytes(range(256)) * 1024  # 256 KiB: the compiled twin's GIL-free size
    dst = bytearray(len(src) + 10)
    twin.copy_into(dst, 10, memoryview(src)[:])  # type: ignore[attr-defined]
    assert dst[10:] == src


def test_bounded_output_grows_past_its_guess_and_stops_at_its_bound() -> None:
    out = BoundedOutput("lz4", 1000, expected=10)
    pieces = [bytes([i]) * 150 for i in range(6)]  # 900 bytes, guess 10
    for piece in pieces:
        out.append(piece)
    assert bytes(out.result()) == b"".join(pieces)
    with pytest.raises(KafkaError):
        out.append(bytes(101))  # 1001 > 1000


def test_a_stream_whole_in_its_first_piece_is_returned_without_a_copy() -> None:
    piece = bytes(range(200))
    out = BoundedOutput("lz4", 1000, expected=900)
    out.append(piece)
    assert out.result() is piece


def test_a_mutable_first_piece_is_copied() -> None:
    """Only an immutable piece is kept as it is: a decoder may reuse its buffer."""
    piece = bytearray(b"abc")
    out = BoundedOutput("gzip", 10)
    out.append(piece)
    piece[0] = ord("X")
    assert bytes(out.result()) == b"abc"


def test_an_empty_stream_is_empty() -> None:
    assert BoundedOutput("zstd", 10).result() == b""
