"""Produce error codes end to end: a raw protocol client against a broker process.

Every request is built with ``broker.records.builder`` and encoded with
``broker.protocol`` (``tests/integration/wire.py``), so each case sends
exactly the bytes that should trip one check (``KafkaApis.handleProduceRequest``,
``ProduceRequest.validateRecords``, ``ReplicaManager.appendToLocalLog``,
``UnifiedLog.append`` and ``analyzeAndValidateRecords``). The
broker runs with auto-creation off; its topics are made on disk before it
starts, with per-topic configs:

    plain      3 partitions, defaults
    small      max.message.bytes=2000
    ts         message.timestamp.before.max.ms = after.max.ms = 1 hour
    compacted  cleanup.policy=compact

After each refusal the segment files must hold nothing of the refused
batch, and the same connection must keep working (except acks=0 errors,
which close it, as Kafka does).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import MetadataRequest
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.integration.harness import BrokerProcess
from tests.integration.wire import (
    RawClient,
    create_topics_on_disk,
    metric_value,
    only_partition,
    produce_request,
    stored_records,
)

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
TOPICS = {
    "plain": (3, {}),
    "small": (1, {"max.message.bytes": "2000"}),
    "ts": (
        1,
        {
            "message.timestamp.before.max.ms": str(HOUR_MS),
            "message.timestamp.after.max.ms": str(HOUR_MS),
        },
    ),
    "compacted": (1, {"cleanup.policy": "compact"}),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("errors") / "data"
    create_topics_on_disk(data, TOPICS)
    with BrokerProcess(data, auto_create_topics_enable="false") as b:
        yield b
        assert "Traceback" not in b.log(), b.log()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.port) as c:
        yield c


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(n: int = 3, *, key: bytes | None = b"k", ts: int | None = None, **kw: object) -> bytes:
    t = now_ms() if ts is None else ts
    recs = [SimpleRecord(t, key, f"value-{i}".encode() * 10) for i in range(n)]
    return bytes(build_v2_batch(recs, **kw).buffer)  # type: ignore[arg-type]


def count(broker: BrokerProcess, topic: str, partition: int = 0) -> int:
    return len(stored_records(broker.data_dir, topic, partition))


def produce_one(
    client: RawClient, topic: str, partition: int, records: bytes, version: int = 9, **kw: object
):
    return only_partition(
        client.call(produce_request({(topic, partition): records}, **kw), version)
    )


def assert_still_serves(client: RawClient, broker: BrokerProcess) -> None:
    before = count(broker, "plain", 2)
    p = produce_one(client, "plain", 2, batch(2))
    assert p.error_code == ErrorCode.NONE and p.base_offset == before
    assert count(broker, "plain", 2) == before + 2


def test_unknown_topic_with_auto_create_off(client: RawClient, broker: BrokerProcess) -> None:
    md = client.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="nope")],
            allow_auto_topic_creation=True,
        ),
        12,
    )
    (t,) = md.topics
    assert t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for version in (2, 7, 9, 11):
        records = (
            bytes(build_legacy([SimpleRecord(now_ms(), b"k", b"v")], magic=1).buffer)
            if version < 3
            else batch()
        )
        p = produce_one(client, "nope", 0, records, version)
        assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (p.base_offset, p.log_start_offset) == (-1, -1)
        if version >= 8:
            assert "nope-0" in p.error_message
    assert not (broker.data_dir / "nope-0").exists()
    assert_still_serves(client, broker)


def test_bad_partition_fails_alone(client: RawClient, broker: BrokerProcess) -> None:
    before = count(broker, "plain", 0)
    resp = client.call(
        produce_request({("plain", 0): batch(2), ("plain", 7): batch(2), ("plain", -1): batch(1)}),
        9,
    )
    (topic,) = resp.responses
    by_index = {p.index: p for p in topic.partition_responses}
    assert by_index[0].error_code == ErrorCode.NONE and by_index[0].base_offset == before
    assert by_index[7].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by_index[-1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert count(broker, "plain", 0) == before + 2


def test_oversized_batch_is_message_too_large(client: RawClient, broker: BrokerProcess) -> None:
    big = batch(30)
    assert len(big) > 2000
    rejected = metric_value(broker.metrics(), "kafka_topic_bytes_rejected_total", topic="small")
    p = produce_one(client, "small", 0, big)
    assert p.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert (p.base_offset, p.log_start_offset) == (-1, -1)
    assert count(broker, "small") == 0
    ok = produce_one(client, "small", 0, batch(2))
    assert ok.error_code == ErrorCode.NONE and ok.base_offset == 0
    after = metric_value(broker.metrics(), "kafka_topic_bytes_rejected_total", topic="small")
    assert after - rejected == len(big)


@pytest.mark.parametrize("where", ["crc", "records", "attributes"])
def test_corrupt_batch_is_corrupt_message(
    client: RawClient, broker: BrokerProcess, where: str
) -> None:
    data = bytearray(batch(3))
    position = {"crc": 17, "records": len(data) - 5, "attributes": 22}[where]
    data[position] ^= 0x01
    before = count(broker, "plain", 1)
    p = produce_one(client, "plain", 1, bytes(data))
    assert p.error_code == ErrorCode.CORRUPT_MESSAGE
    assert p.log_start_offset == -1
    assert count(broker, "plain", 1) == before
    assert_still_serves(client, broker)


@pytest.mark.parametrize("skew_ms", [-2 * HOUR_MS, 2 * HOUR_MS])
def test_timestamps_out_of_range_are_invalid_timestamp(
    client: RawClient, broker: BrokerProcess, skew_ms: int
) -> None:
    t = now_ms()
    recs = [
        SimpleRecord(t, b"k", b"fine"),
        SimpleRecord(t + skew_ms, b"k", b"skewed"),
        SimpleRecord(t, b"k", b"fine too"),
        SimpleRecord(t + skew_ms, b"k", b"skewed too"),
    ]
    data = bytes(build_v2_batch(recs).buffer)
    before = count(broker, "ts")
    p = produce_one(client, "ts", 0, data, 9)
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in p.record_errors] == [1, 3]
    assert all("is out of range" in e.batch_index_error_message for e in p.record_errors)
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    assert p.log_start_offset == 0  # a record validation error carries the log start offset
    # before v8 the same code, without the per-record details on the wire
    p7 = produce_one(client, "ts", 0, data, 7)
    assert p7.error_code == ErrorCode.INVALID_TIMESTAMP
    assert p7.record_errors == [] and p7.error_message is None
    assert count(broker, "ts") == before
    ok = produce_one(client, "ts", 0, batch(1, ts=t - HOUR_MS // 2))
    assert ok.error_code == ErrorCode.NONE


def test_compacted_topic_without_key_is_invalid_record(
    client: RawClient, broker: BrokerProcess
) -> None:
    t = now_ms()
    recs = [
        SimpleRecord(t, b"k0", b"a"),
        SimpleRecord(t, None, b"b"),
        SimpleRecord(t, b"k2", b"c"),
        SimpleRecord(t, None, b"d"),
    ]
    for codec in (CompressionType.NONE, CompressionType.LZ4):
        data = bytes(build_v2_batch(recs, compression_type=codec).buffer)
        p = produce_one(client, "compacted", 0, data, 10)
        assert p.error_code == ErrorCode.INVALID_RECORD
        assert [e.batch_index for e in p.record_errors] == [1, 3]
        assert all(
            e.batch_index_error_message
            == "Compacted topic cannot accept message without key in topic partition compacted-0"
            for e in p.record_errors
        )
        assert p.error_message.startswith(
            "One or more records have been rejected due to 2 record errors in total"
        )
    assert count(broker, "compacted") == 0
    keyed = produce_one(client, "compacted", 0, batch(2, key=b"key"))
    assert keyed.error_code == ErrorCode.NONE


def test_magic_that_does_not_fit_the_version_is_invalid_record(
    client: RawClient, broker: BrokerProcess
) -> None:
    legacy = bytes(build_legacy([SimpleRecord(now_ms(), b"k", b"v" * 50)], magic=1).buffer)
    before = count(broker, "plain", 1)
    for version in (3, 9, 11):
        p = produce_one(client, "plain", 1, legacy, version)
        assert p.error_code == ErrorCode.INVALID_RECORD
    # two v2 batches in one partition of a v3+ request
    p = produce_one(client, "plain", 1, batch(1) + batch(1), 9)
    assert p.error_code == ErrorCode.INVALID_RECORD
    assert count(broker, "plain", 1) == before
    # v0-v2 take any magic, for compatibility (ProduceRequest.validateRecords): both stored
    assert produce_one(client, "plain", 1, legacy, 2).error_code == ErrorCode.NONE
    assert produce_one(client, "plain", 1, batch(1), 2).error_code == ErrorCode.NONE
    assert count(broker, "plain", 1) == before + 2


def test_zstd_below_v7_is_unsupported_compression_type(
    client: RawClient, broker: BrokerProcess
) -> None:
    data = batch(5, compression_type=CompressionType.ZSTD)
    before = count(broker, "plain", 0)
    for version in (3, 6):
        p = produce_one(client, "plain", 0, data, version)
        assert p.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert count(broker, "plain", 0) == before
    p = produce_one(client, "plain", 0, data, 7)
    assert p.error_code == ErrorCode.NONE and p.base_offset == before


def test_transactional_batches_are_refused(client: RawClient, broker: BrokerProcess) -> None:
    txn = batch(2, producer_id=4242, producer_epoch=0, base_sequence=0, is_transactional=True)
    before = count(broker, "plain", 0)
    resp = client.call(produce_request({("plain", 0): txn, ("plain", 1): batch(1)}), 9)
    (topic,) = resp.responses
    # the whole request fails (KafkaApis: hasTransactionalRecords)
    assert {p.error_code for p in topic.partition_responses} == {
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
    p = produce_one(client, "plain", 0, txn, 9, transactional_id="tx-1")
    assert p.error_code == ErrorCode.INVALID_TXN_STATE
    assert "Transactional produce is not supported" in p.error_message
    assert count(broker, "plain", 0) == before


def test_acks_2_is_invalid_required_acks(client: RawClient, broker: BrokerProcess) -> None:
    before = count(broker, "plain", 0)
    for acks in (2, -2, 5):
        resp = client.call(
            produce_request({("plain", 0): batch(1), ("plain", 1): batch(1)}, acks=acks), 9
        )
        (topic,) = resp.responses
        assert {p.error_code for p in topic.partition_responses} == {
            ErrorCode.INVALID_REQUIRED_ACKS
        }
    assert count(broker, "plain", 0) == before
    assert_still_serves(client, broker)


def test_acks_0_success_is_silent_and_an_error_closes_the_connection(
    client: RawClient, broker: BrokerProcess
) -> None:
    before = count(broker, "plain", 2)
    client.send(produce_request({("plain", 2): batch(3)}, acks=0), 9, expect_response=False)
    # no answer for acks=0: the next request's answer is the next frame on the wire
    md = client.call(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="plain")]), 12
    )
    assert md.topics[0].error_code == ErrorCode.NONE
    assert count(broker, "plain", 2) == before + 3
    for bad in (
        produce_request({("nope", 0): batch(1)}, acks=0),
        produce_request({("plain", 2): batch(1, compression_type=CompressionType.ZSTD)}, acks=0),
        produce_request({("small", 0): batch(40)}, acks=0),
    ):
        with RawClient(broker.port) as c:
            version = 6 if bad.topic_data[0].name == "plain" else 9
            c.send(bad, version, expect_response=False)
            assert c.wait_closed(), bad
    assert count(broker, "plain", 2) == before + 3
    assert_still_serves(client, broker)
