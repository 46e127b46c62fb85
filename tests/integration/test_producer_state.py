"""Idempotent-producer state through a broker process (``ProducerAppendInfo.java``).

A raw protocol client gets a producer id with InitProducerId and sends
idempotent batches built with ``broker.records.builder``: a retried request
(the very same bytes sent again) is answered with the original offsets and
stored once, also for a batch that is not the latest of the last five; a
sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is
INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0.

With a real client: confluent-kafka (idempotent) produces, then the last
batch it wrote is replayed from the segment file as its retry would look on
the wire; the broker answers with librdkafka's original offsets, stores
nothing, and the client keeps producing in sequence afterwards.

Across a restart (SIGTERM or SIGKILL): a retry of any of the producer's last
five batches still gets its original offsets (Kafka's snapshot keeps only
the last one, so Kafka answers the four before it OUT_OF_ORDER_SEQUENCE_NUMBER),
the sixth-oldest is OUT_OF_ORDER_SEQUENCE_NUMBER, and the producer goes on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import InitProducerIdRequest
from broker.records.batch import set_base_offset, set_partition_leader_epoch, write_crc
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.integration.harness import BrokerProcess
from tests.integration.producers import filler, librdkafka_config
from tests.integration.wire import (
    RawClient,
    check_contiguous,
    ensure_topic,
    only_partition,
    produce_request,
    stored_batches,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("pstate") / "data", num_partitions=2) as b:
        yield b
        assert "Traceback" not in b.log(), b.log()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.port) as c:
        yield c


def init_producer_id(client: RawClient) -> int:
    resp = client.call(
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4
    )
    assert resp.error_code == ErrorCode.NONE and resp.producer_epoch == 0
    return int(resp.producer_id)


def idempotent_batch(pid: int, epoch: int, seq: int, n: int, tag: str, ts: int) -> bytes:
    recs = [
        SimpleRecord(ts + i, f"k{seq + i}".encode(), f"{tag}-{seq + i}".encode()) for i in range(n)
    ]
    built = build_v2_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    return bytes(built.buffer)


def send(client: RawClient, topic: str, records: bytes, version: int = 9) -> Any:
    ensure_topic(client, topic)
    return only_partition(client.call(produce_request({(topic, 0): records}, acks=-1), version))


def test_retry_is_answered_with_the_original_offsets_and_stored_once(
    client: RawClient, broker: BrokerProcess
) -> None:
    topic = "idem-retry"
    pid = init_producer_id(client)
    ts = int(time.time() * 1000)
    batches = [idempotent_batch(pid, 0, seq, 5, "r", ts + seq) for seq in range(0, 30, 5)]
    first = [send(client, topic, b) for b in batches]
    assert [p.error_code for p in first] == [ErrorCode.NONE] * 6
    assert [p.base_offset for p in first] == list(range(0, 30, 5))
    assert all(p.log_append_time_ms == -1 for p in first)  # CreateTime topic

    # the same request bytes again: the latest batch, and older ones still in the last five
    for i in (5, 5, 3, 1):
        again = send(client, topic, batches[i])
        assert again.error_code == ErrorCode.NONE
        assert again.base_offset == first[i].base_offset
        # a duplicate is answered with the cached batch's max timestamp (ProducerStateEntry)
        assert again.log_append_time_ms == ts + 5 * i + 4
    # the first batch has left the last five: no longer a duplicate, and out of sequence
    stale = send(client, topic, batches[0])
    assert stale.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER

    stored = stored_batches(broker.data_dir, topic, 0)
    assert check_contiguous(stored) == 30
    assert [b.header.base_sequence for b in stored] == list(range(0, 30, 5))
    assert {(b.header.producer_id, b.header.producer_epoch) for b in stored} == {(pid, 0)}
    # the sequence continues after the duplicates
    nxt = send(client, topic, idempotent_batch(pid, 0, 30, 2, "r", ts))
    assert nxt.error_code == ErrorCode.NONE and nxt.base_offset == 30


def test_sequence_gap_is_out_of_order(client: RawClient, broker: BrokerProcess) -> None:
    topic = "idem-gap"
    pid = init_producer_id(client)
    ts = int(time.time() * 1000)
    assert send(client, topic, idempotent_batch(pid, 0, 0, 4, "g", ts)).error_code == 0
    gap = send(client, topic, idempotent_batch(pid, 0, 6, 2, "g", ts))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert gap.base_offset == -1 and gap.log_start_offset == 0
    assert "Out of order sequence number" in gap.error_message
    # before v8 the same code, no message
    old = send(client, topic, idempotent_batch(pid, 0, 6, 2, "g", ts), version=7)
    assert old.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and old.error_message is None
    assert check_contiguous(stored_batches(broker.data_dir, topic, 0)) == 4
    ok = send(client, topic, idempotent_batch(pid, 0, 4, 2, "g", ts))
    assert ok.error_code == ErrorCode.NONE and ok.base_offset == 4


def test_fenced_epoch_and_new_epoch_rules(client: RawClient, broker: BrokerProcess) -> None:
    topic = "idem-epoch"
    pid = init_producer_id(client)
    ts = int(time.time() * 1000)
    assert send(client, topic, idempotent_batch(pid, 0, 0, 3, "e", ts)).error_code == 0
    # a bumped epoch must start at sequence 0
    bad_start = send(client, topic, idempotent_batch(pid, 1, 3, 1, "e", ts))
    assert bad_start.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    bumped = send(client, topic, idempotent_batch(pid, 1, 0, 2, "e", ts))
    assert bumped.error_code == ErrorCode.NONE and bumped.base_offset == 3
    # the old epoch is fenced, whatever its sequence
    for seq in (3, 0):
        fenced = send(client, topic, idempotent_batch(pid, 0, seq, 1, "e", ts))
        assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert "smaller than the last seen epoch 1" in fenced.error_message
    stored = stored_batches(broker.data_dir, topic, 0)
    assert check_contiguous(stored) == 5
    assert [(b.header.producer_epoch, b.header.base_sequence) for b in stored] == [(0, 0), (1, 0)]


def test_replaying_librdkafkas_own_batch_is_a_duplicate(
    client: RawClient, broker: BrokerProcess
) -> None:
    import confluent_kafka

    topic = "idem-librdkafka"
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            **librdkafka_config(2, "lz4", -1, idempotent=True),
        }
    )
    values = [filler(f"lrk|{i}", 300) for i in range(40)]

    def produce(chunk: list[bytes]) -> None:
        for i, v in enumerate(chunk):
            producer.produce(topic, value=v, key=f"k{i}".encode(), partition=0)
        assert producer.flush(30) == 0

    produce(values[:20])
    stored = stored_batches(broker.data_dir, topic, 0)
    assert check_contiguous(stored) == 20
    last = stored[-1]
    pid = last.header.producer_id
    assert pid >= 0 and last.header.producer_epoch == 0

    # the batch as librdkafka put it on the wire: base offset 0, no leader epoch
    segment = broker.data_dir / f"{topic}-0" / last.segment
    position = sum(b.header.size_in_bytes for b in stored[:-1])
    wire = bytearray(segment.read_bytes()[position : position + last.header.size_in_bytes])
    set_base_offset(wire, 0, 0)
    set_partition_leader_epoch(wire, 0, -1)
    replay = send(client, topic, bytes(wire))
    assert replay.error_code == ErrorCode.NONE
    assert replay.base_offset == last.header.base_offset
    assert check_contiguous(stored_batches(broker.data_dir, topic, 0)) == 20

    # the same bytes under another producer id are no duplicate: an id without
    # state takes any sequence (ProducerAppendInfo), so they are appended
    other = bytearray(wire)
    other[43:51] = (pid + 100_000).to_bytes(8, "big")  # ProducerId is inside the CRC
    write_crc(other, 0, len(other))
    fresh = send(client, topic, bytes(other))
    assert fresh.error_code == ErrorCode.NONE and fresh.base_offset == 20
    extra = last.header.records_count

    # the same librdkafka producer goes on in sequence after the replays
    produce(values[20:])
    stored = stored_batches(broker.data_dir, topic, 0)
    assert check_contiguous(stored) == 40 + extra
    tail = [b for b in stored if b.header.producer_id == pid and b.header.base_offset >= 20]
    assert tail[0].header.base_sequence == 20
    assert sum(b.header.records_count for b in tail) == 20
    got = [r.value for b in stored for r in b.records]
    assert got[:20] == values[:20] and got[-20:] == values[20:]


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_retries_of_the_last_five_batches_keep_their_offsets_across_a_restart(
    tmp_path: Path, stop: str
) -> None:
    data = tmp_path / "data"
    topic = "idem-restart"
    ts = int(time.time() * 1000)
    first = BrokerProcess(data).start()
    try:
        with RawClient(first.port) as c:
            pid = init_producer_id(c)
            batches = [idempotent_batch(pid, 0, seq, 3, "s", ts + seq) for seq in range(0, 18, 3)]
            sent = [send(c, topic, b) for b in batches]
    finally:
        if stop == "sigterm":
            assert first.stop() == 0
        else:
            first.kill()
    assert [p.error_code for p in sent] == [ErrorCode.NONE] * 6
    assert [p.base_offset for p in sent] == list(range(0, 18, 3))

    restarted = BrokerProcess(data).start()
    try:
        with RawClient(restarted.port) as c:
            for i in (5, 4, 3, 2, 1):
                again = send(c, topic, batches[i])
                assert again.error_code == ErrorCode.NONE, (i, again)
                assert again.base_offset == sent[i].base_offset
                assert again.log_append_time_ms == ts + 3 * i + 2  # the batch's max timestamp
            stale = send(c, topic, batches[0])
            assert stale.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            nxt = send(c, topic, idempotent_batch(pid, 0, 18, 1, "s", ts))
            assert nxt.error_code == ErrorCode.NONE and nxt.base_offset == 18
        stored = stored_batches(data, topic, 0)
        assert check_contiguous(stored) == 19
        assert [b.header.base_sequence for b in stored] == [*range(0, 18, 3), 18]
    finally:
        assert restarted.stop() == 0
    assert "Traceback" not in restarted.log(), restarted.log()
