"""Recovery says what it cut: a WARNING naming the partition, the segment file,
the offset truncated to and the bytes dropped, and the same facts reported to
the recorder (``broker/log/recovery_report.py``), for a torn last batch, a
batch failing its CRC in the middle of a segment (the later segments go too),
garbage after the last batch, and a segment whose indexes are rebuilt after a
clean shutdown. A LogManager loading with several threads reports into the
broker's metrics registry."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from broker.config import BrokerConfig, TopicConfig
from broker.log import files
from broker.log.checkpoints import CleanShutdownFile
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from broker.log.unified_log import UnifiedLog
from broker.metrics import BrokerMetrics
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

REPORT_LOGGER = "broker.log.recovery_report"


class Recorder:
    def __init__(self) -> None:
        self.truncations: list[int] = []
        self.deleted: list[tuple[int, int]] = []

    def record_truncation(self, bytes_dropped: int) -> None:
        self.truncations.append(bytes_dropped)

    def record_deleted_segments(self, segments: int, bytes_dropped: int) -> None:
        self.deleted.append((segments, bytes_dropped))


def write_log(directory: Path, batches: int, config: TopicConfig) -> list[int]:
    """``batches`` one-record batches, then a crash (descriptors dropped, no
    clean close); returns the byte position where each batch starts."""
    log = UnifiedLog.open(directory, config, time_ms=MockTime())
    positions = []
    for i in range(batches):
        positions.append(log.active_segment.size)
        log.append(v2_batch(log.log_end_offset, [b"value-%03d" % i]))
    log.close_handlers()
    return positions


def reopen_unclean(directory: Path, config: TopicConfig, recorder: Recorder) -> UnifiedLog:
    return UnifiedLog.open(
        directory,
        config,
        recovery_point=0,
        had_clean_shutdown=False,
        time_ms=MockTime(),
        recovery_recorder=recorder,
    )


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_torn_last_batch_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "torn-0"
    config = TopicConfig()
    positions = write_log(directory, 5, config)
    path = files.log_file(directory, 0)
    size = path.stat().st_size
    os.truncate(path, positions[4] + 20)  # the last batch loses its end
    dropped = 20
    recorder = Recorder()
    caplog.set_level(logging.WARNING)
    log = reopen_unclean(directory, config, recorder)
    assert log.log_end_offset == 4
    assert log.truncated_bytes == dropped
    assert recorder.truncations == [dropped] and recorder.deleted == []
    expected = (
        f"[LogLoader partition=torn-0, dir={tmp_path}] Corruption found in segment 0 "
        f"(00000000000000000000.log), truncating to offset 4: {dropped} bytes dropped "
        f"from byte offset {positions[4]} (the last batch is incomplete)"
    )
    assert expected in warnings_of(caplog)
    assert [r.name for r in caplog.records if r.getMessage() == expected] == [REPORT_LOGGER]
    assert size > positions[4] + 20
    log.close()


def test_a_crc_corrupt_batch_mid_segment_is_reported_with_the_deleted_segments(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "crc-3"
    config = TopicConfig(segment_bytes=400)
    write_log(directory, 20, config)
    log = UnifiedLog.open(directory, config, time_ms=MockTime())
    segments = [(s.base_offset, s.size) for s in log.segments]
    log.close()
    assert len(segments) >= 3
    first_base, first_size = segments[0]
    # damage a record byte of the second batch of the first segment (inside the CRC)
    batch_size = len(v2_batch(0, [b"value-000"]))
    path = files.log_file(directory, first_base)
    with open(path, "r+b") as f:
        f.seek(batch_size + batch_size - 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    recorder = Recorder()
    caplog.set_level(logging.WARNING)
    reopened = reopen_unclean(directory, config, recorder)
    assert reopened.log_end_offset == 1
    assert [s.base_offset for s in reopened.segments] == [0]
    later_bytes = sum(size for _, size in segments[1:])
    cut = first_size - batch_size
    assert recorder.truncations == [cut]
    assert recorder.deleted == [(len(segments) - 1, later_bytes)]
    assert reopened.truncated_bytes == cut + later_bytes
    messages = warnings_of(caplog)
    ident = f"[LogLoader partition=crc-3, dir={tmp_path}] "
    assert (
        f"{ident}Corruption found in segment 0 (00000000000000000000.log), truncating to "
        f"offset 1: {cut} bytes dropped from byte offset {batch_size} "
        f"(CRC-32C mismatch of the batch at position {batch_size})"
    ) in messages
    names = ", ".join(files.log_file(directory, base).name for base, _ in segments[1:])
    assert (
        f"{ident}Deleting {len(segments) - 1} segments after the corruption as part of log "
        f"recovery: {names} (from offset {segments[1][0]} on, {later_bytes} bytes dropped)"
    ) in messages
    # Kafka's LogSegment.recover line is kept as well
    assert any(
        m.startswith(f"Found invalid messages in log segment {path} at byte offset {batch_size}")
        for m in messages
    )
    reopened.close()


def test_garbage_after_the_last_batch_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "garbage-0"
    config = TopicConfig()
    write_log(directory, 3, config)
    path = files.log_file(directory, 0)
    end = path.stat().st_size
    garbage = bytes(8) + (5).to_bytes(4, "big") + b"\xab" * 30  # size field 5 < 14
    with open(path, "ab") as f:
        f.write(garbage)
    recorder = Recorder()
    caplog.set_level(logging.WARNING)
    log = reopen_unclean(directory, config, recorder)
    assert log.log_end_offset == 3 and log.active_segment.size == end
    assert recorder.truncations == [len(garbage)]
    assert (
        f"[LogLoader partition=garbage-0, dir={tmp_path}] Corruption found in segment 0 "
        f"(00000000000000000000.log), truncating to offset 3: {len(garbage)} bytes dropped "
        f"from byte offset {end} (record size 5 is smaller than the minimum record "
        "overhead (14))"
    ) in warnings_of(caplog)
    log.close()


def test_a_clean_start_reports_a_cut_made_while_rebuilding_indexes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "rebuild-0"
    config = TopicConfig()
    log = UnifiedLog.open(directory, config, time_ms=MockTime())
    for i in range(3):
        log.append(v2_batch(i, [b"x"]))
    log.close()
    path = files.log_file(directory, 0)
    end = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\x00" * 17)  # too short for a batch header
    files.offset_index_file(directory, 0).unlink()  # the loader must rebuild it
    recorder = Recorder()
    caplog.set_level(logging.WARNING)
    reopened = UnifiedLog.open(
        directory, config, had_clean_shutdown=True, time_ms=MockTime(), recovery_recorder=recorder
    )
    assert reopened.log_end_offset == 3 and reopened.active_segment.size == end
    assert recorder.truncations == [17]
    assert any(
        "Corruption found in segment 0 (00000000000000000000.log), truncating to offset 3: "
        f"17 bytes dropped from byte offset {end} (the last batch is incomplete)" in m
        for m in warnings_of(caplog)
    )
    reopened.close()


def test_nothing_is_reported_when_nothing_is_cut(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "intact-0"
    config = TopicConfig(segment_bytes=400)
    write_log(directory, 12, config)
    recorder = Recorder()
    caplog.set_level(logging.WARNING)
    log = reopen_unclean(directory, config, recorder)
    assert log.log_end_offset == 12 and log.recovered_segments == log.number_of_segments
    assert recorder.truncations == [] and recorder.deleted == []
    assert warnings_of(caplog) == []
    log.close()


def test_the_log_manager_reports_into_the_metrics_registry(tmp_path: Path) -> None:
    metrics = BrokerMetrics(records_implementation="python", event_loop="asyncio", version="0")
    d = tmp_path / "d"
    config = BrokerConfig({"num.recovery.threads.per.data.dir": 3})
    manager = LogManager([d], config)
    manager.startup()
    torn: dict[TopicPartition, int] = {}
    for p in range(4):
        tp = TopicPartition("m", p)
        log = manager.get_or_create_log(tp)
        for i in range(3):
            log.append(v2_batch(i, [b"y" * 30]))
        if p % 2 == 0:
            torn[tp] = log.active_segment.size - 10
    for lg in manager.all_logs():
        lg.close_handlers()
    manager._release_locks()  # a crash
    for tp, cut_at in torn.items():
        os.truncate(files.log_file(d / f"{tp.topic}-{tp.partition}", 0), cut_at)
    assert not CleanShutdownFile(d).exists()
    manager = LogManager([d], config, recovery_recorder=metrics.recovery_recorder)
    manager.startup()
    text = metrics.render().decode()
    manager.shutdown()
    batch = len(v2_batch(0, [b"y" * 30]))
    assert "kafka_log_recovery_truncations_total 2.0" in text
    assert f"kafka_log_recovery_dropped_bytes_total {float(2 * (batch - 10))}" in text
    assert "kafka_log_recovery_deleted_segments_total 0.0" in text
