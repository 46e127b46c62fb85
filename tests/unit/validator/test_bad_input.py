"""Malformed client bytes: each gets Kafka's error code (or our documented
better one, docs/deviations.md), never an unexpected exception type."""

from __future__ import annotations

import pytest

from broker.config import TopicConfig
from broker.errors import ErrorCode, KafkaError
from broker.records import legacy
from broker.records.batch import MAGIC_V0, MAGIC_V1, CompressionType, TimestampType
from broker.records.builder import assemble_v2_batch, build_v2_batch
from broker.records.legacy_builder import build_legacy, wrap_legacy
from broker.records.record import SimpleRecord, encode_v2_record, varint_bytes
from broker.validator import NullRecorder, validate_records

NOW = 1_700_000_000_000
DEFAULT = TopicConfig()


def code_of(buf, *, produce_version=9, config=DEFAULT, **kw):
    try:
        validate_records(
            memoryview(bytearray(buf)), topic="t", partition=0, config=config, next_offset=0,
            partition_leader_epoch=0, now_ms=NOW, produce_version=produce_version,
            recorder=NullRecorder(), **kw,
        )  # fmt: skip
    except KafkaError as e:
        return e.code
    return ErrorCode.NONE


def good(n=3, codec=0):
    return build_v2_batch(
        [SimpleRecord(NOW, b"k", b"v%d" % i) for i in range(n)], compression_type=codec
    ).buffer


def with_body(body, count, *, codec=0, last_offset_delta=None):
    return assemble_v2_batch(
        body, num_records=count, base_offset=0,
        last_offset_delta=count - 1 if last_offset_delta is None else last_offset_delta,
        base_timestamp=NOW, max_timestamp=NOW, compression_type=codec,
    )  # fmt: skip


def test_truncated_batch_in_a_v3_plus_request_is_invalid_record():
    # the trailing partial batch is dropped, leaving no batch at all
    assert code_of(good()[:-5]) == ErrorCode.INVALID_RECORD


def test_truncated_batch_in_an_old_request_appends_nothing():
    assert code_of(good()[:-5], produce_version=2) == ErrorCode.NONE


def test_length_field_smaller_than_minimum():
    buf = good()
    buf[8:12] = (5).to_bytes(4, "big")
    assert code_of(buf) == ErrorCode.CORRUPT_MESSAGE


def test_length_field_that_lies_shorter():
    buf = good()
    buf[8:12] = (len(buf) - 12 - 3).to_bytes(4, "big")  # claims 3 bytes less: CRC no longer matches
    assert code_of(buf) == ErrorCode.CORRUPT_MESSAGE


def test_bad_crc():
    buf = good()
    buf[-1] ^= 0x55
    assert code_of(buf) == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("magic", [3, 7, -1])
def test_unknown_magic(magic):
    buf = good()
    buf[16] = magic & 0xFF
    assert code_of(buf, produce_version=2) == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xff\xff\xff\xff\x01" + bytes(8),  # overlong length varint
        varint_bytes(-5) + bytes(8),  # negative record length
        varint_bytes(2**30) + bytes(8),  # length far past the batch
        varint_bytes(12) + b"\x00" + b"\xff" * 11,  # overlong timestamp varlong
    ],
    ids=["overlong-varint", "negative-length", "huge-length", "overlong-varlong"],
)
@pytest.mark.parametrize("codec", [0, 1])
def test_bad_varints(body, codec):
    assert code_of(with_body(body, 1, codec=codec)) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", [0, 1])
@pytest.mark.parametrize("count", [2, 5])
def test_record_count_mismatch(codec, count):
    body = b"".join(encode_v2_record(i, 0, None, b"v") for i in range(3))
    assert code_of(with_body(body, count, codec=codec)) == ErrorCode.INVALID_RECORD


def test_negative_header_count_and_key_length():
    body = b"\x00" + varint_bytes(0) + varint_bytes(0) + varint_bytes(-1) + varint_bytes(-1)
    bad_count = body + varint_bytes(-1)
    bad_key = body + varint_bytes(1) + varint_bytes(-1) + varint_bytes(-1)
    for b in (bad_count, bad_key):
        assert code_of(with_body(varint_bytes(len(b)) + b, 1)) == ErrorCode.INVALID_RECORD


def test_nested_compression_in_a_legacy_wrapper():
    inner = legacy.encode_entry(
        0, MAGIC_V1, attributes=CompressionType.GZIP, timestamp=NOW, key=None, value=b"x"
    )
    buf = wrap_legacy(inner, magic=MAGIC_V1, compression_type=CompressionType.GZIP, level=None,
                      last_offset=0, timestamp=NOW, timestamp_type=TimestampType.CREATE_TIME)  # fmt: skip
    assert code_of(buf, produce_version=2) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_zstd_in_a_legacy_wrapper(magic):
    buf = build_legacy([SimpleRecord(NOW, None, b"x")], magic=magic,
                       compression_type=CompressionType.GZIP).buffer  # fmt: skip
    buf[legacy.RECORD_ATTRIBUTES_OFFSET] = (buf[legacy.RECORD_ATTRIBUTES_OFFSET] & ~7) | 4
    crc = legacy.compute_crc(buf, 0, len(buf))
    buf[legacy.RECORD_CRC_OFFSET : legacy.RECORD_CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    assert code_of(buf, produce_version=2) == ErrorCode.INVALID_RECORD


def test_decompression_bomb_default_bound():
    """70 MB of zeros in a ~70 KB batch: past the default 64 MiB bound."""
    bomb = with_body(encode_v2_record(0, 0, None, bytes(70_000_000)), 1, codec=CompressionType.GZIP)
    assert len(bomb) < TopicConfig().max_message_bytes
    assert code_of(bomb) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_decompression_bomb_legacy_wrapper_explicit_bound(magic):
    bomb = build_legacy([SimpleRecord(NOW, None, bytes(2_000_000))], magic=magic,
                        compression_type=CompressionType.GZIP).buffer  # fmt: skip
    assert (
        code_of(bomb, produce_version=2, max_decompressed_bytes=1_000_000)
        == ErrorCode.INVALID_RECORD
    )
    assert code_of(bomb, produce_version=2) == ErrorCode.NONE
