"""Round trips: what one real client wrote, every real client reads back.

Writers: confluent-kafka, kcat, kafka-python and aiokafka, in every message
format and codec each can send (``producers.FORMATS``: magic 0/1/2,
none/gzip/snappy/lz4/zstd), into CreateTime topics, and one case per client
and format into LogAppendTime topics -- one topic per case, six records in
two batches (one producer each), keys (one null), values (one null, UTF-8 text),
headers with duplicates, empty and null values (magic 2), CreateTime
timestamps out of order (magic 1/2; kcat stamps its own).

Readers, one pass each over every topic: confluent-kafka and aiokafka
(assign, starting at the beginning, at offset 0, inside the first batch or
inside the second), kcat (``-o beginning``), kafka-python with its default
(Fetch v4+) and with ``api_version`` (0, 10, 0) / (0, 9) / (0, 8, 2), which
fetch with v2 / v1 / v0 and so read what the broker down-converts to magic 1
and 0. A reader of v2 batches sees every field; a magic 1 reader has no
headers; a magic 0 reader has neither headers nor timestamps. Timestamps the
broker or the client chose (LogAppendTime, kcat's) are taken from the
segment files and checked to fall inside the produce call.

zstd batches cannot be down-converted: old readers skip those topics, and a
raw Fetch v0-v3 of one gets UNSUPPORTED_COMPRESSION_TYPE.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.errors import ErrorCode
from broker.records.batch import NO_TIMESTAMP, TimestampType
from broker.records.record import Record
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.netutil import metric_samples
from tests.integration.producers import FORMATS, MAGIC1_CAPS, PRODUCERS, Msg
from tests.integration.readback import (
    BEGINNING,
    CREATE_TIME,
    LOG_APPEND_TIME,
    Got,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    consume_kcat,
)
from tests.integration.wire import (
    CaptureProxy,
    RawClient,
    fetch_request,
    only_partition,
    stored_records,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

#: one LogAppendTime case per client and format, with some codec
LAT_CASES = {
    ("confluent", 0): "gzip",
    ("confluent", 1): "snappy",
    ("confluent", 2): "zstd",
    ("kcat", 0): "lz4",
    ("kcat", 1): "none",
    ("kcat", 2): "gzip",
    ("kafka-python", 0): "snappy",
    ("kafka-python", 1): "lz4",
    ("kafka-python", 2): "none",
    ("aiokafka", 2): "lz4",
}
RECORDS = 6
#: CreateTime offsets (seconds) of the records: out of order on purpose
TIME_ORDER = (0, 5, 1, 3, 2, 4)


@dataclass(frozen=True)
class Case:
    client: str
    magic: int
    codec: str
    log_append_time: bool = False

    @property
    def topic(self) -> str:
        return f"rt-{self.client}-v{self.magic}-{self.codec}" + (
            "-lat" if self.log_append_time else ""
        )


CASES = [
    Case(client, magic, codec)
    for client, formats in FORMATS.items()
    for magic, codecs in formats.items()
    for codec in codecs
] + [Case(client, magic, codec, True) for (client, magic), codec in LAT_CASES.items()]


def records_for(case: Case, now_ms: int) -> list[Msg]:
    out = []
    for i in range(RECORDS):
        key = None if i == 2 else f"{case.topic}/key-{i}".encode()
        value = (
            None
            if i == 4
            else f"{case.topic}|{i}|naïve café ✓ |".encode() + b"lorem ipsum dolor " * 12
        )
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if case.magic == 2:
            if case.client == "kcat":  # one header set per kcat run
                headers = (("client", b"kcat"), ("dup", b"1"), ("dup", b"2"), ("null", None))
            elif i % 3 == 1:
                headers = (("i", str(i).encode()), ("empty", b""))
                if case.client != "kafka-python":  # kafka-python refuses null header values
                    headers += (("null", None),)
            elif i % 3 == 2:
                headers = (("dup", b"a"), ("dup", b"b"))
        timestamp = None
        if case.magic >= 1 and case.client != "kcat":
            timestamp = now_ms - 3_600_000 + TIME_ORDER[i] * 1000
        out.append(Msg(0, key, value, headers, timestamp))
    return out


@dataclass
class Produced:
    case: Case
    sent: list[Msg]
    stored: list[Record]
    #: wall-clock ms around the produce call
    before: int
    after: int


@dataclass
class Matrix:
    broker: BrokerProcess
    bootstrap: str
    produced: dict[str, Produced]


def request_versions(broker: BrokerProcess, api: str) -> dict[int, float]:
    """Requests of ``api`` served so far, by version (the broker's own counter)."""
    return {
        int(labels["version"]): value
        for labels, value in metric_samples(broker.metrics(), "kafka_requests_total")
        if labels["request"] == api
    }


def used_versions(before: dict[int, float], after: dict[int, float]) -> set[int]:
    return {v for v, n in after.items() if n > before.get(v, 0)}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    data = tmp_path_factory.mktemp("roundtrip") / "data"
    data.mkdir()
    broker = BrokerProcess(data)
    proxy = CaptureProxy(broker.port, caps=MAGIC1_CAPS)
    # every client goes through the proxy; it caps Produce at v2 for magic1-* client ids
    broker.overrides["advertised.listeners"] = f"PLAINTEXT://{HOST}:{proxy.port}"
    bootstrap = f"{HOST}:{proxy.port}"
    try:
        with broker:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            futures = admin.create_topics(
                [
                    NewTopic(
                        c.topic,
                        1,
                        1,
                        config={"message.timestamp.type": "LogAppendTime"}
                        if c.log_append_time
                        else {},
                    )
                    for c in CASES
                ]
            )
            for f in futures.values():
                f.result(15)
            del admin, futures  # its background connections end with it
            produced = {}
            now_ms = int(time.time() * 1000)
            for case in CASES:
                sent = records_for(case, now_ms)
                versions = request_versions(broker, "Produce")
                before = int(time.time() * 1000)
                for batch in (sent[:3], sent[3:]):  # two producers: two batches
                    PRODUCERS[case.client](
                        bootstrap, case.topic, batch, magic=case.magic, codec=case.codec, acks=1
                    )
                after = int(time.time() * 1000)
                # the client wrote the format it was made to: Produce v0-v1 carry
                # magic 0, v2 magic 1, v3+ magic 2 (ProduceRequest.requiredMagicForVersion)
                used = used_versions(versions, request_versions(broker, "Produce"))
                allowed = {0: {0, 1}, 1: {2}, 2: set(range(3, 12))}[case.magic]
                assert used and used <= allowed, (case, used)
                stored = stored_records(data, case.topic, 0)
                produced[case.topic] = Produced(case, sent, stored, before, after)
            yield Matrix(broker, bootstrap, produced)
            assert "Traceback" not in broker.log(), broker.log()
    finally:
        proxy.close()


def test_stored_as_sent(matrix: Matrix) -> None:
    """The ground the read-back comparisons stand on: each case's records are
    stored once, in order, from offset 0, with broker- or client-chosen
    timestamps inside the produce call."""
    for topic, p in matrix.produced.items():
        assert [r.offset for r in p.stored] == list(range(RECORDS)), topic
        for r, s in zip(p.stored, p.sent, strict=True):
            assert (r.key, r.value) == (s.key, s.value), topic
            assert r.headers == s.headers, topic
            if p.case.log_append_time:
                assert r.timestamp_type is TimestampType.LOG_APPEND_TIME, topic
                assert p.before <= r.timestamp <= p.after, (topic, r.timestamp, p.before, p.after)
            elif s.timestamp is not None:
                assert (r.timestamp_type, r.timestamp) == (TimestampType.CREATE_TIME, s.timestamp)
            elif p.case.magic == 0:
                assert r.timestamp == NO_TIMESTAMP, topic
            else:  # kcat: librdkafka stamps the time of produce()
                assert p.before <= r.timestamp <= p.after, (topic, r.timestamp, p.before, p.after)


# ---- what each reader must see -------------------------------------------------------------

#: the message format a reader gets: 2 (Fetch v4+), 1 (Fetch v2-v3) or 0 (Fetch v0-v1)
READERS = {
    "confluent": 2,
    "kcat": 2,
    "aiokafka": 2,
    "kafka-python": 2,
    "kafka-python-0.10.0": 1,
    "kafka-python-0.9": 0,
    "kafka-python-0.8.2": 0,
}
#: start positions cycled over the topics (not kcat: -o beginning)
STARTS = (BEGINNING, 0, 1, 4)


def expected(p: Produced, read_magic: int, start: int) -> list[Got]:
    out = []
    first = 0 if start == BEGINNING else start
    for offset, (s, r) in enumerate(zip(p.sent, p.stored, strict=True)):
        if offset < first:
            continue
        headers = s.headers if read_magic == 2 else ()
        kind: str | None
        ts: int | None
        if read_magic == 0:
            kind, ts = None, None
        elif p.case.log_append_time:
            kind, ts = LOG_APPEND_TIME, r.timestamp
        elif p.case.magic == 0:
            kind, ts = None, None  # stored as -1: no timestamp
        else:
            kind, ts = CREATE_TIME, s.timestamp if s.timestamp is not None else r.timestamp
        out.append(Got(offset, s.key, s.value, headers, kind, ts))
    return out


def readable(matrix: Matrix, read_magic: int) -> list[Produced]:
    """zstd batches are not down-converted (UNSUPPORTED_COMPRESSION_TYPE)."""
    return [p for p in matrix.produced.values() if read_magic == 2 or p.case.codec != "zstd"]


def first_difference(got: list[Got] | None, want: list[Got]) -> str:
    if got is None:
        return "nothing read"
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return f"record {i}:\n    got  {g}\n    want {w}"
    return f"{len(got)} records read, {len(want)} expected"


def check(reader: str, got: dict[str, list[Got]], want: dict[str, list[Got]]) -> None:
    wrong = [
        f"  {topic}: {first_difference(got.get(topic), records)}"
        for topic, records in want.items()
        if got.get(topic) != records
    ]
    assert not wrong, f"{reader} read {len(wrong)} of {len(want)} topics wrong:\n" + "\n".join(
        wrong[:8]
    )


@pytest.mark.parametrize("reader", list(READERS))
def test_read_back(matrix: Matrix, reader: str) -> None:
    read_magic = READERS[reader]
    cases = readable(matrix, read_magic)
    starts = {
        p.case.topic: BEGINNING if reader == "kcat" else STARTS[i % len(STARTS)]
        for i, p in enumerate(cases)
    }
    want = {p.case.topic: expected(p, read_magic, starts[p.case.topic]) for p in cases}
    counts = {t: len(records) for t, records in want.items()}
    bootstrap = matrix.bootstrap
    before = request_versions(matrix.broker, "Fetch")
    if reader == "confluent":
        got = consume_confluent(bootstrap, starts, counts)
    elif reader == "aiokafka":
        got = consume_aiokafka(bootstrap, starts, counts)
    elif reader == "kcat":
        got = consume_kcat(bootstrap, list(starts))
    else:
        api_version = {
            "kafka-python": None,
            "kafka-python-0.10.0": (0, 10, 0),
            "kafka-python-0.9": (0, 9),
            "kafka-python-0.8.2": (0, 8, 2),
        }[reader]
        got = consume_kafka_python(bootstrap, starts, counts, api_version=api_version)
    check(reader, got, want)
    # the reader really used the Fetch versions that give it this format
    used = used_versions(before, request_versions(matrix.broker, "Fetch"))
    allowed = {2: set(range(4, 17)), 1: {2, 3}, 0: {0, 1}}[read_magic]
    assert used and used <= allowed, (reader, used)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_old_fetch_of_zstd_is_refused(matrix: Matrix, version: int) -> None:
    topic = Case("confluent", 2, "zstd").topic
    with RawClient(matrix.broker.port) as client:
        p = only_partition(client.call(fetch_request(topic, 0, 0), version))
        assert p.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, p
        assert not p.records
        # v4+ reads the batches as stored
        p = only_partition(client.call(fetch_request(topic, 0, 0), 4))
        assert p.error_code == ErrorCode.NONE and p.records
