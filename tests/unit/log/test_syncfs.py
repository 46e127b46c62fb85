"""syncfs: the call, the kernel check, the trusted file systems, and flushing
several logs with one sync (``local_log.flush_together``)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import local_log, syncfs
from broker.log.local_log import flush_together
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


class Recorder:
    def __init__(self) -> None:
        self.samples: list[float] = []

    def record_flush(self, seconds: float) -> None:
        self.samples.append(seconds)


def open_log(tmp_path: Path, name: str, recorder: Recorder | None = None) -> UnifiedLog:
    return UnifiedLog.open(
        tmp_path / name, TopicConfig(), time_ms=MockTime(), flush_recorder=recorder
    )


@pytest.mark.parametrize(
    ("system", "release", "expected"),
    [
        ("Linux", "5.7.19", False),  # syncfs returned 0 after a failed write-back
        ("Linux", "5.8.0", True),
        ("Linux", "5.10.0-28-amd64", True),
        ("Linux", "6.18.44-fc-v657", True),
        ("Linux", "4.19.0", False),
        ("Linux", "weird", False),
        ("Darwin", "23.1.0", False),
    ],
)
def test_syncfs_is_trusted_from_linux_5_8(system: str, release: str, expected: bool) -> None:
    assert syncfs.reports_errors(system, release) is expected


def test_syncfs_syncs_and_reports_a_bad_descriptor(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        syncfs.syncfs(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError, match="syncfs") as caught:
        syncfs.syncfs(fd)  # closed
    assert caught.value.errno == errno.EBADF


def test_file_system_type_tells_trusted_from_untrusted(tmp_path: Path) -> None:
    assert syncfs.file_system_type("/proc") == 0x9FA0  # PROC_SUPER_MAGIC
    assert syncfs.trusted_file_system("/proc") is None
    kind = syncfs.file_system_type(tmp_path)
    assert syncfs.trusted_file_system(tmp_path) == syncfs.TRUSTED_FILE_SYSTEMS.get(kind)
    with pytest.raises(OSError, match="statfs") as caught:
        syncfs.file_system_type(tmp_path / "missing")
    assert caught.value.errno == errno.ENOENT


def test_flush_together_moves_every_recovery_point_with_one_sync(tmp_path: Path) -> None:
    recorder = Recorder()
    logs = [open_log(tmp_path, f"t-{p}", recorder) for p in range(3)]
    for p, log in enumerate(logs):
        for i in range(p + 1):
            log.append(v2_batch(i, [b"x"]))
    syncs: list[int] = []
    wanted = [(log.local_log, log.log_end_offset) for log in logs]
    assert flush_together(wanted, lambda: syncs.append(1)) == 3
    assert syncs == [1]
    assert [log.recovery_point for log in logs] == [1, 2, 3]
    assert len(recorder.samples) == 3  # one flush per log, as the per-file flush records
    # durable already: no claim, no sync
    assert flush_together(wanted, lambda: syncs.append(2)) == 0
    assert syncs == [1]
    for log in logs:
        log.close()


def test_flush_together_covers_up_to_the_leo_seen_before_the_sync(tmp_path: Path) -> None:
    log = open_log(tmp_path, "t-0")
    log.append(v2_batch(0, [b"a"]))
    log.append(v2_batch(1, [b"b"]))

    def append_during_the_sync() -> None:
        log.append(v2_batch(2, [b"c"]))  # after the claim: not covered

    assert flush_together([(log.local_log, 1)], append_during_the_sync) == 1
    assert log.recovery_point == 2
    log.close()


def test_a_truncation_during_the_sync_keeps_the_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, "t-0")
    for i in range(3):
        log.append(v2_batch(i, [b"x"]))

    def truncate_during_the_sync() -> None:
        log.truncate_to(1)

    flush_together([(log.local_log, 3)], truncate_during_the_sync)
    assert log.recovery_point <= 1
    log.close()


def test_a_failed_sync_moves_no_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, "t-0")
    log.append(v2_batch(0, [b"a"]))

    def fail() -> None:
        raise OSError(errno.EIO, "syncfs: Input/output error")

    with pytest.raises(OSError, match="Input/output"):
        flush_together([(log.local_log, 1)], fail)
    assert log.recovery_point == 0
    assert log.flush() is True  # the per-file flush still works afterwards
    assert log.recovery_point == 1
    log.close()


def test_a_synced_flush_settles_the_index_files_a_per_file_flush_left_owed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-file flush skips the indexes of the segment recovery rescans and
    owes them to the next flush; a syncfs covered them, so nothing is owed after."""
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(index_interval_bytes=1), time_ms=MockTime())
    log.append(v2_batch(0, [b"a"]))
    log.append(v2_batch(1, [b"b"]))
    assert log.flush() is True  # leaves segment 0's indexes owed
    log.roll()
    log.append(v2_batch(2, [b"c"]))
    assert flush_together([(log.local_log, 3)], lambda: None) == 1
    names: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        names.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(local_log.os, "fsync", recording)
    log.append(v2_batch(3, [b"d"]))
    assert log.flush() is True
    assert not [n for n in names if n.startswith("00000000000000000000")]
    log.close()


def test_flush_together_waits_for_a_per_file_flush_of_the_same_log(tmp_path: Path) -> None:
    """Both hold the log's flush mutex: a syncfs round never interleaves with the
    periodic flusher's fsyncs of the same log."""
    log = open_log(tmp_path, "t-0")
    log.append(v2_batch(0, [b"a"]))
    inside = threading.Event()
    leave = threading.Event()
    order: list[str] = []

    def slow_sync() -> None:
        inside.set()
        assert leave.wait(5)
        order.append("syncfs")

    thread = threading.Thread(target=flush_together, args=([(log.local_log, 1)], slow_sync))
    thread.start()
    assert inside.wait(5)
    log.append(v2_batch(1, [b"b"]))
    other = threading.Thread(target=lambda: order.append(f"flush {log.flush(2)}"))
    other.start()
    other.join(0.1)
    assert other.is_alive()  # waits for the mutex
    leave.set()
    thread.join(5)
    other.join(5)
    assert order == ["syncfs", "flush True"]
    assert log.recovery_point == 2
    log.close()
