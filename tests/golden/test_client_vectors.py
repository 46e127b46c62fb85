"""Produce-request records captured on the wire from librdkafka (confluent-kafka 2.16.1
with librdkafka 2.16.0, kcat 1.7.1 with librdkafka 2.0.2): magic 0/1/2, every
codec (provenance in tests/golden/VECTORS.md, "Wire captures from librdkafka",
and clients/manifest.json).

Each vector must read back as the records the client was given, carry what
librdkafka is known to write (raw snappy without the xerial header, v1
wrappers at offset 0, its Produce version per format), and pass the
validator on the path Kafka takes: v2 batches in place, v0/v1 sets
converted to one v2 batch, the client's codec kept (topic compression.type
``producer``), offsets assigned from the log end, contents unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.config import TopicConfig
from broker.records import legacy
from broker.records.batch import RECORD_BATCH_OVERHEAD, CompressionType
from broker.records.iterate import iter_batches, iter_records
from broker.records.record import Record
from broker.validator import NullRecorder, validate_records

HERE = Path(__file__).parent / "clients"
MANIFEST: dict[str, dict[str, Any]] = json.loads((HERE / "manifest.json").read_text())
XERIAL_MAGIC = b"\x82SNAPPY\x00"
#: a client-stamped timestamp lies within this much of the capture's start
STAMP_SLACK_MS = 60_000
NEXT_OFFSET = 1000


def _check_records(name: str, records: list[Record], first_offset: int) -> None:
    facts = MANIFEST[name]
    want = facts["records"]
    assert [r.offset for r in records] == [first_offset + w["offset"] for w in want]
    assert [r.key for r in records] == [bytes.fromhex(w["key"]) for w in want]
    assert [r.value for r in records] == [bytes.fromhex(w["value"]) for w in want]
    assert [r.headers for r in records] == [
        tuple((k, bytes.fromhex(v)) for k, v in w["headers"]) for w in want
    ]
    for r, w in zip(records, want, strict=True):
        if w["timestamp"] is None:  # kcat stamps the time itself
            assert abs(r.timestamp - facts["captured_at_ms"]) < STAMP_SLACK_MS, (r, facts)
        else:
            assert r.timestamp == w["timestamp"]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_capture_reads_as_what_the_client_was_given(name: str) -> None:
    data = (HERE / name).read_bytes()
    facts = MANIFEST[name]
    batches = list(iter_batches(data))
    assert sum(b.size_in_bytes for b in batches) == len(data)
    assert all(b.is_valid for b in batches)
    assert {b.magic for b in batches} == {facts["magic"]}
    assert {b.compression_type for b in batches} == {facts["codec"]}
    # librdkafka's Produce version per format: v0/v1 fallback, v2 for magic 1 (a broker
    # capped at v2), v3+ for magic 2 (kcat's librdkafka 2.0.2 stops at v7)
    version = facts["produce_version"]
    assert version in {0: (0, 1), 1: (2,), 2: range(3, 12)}[facts["magic"]]
    _check_records(name, list(iter_records(data)), 0)


@pytest.mark.parametrize(
    "name", sorted(n for n, f in MANIFEST.items() if f["codec"] == CompressionType.SNAPPY)
)
def test_librdkafka_writes_raw_snappy(name: str) -> None:
    data = (HERE / name).read_bytes()
    (batch,) = iter_batches(data)
    if batch.magic == 2:
        payload = data[RECORD_BATCH_OVERHEAD : batch.size_in_bytes]
    else:
        _, _, value_pos, value_len = legacy.key_value_spans(data, 0, batch.size_in_bytes)
        payload = data[value_pos : value_pos + value_len]
    assert not payload.startswith(XERIAL_MAGIC)


@pytest.mark.parametrize(
    "name", sorted(n for n, f in MANIFEST.items() if f["magic"] == 1 and f["codec"] != 0)
)
def test_librdkafka_v1_wrappers_carry_offset_0(name: str) -> None:
    data = (HERE / name).read_bytes()
    (batch,) = iter_batches(data)
    assert batch.legacy_header().offset == 0


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_validator_takes_kafkas_path_and_keeps_the_records(name: str) -> None:
    facts = MANIFEST[name]
    data = bytearray((HERE / name).read_bytes())
    result = validate_records(
        memoryview(data),
        topic="golden",
        partition=0,
        config=TopicConfig(),
        next_offset=NEXT_OFFSET,
        partition_leader_epoch=3,
        now_ms=facts["captured_at_ms"],
        produce_version=facts["produce_version"],
        recorder=NullRecorder(),
    )
    n = len(facts["records"])
    in_place = facts["path"] == "in_place"
    assert result.validated_in_place == in_place
    assert result.stats.num_records_converted == (0 if in_place else n)
    if in_place:  # the request's own bytes, patched
        assert isinstance(result.validated_records, memoryview)
        assert result.validated_records.obj is data
    assert (result.first_offset, result.last_offset) == (NEXT_OFFSET, NEXT_OFFSET + n - 1)
    stored = bytes(result.validated_records)
    (batch,) = iter_batches(stored)
    header = batch.header()
    assert header.magic == 2 and batch.is_valid
    assert header.compression_type == facts["codec"]
    assert header.partition_leader_epoch == 3
    assert header.base_offset == NEXT_OFFSET
    _check_records(name, list(iter_records(stored)), NEXT_OFFSET)


def test_every_client_vector_is_in_the_manifest() -> None:
    assert sorted(p.name for p in HERE.glob("*.bin")) == sorted(MANIFEST)


@pytest.mark.parametrize(
    "name", sorted(n for n, f in MANIFEST.items() if f["codec"] == CompressionType.LZ4)
)
def test_librdkafka_lz4_header_checksum_is_broken_only_for_magic_0(name: str) -> None:
    """Kafka's magic-0 LZ4 framing hashes the frame magic too (KAFKA-3160);
    librdkafka writes it that way for magic 0 and correctly from magic 1."""
    import xxhash

    data = (HERE / name).read_bytes()
    (batch,) = iter_batches(data)
    if batch.magic == 2:
        frame = data[RECORD_BATCH_OVERHEAD : batch.size_in_bytes]
    else:
        _, _, value_pos, value_len = legacy.key_value_spans(data, 0, batch.size_in_bytes)
        frame = data[value_pos : value_pos + value_len]
    assert frame[:4] == b"\x04\x22\x4d\x18"
    descriptor_end = 6 + (8 if frame[4] & 0x08 else 0)
    checksum = frame[descriptor_end]
    correct = (xxhash.xxh32(frame[4:descriptor_end]).intdigest() >> 8) & 0xFF
    broken = (xxhash.xxh32(frame[0:descriptor_end]).intdigest() >> 8) & 0xFF
    assert checksum == (broken if batch.magic == 0 else correct)
