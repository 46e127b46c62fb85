"""What the validator hands back, and the metrics hook it calls.

``ValidationResult`` is Kafka's ``LogValidator.ValidationResult`` plus what
``UnifiedLog.append`` derives around it (first/last offset, record count,
per-batch facts for the log and the producer-state checks, codecs, sizes).
``MetricsRecorder`` is ``LogValidator.MetricsRecorder``: the broker's
metrics module implements it (BrokerTopicMetrics, all-topics meters).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from broker.records import batch as v2
from broker.records import legacy
from broker.records.batch import MAGIC_V2, CompressionType
from broker.records.buffers import ReadableBuffer
from broker.records.entries import iter_buffer_entries
from broker.records.origin import AppendOrigin
from broker.records.stats import EMPTY_STATS, RecordValidationStats

__all__ = [
    "AppendOrigin",
    "BatchInfo",
    "MetricsRecorder",
    "NullRecorder",
    "RecordValidationStats",
    "ValidationResult",
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


class BatchInfo(NamedTuple):
    """One batch of the validated records, as the log and the producer-state
    checks need it (read from the validated bytes, after offsets were set).

    Legacy entries: producer fields -1, not transactional, no leader epoch,
    an uncompressed entry holds one record.
    """

    position: int
    size_in_bytes: int
    magic: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    compression_type: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control_batch: bool
    partition_leader_epoch: int
    records_count: int


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


def batch_infos(buf: ReadableBuffer, first_offset: int, num_records: int) -> list[BatchInfo]:
    """Per-batch facts of the validated records. A legacy compressed wrapper
    (only ever the single batch of a result) gets the validation's first
    offset and record count, which its header alone does not tell."""
    view = memoryview(buf)
    if view.nbytes >= v2.RECORD_BATCH_OVERHEAD and view[v2.MAGIC_OFFSET] == MAGIC_V2:
        h = v2.read_header(view, 0)
        if h.size_in_bytes == view.nbytes:  # the usual result: one v2 batch
            return [_v2_info(h, 0)]
    out: list[BatchInfo] = []
    for e in iter_buffer_entries(view):
        if e.magic >= MAGIC_V2:
            out.append(_v2_info(v2.read_header(view, e.position), e.position))
        else:
            lh = legacy.read_entry_header(view, e.position)
            wrapper = lh.compression_type != CompressionType.NONE
            out.append(
                BatchInfo(
                    e.position,
                    e.size_in_bytes,
                    lh.magic,
                    first_offset if wrapper else lh.offset,
                    lh.offset,
                    lh.timestamp,
                    lh.compression_type,
                    -1,
                    -1,
                    -1,
                    -1,
                    False,
                    False,
                    -1,
                    num_records if wrapper else 1,
                )
            )
    return out


def _v2_info(h: v2.RecordBatchHeader, position: int) -> BatchInfo:
    return v2_batch_info(
        position,
        h.size_in_bytes,
        h.base_offset,
        h.last_offset_delta,
        h.max_timestamp,
        h.attributes,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.partition_leader_epoch,
        h.records_count,
    )


def v2_batch_info(  # noqa: PLR0917
    position: int,
    size_in_bytes: int,
    base_offset: int,
    last_offset_delta: int,
    max_timestamp: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
    records_count: int,
) -> BatchInfo:
    """A v2 batch's facts from its header fields (what ``RecordBatchHeader``'s
    properties derive: last offset and sequence, codec and flags)."""
    return BatchInfo(
        position,
        size_in_bytes,
        v2.MAGIC_V2,
        base_offset,
        base_offset + last_offset_delta,
        max_timestamp,
        attributes & v2.COMPRESSION_CODEC_MASK,
        producer_id,
        producer_epoch,
        base_sequence,
        v2.increment_sequence(base_sequence, last_offset_delta),
        bool(attributes & v2.TRANSACTIONAL_FLAG_MASK),
        bool(attributes & v2.CONTROL_FLAG_MASK),
        partition_leader_epoch,
        records_count,
    )
