"""Real clients produce to a real broker process; the segment files are the judge.

Clients: confluent-kafka (librdkafka 2.16), Debian's kcat (librdkafka 2.0.2),
kafka-python 3.0, aiokafka 0.14 -- every message format each can send
(``tests/integration/producers.py``) and every codec it supports for that
format, acks 0/1/all in turn, idempotent producers, keys (some null),
values, headers (magic 2), explicit timestamps, three partitions, and topics
whose ``compression.type`` recompresses. One broker serves every case (one
topic per case); all traffic goes through a capturing proxy so each case
also checks what the client really sent (magic, codec, acks, Produce
version), not just what it was configured to send.

For each case the stored batches (read from the segment files) must be v2,
offsets contiguous from 0 in every partition, every message stored exactly
once in its partition in send order, with its key, value, headers and
timestamp (magic 0 has none: -1), the codec the topic asks for (``producer``
keeps the client's), and for idempotent producers one producer id, epoch 0
and sequences continuing from 0 per partition.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from broker.protocol import decode_request, parse_request_header
from broker.records.batch import NO_TIMESTAMP, CompressionType
from broker.records.iterate import iter_batches
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.producers import FORMATS, MAGIC1_CAPS, PRODUCERS, Msg, filler
from tests.integration.wire import CaptureProxy, check_contiguous, stored_batches, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 3
MESSAGES = 24
ACKS = (1, -1, 0)
CODEC_ID = {
    "none": CompressionType.NONE,
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
#: Produce versions a client may use for each magic (ProduceRequest.requiredMagicForVersion)
VERSIONS_FOR_MAGIC = {0: {0, 1}, 1: {2}, 2: set(range(3, 12))}


@dataclass(frozen=True)
class Case:
    client: str
    magic: int
    codec: str
    acks: int
    idempotent: bool = False
    topic_codec: str = "producer"

    @property
    def id(self) -> str:
        parts = [self.client, f"v{self.magic}", self.codec, f"acks{self.acks}"]
        if self.idempotent:
            parts.append("idem")
        if self.topic_codec != "producer":
            parts.append(f"topic-{self.topic_codec}")
        return "-".join(parts)

    @property
    def topic(self) -> str:
        return "m-" + self.id.replace("acks-1", "acksall")

    def stored_codec(self, sent_codec: int) -> int:
        return sent_codec if self.topic_codec == "producer" else CODEC_ID[self.topic_codec]


def all_cases() -> list[Case]:
    cases = []
    for client, formats in FORMATS.items():
        i = 0
        for magic, codecs in formats.items():
            for codec in codecs:
                cases.append(Case(client, magic, codec, ACKS[i % len(ACKS)]))
                i += 1
    cases += [
        Case("confluent", 2, "lz4", -1, idempotent=True),
        Case("confluent", 2, "zstd", -1, idempotent=True),
        Case("kcat", 2, "snappy", -1, idempotent=True),
        Case("kafka-python", 2, "gzip", -1, idempotent=True),
        Case("aiokafka", 2, "snappy", -1, idempotent=True),
        Case("aiokafka", 2, "none", -1, idempotent=True),
        # the topic's compression.type decides the stored codec
        Case("confluent", 2, "snappy", 1, topic_codec="zstd"),
        Case("kafka-python", 0, "none", -1, topic_codec="gzip"),
        Case("aiokafka", 2, "lz4", 1, topic_codec="uncompressed"),
        Case("kcat", 1, "gzip", 0, topic_codec="lz4"),
    ]
    return cases


CASES = all_cases()


def messages(case: Case, now_ms: int) -> list[Msg]:
    out = []
    for i in range(MESSAGES):
        if case.client == "kcat":
            # kcat: keys always, one header set for the run, client-stamped times
            key: bytes | None = f"key-{i}".encode()
            headers: tuple[tuple[str, bytes], ...] = (
                (("client", b"kcat"), ("case", case.id.encode())) if case.magic == 2 else ()
            )
            timestamp = None
        else:
            key = None if i % 5 == 4 else f"key-{i}".encode()
            headers = ()
            if case.magic == 2 and i % 4 != 0:
                headers = (("case", case.id.encode()), ("i", str(i).encode()), ("empty", b""))
            timestamp = now_ms - 3_600_000 + i * 1000 if case.magic >= 1 else None
        out.append(Msg(i % PARTITIONS, key, filler(f"{case.id}|{i}"), headers, timestamp))
    return out


@pytest.fixture(scope="module")
def matrix_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BrokerProcess, CaptureProxy]]:
    from tests.integration.wire import create_topics_on_disk

    data = tmp_path_factory.mktemp("matrix") / "data"
    create_topics_on_disk(
        data,
        {
            c.topic: (PARTITIONS, {"compression.type": c.topic_codec})
            for c in CASES
            if c.topic_codec != "producer"
        },
    )
    broker = BrokerProcess(data, num_partitions=PARTITIONS)
    proxy = CaptureProxy(broker.port, caps=MAGIC1_CAPS)
    broker.overrides["advertised.listeners"] = f"PLAINTEXT://{HOST}:{proxy.port}"
    try:
        with broker:
            yield broker, proxy
            assert "Traceback" not in broker.log(), broker.log()
    finally:
        proxy.close()


def sent_batches(proxy: CaptureProxy, topic: str) -> list[tuple[int, int, int, int]]:
    """(Produce version, acks, magic, codec) of every batch the client sent to ``topic``."""
    out = []
    for req in proxy.captured(0):
        body = decode_request(parse_request_header(req.frame), req.frame)
        for td in body.topic_data:
            if td.name != topic:
                continue
            for pd in td.partition_data:
                for b in iter_batches(bytes(pd.records)):
                    out.append((req.api_version, body.acks, b.magic, b.compression_type))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_client_produce_is_stored_exactly(
    matrix_broker: tuple[BrokerProcess, CaptureProxy], case: Case
) -> None:
    broker, proxy = matrix_broker
    data_dir = broker.data_dir
    now_ms = int(time.time() * 1000)
    msgs = messages(case, now_ms)
    before = now_ms - 1000
    PRODUCERS[case.client](
        f"{HOST}:{proxy.port}",
        case.topic,
        msgs,
        magic=case.magic,
        codec=case.codec,
        acks=case.acks,
        idempotent=case.idempotent,
    )

    def stored_count() -> int:
        return sum(
            len(b.records)
            for p in range(PARTITIONS)
            for b in stored_batches(data_dir, case.topic, p)
        )

    # acks=0: nothing tells the client when the broker appended; wait for the files
    wait_for(lambda: stored_count() >= len(msgs), 15, f"{len(msgs)} records of {case.topic}")
    after = int(time.time() * 1000) + 1000

    # what the client really sent
    sent = sent_batches(proxy, case.topic)
    assert sent, "no produce request reached the broker"
    assert {v for v, _, _, _ in sent} <= VERSIONS_FOR_MAGIC[case.magic], sent
    assert {a for _, a, _, _ in sent} == {case.acks}, sent
    assert {m for _, _, m, _ in sent} == {case.magic}, sent
    assert {c for _, _, _, c in sent} == {CODEC_ID[case.codec]}, sent
    expected_codec = case.stored_codec(CODEC_ID[case.codec])

    # what the broker stored
    expected_by_partition = {p: [m for m in msgs if m.partition == p] for p in range(PARTITIONS)}
    producer_ids = set()
    for p in range(PARTITIONS):
        batches = stored_batches(data_dir, case.topic, p)
        assert check_contiguous(batches) == len(expected_by_partition[p])
        records = [r for b in batches for r in b.records]
        assert [r.value for r in records] == [m.value for m in expected_by_partition[p]]
        for r, m in zip(records, expected_by_partition[p], strict=True):
            assert r.key == m.key
            assert r.headers == (m.headers if case.magic == 2 else ())
            if case.magic == 0:
                assert r.timestamp == NO_TIMESTAMP
            elif m.timestamp is not None:
                assert r.timestamp == m.timestamp
            else:
                assert before <= r.timestamp <= after, (r.timestamp, before, after)
        sequence = 0
        for b in batches:
            h = b.header
            assert h.compression_type == expected_codec, (b.segment, h)
            assert h.partition_leader_epoch == 0
            assert not h.is_transactional and not h.is_control_batch
            if case.idempotent:
                producer_ids.add(h.producer_id)
                assert h.producer_epoch == 0
                assert h.base_sequence == sequence, (p, h)
                sequence += h.records_count
            else:
                # the base sequence stays what the client wrote (aiokafka writes 0)
                assert (h.producer_id, h.producer_epoch) == (-1, -1), h
        if case.idempotent and case.client == "kcat":
            # one kcat run (one producer) per partition
            (pid,) = producer_ids
            assert pid >= 0
            producer_ids.clear()
    if case.idempotent and case.client != "kcat":
        (pid,) = producer_ids
        assert pid >= 0
