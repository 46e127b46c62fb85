"""Golden record batches written by kafka-python and aiokafka (provenance in
tests/golden/VECTORS.md, "Record batches", and records/manifest.json): we read them exactly, the
validator accepts them, and the libraries' readers read what our builders and
our validator write."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

with warnings.catch_warnings():
    # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

from broker.config import TopicConfig
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.iterate import iter_batches, iter_records
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from broker.validator import NullRecorder, validate_records

HERE = Path(__file__).parent / "records"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
PRODUCE_VERSION = {0: 0, 1: 2, 2: 9}


def _expected(name):
    return [
        (
            r["offset"],
            r["timestamp"],
            None if r["key"] is None else bytes.fromhex(r["key"]),
            None if r["value"] is None else bytes.fromhex(r["value"]),
            tuple((k, None if v is None else bytes.fromhex(v)) for k, v in r["headers"]),
        )
        for r in MANIFEST[name]["records"]
    ]


def _ours(buf):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(buf)]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_we_parse_the_vector_exactly(name):
    data = (HERE / name).read_bytes()
    facts = MANIFEST[name]
    batches = list(iter_batches(data))
    assert sum(b.size_in_bytes for b in batches) == len(data)
    assert all(b.is_valid for b in batches)
    assert {b.magic for b in batches} == {facts["magic"]}
    assert {b.compression_type for b in batches} == {facts["codec"]}
    assert _ours(data) == _expected(name)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_validator_accepts_the_vector(name):
    data = bytearray((HERE / name).read_bytes())
    facts = MANIFEST[name]
    result = validate_records(
        memoryview(data), topic="golden", partition=0, config=TopicConfig(), next_offset=1000,
        partition_leader_epoch=1, now_ms=1_700_000_000_010,
        produce_version=PRODUCE_VERSION[facts["magic"]], recorder=NullRecorder(),
    )  # fmt: skip
    got = _ours(result.validated_records)
    want = _expected(name)
    assert [g[0] for g in got] == [1000, 1001, 1002]
    assert [g[2:4] for g in got] == [w[2:4] for w in want]
    assert result.message_size_maybe_changed == (facts["magic"] < 2)


def _library_records(data, reader):
    out = []
    records = reader(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            headers = tuple((k, v) for k, v in (getattr(r, "headers", None) or []))
            out.append((r.offset, r.timestamp, r.key, r.value, headers))
    return out


RECORDS = [
    SimpleRecord(1_700_000_000_000, b"key-0", b"value-0", (("h0", b"x"),)),
    SimpleRecord(1_700_000_000_005, None, b"value-1" * 20),
    SimpleRecord(1_700_000_000_002, b"key-2", None),
]


@pytest.mark.parametrize(
    "reader", [KafkaPythonMemoryRecords, AioMemoryRecords], ids=["kafka-python", "aiokafka"]
)
@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name.lower())
def test_libraries_read_our_v2_batches(reader, codec):
    buf = build_v2_batch(RECORDS, base_offset=10, compression_type=codec).buffer
    assert _library_records(buf, reader) == _ours(buf)


# aiokafka refuses lz4 with magic 0 ("not supported for broker version 0.8/0.9")
LEGACY_CASES = [
    pytest.param(reader, magic, codec, id=f"{rid}-v{magic}-{codec}")
    for reader, rid in ((KafkaPythonMemoryRecords, "kafka-python"), (AioMemoryRecords, "aiokafka"))
    for magic in (0, 1)
    for codec in (0, 1, 2, 3)
    if (rid, magic, codec) != ("aiokafka", 0, 3)
]


@pytest.mark.parametrize(("reader", "magic", "codec"), LEGACY_CASES)
def test_libraries_read_our_legacy_sets(reader, magic, codec):
    plain = [SimpleRecord(r.timestamp, r.key, r.value) for r in RECORDS]
    buf = build_legacy(plain, magic=magic, base_offset=10, compression_type=codec).buffer
    got = _library_records(buf, reader)
    ours = _ours(buf)
    assert [(g[0], g[2], g[3]) for g in got] == [(o[0], o[2], o[3]) for o in ours]
    if magic == 1:
        assert [g[1] for g in got] == [o[1] for o in ours]


@pytest.mark.parametrize(
    "reader", [KafkaPythonMemoryRecords, AioMemoryRecords], ids=["kafka-python", "aiokafka"]
)
@pytest.mark.parametrize("topic_codec", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_libraries_read_what_the_validator_writes(reader, topic_codec):
    legacy = build_legacy([SimpleRecord(r.timestamp, r.key, r.value) for r in RECORDS], magic=1,
                          compression_type=CompressionType.GZIP).buffer  # fmt: skip
    result = validate_records(
        memoryview(legacy), topic="golden", partition=0,
        config=TopicConfig(compression_type=topic_codec), next_offset=77,
        partition_leader_epoch=1, now_ms=1_700_000_000_010, produce_version=2,
        recorder=NullRecorder(),
    )  # fmt: skip
    got = _library_records(result.validated_records, reader)
    assert [(g[0], g[2], g[3]) for g in got] == [
        (77 + i, r.key, r.value) for i, r in enumerate(RECORDS)
    ]


def test_every_record_vector_is_in_the_manifest():
    assert sorted(p.name for p in HERE.glob("*.bin")) == sorted(MANIFEST)
