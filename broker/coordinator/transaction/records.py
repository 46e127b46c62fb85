"""The records of ``__transaction_state`` (``TransactionLog.scala``), in Kafka 3.9's schemas.

Transcribed from ``transaction-coordinator/src/main/resources/common/message/
TransactionLogKey.json`` and ``TransactionLogValue.json``; decoded messages
use the field names of Kafka's JSON converters. Both are a version prefix and
a message (``MessageUtil.toVersionPrefixedBytes``)::

    key   => version:INT16 (0)  transactionalId:STRING
    value => version:INT16      (v0)                        (v1, flexible)
             producerId                INT64                INT64
             producerEpoch             INT16                INT16
             transactionTimeoutMs      INT32                INT32
             transactionStatus         INT8 (TransactionState id)
             transactionPartitions     INT32 count | -1     UVARINT count+1 | 0 (null)
               topic                   INT16 len, UTF-8     UVARINT len+1, UTF-8
               partitionIds            INT32 count, INT32s  UVARINT count+1, INT32s
               (v1)                                         tagged fields: UVARINT count ...
             transactionLastUpdateTimestampMs  INT64
             transactionStartTimestampMs       INT64
             (v1)                      tagged fields: UVARINT count, per field tag, size, bytes
    value => null: a tombstone (the transactional id expired: Dead, removed from the cache)

Kafka 3.9 writes value v0, or v1 once the ``transaction.version`` feature is
at least 1 (``TransactionStateManager.usesFlexibleRecords``): the caller says
which. Neither version has a known tagged field; those a later Kafka adds are
skipped. An Empty transaction's partitions are written as null and ignored
when read.

Decoding is bounded by the buffer; bytes that do not fit raise
:class:`TransactionLogRecordError` and nothing else. The schemas are read by
the interpreter of ``broker/group_records/schema.py``, shared with
``__consumer_offsets``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import groupby

from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from broker.errors import CorruptRecordError
from broker.group_records.schema import GroupRecordError, Message, f, schema
from broker.log.files import TopicPartition

TRANSACTION_LOG_KEY = schema("TransactionLogKey", "0", None, [f("transactionalId", "string", "0")])

TRANSACTION_LOG_VALUE = schema(
    "TransactionLogValue",
    "0-1",
    "1+",
    [
        f("producerId", "int64"),
        f("producerEpoch", "int16"),
        f("transactionTimeoutMs", "int32"),
        f("transactionStatus", "int8"),
        f(
            "transactionPartitions",
            "[]",
            nullable="0+",
            fields=[f("topic", "string"), f("partitionIds", "[]int32")],
        ),
        f("transactionLastUpdateTimestampMs", "int64"),
        f("transactionStartTimestampMs", "int64"),
    ],
)

KEY_VERSION = 0
#: value versions: the highest non-flexible one and the flexible one (transaction.version >= 1)
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1

_MAX_STRING = 0x7FFF


class TransactionLogRecordError(CorruptRecordError):
    """A ``__transaction_state`` key or value that does not decode."""


@dataclass(frozen=True)
class TxnKey:
    """A key this broker knows (``TxnKey``)."""

    version: int
    transactional_id: str


@dataclass(frozen=True)
class UnknownKey:
    """A key of a version this broker does not know (``UnknownKey``): skipped when loading."""

    version: int


def key_to_bytes(transactional_id: str) -> bytes:
    """``TransactionLog.keyToBytes``: TransactionLogKey v0."""
    if len(transactional_id.encode("utf-8")) > _MAX_STRING:
        raise ValueError("'transactionalId' field is too long to be serialized")
    return KEY_VERSION.to_bytes(2, "big") + TRANSACTION_LOG_KEY.write(
        {"transactionalId": transactional_id}, KEY_VERSION
    )


def value_to_bytes(transit: TxnTransitMetadata, uses_flexible_records: bool) -> bytes:
    """``TransactionLog.valueToBytes``: v1 when flexible records are on, else v0.

    An Empty transaction with partitions raises IllegalTransactionStateError, as
    Kafka's ``IllegalStateException``; its partitions are written as null. The
    others' partitions are grouped by topic, in sorted order (Kafka's order is
    its hash set's).
    """
    if transit.txn_state is TransactionState.Empty and transit.topic_partitions:
        raise IllegalTransactionStateError(
            "Transaction is not expected to have any partitions since its state is "
            f"{transit.txn_state}: {transit}"
        )
    partitions: list[Message] | None = None
    if transit.txn_state is not TransactionState.Empty:
        partitions = [
            {"topic": topic, "partitionIds": [tp.partition for tp in group]}
            for topic, group in groupby(sorted(transit.topic_partitions), key=lambda tp: tp.topic)
        ]
    version = FLEXIBLE_VALUE_VERSION if uses_flexible_records else VALUE_VERSION
    message = {
        "producerId": transit.producer_id,
        "producerEpoch": transit.producer_epoch,
        "transactionTimeoutMs": transit.txn_timeout_ms,
        "transactionStatus": transit.txn_state.id,
        "transactionPartitions": partitions,
        "transactionLastUpdateTimestampMs": transit.txn_last_update_timestamp,
        "transactionStartTimestampMs": transit.txn_start_timestamp,
    }
    return version.to_bytes(2, "big") + TRANSACTION_LOG_VALUE.write(message, version)


def _version(buf: bytes | memoryview, what: str) -> int:
    if len(buf) < 2:
        raise TransactionLogRecordError(f"Could not read version from {what}'s buffer.")
    return int.from_bytes(buf[:2], "big", signed=True)


def read_key_message(buf: bytes | memoryview) -> tuple[int, Message | None]:
    """The key's version and message (None for a version this broker does not know)."""
    version = _version(buf, "key")
    if not TRANSACTION_LOG_KEY.low <= version <= TRANSACTION_LOG_KEY.high:
        return version, None
    try:
        return version, TRANSACTION_LOG_KEY.read(memoryview(buf)[2:], version)
    except GroupRecordError as exc:
        raise TransactionLogRecordError(f"TransactionLogKey: {exc}") from None


