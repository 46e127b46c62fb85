"""Produce, Fetch, Metadata and ApiVersions through the real dispatcher, in process."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from broker.delayed import DelayedReply
from broker.errors import ErrorCode
from broker.protocol.messages import (
    ApiVersionsRequest,
    FetchRequest,
    InitProducerIdRequest,
    MetadataRequest,
    ProduceRequest,
)
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.iterate import iter_batches, iter_records
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.aio import run
from tests.unit.handlers.conftest import InProcessBroker


def records(n: int, ts: int, prefix: str = "v") -> list[SimpleRecord]:
    return [SimpleRecord(ts, f"k{i}".encode(), f"{prefix}{i}".encode() * 20) for i in range(n)]


def produce(
    topic: str,
    partition: int | Sequence[int],
    payload: bytes,
    acks: int = 1,
    timeout_ms: int = 5000,
):
    """A Produce request of ``payload`` to one partition or to each of several."""
    partitions = [partition] if isinstance(partition, int) else partition
    return ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=p, records=payload)
                    for p in partitions
                ],
            )
        ],
    )


def fetch(
    topic: str, partition: int, offset: int, *, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
):
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
    )


def create(broker: InProcessBroker, topic: str, partitions: int = 1, **configs: str) -> None:
    broker.replica_manager.create_topic(
        topic, partitions, {k.replace("_", "."): v for k, v in configs.items()}
    )


def only_partition(resp):
    (topic,) = resp.responses
    (p,) = topic.partitions if hasattr(topic, "partitions") else topic.partition_responses
    return p


def test_api_versions_lists_every_handler_once(broker):
    resp = broker.call(ApiVersionsRequest(), 0)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[0] == (0, 11)
    assert keys[1] == (0, 16)
    assert keys[3] == (0, 12)
    assert resp.error_code == ErrorCode.NONE


def test_api_versions_v3_keeps_client_software_on_the_connection(broker):
    broker.call(
        ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.1"), 3
    )
    assert broker.conn.client_software_name == "librdkafka"
    assert broker.conn.client_software_version == "2.16.1"


def test_api_versions_invalid_software_name_is_invalid_request(broker):
    resp = broker.call(
        ApiVersionsRequest(client_software_name="-bad", client_software_version="1"), 3
    )
    assert resp.error_code == ErrorCode.INVALID_REQUEST


def test_metadata_auto_creates_with_num_partitions(make_broker):
    b = make_broker(num_partitions="3")
    resp = b.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")]), 12)
    (t,) = resp.topics
    assert t.error_code == ErrorCode.NONE
    assert [p.partition_index for p in t.partitions] == [0, 1, 2]
    assert t.partitions[0].leader_id == 0 and t.partitions[0].isr_nodes == [0]
    assert t.topic_id.int != 0


def test_metadata_without_auto_create_and_invalid_names(make_broker):
    b = make_broker(auto_create_topics_enable="false")
    resp = b.call(
        MetadataRequest(
            topics=[
                MetadataRequest.MetadataRequestTopic(name="missing"),
                MetadataRequest.MetadataRequestTopic(name="bad name!"),
            ]
        ),
        9,
    )
    codes = [t.error_code for t in resp.topics]
    assert codes == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    b2 = make_broker()
    resp = b2.call(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="bad name!")]), 9
    )
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_v0_empty_list_means_all_topics(broker):
    create(broker, "a")
    create(broker, "b")
    resp = broker.call(MetadataRequest(topics=[]), 0)
    assert sorted(t.name for t in resp.topics) == ["a", "b"]
    resp = broker.call(MetadataRequest(topics=[]), 1)  # v1+: empty means none
    assert resp.topics == []


def test_produce_then_fetch_round_trip_v2(broker):
    create(broker, "t")
    batch = build_v2_batch(records(5, broker.now_ms)).buffer
    resp = broker.call(produce("t", 0, bytes(batch)), 9)
    p = only_partition(resp)
    assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == (0, 0, -1, 0)
    resp = broker.call(produce("t", 0, bytes(batch)), 9)
    assert only_partition(resp).base_offset == 5
    fr = broker.call(fetch("t", 0, 0), 12)
    part = only_partition(fr)
    assert part.high_watermark == 10 and part.last_stable_offset == 10
    got = list(iter_records(part.records, file=True))
    assert [r.offset for r in got] == list(range(10))
    assert got[0].value == b"v0" * 20


def test_produce_unknown_partition_and_acks(broker):
    create(broker, "t")
    batch = bytes(build_v2_batch(records(1, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 5, batch), 9))
    assert (p.error_code, p.base_offset, p.log_start_offset) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        -1,
        -1,
    )
    p = only_partition(broker.call(produce("t", 0, batch, acks=2), 9))
    assert p.error_code == ErrorCode.INVALID_REQUIRED_ACKS


def test_produce_acks_zero_has_no_response_and_closes_on_error(broker):
    create(broker, "t")
    batch = bytes(build_v2_batch(records(1, broker.now_ms)).buffer)
    assert broker.send(produce("t", 0, batch, acks=0), 9) is None
    assert not broker.conn.closed
    assert broker.send(produce("t", 9, batch, acks=0), 9) is None
    assert broker.conn.closed


def test_produce_acks_all_waits_for_fsync(broker):
    create(broker, "t")
    batch = bytes(build_v2_batch(records(3, broker.now_ms)).buffer)
    log = broker.log_manager.get_log(
        broker.replica_manager.get_partition("t", 0).log.topic_partition
    )
    assert log.recovery_point == 0
    resp = broker.call(produce("t", 0, batch, acks=-1), 9)
    assert only_partition(resp).error_code == ErrorCode.NONE
    assert log.recovery_point >= 3  # durable before the answer
    assert broker.group_commit.rounds == 1


def held_rounds(broker, monkeypatch):
    """The group commit's callbacks, held for the test to call (no round runs)."""
    callbacks = []

    def capture(targets, timeout_s, on_done):
        callbacks.append(on_done)
        return True

    monkeypatch.setattr(broker.group_commit, "when_flushed", capture)
    return callbacks


