"""Consumer groups through real clients: subscribe() in confluent-kafka, kafka-python, aiokafka
and kcat -G against the broker as a subprocess.

Three confluent-kafka consumers (one in a child process) share a topic of 12
partitions: every partition is assigned exactly once, a consumer that closes
hands its partitions over, one that is killed loses them when its session
times out. Committed offsets survive a broker restart (SIGTERM and SIGKILL)
and a new consumer of the group resumes exactly there. Static members rejoin
without a rebalance. Short timeouts keep every test within seconds:
group.initial.rebalance.delay.ms=0 and session timeouts of 2 s (the broker's
group.min.session.timeout.ms lowered to 1 s).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.harness import BrokerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}
SESSION_MS = 2000
TIMEOUT = 30


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("groups") / "data"
    data.mkdir()
    with BrokerProcess(data, **GROUP_SETTINGS) as b:
        yield b


def make_topic(bootstrap: str, partitions: int, records_per_partition: int) -> str:
    topic = f"g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(TIMEOUT)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(records_per_partition):
            producer.produce(topic, value=b"%d-%d" % (p, i), partition=p)
    assert producer.flush(TIMEOUT) == 0
    return topic


def confluent(bootstrap: str, group: str, **extra: object) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 300,
    }
    config.update(extra)
    return Consumer(config)


def assignments(bootstrap: str, group: str) -> list[list[int]]:
    """The partitions of each member, from DescribeGroups (the broker's view)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(TIMEOUT)
    if str(desc.state).rsplit(".", 1)[-1] != "STABLE":
        return []
    return sorted(
        sorted(tp.partition for tp in m.assignment.topic_partitions) for m in desc.members
    )


def poll_until(consumers: Sequence[Consumer], done: Callable[[], bool], timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if done():
            return
    raise AssertionError("timed out waiting for the group")


def covers_once(parts: list[list[int]], members: int, partitions: int) -> bool:
    flat = [p for member in parts for p in member]
    return len(parts) == members and sorted(flat) == list(range(partitions))


_CHILD = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "session.timeout.ms": int(sys.argv[4]), "heartbeat.interval.ms": 300,
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe([sys.argv[3]])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    c.poll(0.1)
"""


def test_confluent_three_consumers_share_twelve_partitions(broker):
    topic = make_topic(broker.bootstrap, 12, 5)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    c0 = confluent(broker.bootstrap, group, **{"client.id": "c0"})
    c1 = confluent(broker.bootstrap, group, **{"client.id": "c1"})
    c0.subscribe([topic])
    c1.subscribe([topic])
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, broker.bootstrap, group, topic, str(SESSION_MS)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        poll_until([c0, c1], lambda: covers_once(assignments(broker.bootstrap, group), 3, 12))
        # a consumer that closes leaves the group: its partitions move to the others
        c1.close()
        poll_until([c0], lambda: covers_once(assignments(broker.bootstrap, group), 2, 12))
        # one that is killed stops heartbeating: its session times out (2 s)
        child.send_signal(signal.SIGKILL)
        child.wait(TIMEOUT)
        started = time.monotonic()
        poll_until([c0], lambda: assignments(broker.bootstrap, group) == [list(range(12))])
        assert time.monotonic() - started >= SESSION_MS / 1000 - 0.5
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(TIMEOUT)
        c0.close()


def _consume(consumer: Consumer, count: int) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append((msg.partition(), msg.offset()))
    assert len(got) == count, got
    return got


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_commit_and_resume(broker, strategy):
    topic = make_topic(broker.bootstrap, 3, 10)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    first = confluent(broker.bootstrap, group, **{"partition.assignment.strategy": strategy})
    first.subscribe([topic])
    _consume(first, 12)
    first.commit(asynchronous=False)
    committed = {
        tp.partition: tp.offset
        for tp in first.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
    }
    first.close()
    second = confluent(broker.bootstrap, group, **{"partition.assignment.strategy": strategy})
    second.subscribe([topic])
    rest = _consume(second, 30 - 12)
    second.close()
    starts = {p: min(o for q, o in rest if q == p) for p in {q for q, _ in rest}}
    # a partition with nothing committed (-1001, OFFSET_INVALID) starts from the earliest
    assert starts == {p: max(o, 0) for p, o in committed.items() if p in starts}
    assert sum(max(o, 0) for o in committed.values()) == 12


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_committed_offsets_survive_a_restart(tmp_path, how):
    data = tmp_path / "data"
    data.mkdir()
    group = "restart-group"
    with BrokerProcess(data, **GROUP_SETTINGS) as b:
        topic = make_topic(b.bootstrap, 3, 10)
        c = confluent(b.bootstrap, group)
        c.subscribe([topic])
        _consume(c, 14)
        c.commit(asynchronous=False)
        wanted = [
            (tp.partition, tp.offset)
            for tp in c.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
        ]
        c.close()
        if how == "sigkill":
            b.kill()
    with BrokerProcess(data, **GROUP_SETTINGS) as b:
        c = confluent(b.bootstrap, group)
        got = _committed_after_load(c, topic)
        assert got == wanted
        c.subscribe([topic])
        rest = _consume(c, 30 - 14)
        c.close()
        starts = {p: min(o for q, o in rest if q == p) for p in {q for q, _ in rest}}
        assert starts == {p: max(o, 0) for p, o in wanted if p in starts}


def _committed_after_load(c: Consumer, topic: str) -> list[tuple[int, int]]:
    """OffsetFetch retried while the coordinator loads (COORDINATOR_LOAD_IN_PROGRESS)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            found = c.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
            return [(tp.partition, tp.offset) for tp in found]
        except KafkaException:
            if time.monotonic() > deadline:
                raise


_STATIC_CHILD = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "group.instance.id": sys.argv[4], "session.timeout.ms": 10000,
              "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe([sys.argv[3]])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    c.poll(0.1)
"""


def test_static_members_rejoin_without_a_rebalance(broker):
    topic = make_topic(broker.bootstrap, 4, 1)
    group = f"static-{uuid.uuid4().hex[:6]}"
    revoked: list[int] = []
    b = confluent(
        broker.bootstrap, group, **{"group.instance.id": "b", "session.timeout.ms": 10_000}
    )
    b.subscribe([topic], on_revoke=lambda _c, parts: revoked.append(len(parts)))

    def start_a() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", _STATIC_CHILD, broker.bootstrap, group, topic, "a"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    a = start_a()
    try:
        poll_until([b], lambda: covers_once(assignments(broker.bootstrap, group), 2, 4))
        before = assignments(broker.bootstrap, group)
        members_before = _member_ids(broker.bootstrap, group)
        revoked.clear()
        # the process of static member "a" dies and comes back within its session (10 s):
        # it rejoins under its instance id, gets its partitions back, and nobody rebalances
        a.kill()
        a.wait(TIMEOUT)
        a = start_a()
        poll_until([b], lambda: _member_ids(broker.bootstrap, group) - members_before != set())
        for _ in range(20):
            b.poll(0.05)
        assert assignments(broker.bootstrap, group) == before
        assert revoked == []
    finally:
        a.kill()
        a.wait(TIMEOUT)
        b.close()


def _member_ids(bootstrap: str, group: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(TIMEOUT)
    return {m.member_id for m in desc.members}


def test_kafka_python_subscribe_and_commit(broker):
    topic = make_topic(broker.bootstrap, 3, 4)
    group = f"kp-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=300,
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + TIMEOUT
    while seen < 12 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            seen += len(records)
    assert seen == 12
    consumer.commit()
    consumer.close()
    check = confluent(broker.bootstrap, group)
    got = check.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
    check.close()
    assert [tp.offset for tp in got] == [4, 4, 4]


def test_aiokafka_subscribe_and_commit(broker):
    from aiokafka import AIOKafkaConsumer

    topic = make_topic(broker.bootstrap, 3, 4)
    group = f"aio-{uuid.uuid4().hex[:6]}"

    async def consume() -> int:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=300,
        )
        await consumer.start()
        try:
            seen = 0
            deadline = time.monotonic() + TIMEOUT
            while seen < 12 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                seen += sum(len(v) for v in batches.values())
            await consumer.commit()
            return seen
        finally:
            await consumer.stop()

    assert asyncio.run(consume()) == 12
    check = confluent(broker.bootstrap, group)
    got = check.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
    check.close()
    assert [tp.offset for tp in got] == [4, 4, 4]


def test_kcat_balanced_consumer(broker, tmp_path: Path):
    topic = make_topic(broker.bootstrap, 3, 4)
    group = f"kcat-{uuid.uuid4().hex[:6]}"
    settings = [
        "auto.offset.reset=earliest",
        f"session.timeout.ms={SESSION_MS}",
        "enable.auto.commit=true",
        "auto.commit.interval.ms=100",
    ]
    args = ["kcat", "-b", broker.bootstrap, "-G", group]
    for setting in settings:
        args += ["-X", setting]
    out = subprocess.run(
        [*args, "-e", "-q", "-f", "%p:%o\\n", topic],
        capture_output=True,
        timeout=TIMEOUT,
        check=True,
    )
    lines = out.stdout.decode().split()
    assert sorted(lines) == sorted(f"{p}:{o}" for p in range(3) for o in range(4))
    check = confluent(broker.bootstrap, group)
    got = check.committed([CTopicPartition(topic, p) for p in range(3)], TIMEOUT)
    check.close()
    assert [tp.offset for tp in got] == [4, 4, 4]


def _cli(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker", "groups", "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_groups_cli_list_describe_reset_delete(broker):
    topic = make_topic(broker.bootstrap, 2, 10)
    group = f"cli-{uuid.uuid4().hex[:6]}"
    c = confluent(broker.bootstrap, group)
    c.subscribe([topic])
    _consume(c, 20)
    c.commit(asynchronous=False)
    described = _cli(broker, "describe", "--group", group)
    assert described.returncode == 0, described.stderr
    lines = described.stdout.split("\n")
    assert lines[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:] if line.strip()]
    assert [r[:6] for r in rows] == [
        [group, topic, "0", "10", "10", "0"],
        [group, topic, "1", "10", "10", "0"],
    ]
    assert group in _cli(broker, "list").stdout.split()
    # an active group cannot be reset
    busy = _cli(broker, "reset-offsets", "--group", group, "--all-topics", "--to-earliest")
    assert busy.returncode == 1 and "is inactive" in busy.stderr
    c.close()
    dry = _cli(broker, "reset-offsets", "--group", group, "--topic", topic, "--shift-by", "-3")
    assert dry.returncode == 0, dry.stderr
    assert [r.split()[2:] for r in dry.stdout.split("\n")[1:] if r.strip()] == [
        ["0", "7"],
        ["1", "7"],
    ]
    executed = _cli(
        broker, "reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-earliest",
        "--execute",
    )  # fmt: skip
    assert executed.returncode == 0, executed.stderr
    check = confluent(broker.bootstrap, group)
    got = check.committed([CTopicPartition(topic, p) for p in range(2)], TIMEOUT)
    check.close()
    assert [tp.offset for tp in got] == [10, 0]
    deleted = _cli(broker, "delete", "--group", group)
    assert deleted.returncode == 0 and "successful" in deleted.stdout
    assert "does not exist" in _cli(broker, "describe", "--group", group).stdout