def read_value_message(buf: bytes | memoryview) -> tuple[int, Message | None]:
    """The value's version and message (None for a version this broker does not know)."""
    version = _version(buf, "value")
    if not TRANSACTION_LOG_VALUE.low <= version <= TRANSACTION_LOG_VALUE.high:
        return version, None
    try:
        return version, TRANSACTION_LOG_VALUE.read(memoryview(buf)[2:], version)
    except GroupRecordError as exc:
        raise TransactionLogRecordError(f"TransactionLogValue: {exc}") from None


def read_txn_record_key(buf: bytes | memoryview) -> TxnKey | UnknownKey:
    """``TransactionLog.readTxnRecordKey``."""
    version, message = read_key_message(buf)
    if message is None:
        return UnknownKey(version)
    return TxnKey(version, message["transactionalId"])


def read_txn_record_value(
    transactional_id: str, buf: bytes | memoryview | None
) -> TransactionMetadata | None:
    """``TransactionLog.readTxnRecordValue``: the id's metadata, None for a tombstone.

    A value of an unknown version or state id raises TransactionLogRecordError
    (Kafka: ``IllegalStateException``), as do null partitions in a state other
    than Empty (Kafka: a NullPointerException). The last producer id and epoch
    are not in the record: NO_PRODUCER_ID / NO_PRODUCER_EPOCH, as in Kafka.
    """
    if buf is None:
        return None
    version, message = read_value_message(buf)
    if message is None:
        raise TransactionLogRecordError(
            f"Unknown version {version} from the transaction log message value"
        )
    try:
        state = TransactionState.from_id(message["transactionStatus"])
    except IllegalTransactionStateError as exc:
        raise TransactionLogRecordError(str(exc)) from None
    metadata = TransactionMetadata(
        transactional_id,
        producer_id=message["producerId"],
        last_producer_id=NO_PRODUCER_ID,
        producer_epoch=message["producerEpoch"],
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=message["transactionTimeoutMs"],
        state=state,
        txn_start_timestamp=message["transactionStartTimestampMs"],
        txn_last_update_timestamp=message["transactionLastUpdateTimestampMs"],
    )
    if state is not TransactionState.Empty:
        partitions = message["transactionPartitions"]
        if partitions is None:
            raise TransactionLogRecordError(
                f"TransactionLogValue in state {state} has null transactionPartitions"
            )
        for entry in partitions:
            topic = entry["topic"]
            metadata.add_partitions(TopicPartition(topic, p) for p in entry["partitionIds"])
    return metadata


# ---- the text tools print -------------------------------------------------------------------


def format_record_key_and_value(
    offset: int, key: bytes | memoryview | None, value: bytes | memoryview | None
) -> tuple[str | None, str | None]:
    """``kafka-dump-log.sh --transaction-log-decoder``'s (key, payload) of one record
    (``DumpLogSegments.TransactionLogMessageParser``, ``TransactionLog.formatRecordKeyAndValue``).

    The partitions print as Kafka's ``topic-partition`` list, sorted (Kafka's order
    is its hash set's). A record that does not decode (where Kafka's tool stops
    with an exception) is described in the key, with no payload.
    """
    try:
        if key is None:
            raise TransactionLogRecordError("the record has no key")
        txn_key = read_txn_record_key(key)
        if isinstance(txn_key, UnknownKey):
            return f"unknown::version={txn_key.version}", None
        key_text = f"transaction_metadata::transactionalId={txn_key.transactional_id}"
        metadata = read_txn_record_value(txn_key.transactional_id, value)
    except TransactionLogRecordError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    if metadata is None:
        return key_text, "<DELETE>"
    partitions = ",".join(str(tp) for tp in sorted(metadata.topic_partitions))
    return key_text, (
        f"producerId:{metadata.producer_id},producerEpoch:{metadata.producer_epoch},"
        f"state={metadata.state},partitions=[{partitions}],"
        f"txnLastUpdateTimestamp={metadata.txn_last_update_timestamp},"
        f"txnTimeoutMs={metadata.txn_timeout_ms}"
    )


def format_message_json(key: bytes | memoryview | None, value: bytes | memoryview | None) -> str:
    """``TransactionLogMessageFormatter`` (``kafka-console-consumer.sh --formatter``): the key
    and value as ``{"version":N,"data":{...}}`` (``"data":"unknown"`` for a version this
    broker does not know), or null. Raises TransactionLogRecordError for bytes that do not
    decode (Kafka's formatter throws)."""
    out: dict[str, object] = {"key": None, "value": None}
    if key is not None:
        version, message = read_key_message(key)
        out["key"] = {"version": version, "data": "unknown" if message is None else message}
    if value is not None:
        version, message = read_value_message(value)
        out["value"] = {"version": version, "data": "unknown" if message is None else message}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)
