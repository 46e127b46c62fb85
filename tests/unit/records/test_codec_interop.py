"""Interop with the real clients' codec functions, both ways: kafka-python's
``kafka.codec`` and aiokafka's ``aiokafka.codec`` write what we read, and
read what we write. (Recorded outputs: ``tests/golden/test_codec_vectors.py``.)"""

from __future__ import annotations

import os
import warnings

import aiokafka.codec as aiokafka_codec
import pytest

with warnings.catch_warnings():
    # kafka-python 3.0 loads its protocol schemas with the deprecated
    # importlib.resources.read_text when the package is imported.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kafka_codec

from broker.records import codecs
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, CompressionType

GZIP = CompressionType.GZIP
SNAPPY = CompressionType.SNAPPY
LZ4 = CompressionType.LZ4
ZSTD = CompressionType.ZSTD

PAYLOADS = {
    "one-byte": b"k",
    "records": b"".join(b'{"key": "k-%d", "value": "v-%d"}\n' % (i, i * i) for i in range(4000)),
    "random": os.urandom(100_000),
}


def ours(codec: int, payload: bytes, magic: int = MAGIC_V2) -> bytes:
    return bytes(codecs.decompress(codec, payload, max_size=1 << 24, magic=magic))


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_kafka_python_writes_we_read(name: str) -> None:
    data = PAYLOADS[name]
    assert ours(GZIP, kafka_codec.gzip_encode(data)) == data
    assert ours(GZIP, kafka_codec.gzip_encode(data, compresslevel=1)) == data
    assert ours(SNAPPY, kafka_codec.snappy_encode(data)) == data
    assert ours(SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    for magic in (MAGIC_V1, MAGIC_V2):
        assert ours(LZ4, kafka_codec.lz4_encode(data), magic) == data
    assert ours(LZ4, kafka_codec.lz4_encode_old_kafka(data), MAGIC_V0) == data
    assert ours(ZSTD, kafka_codec.zstd_encode(data)) == data


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_we_write_kafka_python_reads(name: str) -> None:
    data = PAYLOADS[name]
    assert kafka_codec.gzip_decode(codecs.compress(GZIP, data)) == data
    assert kafka_codec.snappy_decode(codecs.compress(SNAPPY, data)) == data
    for magic in (MAGIC_V1, MAGIC_V2):
        assert kafka_codec.lz4_decode(codecs.compress(LZ4, data, magic=magic)) == data
    assert kafka_codec.lz4_decode_old_kafka(codecs.compress(LZ4, data, magic=MAGIC_V0)) == data
    for level in (-131072, 3, 19):
        assert kafka_codec.zstd_decode(codecs.compress(ZSTD, data, level=level)) == data


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_aiokafka_writes_we_read(name: str) -> None:
    data = PAYLOADS[name]
    assert ours(GZIP, aiokafka_codec.gzip_encode(data)) == data
    assert ours(SNAPPY, aiokafka_codec.snappy_encode(data)) == data
    assert ours(SNAPPY, aiokafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    assert ours(LZ4, aiokafka_codec.lz4_encode(data)) == data
    assert ours(ZSTD, aiokafka_codec.zstd_encode(data)) == data
    assert ours(ZSTD, aiokafka_codec.zstd_encode(data, level=-5)) == data


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_we_write_aiokafka_reads(name: str) -> None:
    data = PAYLOADS[name]
    assert aiokafka_codec.gzip_decode(codecs.compress(GZIP, data)) == data
    assert aiokafka_codec.snappy_decode(codecs.compress(SNAPPY, data)) == data
    assert aiokafka_codec.lz4_decode(codecs.compress(LZ4, data)) == data
    assert aiokafka_codec.zstd_decode(codecs.compress(ZSTD, data)) == data


def test_empty_payloads_both_ways_with_kafka_python() -> None:
    for codec, encode, decode in (
        (GZIP, kafka_codec.gzip_encode, kafka_codec.gzip_decode),
        (SNAPPY, kafka_codec.snappy_encode, None),
        (LZ4, kafka_codec.lz4_encode, kafka_codec.lz4_decode),
        (ZSTD, kafka_codec.zstd_encode, kafka_codec.zstd_decode),
    ):
        assert ours(codec, encode(b"")) == b""
        if decode is not None:
            assert decode(codecs.compress(codec, b"")) == b""