def test_produce_acks_all_is_answered_from_the_rounds_callback_at_once(broker, monkeypatch):
    """The acks=all answer comes from the group commit's callback: the
    dispatcher hands the connection a ``DelayedReply`` whose listener gets the
    encoded answer within that callback (no task, no future, no loop hop)."""
    create(broker, "t")
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    callbacks = held_rounds(broker, monkeypatch)
    got = []

    async def scenario():
        outcome = broker.send(produce("t", 0, batch, acks=-1), 9)
        assert type(outcome) is DelayedReply
        outcome.listen(lambda segments, error: got.append((segments, error)))
        assert got == []  # not before its round
        callbacks.pop()(True)
        assert len(got) == 1  # at once
        segments, error = got[0]
        assert error is None
        return broker.decode(0, 9, segments, broker.correlation)

    p = only_partition(run(scenario()))
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 0)


def test_produce_acks_all_fsync_failure_is_kafka_storage_error(broker, monkeypatch):
    """The round's fsync fails (EIO): every partition of the request is
    KAFKA_STORAGE_ERROR, counted as such, and the broker carries on."""
    from broker.log import local_log

    create(broker, "t", 2)
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(local_log.os, "fsync", failing_fsync)
    (topic,) = broker.call(produce("t", (0, 1), batch, acks=-1), 9).responses
    assert [p.error_code for p in topic.partition_responses] == [ErrorCode.KAFKA_STORAGE_ERROR] * 2
    errors = broker.metrics.request_errors
    assert errors.labels("Produce", "KAFKA_STORAGE_ERROR").value == 2
    monkeypatch.undo()
    p = only_partition(broker.call(produce("t", 0, batch, acks=-1), 9))
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 2)


def test_produce_acks_all_past_its_timeout_is_request_timed_out(broker, monkeypatch):
    """A round that outlasts the request's timeout_ms: REQUEST_TIMED_OUT (the
    records stay appended, as Kafka's delayed produce that expires)."""
    import threading

    from broker.log.unified_log import UnifiedLog

    create(broker, "t")
    release = threading.Event()
    real = UnifiedLog.flush

    def slow_flush(self, *args, **kwargs):
        assert release.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(UnifiedLog, "flush", slow_flush)
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    request = produce("t", 0, batch, acks=-1, timeout_ms=50)
    try:
        p = only_partition(broker.call(request, 9))
    finally:
        release.set()
    assert p.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert broker.metrics.request_errors.labels("Produce", "REQUEST_TIMED_OUT").value == 1


def test_produce_record_errors_and_message_v8(broker):
    create(broker, "t", message_timestamp_before_max_ms="1000")
    old = broker.now_ms - 10_000
    batch = bytes(build_v2_batch(records(3, old)).buffer)
    p = only_partition(broker.call(produce("t", 0, batch), 8))
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in p.record_errors] == [0, 1, 2]
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    assert p.log_start_offset == 0
    p = only_partition(broker.call(produce("t", 0, batch), 7))  # before v8: no errors list
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP


