"""The validator's inline budget (``broker/validator/inline.py``).

A validation given a budget either finishes within it or raises
``OffloadRequired`` before it changes anything, so the caller can run it
again without a budget on a worker thread and get the same result.
"""

from __future__ import annotations

import pytest

from broker.config import TopicConfig
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.validator import OffloadRequired, validate_records
from broker.validator.inline import COMPRESS_COST, DECOMPRESS_COST

from .kafka_fixtures import Recorder

NOW = 1_700_000_000_000


def _batch(n: int, codec: int = CompressionType.NONE, value: bytes = b"v" * 100) -> bytearray:
    records = [SimpleRecord(NOW, b"k%d" % i, value) for i in range(n)]
    return build_v2_batch(records, compression_type=codec).buffer


DEFAULT = TopicConfig()


def _validate(buf: bytearray, budget: int | None, config: TopicConfig = DEFAULT):
    return validate_records(
        memoryview(buf),
        topic="t",
        partition=0,
        config=config,
        next_offset=42,
        partition_leader_epoch=0,
        now_ms=NOW,
        produce_version=9,
        recorder=Recorder(),
        inline_budget=budget,
    )


@pytest.mark.parametrize(
    ("name", "buf", "config", "budget"),
    [
        ("raw bytes past the budget", _batch(200), TopicConfig(), 10_000),
        (
            "a gzip batch whose ISIZE says it inflates past the budget",
            _batch(2000, CompressionType.GZIP),
            TopicConfig(),
            100_000,
        ),
        (
            "a zstd batch that inflates past the budget (no size declared)",
            _batch(2000, CompressionType.ZSTD),
            TopicConfig(),
            100_000,
        ),
        (
            "an lz4 batch that inflates past the budget",
            _batch(2000, CompressionType.LZ4),
            TopicConfig(),
            100_000,
        ),
        (
            "a recompression to gzip",
            _batch(300, CompressionType.LZ4),
            TopicConfig(compression_type="gzip"),
            300_000,
        ),
    ],
)
def test_over_budget_raises_before_changing_anything(name, buf, config, budget):
    before = bytes(buf)
    with pytest.raises(OffloadRequired):
        _validate(buf, budget, config)
    assert bytes(buf) == before
    # without a budget (what the worker thread runs) the same bytes validate
    result = _validate(buf, None, config)
    assert result.first_offset == 42


@pytest.mark.parametrize("codec", [c for c in CompressionType if c != CompressionType.NONE])
def test_within_budget_gives_the_result_of_no_budget(codec):
    buf = _batch(50, codec)
    inline = _validate(bytearray(buf), 10**7)
    unbounded = _validate(bytearray(buf), None)
    assert bytes(inline.validated_records) == bytes(unbounded.validated_records)
    assert inline.last_offset == unbounded.last_offset == 42 + 49


def test_costs_are_defined_for_every_codec():
    codecs = {c for c in CompressionType if c != CompressionType.NONE}
    assert set(DECOMPRESS_COST) == codecs
    assert set(COMPRESS_COST) == codecs | {CompressionType.NONE}
