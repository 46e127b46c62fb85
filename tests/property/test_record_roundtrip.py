"""Encode/decode round trips for every format and codec."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.records.batch import TimestampType
from broker.records.builder import build_v2_batch
from broker.records.iterate import iter_batches, iter_records
from broker.records.legacy_builder import build_legacy

from .strategies import CODECS, LEGACY_CODECS, simple_records


@settings(max_examples=80, deadline=None)
@given(simple_records(), st.sampled_from(CODECS), st.integers(0, 2**40), st.booleans())
def test_v2_round_trip(records, codec, base_offset, lat):
    ts_type = TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME
    built = build_v2_batch(
        records, base_offset=base_offset, compression_type=codec, timestamp_type=ts_type,
        log_append_time=123,
    )  # fmt: skip
    (b,) = list(iter_batches(built.buffer))
    assert b.is_valid
    got = list(iter_records(built.buffer))
    assert [r.offset for r in got] == list(range(base_offset, base_offset + len(records)))
    assert [(r.key, r.value, r.headers) for r in got] == [
        (r.key, r.value, r.headers) for r in records
    ]
    want_ts = [123] * len(records) if lat else [r.timestamp for r in records]
    assert [r.timestamp for r in got] == want_ts


@settings(max_examples=80, deadline=None)
@given(simple_records(with_headers=False), st.sampled_from([0, 1]),
       st.sampled_from(LEGACY_CODECS), st.integers(0, 2**40))  # fmt: skip
def test_legacy_round_trip(records, magic, codec, base_offset):
    built = build_legacy(records, magic=magic, base_offset=base_offset, compression_type=codec)
    assert all(b.is_valid for b in iter_batches(built.buffer))
    got = list(iter_records(built.buffer))
    assert [r.offset for r in got] == list(range(base_offset, base_offset + len(records)))
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    want_ts = [r.timestamp for r in records] if magic else [-1] * len(records)
    assert [r.timestamp for r in got] == want_ts
