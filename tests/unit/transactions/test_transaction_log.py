"""``__transaction_state``'s records: Kafka 3.9's ``TransactionLogTest`` and
``TransactionLogMessageFormatterTest`` ported, golden bytes, round trips, bad bytes.

Golden bytes: worked out by hand from ``TransactionLogKey.json`` and
``TransactionLogValue.json`` field by field (a version INT16 first, as
``MessageUtil.toVersionPrefixedBytes``; v0 with INT16 string lengths and
INT32 array counts, v1 flexible: UVARINT length+1 / count+1 and an empty
tagged-field section, one byte 00, after every struct).
"""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.transaction.metadata import (
    IllegalTransactionStateError,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from broker.coordinator.transaction.records import (
    TransactionLogRecordError,
    TxnKey,
    UnknownKey,
    format_message_json,
    format_record_key_and_value,
    key_to_bytes,
    read_txn_record_key,
    read_txn_record_value,
    value_to_bytes,
)
from broker.coordinator.transaction.state_topic import (
    TRANSACTION_STATE_TOPIC_NAME,
    partition_for,
)
from broker.errors import CorruptRecordError
from broker.log.files import TopicPartition

S = TransactionState
PRODUCER_EPOCH = 0
TRANSACTION_TIMEOUT_MS = 1000
TOPIC_PARTITIONS = {
    TopicPartition("topic1", 0),
    TopicPartition("topic1", 1),
    TopicPartition("topic2", 0),
    TopicPartition("topic2", 1),
    TopicPartition("topic2", 2),
}


# ---- TransactionLogTest ---------------------------------------------------------------------


def test_should_throw_exception_write_invalid_txn() -> None:
    metadata = TransactionMetadata.create(
        "transactionalId", 23423, PRODUCER_EPOCH, TRANSACTION_TIMEOUT_MS, 0
    )
    metadata.add_partitions(TOPIC_PARTITIONS)
    with pytest.raises(IllegalTransactionStateError):
        value_to_bytes(metadata.prepare_no_transit(), True)


@pytest.mark.parametrize("flexible", [True, False])
def test_should_read_write_messages(flexible: bool) -> None:
    pid_mappings = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
    states = {
        0: S.Empty,
        1: S.Ongoing,
        2: S.PrepareCommit,
        3: S.CompleteCommit,
        4: S.PrepareAbort,
        5: S.CompleteAbort,
    }
    records = []
    for transactional_id, producer_id in pid_mappings.items():
        metadata = TransactionMetadata.create(
            transactional_id,
            producer_id,
            PRODUCER_EPOCH,
            TRANSACTION_TIMEOUT_MS,
            0,
            state=states[producer_id],
        )
        if metadata.state is not S.Empty:
            metadata.add_partitions(TOPIC_PARTITIONS)
        records.append(
            (
                key_to_bytes(transactional_id),
                value_to_bytes(metadata.prepare_no_transit(), flexible),
            )
        )
    for key, value in records:
        txn_key = read_txn_record_key(key)
        assert isinstance(txn_key, TxnKey)
        metadata = read_txn_record_value(txn_key.transactional_id, value)
        assert metadata is not None
        assert metadata.producer_id == pid_mappings[txn_key.transactional_id]
        assert metadata.producer_epoch == PRODUCER_EPOCH
        assert metadata.txn_timeout_ms == TRANSACTION_TIMEOUT_MS
        assert metadata.state is states[metadata.producer_id]
        expected = set() if metadata.state is S.Empty else TOPIC_PARTITIONS
        assert metadata.topic_partitions == expected
    assert len(records) == len(pid_mappings)


def test_transaction_metadata_parsing() -> None:
    metadata = TransactionMetadata.create(
        "id", 1334, PRODUCER_EPOCH, TRANSACTION_TIMEOUT_MS, 0, state=S.Ongoing
    )
    metadata.add_partitions({TopicPartition("topic", 0)})
    key, payload = format_record_key_and_value(
        0, key_to_bytes("id"), value_to_bytes(metadata.prepare_no_transit(), True)
    )
    assert key == "transaction_metadata::transactionalId=id"
    assert payload == (
        "producerId:1334,producerEpoch:0,state=Ongoing,partitions=[topic-0],"
        "txnLastUpdateTimestamp=0,txnTimeoutMs=1000"
    )


def test_transaction_metadata_tombstone_parsing() -> None:
    key, payload = format_record_key_and_value(0, key_to_bytes("id"), None)
    assert key == "transaction_metadata::transactionalId=id"
    assert payload == "<DELETE>"


def _complete_commit() -> TxnTransitMetadata:
    return TxnTransitMetadata(1, 1, 1, 1, 1000, S.CompleteCommit, frozenset(), 500, 500)


def test_serialize_transaction_log_value_to_highest_non_flexible_version() -> None:
    assert value_to_bytes(_complete_commit(), False)[:2] == b"\x00\x00"


def test_serialize_transaction_log_value_to_flexible_version() -> None:
    assert value_to_bytes(_complete_commit(), True)[:2] == b"\x00\x01"


def _value_v1(
    partition_tags: bytes = b"\x00", value_tags: bytes = b"\x00", partition: int = 0
) -> bytes:
    """TransactionLogValue v1: producerId 100, epoch 50, timeout 500, CompleteCommit (4),
    one topic "topic" with ``partition``, last update 1000, start 750."""
    return (
        b"\x00\x01"
        + (100).to_bytes(8, "big")
        + (50).to_bytes(2, "big")
        + (500).to_bytes(4, "big")
        + b"\x04"
        + b"\x02"  # 1 topic
        + b"\x06topic"
        + b"\x02"  # 1 partition id
        + partition.to_bytes(4, "big")
        + partition_tags
        + (1000).to_bytes(8, "big")
        + (750).to_bytes(8, "big")
        + value_tags
    )


def test_deserialize_highest_supported_transaction_log_value() -> None:
    metadata = read_txn_record_value("transactionId", _value_v1())
    assert metadata is not None
    assert metadata.producer_id == 100
    assert metadata.producer_epoch == 50
    assert metadata.state is S.CompleteCommit
    assert metadata.txn_start_timestamp == 750
    assert metadata.txn_last_update_timestamp == 1000
    assert metadata.txn_timeout_ms == 500
    assert metadata.topic_partitions == {TopicPartition("topic", 0)}


def test_deserialize_future_transaction_log_value() -> None:
    # tag 0: STRING "foo" (INT16 length), tag 1: INT32 4000, in both structs
    tags = b"\x02" + b"\x00\x05\x00\x03foo" + b"\x01\x04" + (4000).to_bytes(4, "big")
    metadata = read_txn_record_value(
        "transaction-id", _value_v1(partition_tags=tags, value_tags=tags, partition=1)
    )
    assert metadata is not None
    assert metadata.producer_id == 100
    assert metadata.state is S.CompleteCommit
    assert metadata.topic_partitions == {TopicPartition("topic", 1)}
    assert metadata.txn_last_update_timestamp == 1000
    assert metadata.txn_start_timestamp == 750


def test_read_txn_record_key_can_read_unknown_message() -> None:
    assert read_txn_record_key(b"\x7f\xff") == UnknownKey(32767)
    assert read_txn_record_key(b"\x00\x01\x00\x03abc") == UnknownKey(1)


# ---- golden bytes ---------------------------------------------------------------------------

GOLDEN_KEY = bytes.fromhex("0000 0003 747869")  # v0, "txi"

_ONGOING = TxnTransitMetadata(
    producer_id=1,
    last_producer_id=-1,
    producer_epoch=1,
    last_producer_epoch=-1,
    txn_timeout_ms=1000,
    txn_state=S.Ongoing,
    topic_partitions=frozenset({TopicPartition("t", 0), TopicPartition("t", 1)}),
    txn_start_timestamp=400,
    txn_last_update_timestamp=500,
)
# producerId 1, producerEpoch 1, transactionTimeoutMs 1000, transactionStatus 1 (Ongoing)
_HEAD = "0000000000000001 0001 000003e8 01"
# transactionLastUpdateTimestampMs 500, transactionStartTimestampMs 400
_TIMES = "00000000000001f4 0000000000000190"
GOLDEN_VALUE_V0 = bytes.fromhex(
    " ".join(
        [
            "0000",  # version 0
            _HEAD,
            "00000001",  # transactionPartitions: INT32 count 1
            "0001 74",  # topic "t": INT16 length 1
            "00000002 00000000 00000001",  # partitionIds: INT32 count 2, 0, 1
            _TIMES,
        ]
    )
)
GOLDEN_VALUE_V1 = bytes.fromhex(
    " ".join(
        [
            "0001",  # version 1 (flexible)
            _HEAD,
            "02",  # transactionPartitions: UVARINT count + 1
            "02 74",  # topic "t": UVARINT length + 1
            "03 00000000 00000001",  # partitionIds: UVARINT count + 1, 0, 1
            "00",  # the topic entry's tagged fields: none
            _TIMES,
            "00",  # the value's tagged fields: none
        ]
    )
)
_EMPTY = TxnTransitMetadata(7, -1, 0, -1, 60000, S.Empty, frozenset(), -1, 500)
# producerId 7, producerEpoch 0, transactionTimeoutMs 60000, transactionStatus 0 (Empty)
_EMPTY_HEAD = "0000000000000007 0000 0000ea60 00"
# transactionLastUpdateTimestampMs 500, transactionStartTimestampMs -1
_EMPTY_TIMES = "00000000000001f4 ffffffffffffffff"
# an Empty transaction's partitions are null: INT32 -1 (v0), UVARINT 0 (v1)
GOLDEN_EMPTY_V0 = bytes.fromhex(" ".join(["0000", _EMPTY_HEAD, "ffffffff", _EMPTY_TIMES]))
GOLDEN_EMPTY_V1 = bytes.fromhex(" ".join(["0001", _EMPTY_HEAD, "00", _EMPTY_TIMES, "00"]))


def test_golden_key() -> None:
    assert key_to_bytes("txi") == GOLDEN_KEY
    assert read_txn_record_key(GOLDEN_KEY) == TxnKey(0, "txi")


@pytest.mark.parametrize(
    ("transit", "flexible", "golden"),
    [
        (_ONGOING, False, GOLDEN_VALUE_V0),
        (_ONGOING, True, GOLDEN_VALUE_V1),
        (_EMPTY, False, GOLDEN_EMPTY_V0),
        (_EMPTY, True, GOLDEN_EMPTY_V1),
    ],
)
def test_golden_values(transit: TxnTransitMetadata, flexible: bool, golden: bytes) -> None:
    assert value_to_bytes(transit, flexible) == golden
    metadata = read_txn_record_value("txi", golden)
    assert metadata is not None
    assert metadata.producer_id == transit.producer_id
    assert metadata.producer_epoch == transit.producer_epoch
    assert metadata.txn_timeout_ms == transit.txn_timeout_ms
    assert metadata.state is transit.txn_state
    assert metadata.topic_partitions == transit.topic_partitions
    assert metadata.txn_start_timestamp == transit.txn_start_timestamp
    assert metadata.txn_last_update_timestamp == transit.txn_last_update_timestamp
    assert metadata.pending_state is None


def test_partitions_of_an_empty_record_are_ignored_when_read() -> None:
    # an Empty value with one topic (Kafka never writes it; readTxnRecordValue skips them)
    value = bytearray(GOLDEN_VALUE_V0)
    value[2 + 14] = S.Empty.id
    metadata = read_txn_record_value("txi", bytes(value))
    assert metadata is not None
    assert metadata.state is S.Empty
    assert metadata.topic_partitions == set()


def test_null_partitions_outside_empty_are_a_record_error() -> None:
    value = bytearray(GOLDEN_EMPTY_V0)
    value[2 + 14] = S.Ongoing.id
    with pytest.raises(TransactionLogRecordError, match="null transactionPartitions"):
        read_txn_record_value("txi", bytes(value))


def test_unknown_value_version_and_state_are_record_errors() -> None:
    with pytest.raises(TransactionLogRecordError, match="Unknown version 2"):
        read_txn_record_value("txi", b"\x00\x02" + GOLDEN_VALUE_V0[2:])
    value = bytearray(GOLDEN_VALUE_V0)
    value[2 + 14] = 8
    with pytest.raises(TransactionLogRecordError, match="Unknown transaction state id 8"):
        read_txn_record_value("txi", bytes(value))


def test_a_long_transactional_id_is_refused_on_write() -> None:
    with pytest.raises(ValueError, match="too long"):
        key_to_bytes("x" * 32768)


# ---- round trips and bad bytes --------------------------------------------------------------

_ids = st.text(max_size=40)
_partitions = st.frozensets(
    st.builds(TopicPartition, st.text(min_size=1, max_size=12), st.integers(0, 2**31 - 1)),
    max_size=8,
)


@st.composite
def _transits(draw: st.DrawFn) -> TxnTransitMetadata:
    state = draw(st.sampled_from(list(TransactionState)))
    partitions = frozenset() if state is S.Empty else draw(_partitions)
    i64 = st.integers(-(2**63), 2**63 - 1)
    return TxnTransitMetadata(
        producer_id=draw(i64),
        last_producer_id=-1,
        producer_epoch=draw(st.integers(-(2**15), 2**15 - 1)),
        last_producer_epoch=-1,
        txn_timeout_ms=draw(st.integers(-(2**31), 2**31 - 1)),
        txn_state=state,
        topic_partitions=partitions,
        txn_start_timestamp=draw(i64),
        txn_last_update_timestamp=draw(i64),
    )


@settings(max_examples=200, deadline=None)
@given(_ids)
def test_key_round_trip(transactional_id: str) -> None:
    assert read_txn_record_key(key_to_bytes(transactional_id)) == TxnKey(0, transactional_id)


@settings(max_examples=200, deadline=None)
@given(_transits(), st.booleans())
def test_value_round_trip(transit: TxnTransitMetadata, flexible: bool) -> None:
    raw = value_to_bytes(transit, flexible)
    metadata = read_txn_record_value("id", raw)
    assert metadata is not None
    assert metadata.prepare_no_transit() == TxnTransitMetadata(
        transit.producer_id,
        -1,
        transit.producer_epoch,
        -1,
        transit.txn_timeout_ms,
        transit.txn_state,
        transit.topic_partitions,
        transit.txn_start_timestamp,
        transit.txn_last_update_timestamp,
    )
    # the partitions' order does not matter: written sorted, the same bytes again
    assert value_to_bytes(metadata.prepare_no_transit(), flexible) == raw


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_bad_bytes_raise_only_the_record_error(raw: bytes) -> None:
    for buf in (raw, GOLDEN_VALUE_V1[:2] + raw, GOLDEN_VALUE_V0[:2] + raw):
        with contextlib.suppress(TransactionLogRecordError):
            read_txn_record_value("id", buf)
        with contextlib.suppress(TransactionLogRecordError):
            read_txn_record_key(buf)
        for key, value in ((buf, buf), (GOLDEN_KEY, buf)):
            format_record_key_and_value(0, key, value)  # describes, never raises
            with contextlib.suppress(TransactionLogRecordError):
                format_message_json(key, value)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([GOLDEN_VALUE_V0, GOLDEN_VALUE_V1, GOLDEN_EMPTY_V1]), st.data())
