"""``broker topics``: option checks, Kafka's line layout, and each action against an
in-process broker (``LoopbackConnection``: the real handlers, no sockets)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.admin import topics
from broker.admin.client import BrokerRefused
from broker.admin.topic_requests import PartitionInfo, TopicAdmin, TopicInfo, kafka_uuid
from broker.config import ConfigSource
from broker.errors import ErrorCode
from broker.protocol.messages import DescribeConfigsResponse
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.admin.loopback import LoopbackConnection
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_produce_fetch import produce

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    topics.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:9092", *argv])


@pytest.fixture
def tbroker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data")
    yield b
    b.close()


@pytest.fixture
def admin(tbroker: InProcessBroker) -> TopicAdmin:
    return TopicAdmin(LoopbackConnection(tbroker, ("127.0.0.1", 9092)))


def cli(admin: TopicAdmin, *argv: str) -> str:
    parsed = args(*argv)
    out = io.StringIO()
    topics.execute(admin, parsed, topics.check_options(parsed), out)
    return out.getvalue()


# ---- options ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Command must include exactly one action: --list, --describe, --create, --alter or"),
        (["--list", "--describe"], "exactly one action"),
        (["--create"], 'Missing required argument "[topic]"'),
        (["--delete"], 'Missing required argument "[topic]"'),
        (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"], "broker configs"),
        (
            ["--list", "--partitions", "2"],
            'Option "[partitions]" can\'t be used with option "[list]"',
        ),
        (["--create", "--topic", "t", "--if-exists"], '"[if-exists]" can\'t be used'),
        (["--delete", "--topic", "t", "--if-not-exists"], '"[if-not-exists]"'),
        (
            ["--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "1"],
            '"[replication-factor]"',
        ),
        (["--delete", "--topic", "t", "--exclude-internal"], '"[exclude-internal]"'),
        (["--list", "--offsets"], '"[offsets]"'),
        (["--describe", "--if-exists"], "--topic or --topic-id is required to describe a topic"),
        (
            ["--describe", "--topics-with-overrides", "--under-min-isr-partitions"],
            '"[under-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"',
        ),
    ],
)
def test_option_checks(argv: list[str], message: str) -> None:
    with pytest.raises(topics.OptionError, match=message.replace("[", r"\[").replace("(", r"\(")):
        topics.check_options(args(*argv))


def test_run_prints_option_errors_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert topics.run(args("--create")) == 1
    assert capsys.readouterr().err == 'Missing required argument "[topic]"\n'


def test_parse_topic_configs() -> None:
    assert topics.parse_topic_configs(["cleanup.policy = compact", "retention.ms=5"]) == {
        "cleanup.policy": "compact",
        "retention.ms": "5",
    }
    assert topics.parse_topic_configs(None) == {}
    for bad in ("a", "a=", "a=b=c"):
        with pytest.raises(topics.TopicCommandError, match='format "key=val"'):
            topics.parse_topic_configs([bad])


# ---- lines -----------------------------------------------------------------------------


def entry(name: str, value: str | None, source: int = ConfigSource.TOPIC_CONFIG) -> Entry:
    return Entry(name=name, value=value, config_source=source)


def test_topic_and_partition_lines_are_kafkas() -> None:
    import uuid

    info = TopicInfo(
        "t",
        uuid.UUID("5a3f1e8c-8a4e-4f0f-9a77-3b1c2d4e5f60"),
        False,
        [PartitionInfo(0, 0, [0], [0]), PartitionInfo(1, -1, [0], [])],
    )
    entries = [
        entry("cleanup.policy", "compact"),
        entry("compression.type", "producer", ConfigSource.DEFAULT_CONFIG),
        entry("retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
        entry("segment.bytes", "1024"),
    ]
    # the order of a Java HashMap of the four names (checked with jshell): compression.type,
    # cleanup.policy, retention.ms, segment.bytes; the DEFAULT_CONFIG one is left out
    assert topics.topic_line(info, entries) == (
        f"Topic: t\tTopicId: {kafka_uuid(info.topic_id)}\tPartitionCount: 2"
        "\tReplicationFactor: 1\tConfigs: cleanup.policy=compact,retention.ms=1000,"
        "segment.bytes=1024"
    )
    assert topics.partition_lines(info) == [
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 0\tIsr: \tElr: N/A\tLastKnownElr: N/A",
    ]
    with_offsets = topics.partition_lines(info, {("t", 0): (3, 10), ("t", 1): (0, 0)})
    assert with_offsets[0].endswith("\tLastKnownElr: N/A\tEarliestOffset: 3\tLatestOffset: 10")


def test_kafka_uuid_is_url_safe_base64_without_padding() -> None:
    import uuid

    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert kafka_uuid(uuid.UUID(bytes=b"\xff" * 16)) == "_____________________w"


# ---- actions against the broker's handlers ----------------------------------------------


def test_create_describe_alter_delete(admin: TopicAdmin, tbroker: InProcessBroker) -> None:
    assert cli(admin, "--create", "--topic", "users", "--config", "cleanup.policy=compact") == (
        "Created topic users.\n"
    )
    assert cli(admin, "--create", "--topic", "my.events", "--partitions", "2") == (
        topics.COLLISION_WARNING + "\nCreated topic my.events.\n"
    )
    assert cli(admin, "--list") == "my.events\nusers\n"
    assert cli(admin, "--list", "--topic", "my\\..*") == "my.events\n"
    ids = {n: kafka_uuid(t.topic_id) for n, t in admin.topics().items()}
    assert cli(admin, "--describe", "--topic", "users") == (
        f"Topic: users\tTopicId: {ids['users']}\tPartitionCount: 1\tReplicationFactor: 1"
        "\tConfigs: cleanup.policy=compact\n"
        "\tTopic: users\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A"
        "\tLastKnownElr: N/A\n"
    )
    assert cli(admin, "--describe", "--topics-with-overrides").splitlines() == [
        f"Topic: users\tTopicId: {ids['users']}\tPartitionCount: 1\tReplicationFactor: 1"
        "\tConfigs: cleanup.policy=compact"
    ]
    assert cli(admin, "--describe", "--topic-id", ids["my.events"]).startswith("Topic: my.events")
    assert cli(admin, "--alter", "--topic", "users", "--partitions", "3") == ""
    described = cli(admin, "--describe", "--topic", "users", "--offsets").splitlines()
    assert "PartitionCount: 3" in described[0]
    assert [line.split("\t")[2] for line in described[1:]] == [
        "Partition: 0",
        "Partition: 1",
        "Partition: 2",
    ]
    assert all(line.endswith("\tEarliestOffset: 0\tLatestOffset: 0") for line in described[1:])
    assert cli(admin, "--delete", "--topic", "my.*") == ""
    assert cli(admin, "--list") == "users\n"


def test_describe_offsets_after_records(admin: TopicAdmin, tbroker: InProcessBroker) -> None:
    cli(admin, "--create", "--topic", "t")
    records = [SimpleRecord(1_700_000_000_000 + i, b"k", b"v") for i in range(4)]
    resp = tbroker.call(produce("t", 0, bytes(build_v2_batch(records).buffer)), 9)
    assert resp.responses[0].partition_responses[0].error_code == 0
    (line,) = cli(admin, "--describe", "--topic", "t", "--offsets").splitlines()[1:]
    assert line.endswith("\tEarliestOffset: 0\tLatestOffset: 4")


def test_describe_reports_min_isr(admin: TopicAdmin) -> None:
    cli(admin, "--create", "--topic", "strict", "--config", "min.insync.replicas=2")
    cli(admin, "--create", "--topic", "loose")
    under = cli(admin, "--describe", "--under-min-isr-partitions")
    assert under == (
        "\tTopic: strict\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A"
        "\tLastKnownElr: N/A\n"
    )
    assert "Topic: loose" in cli(admin, "--describe", "--at-min-isr-partitions")
    assert cli(admin, "--describe", "--under-replicated-partitions") == ""
    assert cli(admin, "--describe", "--unavailable-partitions") == ""


def test_errors(admin: TopicAdmin) -> None:
    cli(admin, "--create", "--topic", "t")
    with pytest.raises(BrokerRefused, match=r"^Topic 't' already exists\.$") as refused:
        cli(admin, "--create", "--topic", "t")
    assert refused.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert cli(admin, "--create", "--topic", "t", "--if-not-exists") == ""
    with pytest.raises(topics.TopicCommandError, match=r"^Topic 'x' does not exist as expected$"):
        cli(admin, "--delete", "--topic", "x")
    assert cli(admin, "--delete", "--topic", "x", "--if-exists") == ""
    assert cli(admin, "--describe", "--topic", "x", "--if-exists") == ""
    with pytest.raises(topics.TopicCommandError, match="between 1 and 32767 inclusive"):
        cli(admin, "--create", "--topic", "u", "--replication-factor", "0")
    with pytest.raises(topics.TopicCommandError, match="The partitions must be greater than 0"):
        cli(admin, "--create", "--topic", "u", "--partitions", "0")
    with pytest.raises(BrokerRefused, match="replication factor") as refused:
        cli(admin, "--create", "--topic", "u", "--replication-factor", "3")
    assert refused.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(BrokerRefused) as refused:
        cli(admin, "--alter", "--topic", "t", "--partitions", "1")
    assert refused.value.code == ErrorCode.INVALID_PARTITIONS
    with pytest.raises(BrokerRefused) as refused:
        cli(admin, "--create", "--topic", "u", "--config", "cleanup.policy=sometimes")
    assert refused.value.code == ErrorCode.INVALID_CONFIG
