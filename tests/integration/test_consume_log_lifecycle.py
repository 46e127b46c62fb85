"""Reading back across the log's life: a restart, segment boundaries, retention.

* Restart: several clients and formats write into a topic whose small
  ``segment.bytes`` rolls a segment every few batches; the broker is stopped
  with SIGTERM (exit 0) and started again on the same directory; more
  records are written; every reader (v2 readers and kafka-python's Fetch v2
  and v0 down-conversion) then reads every record, across every segment, in
  order, from offset 0.
* Retention: with ``retention.bytes`` small and the retention check every
  200 ms, old segments go; a fetch below the new log start offset is
  OFFSET_OUT_OF_RANGE with its offsets unknown (-1, as Kafka answers; new and
  old Fetch versions), a librdkafka consumer told not to reset surfaces the error, and
  consumers that were positioned at offset 0 reset to the log start and read
  exactly what remains.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.errors import ErrorCode
from tests.integration.harness import BrokerProcess
from tests.integration.netutil import metric_sum, produce
from tests.integration.producers import PRODUCERS, Msg
from tests.integration.readback import (
    BEGINNING,
    Got,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    consume_kcat,
)
from tests.integration.wire import RawClient, fetch_request, only_partition, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

Reader = Callable[[str, str, int, int], dict[str, list[Got]]]


def create(bootstrap: str, topic: str, config: Mapping[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1, config=dict(config))]).values():
        f.result(15)


def segment_files(data_dir: Path, topic: str) -> list[str]:
    return sorted(p.name for p in (data_dir / f"{topic}-0").glob("*.log"))


#: name -> read(bootstrap, topic, start, count): what the reader got, all of one topic
READERS: dict[str, Reader] = {
    "confluent": lambda b, t, start, n: consume_confluent(b, {t: start}, {t: n}),
    "aiokafka": lambda b, t, start, n: consume_aiokafka(b, {t: start}, {t: n}),
    "kafka-python": lambda b, t, start, n: consume_kafka_python(b, {t: start}, {t: n}),
    "kafka-python-0.10.0": lambda b, t, start, n: consume_kafka_python(
        b, {t: start}, {t: n}, api_version=(0, 10, 0)
    ),
    "kafka-python-0.8.2": lambda b, t, start, n: consume_kafka_python(
        b, {t: start}, {t: n}, api_version=(0, 8, 2)
    ),
}


def records(tag: str, n: int) -> list[Msg]:
    return [Msg(0, f"{tag}-{i}".encode(), f"{tag} value {i} ".encode() * 3) for i in range(n)]


# ---- restart ----------------------------------------------------------------------------------


def test_read_everything_across_segments_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    topic = "restart"
    sent: list[Msg] = []
    #: (client, magic, codec) writing 3 rounds of 8 records each, before and after the restart
    before = [("confluent", 2, "lz4"), ("kafka-python", 1, "gzip"), ("kafka-python", 0, "none")]
    after = [("aiokafka", 2, "snappy"), ("kcat", 2, "gzip"), ("confluent", 0, "snappy")]

    def write(bootstrap: str, writers: list[tuple[str, int, str]]) -> None:
        for client, magic, codec in writers:
            tag = f"{client}-v{magic}-{codec}"
            batch = records(tag, 24)
            for part in (batch[:8], batch[8:16], batch[16:]):  # a producer each: three batches
                PRODUCERS[client](bootstrap, topic, part, magic=magic, codec=codec, acks=1)
            sent.extend(batch)

    first = BrokerProcess(data)
    with first:
        create(first.bootstrap, topic, {"segment.bytes": "1200"})
        write(first.bootstrap, before)
        segments_before = segment_files(data, topic)
        assert first.stop() == 0, first.log()
    assert len(segments_before) >= 4, segments_before

    second = BrokerProcess(data)
    with second:
        write(second.bootstrap, after)
        segments = segment_files(data, topic)
        assert len(segments) > len(segments_before), segments
        assert set(segments_before) <= set(segments)
        want = [(i, s.key, s.value) for i, s in enumerate(sent)]
        for name, read in READERS.items():
            got = read(second.bootstrap, topic, BEGINNING, len(sent))[topic]
            assert [(g.offset, g.key, g.value) for g in got] == want, name
        (got_kcat,) = consume_kcat(second.bootstrap, [topic]).values()
        assert [(g.offset, g.key, g.value) for g in got_kcat] == want, "kcat"
        assert "Traceback" not in second.log(), second.log()


# ---- retention --------------------------------------------------------------------------------

TOTAL = 150
PER_BATCH = 5


@pytest.fixture(scope="module")
def retained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str, int]]:
    """A topic whose first segments retention deleted: (broker, topic, log start offset)."""
    data = tmp_path_factory.mktemp("retention") / "data"
    data.mkdir()
    with BrokerProcess(data, **{"log.retention.check.interval.ms": "200"}) as broker:
        topic = f"retention-{uuid.uuid4().hex[:6]}"
        create(broker.bootstrap, topic, {"segment.bytes": "1024", "retention.bytes": "3000"})
        with RawClient(broker.port) as client:
            for base in range(0, TOTAL, PER_BATCH):
                values = [value(i) for i in range(base, base + PER_BATCH)]
                assert produce(client, topic, values) == base

        def log_start() -> float:
            return metric_sum(broker.metrics(), "kafka_log_start_offset", topic=topic)

        wait_for(lambda: log_start() > 0, 15, "retention to delete a segment")
        # settled: unchanged over several retention checks (every 200 ms). A
        # check that ran while the batches were still being produced deleted
        # only part of what will go; the next one deletes the rest. Counting
        # samples (20 ms apart) was not enough: 8 of them fit between two
        # checks, and a loaded machine saw the log start move 100 -> 110 later.
        seen = [log_start()]
        changed_at = [time.monotonic()]

        def settled() -> bool:
            seen.append(log_start())
            if seen[-1] != seen[-2]:
                changed_at[0] = time.monotonic()
            return time.monotonic() - changed_at[0] >= 1.5

        wait_for(settled, 15, "retention to settle")
        start = int(seen[-1])
        assert 0 < start < TOTAL - PER_BATCH, start
        assert start % PER_BATCH == 0, start  # whole segments of whole batches went
        yield broker, topic, start
        assert "Traceback" not in broker.log(), broker.log()


def value(i: int) -> bytes:
    return f"retained value {i} ".encode() * 4


@pytest.mark.parametrize("version", [0, 2, 4, 5, 11])
def test_fetch_below_log_start_is_out_of_range(
    retained: tuple[BrokerProcess, str, int], version: int
) -> None:
    broker, topic, start = retained
    with RawClient(broker.port) as client:
        p = only_partition(client.call(fetch_request(topic, 0, 0), version))
        assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE, p
        assert not p.records
        assert p.high_watermark == -1
        if version >= 5:
            assert p.log_start_offset == -1
        p = only_partition(client.call(fetch_request(topic, 0, start), version))
        assert p.error_code == ErrorCode.NONE and p.records


def test_librdkafka_without_reset_reports_out_of_range(
    retained: tuple[BrokerProcess, str, int],
) -> None:
    import confluent_kafka
    from confluent_kafka import KafkaError, TopicPartition

    broker, topic, _ = retained
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "no-reset",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        error: Any = None
        while error is None and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                assert m.error() is not None, f"read offset {m.offset()} below the log start"
                error = m.error()
        assert error is not None, "no error surfaced"
        assert error.code() == KafkaError._AUTO_OFFSET_RESET, error
        assert "out of range" in error.str().lower(), error.str()
    finally:
        consumer.close()


@pytest.mark.parametrize("start_at", [0, BEGINNING], ids=["offset0", "beginning"])
@pytest.mark.parametrize("reader", list(READERS))
def test_consumers_reset_to_the_new_log_start(
    retained: tuple[BrokerProcess, str, int], reader: str, start_at: int
) -> None:
    broker, topic, start = retained
    got = READERS[reader](broker.bootstrap, topic, start_at, TOTAL - start)[topic]
    assert [(g.offset, g.value) for g in got] == [(i, value(i)) for i in range(start, TOTAL)]


def test_kcat_from_beginning_reads_what_remains(retained: tuple[BrokerProcess, str, int]) -> None:
    broker, topic, start = retained
    (got,) = consume_kcat(broker.bootstrap, [topic]).values()
    assert [(g.offset, g.value) for g in got] == [(i, value(i)) for i in range(start, TOTAL)]
