"""Shared helpers of the log tests: Kafka's ``LogTestUtils`` equivalents."""

from __future__ import annotations

import os
import random
from pathlib import Path

from broker.log import files
from broker.log.file_records import FileRecords
from broker.log.index import LazyIndex
from broker.log.offset_index import OffsetIndex
from broker.log.segment import LogSegment
from broker.log.time_index import TimeIndex
from tests.unit.log.batches import legacy_entry

RANDOM = random.Random(0x5EED)


class MockTime:
    """Kafka's ``MockTime``: a clock that moves only when told."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms

    def __call__(self) -> int:
        return self.now

    def sleep(self, ms: int) -> None:
        self.now += ms


def v1_records(offset: int, *values: str | bytes, timestamp: int | None = None) -> bytes:
    """``records(offset, ...)`` of LogSegmentTest: v1, uncompressed, one entry
    per record, offsets offset.., every timestamp offset * 10."""
    ts = offset * 10 if timestamp is None else timestamp
    return b"".join(
        legacy_entry(offset + i, 1, v.encode() if isinstance(v, str) else v, timestamp=ts)
        for i, v in enumerate(values)
    )


def create_segment(
    directory: Path,
    offset: int,
    index_interval_bytes: int = 10,
    time_ms: MockTime | None = None,
) -> LogSegment:
    """``LogTestUtils.createSegment``: offset index 1000 bytes, time index 1500."""
    clock = time_ms or MockTime()
    return LogSegment(
        FileRecords.open(files.log_file(directory, offset)),
        LazyIndex(files.offset_index_file(directory, offset), offset, 1000, OffsetIndex),
        LazyIndex(files.time_index_file(directory, offset), offset, 1500, TimeIndex),
        base_offset=offset,
        index_interval_bytes=index_interval_bytes,
        roll_jitter_ms=0,
        time_ms=clock,
    )


def write_nonsense(path: Path, position: int, size: int, rng: random.Random = RANDOM) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(bytes(rng.randrange(255) for _ in range(size)))


def batch_offsets(log: FileRecords) -> list[int]:
    return [b.last_offset for b in log.iter_batches()]


def entry_offsets(data: bytes) -> list[int]:
    """Offsets of the uncompressed entries/records of ``data`` (any magic)."""
    from broker.log.record_times import iter_record_offsets_timestamps
    from broker.records.entries import iter_file_entries

    out = []
    for entry in iter_file_entries(data):
        out.extend(
            o
            for o, _ in iter_record_offsets_timestamps(
                data[entry.position : entry.position + entry.size_in_bytes]
            )
        )
    return out


def file_size(path: Path) -> int:
    return os.path.getsize(path)