def test_produce_response_lists_at_most_a_thousand_record_errors(broker):
    """Every partition's batch fails on each of its 25 keyless records: the
    first 20 of each are listed until the response holds 1,000, then the
    partitions list none and their message says why."""
    from broker.handlers.produce import MAX_RESPONSE_RECORD_ERRORS
    from broker.validator.checks import MAX_LISTED_RECORD_ERRORS

    partitions = MAX_RESPONSE_RECORD_ERRORS // MAX_LISTED_RECORD_ERRORS + 3
    create(broker, "c", partitions, cleanup_policy="compact")
    keyless = bytes(build_v2_batch([SimpleRecord(broker.now_ms, None, b"v")] * 25).buffer)
    request = produce("c", range(partitions), keyless)
    (topic,) = broker.call(request, 9).responses
    listed = [len(p.record_errors) for p in topic.partition_responses]
    assert sum(listed) == MAX_RESPONSE_RECORD_ERRORS
    assert listed[:3] == [MAX_LISTED_RECORD_ERRORS] * 3
    assert listed[-3:] == [0, 0, 0]
    assert all(p.error_code == ErrorCode.INVALID_RECORD for p in topic.partition_responses)
    last = topic.partition_responses[-1].error_message
    assert last == (
        "One or more records have been rejected due to 25 record errors in total (25 record "
        "errors, 0 listed: the response already lists 1000 of at most 1000)"
    )
    first = topic.partition_responses[0].error_message
    assert first.endswith("(20 listed in record_errors, 5 left out)")


def test_produce_v3_with_legacy_magic_is_invalid_record(broker):
    create(broker, "t")
    legacy = bytes(build_legacy(records(2, broker.now_ms), magic=1).buffer)
    p = only_partition(broker.call(produce("t", 0, legacy), 3))
    assert p.error_code == ErrorCode.INVALID_RECORD


def test_produce_v2_legacy_is_up_converted_and_counted(broker):
    create(broker, "t")
    legacy = bytes(
        build_legacy(
            records(4, broker.now_ms), magic=1, compression_type=CompressionType.GZIP
        ).buffer
    )
    p = only_partition(broker.call(produce("t", 0, legacy), 2))
    assert (p.error_code, p.base_offset) == (0, 0)
    data = only_partition(broker.call(fetch("t", 0, 0), 4)).records
    (stored,) = list(iter_batches(data, file=True))
    assert stored.magic == 2 and stored.compression_type == CompressionType.GZIP
    text = broker.metrics.render().decode()
    assert 'kafka_topic_produce_message_conversions_total{topic="t"} 4.0' in text
    assert 'client_software_name="unknown"' in text


@pytest.mark.parametrize(
    ("codec", "expected_offsets"),
    [
        # uncompressed: records below the fetch offset are dropped
        (CompressionType.NONE, [1, 2]),
        # a compressed wrapper keeps them; the consumer skips them (RecordsUtil.downConvert)
        (CompressionType.LZ4, [0, 1, 2]),
    ],
)
def test_fetch_down_converts_for_old_consumers(broker, codec, expected_offsets):
    create(broker, "t")
    batch = bytes(build_v2_batch(records(3, broker.now_ms), compression_type=codec).buffer)
    broker.call(produce("t", 0, batch), 7)
    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        part = only_partition(broker.call(fetch("t", 0, 1), version))
        got = list(iter_records(part.records, file=True))
        assert [r.offset for r in got] == expected_offsets
        assert {r.magic for r in got} == {magic}
        assert {b.compression_type for b in iter_batches(part.records, file=True)} == {codec}
    text = broker.metrics.render().decode()
    assert 'kafka_topic_fetch_message_conversions_total{topic="t"}' in text


def test_fetch_down_conversion_disabled_is_unsupported_version(broker):
    create(broker, "t", message_downconversion_enable="false")
    broker.call(produce("t", 0, bytes(build_v2_batch(records(1, broker.now_ms)).buffer)), 7)
    assert (
        only_partition(broker.call(fetch("t", 0, 0), 3)).error_code == ErrorCode.UNSUPPORTED_VERSION
    )
    assert only_partition(broker.call(fetch("t", 0, 0), 4)).error_code == ErrorCode.NONE


