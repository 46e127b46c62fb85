"""``broker.records.batch_info``: the facts of the batches being appended,
read from the entry headers of any magic."""

from __future__ import annotations

import pytest

from broker.errors import CorruptRecordError
from broker.records.batch import CompressionType
from broker.records.batch_info import BatchInfo, parse_batch_infos, v2_batch_info
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.unit.log.batches import legacy_entry, v2_batch

INT_MAX = 2**31 - 1


def _parse(data: bytes) -> list[BatchInfo]:
    return parse_batch_infos(memoryview(data))


def test_one_v2_batch() -> None:
    data = v2_batch(
        40, [b"a", b"b", b"c"], timestamps=[5, 9, 7], partition_leader_epoch=3,
        producer_id=11, producer_epoch=2, base_sequence=INT_MAX - 1, attributes=0x10,
    )  # fmt: skip
    (info,) = _parse(data)
    assert info == BatchInfo(0, len(data), 2, 40, 42, 9, 3, 11, 2, INT_MAX - 1, 0x10)
    assert info.last_sequence == 0  # wraps past Int.MAX (DefaultRecordBatch.incrementSequence)
    assert info.has_producer_id
    assert info.is_transactional
    assert not info.is_control_batch
    assert info.compression_type == CompressionType.NONE
    assert info == v2_batch_info(
        0, len(data), base_offset=40, last_offset_delta=2, max_timestamp=9, attributes=0x10,
        producer_id=11, producer_epoch=2, base_sequence=INT_MAX - 1, partition_leader_epoch=3,
    )  # fmt: skip


def test_no_producer_and_control_flag() -> None:
    (info,) = _parse(v2_batch(0, [b"a"], attributes=0x20 | 0x03))
    assert not info.has_producer_id
    assert info.last_sequence == -1
    assert info.is_control_batch
    assert info.compression_type == CompressionType.LZ4


def test_several_batches_of_every_magic() -> None:
    first = v2_batch(0, [b"a", b"b"], base_timestamp=100)
    v0 = legacy_entry(2, 0, b"x")
    v1 = legacy_entry(3, 1, b"y", timestamp=77)
    last = v2_batch(4, [b"c"], base_timestamp=50, partition_leader_epoch=1)
    infos = _parse(first + v0 + v1 + last)
    p1 = len(first)
    p2 = p1 + len(v0)
    p3 = p2 + len(v1)
    assert infos == [
        BatchInfo(0, len(first), 2, 0, 1, 100, 0, -1, -1, -1, 0),
        BatchInfo(p1, len(v0), 0, 2, 2, -1, -1, -1, -1, -1, 0),
        BatchInfo(p2, len(v1), 1, 3, 3, 77, -1, -1, -1, -1, 0),
        BatchInfo(p3, len(last), 2, 4, 4, 50, 1, -1, -1, -1, 0),
    ]


def test_a_compressed_legacy_wrapper_has_no_base_offset() -> None:
    records = [SimpleRecord(10, None, b"a"), SimpleRecord(12, None, b"b")]
    data = bytes(
        build_legacy(records, magic=1, base_offset=20, compression_type=CompressionType.GZIP).buffer
    )
    (info,) = _parse(data)
    assert (info.magic, info.base_offset, info.last_offset) == (1, None, 21)
    assert info.compression_type == CompressionType.GZIP
    assert info.max_timestamp == 12
    assert info.last_sequence == -1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (v2_batch(0) + b"\x00" * 16, "16 trailing bytes"),
        (v2_batch(0)[:-1], "does not fit"),
        (b"\x00" * 8 + (13).to_bytes(4, "big") + b"\x00" * 14, "does not fit"),
        (b"\x00" * 8 + (40).to_bytes(4, "big") + b"\x00" * 4 + b"\x02" + b"\x00" * 39, "v2 batch"),
        (b"\x00" * 8 + (14).to_bytes(4, "big") + b"\x00" * 4 + b"\x03" + b"\x00" * 9, "magic"),
    ],
)
def test_bytes_that_are_not_whole_entries(data: bytes, message: str) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        _parse(data)


def test_nothing_gives_no_batch() -> None:
    assert _parse(b"") == []
