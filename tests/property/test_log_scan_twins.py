"""The recovery scan's twins agree, and both stop at the first bad byte.

``_recover_py.scan_segment`` (reference) and ``_recover_c.scan_segment``
(compiled, with its own interleaved CRC-32C) must return identical tuples on
any bytes: valid logs, logs cut anywhere, logs with any byte flipped, random
garbage. The compiled twin is imported directly (``make setup`` builds it),
so the comparison also runs when ``BROKER_NO_EXTENSIONS`` selects the
reference for the rest of the suite.
"""

from __future__ import annotations

import importlib
import os

from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log import _recover_py
from tests.unit.log.batches import legacy_entry, v2_batch

_recover_c = importlib.import_module("broker.log._recover_c")


def build_log(sizes: list[int], legacy_every: int) -> bytes:
    out = bytearray()
    offset = 0
    for i, size in enumerate(sizes):
        if legacy_every and i % legacy_every == legacy_every - 1:
            out += legacy_entry(offset, 1, os.urandom(size), timestamp=i)
            offset += 1
        else:
            count = 1 + size % 3
            out += v2_batch(
                offset,
                [os.urandom(size)] * count,
                base_timestamp=1000 + i,
                partition_leader_epoch=i // 4,
                producer_id=7 if i % 2 else -1,
                producer_epoch=0 if i % 2 else -1,
                base_sequence=offset if i % 2 else -1,
            )
            offset += count
    return bytes(out)


def scan_both(data: bytes, interval: int) -> None:
    assert _recover_c.scan_segment(data, 0, len(data), **_fresh(interval)) == (
        _recover_py.scan_segment(data, 0, len(data), **_fresh(interval))
    )


def _fresh(interval: int) -> dict[str, int]:
    """The keywords of a scan from the start of a segment at offset 0."""
    return {
        "base_offset": 0,
        "index_interval_bytes": interval,
        "prev_last_offset": -1,
        "latest_epoch": -1,
    }


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5000), min_size=0, max_size=12),
    legacy_every=st.integers(0, 4),
    interval=st.integers(0, 5000),
    cut=st.floats(0, 1),
    flip=st.one_of(st.none(), st.floats(0, 1)),
)
def test_twins_agree_on_damaged_logs(
    sizes: list[int], legacy_every: int, interval: int, cut: float, flip: float | None
) -> None:
    data = bytearray(build_log(sizes, legacy_every))
    scan_both(bytes(data), interval)
    if data:
        full = _recover_py.scan_segment(bytes(data), 0, len(data), **_fresh(interval))
        assert full[0] == len(data) and full[1] is None
        if flip is not None:
            i = min(len(data) - 1, int(flip * len(data)))
            data[i] ^= 0x5A
            scan_both(bytes(data), interval)
        scan_both(bytes(data[: int(cut * len(data))]), interval)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_twins_agree_on_garbage(data: bytes) -> None:
    scan_both(data, 0)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40000))
def test_compiled_crc32c_matches_the_library(data: bytes) -> None:
    assert _recover_c.crc32c_of(data) == crc32c(data)


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=10),
    legacy_every=st.integers(0, 3),
    interval=st.integers(0, 3000),
    split=st.floats(0, 1),
)
def test_a_scan_in_two_pieces_equals_one_scan(
    sizes: list[int], legacy_every: int, interval: int, split: float
) -> None:
    data = build_log(sizes, legacy_every)
    for twin in (_recover_py, _recover_c):
        whole = twin.scan_segment(data, 0, len(data), **_fresh(interval))
        k = int(split * len(data))
        first = twin.scan_segment(data[:k], 0, k, **_fresh(interval))
        resume = first[0]
        rest = data[resume:]
        second = twin.scan_segment(
            rest,
            0,
            len(rest),
            base_offset=0,
            index_interval_bytes=interval,
            prev_last_offset=first[8],
            latest_epoch=-1 if not first[6] else first[6][-1][0],
            position_base=resume,
            last_index_position=first[9],
            max_timestamp=first[4],
            offset_of_max_timestamp=first[5],
            last_time_entry_timestamp=first[10],
        )
        assert second[0] == whole[0] and second[1] == whole[1]
        assert first[2] + second[2] == whole[2]
        assert first[3] + second[3] == whole[3]
        assert (second[4], second[5], second[8]) == (whole[4], whole[5], whole[8])
        assert first[6] + second[6] == whole[6]
        assert first[7] + second[7] == whole[7]
