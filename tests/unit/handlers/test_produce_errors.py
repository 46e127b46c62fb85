"""The produce handler's one error rule (``ReplicaManager.appendToLocalLog``), table by table.

An append's exception becomes its partition's answer and meters in one place
(``ProduceHandler._failed``): unknown partition, MESSAGE_TOO_LARGE,
RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE and KAFKA_STORAGE_ERROR carry
log_start_offset -1 and leave FailedProduceRequests alone; every other error
marks it and carries the partition's log start offset; MESSAGE_TOO_LARGE also
marks BytesRejected; a bug is UNKNOWN_SERVER_ERROR. Partitions refused before
they append (unknown, internal topic, ``ProduceRequest.validateRecords``) touch
no topic meter.
"""

from __future__ import annotations

import pytest

from broker.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    RecordError,
    RecordTooLargeError,
    RecordValidationError,
    UnknownTopicOrPartitionError,
)
from broker.partition.partition import Partition
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from tests.unit.handlers.test_produce_fetch import create, only_partition, produce, records

E = ErrorCode


def _meters(broker, topic="t"):
    m = broker.metrics
    return (
        m.produce_requests.labels(topic).value,
        m.failed_produce_requests.labels(topic).value,
        m.bytes_rejected.labels(topic).value,
    )


@pytest.mark.parametrize(
    ("raised", "code", "log_start_offset", "failed", "message"),
    [
        (RecordTooLargeError("too large"), E.MESSAGE_TOO_LARGE, -1, 0, "too large"),
        (RecordBatchTooLargeError("batch"), E.RECORD_LIST_TOO_LARGE, -1, 0, "batch"),
        (CorruptRecordError("crc"), E.CORRUPT_MESSAGE, -1, 0, "crc"),
        (KafkaStorageError("disk"), E.KAFKA_STORAGE_ERROR, -1, 0, "disk"),
        (
            OSError(5, "Input/output error"),
            E.KAFKA_STORAGE_ERROR,
            -1,
            0,
            "I/O error appending to t-0: Input/output error",
        ),
        (UnknownTopicOrPartitionError("gone"), E.UNKNOWN_TOPIC_OR_PARTITION, -1, 0, "gone"),
        (InvalidTimestampError("ts"), E.INVALID_TIMESTAMP, 0, 1, "ts"),
        (OutOfOrderSequenceError("seq"), E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, 1, "seq"),
        (RuntimeError("a bug"), E.UNKNOWN_SERVER_ERROR, 0, 1, None),
    ],
)
def test_an_append_error_is_answered_and_metered_by_the_rule(
    broker, monkeypatch, raised, code, log_start_offset, failed, message
):
    create(broker, "t")

    def failing(self, records, version, *, inline=True):
        raise raised

    monkeypatch.setattr(Partition, "append", failing)
    payload = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 0, payload), 9))
    assert (p.error_code, p.base_offset, p.log_start_offset) == (code, -1, log_start_offset)
    assert p.error_message == message
    assert p.record_errors == []
    rejected = len(payload) if code == E.MESSAGE_TOO_LARGE else 0
    assert _meters(broker) == (1, failed, rejected)
    # before v8 the response has no error_message
    p = only_partition(broker.call(produce("t", 0, payload), 7))
    assert (p.error_code, p.error_message) == (code, None)


def test_record_errors_are_listed_and_mark_failed_produce_requests(broker, monkeypatch):
    create(broker, "t")
    raised = RecordValidationError(
        InvalidRecordError("bad record"), [RecordError(1, "one"), RecordError(3, None)]
    )

    def failing(self, records, version, *, inline=True):
        raise raised

    monkeypatch.setattr(Partition, "append", failing)
    payload = bytes(build_v2_batch(records(4, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 0, payload), 9))
    assert (p.error_code, p.log_start_offset, p.error_message) == (
        E.INVALID_RECORD,
        0,
        "bad record",
    )
    assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
        (1, "one"),
        (3, None),
    ]
    assert _meters(broker) == (1, 1, 0)


def test_not_enough_replicas_for_acks_all_marks_failed_and_carries_the_log_start(broker):
    create(broker, "t", min_insync_replicas="2")
    payload = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 0, payload, acks=-1), 9))
    assert (p.error_code, p.log_start_offset) == (E.NOT_ENOUGH_REPLICAS, 0)
    assert p.error_message == (
        "The size of the current ISR {0} is insufficient to satisfy the min.isr requirement "
        "of 2 for partition t-0"
    )
    assert _meters(broker) == (1, 1, 0)
    # acks=1 does not ask for the ISR
    p = only_partition(broker.call(produce("t", 0, payload, acks=1), 9))
    assert (p.error_code, p.base_offset) == (E.NONE, 0)


@pytest.mark.parametrize(
    ("topic", "partition", "magic", "code", "message"),
    [
        ("t", 3, 2, E.UNKNOWN_TOPIC_OR_PARTITION, "does not host this topic-partition: t-3"),
        ("__consumer_offsets", 0, 2, E.INVALID_TOPIC_EXCEPTION, "Cannot append to internal"),
        ("t", 0, 1, E.INVALID_RECORD, "magic version 2"),  # ProduceRequest.validateRecords
    ],
    ids=["unknown", "internal", "validateRecords"],
)
def test_partitions_refused_before_the_append_touch_no_topic_meter(
    broker, topic, partition, magic, code, message
):
    create(broker, "t")
    create(broker, "__consumer_offsets")
    built = (
        build_v2_batch(records(2, broker.now_ms))
        if magic == 2
        else build_legacy(records(2, broker.now_ms), magic=magic)
    )
    p = only_partition(broker.call(produce(topic, partition, bytes(built.buffer)), 9))
    assert (p.error_code, p.base_offset, p.log_start_offset) == (code, -1, -1)
    assert message in p.error_message
    assert _meters(broker, topic) == (0, 0, 0)