def test_truncated_and_flipped_values_raise_only_the_record_error(
    golden: bytes, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(golden) - 1))
    with pytest.raises(TransactionLogRecordError):
        read_txn_record_value("id", golden[:cut])
    flipped = bytearray(golden)
    at = data.draw(st.integers(0, len(golden) - 1))
    flipped[at] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(TransactionLogRecordError):
        read_txn_record_value("id", bytes(flipped))


def test_the_record_error_is_a_corrupt_record() -> None:
    assert issubclass(TransactionLogRecordError, CorruptRecordError)
    key, payload = format_record_key_and_value(12, b"\x00", None)
    assert key == "Error at offset 12, skipping. Could not read version from key's buffer."
    assert payload is None
    assert format_record_key_and_value(3, b"\x00\x05", b"") == ("unknown::version=5", None)


# ---- TransactionLogMessageFormatterTest -----------------------------------------------------

_FORMATTER_VALUE = (
    '{"version":1,"data":{"producerId":100,"producerEpoch":50,'
    '"transactionTimeoutMs":500,"transactionStatus":4,"transactionPartitions":[],'
    '"transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":750}}'
)
_TXNID_KEY = '{"version":0,"data":{"transactionalId":"TXNID"}}'


def _formatter_value(version: int) -> bytes:
    transit = TxnTransitMetadata(100, -1, 50, -1, 500, S.CompleteCommit, frozenset(), 750, 1000)
    return version.to_bytes(2, "big") + value_to_bytes(transit, True)[2:]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            b"\x00\x0a" + key_to_bytes("TXNID")[2:],
            _formatter_value(10),
            '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}',
        ),
        (
            key_to_bytes("TXNID"),
            _formatter_value(1),
            '{"key":' + _TXNID_KEY + ',"value":' + _FORMATTER_VALUE + "}",
        ),
        (
            key_to_bytes("TXNID"),
            _formatter_value(5),
            '{"key":' + _TXNID_KEY + ',"value":{"version":5,"data":"unknown"}}',
        ),
        (
            b"\x00\x01" + key_to_bytes("TXNID")[2:],
            _formatter_value(1),
            '{"key":{"version":1,"data":"unknown"},"value":' + _FORMATTER_VALUE + "}",
        ),
        (key_to_bytes("TXNID"), None, '{"key":' + _TXNID_KEY + ',"value":null}'),
        (None, _formatter_value(1), '{"key":null,"value":' + _FORMATTER_VALUE + "}"),
        (None, None, '{"key":null,"value":null}'),
    ],
)
def test_transaction_log_message_formatter(
    key: bytes | None, value: bytes | None, expected: str
) -> None:
    assert format_message_json(key, value) == expected
    json.loads(expected)


def test_formatter_prints_an_empty_records_partitions_as_null() -> None:
    text = format_message_json(GOLDEN_KEY, GOLDEN_EMPTY_V1)
    assert json.loads(text)["value"]["data"]["transactionPartitions"] is None


# ---- the partition of a transactional id ----------------------------------------------------


def test_partition_for_is_java_hash_code_modulo_partitions() -> None:
    assert TRANSACTION_STATE_TOPIC_NAME == "__transaction_state"
    # "hello".hashCode() == 99162322 (Java), 99162322 % 50 == 22
    assert partition_for("hello", 50) == 22
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0
    # "Aa" and "BB" collide in String.hashCode (2112)
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
