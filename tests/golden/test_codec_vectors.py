"""Golden codec vectors written by the Python clients and by the Java libraries
Kafka wraps (provenance: ``tests/golden/VECTORS.md``) decode with ours."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from broker.errors import InvalidRecordError
from broker.records import codec_lz4, codecs
from broker.records.batch import MAGIC_V0, MAGIC_V1, MAGIC_V2, CompressionType
from tests.golden.codec_input import INPUT_SHA256, golden_input, golden_input_sha256

VECTORS = Path(__file__).parent / "codecs"
ALL_MAGICS = (MAGIC_V0, MAGIC_V1, MAGIC_V2)

#: file -> (codec, magics it must decode under)
EXPECTED = {
    "gzip.kafka-python.bin": (CompressionType.GZIP, ALL_MAGICS),
    "gzip.jdk.bin": (CompressionType.GZIP, ALL_MAGICS),
    "gzip-level1.jdk.bin": (CompressionType.GZIP, ALL_MAGICS),
    "snappy-xerial.kafka-python.bin": (CompressionType.SNAPPY, ALL_MAGICS),
    "snappy-xerial.snappy-java.bin": (CompressionType.SNAPPY, ALL_MAGICS),
    "snappy-raw.kafka-python.bin": (CompressionType.SNAPPY, ALL_MAGICS),
    "lz4.kafka-python.bin": (CompressionType.LZ4, ALL_MAGICS),
    "lz4.aiokafka.bin": (CompressionType.LZ4, ALL_MAGICS),
    "lz4-v0.kafka-python.bin": (CompressionType.LZ4, (MAGIC_V0,)),
    "zstd.kafka-python.bin": (CompressionType.ZSTD, ALL_MAGICS),
    "zstd.zstd-jni.bin": (CompressionType.ZSTD, ALL_MAGICS),
}


def vector(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def test_the_input_formula_is_pinned() -> None:
    assert golden_input_sha256() == INPUT_SHA256
    assert len(golden_input()) == 72_579


def test_every_vector_file_is_listed() -> None:
    assert sorted(p.name for p in VECTORS.glob("*.bin")) == sorted(EXPECTED)
    text = (VECTORS.parent / "VECTORS.md").read_text()
    section = text[text.index("## Codecs") :]
    section = section[: section.find("\n## ", 1)] if "\n## " in section[1:] else section
    listed = set(re.findall(r"`([\w.-]+\.bin)`", section))
    assert listed == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vector_decodes_to_the_input(name: str) -> None:
    codec, magics = EXPECTED[name]
    data = golden_input()
    for magic in magics:
        assert codecs.decompress(codec, vector(name), max_size=len(data), magic=magic) == data
    with pytest.raises(InvalidRecordError, match="exceeds"):
        codecs.decompress(codec, vector(name), max_size=len(data) - 1, magic=magics[0])


def test_broken_v0_header_checksum_is_refused_for_magic_1_and_2() -> None:
    frame = vector("lz4-v0.kafka-python.bin")
    assert frame[:7] == codec_lz4.kafka_header(broken_header_checksum=True)
    for magic in (MAGIC_V1, MAGIC_V2):
        with pytest.raises(InvalidRecordError, match=re.escape(codec_lz4.DESCRIPTOR_HASH_MISMATCH)):
            codecs.decompress(CompressionType.LZ4, frame, max_size=1 << 20, magic=magic)


def test_vectors_carry_the_features_they_are_kept_for() -> None:
    assert vector("lz4.kafka-python.bin")[4] == 0x68  # content size
    assert vector("lz4.aiokafka.bin")[4] == 0x70  # block checksums
    assert vector("zstd.kafka-python.bin")[4] & 0xC0  # content size present
    assert vector("zstd.zstd-jni.bin")[4] == 0x00  # no content size, window descriptor follows
    assert not vector("snappy-raw.kafka-python.bin").startswith(b"\x82SNAPPY")
    java = vector("snappy-xerial.snappy-java.bin")
    assert java[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
