"""Hypothesis strategies for records and batches."""

from __future__ import annotations

from hypothesis import strategies as st

from broker.records.record import SimpleRecord

CODECS = [0, 1, 2, 3, 4]
LEGACY_CODECS = [0, 1, 2, 3]

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40))
header_key = st.text(max_size=8)
headers = st.lists(st.tuples(header_key, maybe_bytes), max_size=3).map(tuple)
timestamps = st.one_of(st.just(-1), st.integers(0, 2**41))


@st.composite
def simple_records(draw, *, with_headers=True, min_size=1, max_size=12):
    n = draw(st.integers(min_size, max_size))
    out = []
    for _ in range(n):
        out.append(
            SimpleRecord(
                draw(timestamps),
                draw(maybe_bytes),
                draw(maybe_bytes),
                draw(headers) if with_headers else (),
            )
        )
    return out
