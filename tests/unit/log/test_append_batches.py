"""``UnifiedLog.prepare_append``/``append`` take the validator's batch facts
(``ValidationResult.batches``) and read the headers only when not given; the
partition hands the validator's list over, so a produce reads each header
once. Either way the same bytes land on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.config import TopicConfig
from broker.log import unified_log
from broker.log.unified_log import UnifiedLog
from broker.partition.partition import Partition
from broker.records.batch_info import parse_batch_infos
from broker.validator.result import NullRecorder
from tests.unit.log.batches import legacy_entry, v2_batch
from tests.unit.log.helpers import MockTime

NOW = 1_700_000_000_000


def _no_parse(_view: Any) -> Any:
    raise AssertionError("the log read the headers again")


def test_given_batches_are_used_as_they_are(tmp_path: Path) -> None:
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), time_ms=MockTime())
    data = v2_batch(0, [b"a", b"b"], producer_id=9, producer_epoch=0, base_sequence=0)
    batches = parse_batch_infos(memoryview(data))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(unified_log, "parse_batch_infos", _no_parse)
        pending = log.prepare_append(data, batches)
        assert pending.batches is batches
        log.commit_append(pending)
    entry = log.producer_state.last_entry(9)
    assert entry is not None and entry.last_seq == 1
    log.close()


def test_given_or_parsed_batches_write_the_same_files(tmp_path: Path) -> None:
    config = TopicConfig(segment_bytes=600, index_interval_bytes=40)
    given = UnifiedLog.open(tmp_path / "a-0", config, time_ms=MockTime())
    parsed = UnifiedLog.open(tmp_path / "b-0", config, time_ms=MockTime())
    for i in range(30):
        offset = given.log_end_offset
        if i % 5 == 4:  # a message-format regression (clears the epoch cache)
            data = legacy_entry(offset, 1, b"x" * i, timestamp=1000 + i)
        else:
            data = v2_batch(
                offset, [b"y" * (i * 7 % 50)] * (1 + i % 3), base_timestamp=1000 + i,
                producer_id=7 if i % 2 else -1, producer_epoch=0 if i % 2 else -1,
                base_sequence=i if i % 2 else -1, partition_leader_epoch=i // 10,
            )  # fmt: skip
        r1 = given.append(data, parse_batch_infos(memoryview(data)))
        r2 = parsed.append(data)
        assert r1 == r2
    given.close()
    parsed.close()
    names = sorted(p.name for p in (tmp_path / "a-0").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b-0").iterdir())
    for name in names:
        assert (tmp_path / "a-0" / name).read_bytes() == (tmp_path / "b-0" / name).read_bytes()


@pytest.mark.parametrize("producer_id", [-1, 5])
def test_the_partition_hands_the_validators_batches_to_the_log(
    tmp_path: Path, producer_id: int
) -> None:
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), time_ms=lambda: NOW)
    partition = Partition("t", 0, log, recorder=NullRecorder(), time_ms=lambda: NOW)
    seq = 0 if producer_id >= 0 else -1
    epoch = 0 if producer_id >= 0 else -1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(unified_log, "parse_batch_infos", _no_parse)
        for _ in range(3):  # the first append takes the two-step path, later ones may not
            data = v2_batch(
                0, [b"a", b"b"], base_timestamp=NOW, producer_id=producer_id,
                producer_epoch=epoch, base_sequence=seq,
            )  # fmt: skip
            outcome = partition.append_records_as_leader(memoryview(bytearray(data)), 9)
            assert outcome.num_records == 2
            seq = seq + 2 if producer_id >= 0 else -1
    assert log.log_end_offset == 6
    log.close()
