"""Record-level reads of ListOffsets: timestamps inside compressed batches."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

from broker.config import TopicConfig
from broker.log.unified_log import MAX_TIMESTAMP, UnifiedLog
from broker.records.batch import set_base_offset
from tests.unit.log.batches import legacy_entry, v2_batch
from tests.unit.log.helpers import MockTime


def compressed_v2(base_offset: int, timestamps: list[int], codec: int) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(2, codec, 1 << 20, offset=0)
    for ts in timestamps:
        builder.append(timestamp=ts, key=b"k", value=b"v%d" % ts)
    builder.close()
    data = bytearray(builder.buffer())
    set_base_offset(data, 0, base_offset)
    return bytes(data)


def test_timestamp_lookup_inside_compressed_v2_batches(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), time_ms=MockTime())
    log.append(v2_batch(0, [b"a"], base_timestamp=0))
    for codec in (1, 2, 3, 4):  # gzip, snappy, lz4, zstd
        base = log.log_end_offset
        log.append(compressed_v2(base, [base * 10, base * 10 + 5, base * 10 + 2], codec))
    for codec_index in range(4):
        base = 1 + codec_index * 3
        found = log.fetch_offset_by_timestamp(base * 10 + 3)
        assert found is not None and (found.offset, found.timestamp) == (base + 1, base * 10 + 5)
    max_ts = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert max_ts is not None and (max_ts.timestamp, max_ts.offset) == (105, 11)
    log.close()


def test_timestamp_lookup_inside_a_legacy_gzip_wrapper(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), time_ms=MockTime())
    inner = b"".join(legacy_entry(i, 1, b"v%d" % i, timestamp=50 + i * 10) for i in range(3))
    log.append(legacy_entry(2, 1, gzip.compress(inner), attributes=1, timestamp=70))
    found = log.fetch_offset_by_timestamp(55)
    assert found is not None and (found.offset, found.timestamp) == (1, 60)
    log.close()
