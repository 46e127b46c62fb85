"""The conversion metrics an operator relies on, as a real Prometheus scrapes them.

A real Prometheus (1 s scrapes, 127.0.0.1) scrapes the broker while real
clients write in three phases, each followed by waiting until Prometheus has
scraped everything the broker counted and reading it back through
Prometheus's HTTP API:

A. v2 batches that stay as they are: the topic's codec, or
   ``compression.type=producer`` (confluent lz4, aiokafka zstd, kafka-python
   gzip into a gzip topic, kcat and confluent uncompressed): no conversions
   and no conversion time; temporary memory = the decompressed size of each
   compressed batch (``RecordValidationStats`` of the in-place path), 0 for
   uncompressed ones.
B. conversions: magic 0 from librdkafka (``api.version.request=false``) and
   kafka-python (0, 8, 2), magic 1 from kafka-python (0, 10, 0) (compressed,
   and uncompressed into a gzip topic), and codec changes from confluent-kafka,
   kafka-python, kcat and aiokafka: every record counts as converted, per
   topic and per client software (ApiVersions v3+ names; clients that send
   no ApiVersions v3 -- fixed old api_version, librdkafka without version
   requests, aiokafka whose ApiVersions stops at v2 -- are 'unknown');
   conversion time is recorded; temporary memory is the source's
   decompressed size plus the rebuilt batch's uncompressed size, computed
   here from the records sent (Kafka's ``LogValidator.buildRecordsAndAssignOffsets``
   accounting into ``RecordValidationStats``: a v0/v1 uncompressed entry is
   its own batch with a 61-byte header at toMagic 2).
C. fetch down-conversion: kafka-python (0, 10, 0) (Fetch v2, magic 1) and
   (0, 8, 2) (Fetch v0, magic 0) read two topics, confluent-kafka reads a
   third as it is: FetchMessageConversions per topic and per client, fetch
   conversion time, temporary memory = every batch read + the uncompressed
   bytes the legacy builders wrote (``RecordsUtil.downConvert``).

D. one raw Produce request to two partitions, one converted and one in
   place, in both orders: the request's temporary memory is the last
   partition's (Kafka overwrites it per partition), its conversion time the
   last converted partition's, and both histograms get one sample per request.

Every Produce and Fetch request records one sample of both histograms (0
when nothing was converted), so the histogram counts equal the request
counts. Each produce request leaves exactly one batch on disk, so the
batches say how each client grouped the records it was given into requests,
and the per-request values are computed for those records exactly.
Finally ``promtool check metrics`` lints the exposition after all of this.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.records.batch import CompressionType
from broker.records.record import Record
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.netutil import metric_sum, v2_batch
from tests.integration.producers import PRODUCERS, Msg
from tests.integration.prometheus_server import PrometheusProcess
from tests.integration.readback import (
    BEGINNING,
    consume_confluent,
    consume_kafka_python,
    kafka_python,
)
from tests.integration.wire import (
    RawClient,
    StoredBatch,
    produce_request,
    stored_batches,
    stored_records,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

#: topic -> compression.type
TOPICS = {"conv-producer": "producer", "conv-gzip": "gzip", "conv-none": "uncompressed"}
PER_ROUND = 5
ROUNDS = 2
V2_HEADER = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # offset + size before every legacy entry
UNKNOWN = ("unknown", "unknown")


@dataclass(frozen=True)
class Case:
    client: str
    magic: int
    codec: str
    topic: str

    @property
    def name(self) -> str:
        return f"{self.client}-v{self.magic}-{self.codec}-{self.topic}"

    @property
    def target_codec(self) -> str:
        topic_codec = TOPICS[self.topic]
        return {"producer": self.codec, "uncompressed": "none"}.get(topic_codec, topic_codec)

    @property
    def converts(self) -> bool:
        return self.magic < 2 or self.target_codec != self.codec


IN_PLACE = [
    Case("confluent", 2, "lz4", "conv-producer"),
    Case("aiokafka", 2, "zstd", "conv-producer"),
    Case("kafka-python", 2, "gzip", "conv-gzip"),
    Case("kcat", 2, "none", "conv-none"),
    Case("confluent", 2, "none", "conv-producer"),
]
CONVERTING = [
    Case("confluent", 0, "none", "conv-producer"),
    Case("kafka-python", 0, "snappy", "conv-producer"),
    Case("kafka-python", 1, "gzip", "conv-producer"),
    Case("kafka-python", 1, "none", "conv-gzip"),
    Case("confluent", 2, "lz4", "conv-gzip"),
    Case("kafka-python", 2, "snappy", "conv-gzip"),
    Case("kcat", 2, "lz4", "conv-gzip"),
    Case("aiokafka", 2, "gzip", "conv-none"),
]


def client_software(case: Case) -> tuple[str, str]:
    """The (name, version) the client announces in ApiVersions v3+, or unknown."""
    if case.magic < 2 or case.client == "aiokafka":  # aiokafka 0.14 sends ApiVersions v0-v2
        return UNKNOWN
    if case.client == "confluent":
        import confluent_kafka

        return (
            "confluent-kafka-python",
            f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}",
        )
    if case.client == "kafka-python":
        return "kafka-python", kafka_python().__version__
    assert case.client == "kcat"
    banner = subprocess.run(["kcat", "-V"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"librdkafka (\S+)", banner)
    assert match, banner
    return "librdkafka", match.group(1)


def rounds_for(case: Case, now_ms: int) -> list[list[Msg]]:
    out = []
    for r in range(ROUNDS):
        batch = []
        for i in range(PER_ROUND):
            key = None if i == 1 else f"{case.name}/{r}/{i}".encode()
            value = f"{case.name}|{r}|{i}|".encode() + b"conversion metrics " * (3 + i)
            timestamp = None
            if case.magic >= 1 and case.client != "kcat":
                timestamp = now_ms + r * 1000 + i
            batch.append(Msg(0, key, value, (), timestamp))
        out.append(batch)
    return out


# ---- sizes, from what was sent (DefaultRecordBatch, DefaultRecord, LegacyRecord) ---------------


def varint_size(value: int) -> int:
    """Bytes of a zig-zag varint/varlong."""
    z = (value << 1) ^ (value >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def sized_field(data: bytes | None) -> int:
    return varint_size(-1) if data is None else varint_size(len(data)) + len(data)


def v2_record_size(timestamp_delta: int, offset_delta: int, key: bytes | None, value: bytes) -> int:
    """``DefaultRecord.sizeInBytes``: length varint + attributes, deltas, key, value, no headers."""
    body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta)
    body += sized_field(key) + sized_field(value) + varint_size(0)
    return varint_size(body) + body


def v2_records_size(sent: Sequence[Msg], stored: Sequence[Record]) -> int:
    """The records of one v2 batch (timestamps as stored: -1 for magic 0, kcat's own)."""
    base = stored[0].timestamp
    return sum(
        v2_record_size(r.timestamp - base, i, s.key, s.value or b"")
        for i, (s, r) in enumerate(zip(sent, stored, strict=True))
    )


def legacy_entry_size(magic: int, key: bytes | None, value: bytes | None) -> int:
    """``LOG_OVERHEAD`` + ``LegacyRecord.recordSize``: crc, magic, attributes,
    timestamp (v1), key and value with int32 lengths."""
    return (
        LOG_OVERHEAD
        + 4
        + 1
        + 1
        + (8 if magic == 1 else 0)
        + 4
        + len(key or b"")
        + 4
        + len(value or b"")
    )


def produce_temporary_memory(case: Case, sent: Sequence[Msg], stored: Sequence[Record]) -> int:
    """``RecordValidationStats.temporaryMemoryBytes`` of one produce request (one batch)."""
    rebuilt = V2_HEADER + v2_records_size(sent, stored)  # builder.uncompressedBytesWritten()
    if case.magic == 2:
        if case.codec == case.target_codec:
            # in place: nothing for uncompressed, the decompressed batch otherwise
            return 0 if case.codec == "none" else rebuilt
        # codec change: the source decompressed (same records) + the rebuilt batch
        return 2 * rebuilt
    if case.codec == "none" and case.target_codec == "none":
        return rebuilt  # convertAndAssignOffsetsNonCompressed: the builder's bytes
    entries = [legacy_entry_size(case.magic, s.key, s.value) for s in sent]
    if case.codec == "none":
        # every uncompressed legacy entry is a batch of its own: a v2 header each
        source = sum(V2_HEADER + e for e in entries)
    else:
        source = V2_HEADER + sum(entries)  # one wrapper; header size at toMagic 2
    return source + rebuilt


def fetch_temporary_memory(batches: Sequence[StoredBatch], to_magic: int) -> int:
    """``RecordsUtil.downConvert``: each batch read + what its legacy builder wrote
    (a wrapper header for compressed batches, then every entry)."""
    total = 0
    for b in batches:
        total += b.header.size_in_bytes
        if b.header.compression_type != 0:
            total += LOG_OVERHEAD + (14 if to_magic == 0 else 22)
        total += sum(legacy_entry_size(to_magic, r.key, r.value) for r in b.records)
    return total


# ---- the run ------------------------------------------------------------------------------------

SERIES = (
    "kafka_topic_produce_message_conversions_total",
    "kafka_topic_fetch_message_conversions_total",
    "kafka_client_message_conversions_total",
    "kafka_request_message_conversions_time_seconds_sum",
    "kafka_request_message_conversions_time_seconds_count",
    "kafka_request_temporary_memory_bytes_sum",
    "kafka_request_temporary_memory_bytes_count",
    "kafka_requests_total",
    "kafka_topic_messages_in_total",
)


@dataclass
class Snapshot:
    """What Prometheus holds after a phase: metric -> {label values: value}."""

    values: dict[str, dict[tuple[tuple[str, str], ...], float]]

    def get(self, metric: str, **labels: str) -> float:
        """Sum of the series of ``metric`` whose labels include ``labels``."""
        return sum(
            v
            for key, v in self.values[metric].items()
            if all(dict(key).get(k) == want for k, want in labels.items())
        )

    def by(self, metric: str, *names: str) -> dict[tuple[str, ...], float]:
        return {tuple(dict(key)[n] for n in names): v for key, v in self.values[metric].items()}


@dataclass
class Run:
    broker: BrokerProcess
    prometheus: PrometheusProcess
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    #: per phase: produce requests and the expected temporary memory sum
    produce_requests: dict[str, int] = field(default_factory=dict)
    produce_memory: dict[str, int] = field(default_factory=dict)
    fetch_memory: int = 0
    fetch_conversions: dict[str, int] = field(default_factory=dict)
    #: phase D: the temporary memory each of the two requests must record
    mixed_memory: dict[str, int] = field(default_factory=dict)
    exposition: str = ""


def snapshot(prometheus: PrometheusProcess) -> Snapshot:
    values = {}
    for metric in SERIES:
        values[metric] = {
            tuple(sorted((k, v) for k, v in labels.items() if k not in ("job", "instance"))): value
            for labels, value in prometheus.query(metric)
        }
    return Snapshot(values)


def synced(broker: BrokerProcess, prometheus: PrometheusProcess) -> Snapshot:
    """Wait until Prometheus has scraped every request the broker has answered, then read it."""
    answered = metric_sum(broker.metrics(), "kafka_requests_total")
    deadline = time.monotonic() + 20
    while (prometheus.scalar('sum(kafka_requests_total{job="broker"})') or 0) < answered:
        assert time.monotonic() < deadline, "Prometheus did not catch up with the broker"
        time.sleep(0.1)
    return snapshot(prometheus)


def produce_cases(run: Run, cases: Sequence[Case]) -> tuple[int, int]:
    """Produce every case; (produce requests, expected temporary memory sum).

    Every request leaves one stored batch (one partition; v2 requests carry one
    batch, conversions build one), so the stored batches say how the client
    split its records into requests (librdkafka sometimes sends the first
    record of a new producer on its own) and the temporary memory of each
    request is computed from the records of its batch."""
    data_dir = run.broker.data_dir
    memory = 0
    requests = 0
    for case in cases:
        before = len(stored_batches(data_dir, case.topic, 0))
        rounds = rounds_for(case, int(time.time() * 1000))
        for batch in rounds:  # a producer per round
            PRODUCERS[case.client](
                run.broker.bootstrap, case.topic, batch, magic=case.magic, codec=case.codec, acks=1
            )
        batches = stored_batches(data_dir, case.topic, 0)[before:]
        sent = [s for r in rounds for s in r]
        assert [(r.key, r.value) for b in batches for r in b.records] == [
            (s.key, s.value) for s in sent
        ]
        for records in (b.records for b in batches):
            mine, sent = sent[: len(records)], sent[len(records) :]
            memory += produce_temporary_memory(case, mine, records)
        requests += len(batches)
    return requests, memory


MIXED = 4  # records of each partition of the phase D requests


def produce_mixed(run: Run, converted_first: bool) -> int:
    """One request to conv-gzip (an lz4 batch: rebuilt) and conv-none (an
    uncompressed batch: in place), the converted partition first or last.
    Returns the temporary memory the request must record."""
    converted = Case("raw", 2, "lz4", "conv-gzip")
    values = [f"mixed {converted_first} {i} ".encode() * 8 for i in range(MIXED)]
    parts = [
        ("conv-gzip", 0, v2_batch(values, compression_type=CompressionType.LZ4)),
        ("conv-none", 0, v2_batch(values)),
    ]
    if not converted_first:
        parts.reverse()
    with RawClient(run.broker.port) as client:
        response = client.call(produce_request({(t, p): r for t, p, r in parts}), 9)
    for t in response.responses:
        assert [p.error_code for p in t.partition_responses] == [0], t
    records = stored_batches(run.broker.data_dir, "conv-gzip", 0)[-1].records
    rebuilt = produce_temporary_memory(converted, [Msg(0, None, v) for v in values], records)
    # the last partition's value wins: the in-place one records 0
    return rebuilt if not converted_first else 0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    work = tmp_path_factory.mktemp("prom")
    data = work / "data"
    data.mkdir()
    broker = BrokerProcess(data)
    with broker:
        prometheus = PrometheusProcess(work, f"{HOST}:{broker.metrics_port}")
        with prometheus:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            futures = admin.create_topics(
                [NewTopic(t, 1, 1, config={"compression.type": c}) for t, c in TOPICS.items()]
            )
            for f in futures.values():
                f.result(15)
            prometheus.wait_for_value('up{job="broker"}', 1.0)
            r = Run(broker, prometheus)

            r.produce_requests["A"], r.produce_memory["A"] = produce_cases(r, IN_PLACE)
            r.snapshots["A"] = synced(broker, prometheus)

            r.produce_requests["B"], r.produce_memory["B"] = produce_cases(r, CONVERTING)
            r.snapshots["B"] = synced(broker, prometheus)

            # C: old consumers make the broker down-convert, a v2 consumer does not
            gzip_batches = stored_batches(data, "conv-gzip", 0)
            none_batches = stored_batches(data, "conv-none", 0)
            r.fetch_conversions = {
                "conv-gzip": sum(len(b.records) for b in gzip_batches),
                "conv-none": sum(len(b.records) for b in none_batches),
                "conv-producer": 0,
            }
            r.fetch_memory = fetch_temporary_memory(gzip_batches, 1) + fetch_temporary_memory(
                none_batches, 0
            )
            for topic, api_version in (("conv-gzip", (0, 10, 0)), ("conv-none", (0, 8, 2))):
                n = r.fetch_conversions[topic]
                consume_kafka_python(
                    broker.bootstrap, {topic: 0}, {topic: n}, api_version=api_version
                )
            n = len(stored_records(data, "conv-producer", 0))
            consume_confluent(broker.bootstrap, {"conv-producer": BEGINNING}, {"conv-producer": n})
            r.snapshots["C"] = synced(broker, prometheus)

            # D: two partitions per request, the converted one first, then last
            r.mixed_memory["D1"] = produce_mixed(r, converted_first=True)
            r.snapshots["D1"] = synced(broker, prometheus)
            r.mixed_memory["D2"] = produce_mixed(r, converted_first=False)
            r.snapshots["D2"] = synced(broker, prometheus)
            r.exposition = broker.metrics()
            yield r
        assert "Traceback" not in broker.log(), broker.log()


def records_of(cases: Sequence[Case], **match: object) -> int:
    return sum(
        PER_ROUND * ROUNDS for c in cases if all(getattr(c, k) == v for k, v in match.items())
    )


# ---- A: nothing converted ------------------------------------------------------------------------


def test_in_place_batches_are_not_conversions(run: Run) -> None:
    a = run.snapshots["A"]
    for topic in TOPICS:
        assert a.get("kafka_topic_produce_message_conversions_total", topic=topic) == 0, topic
        assert a.get("kafka_topic_messages_in_total", topic=topic) == records_of(
            IN_PLACE, topic=topic
        )
    assert a.values["kafka_client_message_conversions_total"] == {}
    requests = run.produce_requests["A"]
    assert requests >= len(IN_PLACE) * ROUNDS
    assert a.get("kafka_requests_total", request="Produce") == requests
    assert a.get("kafka_request_message_conversions_time_seconds_count", request="Produce") == (
        requests
    )
    assert a.get("kafka_request_message_conversions_time_seconds_sum", request="Produce") == 0
    assert a.get("kafka_request_temporary_memory_bytes_count", request="Produce") == requests
    assert (
        a.get("kafka_request_temporary_memory_bytes_sum", request="Produce")
        == (run.produce_memory["A"])
    )
    assert run.produce_memory["A"] > 0  # the compressed in-place batches were decompressed


# ---- B: conversions ------------------------------------------------------------------------------


def test_produce_conversions_by_topic(run: Run) -> None:
    b = run.snapshots["B"]
    for topic in TOPICS:
        want = records_of([c for c in CONVERTING if c.converts], topic=topic)
        assert b.get("kafka_topic_produce_message_conversions_total", topic=topic) == want, topic
        assert b.get("kafka_topic_messages_in_total", topic=topic) == records_of(
            IN_PLACE + CONVERTING, topic=topic
        )
    assert all(c.converts for c in CONVERTING)


def test_produce_conversions_by_client_software(run: Run) -> None:
    want: dict[tuple[str, ...], float] = {}
    for c in CONVERTING:
        key = ("Produce", *client_software(c))
        want[key] = want.get(key, 0) + PER_ROUND * ROUNDS
    got = run.snapshots["B"].by(
        "kafka_client_message_conversions_total",
        "request",
        "client_software_name",
        "client_software_version",
    )
    assert got == want
    # librdkafka and kafka-python announce themselves; the old formats do not
    assert {k[1] for k in want} == {
        "unknown",
        "confluent-kafka-python",
        "kafka-python",
        "librdkafka",
    }


def test_produce_conversion_time_and_temporary_memory(run: Run) -> None:
    a, b = run.snapshots["A"], run.snapshots["B"]
    requests = run.produce_requests["A"] + run.produce_requests["B"]
    assert b.get("kafka_requests_total", request="Produce") == requests
    for metric in (
        "kafka_request_message_conversions_time_seconds_count",
        "kafka_request_temporary_memory_bytes_count",
    ):
        assert b.get(metric, request="Produce") == requests, metric
    assert b.get("kafka_request_message_conversions_time_seconds_sum", request="Produce") > 0
    assert a.get("kafka_request_message_conversions_time_seconds_sum", request="Produce") == 0
    assert b.get("kafka_request_temporary_memory_bytes_sum", request="Produce") == (
        run.produce_memory["A"] + run.produce_memory["B"]
    )


# ---- C: fetch down-conversion --------------------------------------------------------------------


def test_fetch_down_conversions(run: Run) -> None:
    b, c = run.snapshots["B"], run.snapshots["C"]
    for topic, want in run.fetch_conversions.items():
        assert c.get("kafka_topic_fetch_message_conversions_total", topic=topic) == want, topic
    assert b.get("kafka_topic_fetch_message_conversions_total") == 0
    got = c.by(
        "kafka_client_message_conversions_total",
        "request",
        "client_software_name",
        "client_software_version",
    )
    # kafka-python with a fixed old api_version sends no ApiVersions
    assert got[("Fetch", *UNKNOWN)] == sum(run.fetch_conversions.values())
    assert {k for k in got if k[0] == "Fetch"} == {("Fetch", *UNKNOWN)}
    # produce-side series did not move
    assert c.by("kafka_topic_produce_message_conversions_total", "topic") == b.by(
        "kafka_topic_produce_message_conversions_total", "topic"
    )


def test_fetch_conversion_time_and_temporary_memory(run: Run) -> None:
    b, c = run.snapshots["B"], run.snapshots["C"]
    fetches = c.get("kafka_requests_total", request="Fetch")
    assert fetches >= 3
    for metric in (
        "kafka_request_message_conversions_time_seconds_count",
        "kafka_request_temporary_memory_bytes_count",
    ):
        assert c.get(metric, request="Fetch") == fetches, metric
    assert b.get("kafka_request_temporary_memory_bytes_count", request="Fetch") == 0
    assert c.get("kafka_request_message_conversions_time_seconds_sum", request="Fetch") > 0
    assert c.get("kafka_request_temporary_memory_bytes_sum", request="Fetch") == run.fetch_memory


# ---- D: several partitions in one request ------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "before"), [("D1", "C"), ("D2", "D1")], ids=["converted-first", "converted-last"]
)
def test_per_request_values_are_the_last_partitions(run: Run, phase: str, before: str) -> None:
    was, now = run.snapshots[before], run.snapshots[phase]

    def delta(metric: str, **labels: str) -> float:
        return now.get(metric, **labels) - was.get(metric, **labels)

    assert delta("kafka_requests_total", request="Produce") == 1
    assert delta("kafka_topic_produce_message_conversions_total", topic="conv-gzip") == MIXED
    assert delta("kafka_topic_produce_message_conversions_total", topic="conv-none") == 0
    assert delta("kafka_topic_messages_in_total") == 2 * MIXED
    assert delta("kafka_client_message_conversions_total", client_software_name="unknown") == MIXED
    # one sample each; memory from the last partition, time from the converted one
    assert delta("kafka_request_temporary_memory_bytes_count", request="Produce") == 1
    assert (
        delta("kafka_request_temporary_memory_bytes_sum", request="Produce")
        == (run.mixed_memory[phase])
    )
    assert delta("kafka_request_message_conversions_time_seconds_count", request="Produce") == 1
    assert delta("kafka_request_message_conversions_time_seconds_sum", request="Produce") > 0


# ---- promtool ------------------------------------------------------------------------------------


def test_promtool_accepts_the_exposition_after_traffic(run: Run) -> None:
    text = run.exposition
    # the traffic above is in it: conversions of both kinds, histograms of both APIs
    for request in ("Produce", "Fetch"):
        assert metric_sum(text, "kafka_client_message_conversions_total", request=request) > 0
        assert metric_sum(text, "kafka_request_temporary_memory_bytes_sum", request=request) > 0
    lint = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert lint.stdout + lint.stderr == ""
