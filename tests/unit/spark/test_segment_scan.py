"""Reading damaged segments (``broker.spark.segment_scan``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.records.batch import CompressionType, TimestampType
from broker.spark.index_check import load_offset_index
from broker.spark.layout import SegmentFile, discover
from broker.spark.segment_scan import (
    SegmentBytes,
    Span,
    batch_facts,
    batch_records,
    frame,
    is_plausible_start,
)
from tests.spark_logs import (
    BASE_TS,
    batch_positions,
    cut,
    flip_byte,
    legacy_appends,
    overwrite,
    topic_config,
    v2_appends,
    write_log_dir,
)


def _segment(tmp_path: Path, appends: list[bytes], **config: object) -> SegmentFile:
    write_log_dir(
        tmp_path / "logs",
        {TopicPartition("t", 0): appends},
        topic_config(segment_bytes=1 << 20, **config),
    )
    return discover([str(tmp_path / "logs")])[0]


def _spans(seg: SegmentFile, with_index: bool = True) -> list[Span]:
    positions = sorted(
        {p for _, p in load_offset_index(seg.offset_index_path, seg.base_offset).entries}
    )
    with SegmentBytes(seg.path) as data:
        return list(frame(data.buf, data.size, 0, None, positions if with_index else ()))


def test_an_intact_segment_frames_into_its_batches(tmp_path: Path) -> None:
    appends, _ = v2_appends(12, 3, codec=CompressionType.GZIP)
    seg = _segment(tmp_path, appends)
    spans = _spans(seg)
    assert [(s.position, s.size) for s in spans] == batch_positions(seg.path)
    assert all(s.readable and s.magic == 2 for s in spans)


def test_a_torn_tail_is_one_unreadable_span(tmp_path: Path) -> None:
    appends, _ = v2_appends(6, 3)
    seg = _segment(tmp_path, appends)
    last_pos, last_size = batch_positions(seg.path)[-1]
    cut(seg.path, last_pos + last_size // 2)
    spans = _spans(seg)
    assert [s.readable for s in spans] == [True] * 5 + [False]
    assert spans[-1].position == last_pos and spans[-1].size == last_size // 2
    assert spans[-1].problem is not None and "torn tail" in spans[-1].problem
    # fewer bytes than a header: also a torn tail
    cut(seg.path, last_pos + 9)
    tail = _spans(seg)[-1]
    assert (tail.size, tail.readable) == (9, False)
    assert tail.problem is not None and "too few for a header" in tail.problem


def test_garbage_is_skipped_to_the_next_index_position(tmp_path: Path) -> None:
    appends, _ = v2_appends(40, 2)
    seg = _segment(tmp_path, appends, index_interval_bytes=300)
    positions = [p for _, p in load_offset_index(seg.offset_index_path, seg.base_offset).entries]
    assert len(positions) >= 3
    batches = batch_positions(seg.path)
    # destroy the size and magic of the batch right after the first index position
    victim = next(p for p, _ in batches if p > positions[0])
    overwrite(seg.path, victim + 8, b"\x7f\xff\xff\x00\x00\x00\x00\x00\x09")
    spans = _spans(seg)
    bad = [s for s in spans if not s.readable]
    assert len(bad) == 1 and bad[0].position == victim
    resumed = min(p for p in positions if p > victim)
    assert bad[0].size == resumed - victim
    assert [(s.position, s.size) for s in spans if s.readable] == [
        (p, n) for p, n in batches if p < victim or p >= resumed
    ]
    # without an index there is nowhere to resume: the rest is unreadable
    no_index = _spans(seg, with_index=False)
    assert not no_index[-1].readable and no_index[-1].position == victim
    assert no_index[-1].position + no_index[-1].size == Path(seg.path).stat().st_size


def test_index_positions_that_do_not_hold_a_batch_are_not_resumed_at(tmp_path: Path) -> None:
    appends, _ = v2_appends(40, 2)
    seg = _segment(tmp_path, appends, index_interval_bytes=300)
    batches = batch_positions(seg.path)
    with SegmentBytes(seg.path) as data:
        assert is_plausible_start(data.buf, batches[3][0], data.size)
        assert not is_plausible_start(data.buf, batches[3][0] + 1, data.size)
        garbage_at = batches[2][0]
        wrong = [batches[2][0] + 5, batches[5][0]]
    overwrite(seg.path, garbage_at + 16, b"\x09")  # magic 9
    with SegmentBytes(seg.path) as data:
        spans = list(frame(data.buf, data.size, 0, None, wrong))
    bad = [s for s in spans if not s.readable]
    assert [(s.position, s.position + s.size) for s in bad] == [(garbage_at, batches[5][0])]
    assert bad[0].problem == "invalid magic 9"


def test_a_bad_crc_still_decodes_and_is_reported(tmp_path: Path) -> None:
    appends, _ = v2_appends(4, 5)
    seg = _segment(tmp_path, appends)
    pos, size = batch_positions(seg.path)[1]
    flip_byte(seg.path, pos + size - 2)  # inside the last record's value
    with SegmentBytes(seg.path) as data:
        facts = [batch_facts(data.buf, s) for s in frame(data.buf, data.size)]
        unchecked = [batch_facts(data.buf, s, verify_crc=False) for s in frame(data.buf, data.size)]
    assert [f.crc_valid for f in facts] == [True, False, True, True]
    assert [f.crc_valid for f in unchecked] == [None] * 4
    assert facts[1].error is None and facts[1].record_count == 5


def test_an_undecodable_batch_is_reported_and_the_next_is_read(tmp_path: Path) -> None:
    appends, _ = v2_appends(3, 20, codec=CompressionType.ZSTD)
    seg = _segment(tmp_path, appends)
    pos, _size = batch_positions(seg.path)[1]
    overwrite(seg.path, pos + 61, b"\x00" * 8)  # zstd frame magic gone
    with SegmentBytes(seg.path) as data:
        spans = list(frame(data.buf, data.size))
        facts = [batch_facts(data.buf, s) for s in spans]
        with pytest.raises(Exception, match="zstd"):
            batch_records(data.buf, spans[1])
    assert [f.error is None for f in facts] == [True, False, True]
    assert facts[1].error is not None and facts[1].error.startswith("undecodable batch")
    assert facts[1].crc_valid is False
    assert (facts[1].base_offset, facts[1].last_offset) == (20, 39)  # from the header
    assert facts[2].record_count == 20


def test_v2_facts(tmp_path: Path) -> None:
    appends, expected = v2_appends(2, 6, codec=CompressionType.LZ4, start_offset=0)
    seg = _segment(tmp_path, appends)
    with SegmentBytes(seg.path) as data:
        spans = list(frame(data.buf, data.size))
        facts = [batch_facts(data.buf, s) for s in spans]
        records = [batch_records(data.buf, s) for s in spans]
    first = facts[0]
    assert (first.magic, first.codec, first.record_count) == (2, CompressionType.LZ4, 6)
    assert (first.base_offset, first.last_offset) == (0, 5)
    assert (first.min_timestamp, first.max_timestamp) == (BASE_TS, BASE_TS + 5000)
    assert first.no_timestamp_records == 0
    assert first.uncompressed_bytes == 61 + sum(r.size_in_bytes for r in records[0])
    assert first.uncompressed_bytes > first.size  # these records compress
    assert [r.value for rs in records for r in rs] == [e.value for e in expected]


def test_log_append_time_batches_take_the_batch_timestamp(tmp_path: Path) -> None:
    appends, _ = v2_appends(1, 4, log_append_time=BASE_TS + 777)
    legacy, _ = legacy_appends(
        1, 1, 4, codec=CompressionType.GZIP, start_offset=4, log_append_time=BASE_TS + 999
    )
    seg = _segment(tmp_path, appends + legacy)
    with SegmentBytes(seg.path) as data:
        facts = [batch_facts(data.buf, s) for s in frame(data.buf, data.size)]
    assert [(f.min_timestamp, f.max_timestamp) for f in facts] == [
        (BASE_TS + 777, BASE_TS + 777),
        (BASE_TS + 999, BASE_TS + 999),
    ]
    assert [f.timestamp_type for f in facts] == [TimestampType.LOG_APPEND_TIME] * 2


def test_records_with_and_without_timestamps_in_one_batch(tmp_path: Path) -> None:
    from broker.records.builder import build_v2_batch
    from broker.records.record import SimpleRecord

    built = build_v2_batch(
        [
            SimpleRecord(-1, b"a", b"1"),
            SimpleRecord(BASE_TS, b"b", b"2"),
            SimpleRecord(-1, b"c", b"3"),
            SimpleRecord(BASE_TS + 5, b"d", b"4"),
        ],
    )
    seg = _segment(tmp_path, [bytes(built.buffer)])
    with SegmentBytes(seg.path) as data:
        (facts,) = [batch_facts(data.buf, s) for s in frame(data.buf, data.size)]
    assert (facts.no_timestamp_records, facts.min_timestamp, facts.max_timestamp) == (
        2,
        BASE_TS,
        BASE_TS + 5,
    )


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize(
    "codec",
    [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4],
)
def test_legacy_facts(tmp_path: Path, magic: int, codec: int) -> None:
    appends, expected = legacy_appends(magic, 3, 4, codec=codec)
    seg = _segment(tmp_path, appends)
    with SegmentBytes(seg.path) as data:
        spans = list(frame(data.buf, data.size))
        facts = [batch_facts(data.buf, s) for s in spans]
        records = [r for s in spans for r in batch_records(data.buf, s)]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (e.offset, e.key, e.value, e.timestamp) for e in expected
    ]
    assert all(f.error is None and f.crc_valid for f in facts)
    assert sum(f.record_count or 0 for f in facts) == 12
    if codec == CompressionType.NONE:
        assert len(facts) == 12 and all(f.uncompressed_bytes == f.size for f in facts)
    else:
        assert len(facts) == 3
        assert [(f.base_offset, f.last_offset) for f in facts] == [(0, 3), (4, 7), (8, 11)]
    if magic == 0:
        assert all(f.no_timestamp_records == f.record_count for f in facts)
        assert all(f.min_timestamp is None for f in facts)
    else:
        assert facts[0].min_timestamp == BASE_TS


@pytest.mark.parametrize("lat", [None, BASE_TS + 5])
def test_wrapper_facts_from_the_compiled_walk_match_the_records(
    tmp_path: Path, lat: int | None
) -> None:
    from broker.records.iterate import legacy_records
    from broker.records.record import SimpleRecord

    appends, _ = legacy_appends(
        1, 4, 5, codec=CompressionType.GZIP, start_offset=100, log_append_time=lat
    )
    # a wrapper stored at offset 0 (librdkafka's quirk: inner offsets taken as they are)
    from broker.records.legacy_builder import build_legacy

    quirk = bytearray(
        build_legacy(
            [SimpleRecord(BASE_TS, b"k", b"v")] * 3,
            magic=1,
            base_offset=120,
            compression_type=CompressionType.SNAPPY,
        ).buffer
    )
    seg = _segment(tmp_path, [*appends, bytes(quirk)])
    path = Path(seg.path)
    data = bytearray(path.read_bytes())
    last_pos = batch_positions(path)[-1][0]
    data[last_pos : last_pos + 8] = bytes(8)
    path.write_bytes(bytes(data))
    with SegmentBytes(seg.path) as mapped:
        for span in frame(mapped.buf, mapped.size):
            facts = batch_facts(mapped.buf, span)
            records = legacy_records(mapped.buf, span.position, span.size, 1 << 20)
            stamped = [r.timestamp for r in records if r.timestamp >= 0]
            assert facts.error is None
            assert (facts.base_offset, facts.record_count) == (records[0].offset, len(records))
            assert (facts.min_timestamp, facts.max_timestamp) == (min(stamped), max(stamped))
    assert records[0].offset == 0  # the quirk wrapper read with its inner offsets


def test_record_tuples_read_what_the_record_iterators_read(tmp_path: Path) -> None:
    from broker.spark.segment_scan import record_tuples

    appends = [
        *v2_appends(3, 7, codec=CompressionType.NONE)[0],
        *v2_appends(
            2, 5, codec=CompressionType.SNAPPY, start_offset=21, log_append_time=BASE_TS + 9
        )[0],
        *legacy_appends(1, 2, 3, codec=CompressionType.LZ4, start_offset=31)[0],
        *legacy_appends(0, 2, 1, start_offset=37)[0],
    ]
    seg = _segment(tmp_path, appends)
    with SegmentBytes(seg.path) as data:
        for span in frame(data.buf, data.size):
            tuples = record_tuples(data.buf, span, max_decompressed_bytes=1 << 20)
            records = batch_records(data.buf, span)
            assert tuples == [
                (r.offset, r.timestamp, int(r.timestamp_type), r.key, r.value, list(r.headers))
                for r in records
            ]
    # a record whose structure is broken fails as the iterator fails
    pos, _size = batch_positions(seg.path)[0]
    overwrite(seg.path, pos + 61, b"\x7f")  # first record's length: past the batch
    with SegmentBytes(seg.path) as data:
        span = next(frame(data.buf, data.size))
        with pytest.raises(Exception, match="record") as got:
            record_tuples(data.buf, span, max_decompressed_bytes=1 << 20)
        with pytest.raises(type(got.value)):
            batch_records(data.buf, span)
