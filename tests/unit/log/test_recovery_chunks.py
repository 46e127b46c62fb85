"""Recovery reads segments in chunks: any chunk size gives the same result."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import recovery
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


def crashed(path: Path) -> int:
    log = UnifiedLog.open(path, TopicConfig(index_interval_bytes=100), time_ms=MockTime())
    for i in range(60):
        size = (i * 997) % 3000
        log.append(
            v2_batch(
                log.log_end_offset,
                [os.urandom(size)] * (1 + i % 3),
                base_timestamp=1000 + i,
                partition_leader_epoch=i // 20,
            )
        )
    leo = log.log_end_offset
    log.close_handlers()
    return leo


def recovered_files(path: Path) -> dict[str, bytes]:
    log = UnifiedLog.open(path, TopicConfig(index_interval_bytes=100), time_ms=MockTime())
    log.close()
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("chunk", [1, 17, 61, 200, 4096])
def test_any_chunk_size_recovers_the_same_files(tmp_path: Path, chunk: int) -> None:
    leo = crashed(tmp_path / "a-0")
    shutil.copytree(tmp_path / "a-0", tmp_path / "b-0")
    expected = recovered_files(tmp_path / "a-0")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recovery, "SCAN_CHUNK_BYTES", chunk)
        assert recovered_files(tmp_path / "b-0") == expected
    log = UnifiedLog.open(tmp_path / "b-0", TopicConfig(), time_ms=MockTime())
    assert log.log_end_offset == leo
    log.close()


def test_corruption_after_a_chunk_boundary(tmp_path: Path) -> None:
    crashed(tmp_path / "a-0")
    path = next((tmp_path / "a-0").glob("*.log"))
    data = bytearray(path.read_bytes())
    data[len(data) * 2 // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    shutil.copytree(tmp_path / "a-0", tmp_path / "b-0")
    expected = recovered_files(tmp_path / "a-0")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recovery, "SCAN_CHUNK_BYTES", 333)
        assert recovered_files(tmp_path / "b-0") == expected
    assert len(expected[path.name]) < len(data)