def test_fetch_out_of_range_reports_unknown_offsets(broker):
    # Kafka 3.9 without tiered storage: ReplicaManager.createLogReadResult(e)
    # answers -1 for every offset; consumers reset through ListOffsets
    create(broker, "t")
    broker.call(produce("t", 0, bytes(build_v2_batch(records(2, broker.now_ms)).buffer)), 7)
    for offset in (-5, 3, 99):
        part = only_partition(broker.call(fetch("t", 0, offset), 11))
        assert part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (-1, -1, -1)
        assert not part.records
    part = only_partition(broker.call(fetch("t", 0, 2), 11))  # the log end offset itself
    assert part.error_code == ErrorCode.NONE
    assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (2, 2, 0)


@pytest.mark.parametrize("version", [0, 3, 4, 9])
def test_fetch_below_v10_of_a_zstd_topic_is_unsupported_compression_type(broker, version):
    # KafkaApis.handleFetchRequest: by the topic's compression.type, whatever
    # the batches hold and ahead of the partition's other errors
    create(broker, "z", compression_type="zstd")
    broker.call(produce("z", 0, bytes(build_v2_batch(records(2, broker.now_ms)).buffer)), 7)
    for offset in (0, 99):
        part = only_partition(broker.call(fetch("z", 0, offset), version))
        assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert (part.high_watermark, part.log_start_offset) == (-1, -1)
        assert not part.records
    if version == 9:
        req = fetch("z", 0, 0)
        req.topics[0].partitions[0].current_leader_epoch = 5
        part = only_partition(broker.call(req, version))
        assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_fetch_v10_reads_a_zstd_topic_and_older_versions_read_other_codecs(broker):
    create(broker, "z", compression_type="zstd")
    create(broker, "p")  # compression.type=producer: the gate looks at the config only
    for topic in ("z", "p"):
        broker.call(produce(topic, 0, bytes(build_v2_batch(records(2, broker.now_ms)).buffer)), 7)
    part = only_partition(broker.call(fetch("z", 0, 0), 10))
    assert part.error_code == ErrorCode.NONE
    (batch,) = iter_batches(part.records, file=True)
    assert batch.compression_type == CompressionType.ZSTD
    for version in (4, 9):
        part = only_partition(broker.call(fetch("p", 0, 0), version))
        assert part.error_code == ErrorCode.NONE and part.records


def test_fetch_unknown_topic_and_fenced_epoch(broker):
    create(broker, "t")
    part = only_partition(broker.call(fetch("nope", 0, 0), 11))
    assert part.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    req = fetch("t", 0, 0)
    req.topics[0].partitions[0].current_leader_epoch = 5
    assert only_partition(broker.call(req, 11)).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_fetch_by_topic_id_v13(broker):
    create(broker, "t")
    broker.call(produce("t", 0, bytes(build_v2_batch(records(2, broker.now_ms)).buffer)), 9)
    import uuid

    tid = uuid.UUID(bytes=broker.log_manager.topic_id("t"))
    req = fetch("t", 0, 0)
    req.topics[0].topic_id = tid
    resp = broker.call(req, 13)
    assert resp.responses[0].topic_id == tid
    assert len(list(iter_records(resp.responses[0].partitions[0].records, file=True))) == 2
    req.topics[0].topic_id = uuid.uuid4()
    assert broker.call(req, 13).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_fetch_long_poll_wakes_on_append_and_times_out_when_idle(broker):
    create(broker, "t")
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)

    async def scenario():
        start = time.monotonic()
        pending = asyncio.ensure_future(broker.call_async(fetch("t", 0, 0, max_wait_ms=5000), 11))
        await asyncio.sleep(0.05)
        assert not pending.done()
        broker.call(produce("t", 0, batch), 9)
        resp = await asyncio.wait_for(pending, 2)
        woke_after = time.monotonic() - start
        assert len(list(iter_records(only_partition(resp).records, file=True))) == 2
        assert woke_after < 1.0
        start = time.monotonic()
        idle = await broker.call_async(fetch("t", 0, 2, max_wait_ms=200), 11)
        waited = time.monotonic() - start
        assert only_partition(idle).records == b""
        assert 0.18 <= waited < 1.5

    run(scenario())


