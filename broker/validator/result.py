"""What the validator hands back, and the metrics hook it calls.

``ValidationResult`` is Kafka's ``LogValidator.ValidationResult`` plus what
``UnifiedLog.append`` derives around it (first/last offset, record count,
per-batch facts for the log and the producer-state checks, codecs, sizes).
``MetricsRecorder`` is ``LogValidator.MetricsRecorder``: the broker's
metrics module implements it (BrokerTopicMetrics, all-topics meters).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from broker.records.batch_info import BatchInfo, parse_batch_infos, v2_batch_info
from broker.records.buffers import ReadableBuffer
from broker.records.origin import AppendOrigin
from broker.records.stats import EMPTY_STATS, RecordValidationStats

__all__ = [
    "AppendOrigin",
    "BatchInfo",
    "MetricsRecorder",
    "NullRecorder",
    "RecordValidationStats",
    "ValidationResult",
    "v2_batch_info",
]


class MetricsRecorder(Protocol):
    """``LogValidator.MetricsRecorder`` (all-topics meters of ``BrokerTopicMetrics``)."""

    def record_invalid_magic(self, count: int = 1) -> None:
        """InvalidMagicNumberRecordsPerSec (``count`` records)."""

    def record_invalid_offset(self) -> None:
        """InvalidOffsetOrSequenceRecordsPerSec (offset checks, control batches)."""

    def record_invalid_sequence(self) -> None:
        """InvalidOffsetOrSequenceRecordsPerSec (negative sequence)."""

    def record_invalid_checksums(self) -> None:
        """InvalidMessageCrcRecordsPerSec."""

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        """NoKeyCompactedTopicRecordsPerSec (``count`` records)."""


class NullRecorder:
    """A recorder that records nothing (tools, tests that do not count)."""

    def record_invalid_magic(self, count: int = 1) -> None:
        return None

    def record_invalid_offset(self) -> None:
        return None

    def record_invalid_sequence(self) -> None:
        return None

    def record_invalid_checksums(self) -> None:
        return None

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        return None


class DeferredRecorder:
    """Counts what a validation records, to be handed to the real recorder
    later: a validation that runs on a worker thread records into one of
    these, and the event loop replays it (the meters are not thread-safe)."""

    __slots__ = ("checksums", "magic", "no_key", "offset", "sequence")

    def __init__(self) -> None:
        self.magic = self.offset = self.sequence = self.checksums = self.no_key = 0

    def record_invalid_magic(self, count: int = 1) -> None:
        self.magic += count

    def record_invalid_offset(self) -> None:
        self.offset += 1

    def record_invalid_sequence(self) -> None:
        self.sequence += 1

    def record_invalid_checksums(self) -> None:
        self.checksums += 1

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        self.no_key += count

    def replay(self, target: MetricsRecorder) -> None:
        if self.magic:
            target.record_invalid_magic(self.magic)
        for _ in range(self.offset):
            target.record_invalid_offset()
        for _ in range(self.sequence):
            target.record_invalid_sequence()
        for _ in range(self.checksums):
            target.record_invalid_checksums()
        if self.no_key:
            target.record_no_key_compacted_topic(self.no_key)


class ValidationResult(NamedTuple):
    """The outcome of :func:`broker.validator.validate_records`."""

    #: the request's own (patched) memoryview when validated in place, else new bytes
    validated_records: ReadableBuffer
    first_offset: int
    last_offset: int
    num_records: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    #: now for LogAppendTime topics, else -1 (what the produce response carries)
    log_append_time_ms: int
    message_size_maybe_changed: bool
    stats: RecordValidationStats = EMPTY_STATS
    #: what ``UnifiedLog.prepare_append`` takes with the validated records
    batches: tuple[BatchInfo, ...] = ()
    source_compression_type: int = 0
    target_compression_type: int = 0
    #: bytes of the partition's records as the request carried them (BytesInPerSec)
    original_size_in_bytes: int = 0
    #: bytes kept after dropping a trailing partial batch
    valid_bytes: int = 0
    #: the validator's clock read ("now"), LogAppendTime or not
    now_ms: int = -1

    @property
    def validated_in_place(self) -> bool:
        return not self.message_size_maybe_changed


def batch_infos(buf: ReadableBuffer) -> list[BatchInfo]:
    """Per-batch facts of the validated records, for the log
    (``UnifiedLog.prepare_append``) and the producer-state checks."""
    return parse_batch_infos(memoryview(buf))
