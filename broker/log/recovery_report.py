"""What log recovery says about the data it removes: WARNING lines and a recorder.

Recovery (``broker/log/recovery.py``) cuts a segment at its first invalid
byte (a torn last batch, a CRC mismatch, garbage after the last batch) and,
after an unclean shutdown, deletes every segment after the one it cut, as
Kafka's ``LogLoader.recoverLog`` does. Kafka says so in two lines::

    Found invalid messages in log segment <path> at byte offset <n>: <error>.
    [LogLoader partition=<tp>, dir=<dir>] Corruption found in segment <base>,
        truncating to offset <o>

(one line) and, at INFO, "Deleting segments as part of log recovery: ...".
Neither says how much was lost, and Kafka has no metric for it. Here the second
line keeps Kafka's words and adds the file, the byte offset and the bytes
dropped (with the reason), and the deletion of later segments is a WARNING
that names the files and their bytes::

    [LogLoader partition=t-0, dir=/data] Corruption found in segment 0
    (00000000000000000000.log), truncating to offset 42: 517 bytes dropped
    from byte offset 8192 (CRC-32C mismatch of the batch at position 8192)

    [LogLoader partition=t-0, dir=/data] Deleting 2 segments after the
    corruption as part of log recovery: 00000000000000000100.log,
    00000000000000000200.log (from offset 100 on, 2048 bytes dropped)

Both also go to a :class:`RecoveryRecorder` (the application passes one
that feeds ``kafka_log_recovery_*`` counters; recovery runs in the loader's
worker threads, so a recorder must be thread-safe).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.log.segment import LogSegment

logger = logging.getLogger(__name__)

#: the reason given when the scan ended at a batch the file does not hold in full
INCOMPLETE_BATCH = "the last batch is incomplete"


class RecoveryRecorder(Protocol):
    """Receives what recovery removed (called from loader threads)."""

    def record_truncation(self, bytes_dropped: int) -> None:
        """One segment was cut at an invalid or torn tail of ``bytes_dropped`` bytes."""
        ...

    def record_deleted_segments(self, segments: int, bytes_dropped: int) -> None:
        """``segments`` segments after a cut one were deleted, ``bytes_dropped`` bytes."""
        ...


class NullRecoveryRecorder:
    def record_truncation(self, bytes_dropped: int) -> None:
        return None

    def record_deleted_segments(self, segments: int, bytes_dropped: int) -> None:
        return None


def log_identifier(directory: Path) -> str:
    """Kafka's ``LogLoader`` prefix: ``[LogLoader partition=t-0, dir=/data] ``."""
    return f"[LogLoader partition={directory.name}, dir={directory.parent}] "


def report_truncated_segment(
    directory: Path,
    segment: LogSegment,
    *,
    truncated_to: int,
    valid_bytes: int,
    bytes_dropped: int,
    error: str | None,
    recorder: RecoveryRecorder,
) -> None:
    """The WARNING and the count for one segment recovery cut."""
    logger.warning(
        "%sCorruption found in segment %d (%s), truncating to offset %d: "
        "%d bytes dropped from byte offset %d (%s)",
        log_identifier(directory),
        segment.base_offset,
        segment.log.path.name,
        truncated_to,
        bytes_dropped,
        valid_bytes,
        error if error is not None else INCOMPLETE_BATCH,
    )
    recorder.record_truncation(bytes_dropped)


def report_deleted_segments(
    directory: Path, deleted: Sequence[LogSegment], recorder: RecoveryRecorder
) -> int:
    """The WARNING and the count for the segments deleted after a cut one
    (call before deleting them); returns their bytes."""
    if not deleted:
        return 0
    total = sum(segment.size for segment in deleted)
    logger.warning(
        "%sDeleting %d segments after the corruption as part of log recovery: %s "
        "(from offset %d on, %d bytes dropped)",
        log_identifier(directory),
        len(deleted),
        ", ".join(segment.log.path.name for segment in deleted),
        deleted[0].base_offset,
        total,
    )
    recorder.record_deleted_segments(len(deleted), total)
    return total