def test_fetch_respects_response_max_bytes_but_returns_one_batch(broker):
    create(broker, "t", partitions=1)
    for _ in range(3):
        broker.call(produce("t", 0, bytes(build_v2_batch(records(10, broker.now_ms)).buffer)), 9)
    part = only_partition(broker.call(fetch("t", 0, 0, max_bytes=10), 11))
    assert len(list(iter_batches(part.records, file=True))) == 1  # min one message


def test_fetch_read_committed_has_empty_aborted_list(broker):
    create(broker, "t")
    req = fetch("t", 0, 0)
    req.isolation_level = 1
    assert only_partition(broker.call(req, 11)).aborted_transactions == []
    req.isolation_level = 0
    assert only_partition(broker.call(req, 11)).aborted_transactions is None


def test_fetch_incremental_session_is_not_found(broker):
    req = fetch("t", 0, 0)
    req.session_id = 42
    req.session_epoch = 3
    assert broker.call(req, 11).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_init_producer_id_then_idempotent_duplicate_is_answered_with_original_offsets(broker):
    create(broker, "t")
    pid = broker.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4)
    assert pid.error_code == 0 and pid.producer_id >= 0 and pid.producer_epoch == 0
    batch = bytes(
        build_v2_batch(
            records(3, broker.now_ms),
            producer_id=pid.producer_id,
            producer_epoch=0,
            base_sequence=0,
        ).buffer
    )
    first = only_partition(broker.call(produce("t", 0, batch), 9))
    again = only_partition(broker.call(produce("t", 0, batch), 9))
    assert (first.base_offset, again.base_offset, again.error_code) == (0, 0, 0)
    assert broker.replica_manager.get_partition("t", 0).log.log_end_offset == 3
    gap = bytes(
        build_v2_batch(
            records(1, broker.now_ms),
            producer_id=pid.producer_id,
            producer_epoch=0,
            base_sequence=7,
        ).buffer
    )
    assert (
        only_partition(broker.call(produce("t", 0, gap), 9)).error_code
        == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )


def test_init_producer_id_with_transactional_id_goes_to_the_coordinator(broker):
    resp = broker.call(
        InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), 4
    )
    assert resp.error_code == ErrorCode.NONE
    assert resp.producer_epoch == 0


def test_request_metrics_are_recorded(broker):
    create(broker, "t")
    broker.call(produce("t", 0, bytes(build_v2_batch(records(1, broker.now_ms)).buffer)), 9)
    text = broker.metrics.render().decode()
    assert 'kafka_requests_total{request="Produce",version="9"} 1.0' in text
    assert 'kafka_request_errors_total{error="NONE",request="Produce"} 1.0' in text
    assert 'kafka_request_temporary_memory_bytes_count{request="Produce"} 1.0' in text
    assert 'kafka_topic_messages_in_total{topic="t"} 1.0' in text


@pytest.mark.parametrize("version", [0, 1, 3, 5, 8, 9, 11])
def test_produce_every_version_shape(broker, version):
    create(broker, "t")
    if version < 3:
        payload = bytes(
            build_legacy(records(2, broker.now_ms), magic=0 if version < 2 else 1).buffer
        )
    else:
        payload = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 0, payload), version))
    assert p.error_code == 0 and p.base_offset == 0


def test_produce_io_error_is_kafka_storage_error(broker, monkeypatch):
    """An append the disk fails (EIO) is KAFKA_STORAGE_ERROR, as Kafka's
    KafkaStorageException, not UNKNOWN_SERVER_ERROR."""
    from broker.log.unified_log import UnifiedLog

    create(broker, "t")

    def failing_append(self, records, batches=None):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(UnifiedLog, "append", failing_append)
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    p = only_partition(broker.call(produce("t", 0, batch), 9))
    assert p.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert p.error_message == "I/O error appending to t-0: Input/output error"


def test_an_acks_all_round_error_reaches_the_connection_as_a_failed_reply(broker, monkeypatch):
    """A bug in the round (not an fsync error, which is KAFKA_STORAGE_ERROR)
    fails the reply the connection listens to; the connection closes on it
    (tests/unit/server/test_connection.py)."""
    create(broker, "t")
    batch = bytes(build_v2_batch(records(2, broker.now_ms)).buffer)
    callbacks = held_rounds(broker, monkeypatch)
    got = []

    async def scenario():
        reply = broker.send(produce("t", 0, batch, acks=-1), 9)
        reply.listen(lambda segments, error: got.append((segments, error)))
        bug = RuntimeError("a bug in the round")
        callbacks.pop()(bug)
        assert got == [(None, bug)]

    run(scenario())
