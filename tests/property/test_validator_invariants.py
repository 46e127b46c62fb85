"""Validator invariants over random producer batches and topic settings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.entries import is_valid_entry, iter_buffer_entries
from broker.records.iterate import iter_records
from broker.records.legacy_builder import build_legacy
from broker.validator import NullRecorder, validate_records

from .strategies import CODECS, LEGACY_CODECS, simple_records

TOPIC_CODECS = ["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]
NOW = 1_700_000_000_000


@st.composite
def produce_input(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    records = draw(simple_records(with_headers=magic == 2))
    if magic == 2:
        codec = draw(st.sampled_from(CODECS))
        buf = build_v2_batch(records, compression_type=codec).buffer
        version = 9
    else:
        codec = draw(st.sampled_from(LEGACY_CODECS))
        buf = build_legacy(records, magic=magic, compression_type=codec).buffer
        version = 2 if magic else 0
    return magic, codec, records, buf, version


@settings(max_examples=120, deadline=None)
@given(produce_input(), st.sampled_from(TOPIC_CODECS), st.booleans(), st.integers(0, 2**50))
def test_validator_invariants(inp, topic_codec, lat, next_offset):
    magic, codec, records, buf, version = inp
    cfg = TopicConfig(
        compression_type=topic_codec,
        message_timestamp_type="LogAppendTime" if lat else "CreateTime",
    )
    result = validate_records(
        memoryview(buf), topic="p", partition=0, config=cfg, next_offset=next_offset,
        partition_leader_epoch=3, now_ms=NOW, produce_version=version, recorder=NullRecorder(),
    )  # fmt: skip
    out = result.validated_records
    got = list(iter_records(out))
    # offsets contiguous from next_offset, count and content preserved
    assert result.num_records == len(records)
    assert [r.offset for r in got] == list(range(next_offset, next_offset + len(records)))
    assert (result.first_offset, result.last_offset) == (
        next_offset,
        next_offset + len(records) - 1,
    )
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    # every written batch is valid (CRC) and v2
    entries = list(iter_buffer_entries(out))
    assert all(is_valid_entry(out, e) for e in entries)
    assert {e.magic for e in entries} == {2}
    # in place exactly when the decision table says so (magic 2 and same codec)
    target = codec if topic_codec == "producer" else int(CompressionType.for_name(topic_codec))
    expect_in_place = magic == 2 and target == codec
    assert (not result.message_size_maybe_changed) == expect_in_place
    if expect_in_place:
        assert out is not None and result.stats.num_records_converted == 0
    else:
        assert result.stats.num_records_converted == len(records)
    if lat:
        assert result.max_timestamp == NOW == result.log_append_time_ms
        assert all(r.timestamp == NOW for r in got)
    else:
        assert result.log_append_time_ms == -1
