"""The inputs of one validation (``LogValidator``'s constructor, as
``UnifiedLog.append`` fills it) and
the shape of a path's outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from broker.records.buffers import ReadableBuffer
from broker.records.origin import AppendOrigin
from broker.records.stats import RecordValidationStats
from broker.validator.analysis import RecordsAnalysis
from broker.validator.result import MetricsRecorder


class Context(NamedTuple):
    records: memoryview  # writable, trimmed to the whole entries
    tp: str  # "topic-partition", as Kafka prints a TopicPartition
    analysis: RecordsAnalysis
    source_codec: int
    target_codec: int
    target_level: int | None
    compacted: bool
    to_magic: int
    log_append_time: bool  # topic message.timestamp.type = LogAppendTime
    before_max: int
    after_max: int
    partition_leader_epoch: int
    origin: AppendOrigin
    now: int
    recorder: MetricsRecorder
    max_decompressed_bytes: int
    clock_ns: Callable[[], int]
    #: cost units this validation may spend on the caller's thread (None: no
    #: limit); broker/validator/inline.py
    inline_budget: int | None = None

    @property
    def create_time(self) -> bool:
        return not self.log_append_time


class PathResult(NamedTuple):
    """``LogValidator.ValidationResult`` plus the record count."""

    validated: ReadableBuffer
    num_records: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    message_size_maybe_changed: bool
    stats: RecordValidationStats
