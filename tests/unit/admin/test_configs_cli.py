"""``broker configs``: option checks, --add-config parsing, Kafka's lines, and topic and
user configs against an in-process broker."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.admin import configs
from broker.admin.client import BrokerRefused
from broker.errors import ErrorCode
from broker.protocol.messages import DescribeConfigsResponse
from tests.unit.admin.loopback import LoopbackConnection
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_scram_credentials import with_scram

Result = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configs.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:9092", *argv])


@pytest.fixture
def cbroker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data")
    b.replica_manager.create_topic("users", 1, {})
    b.replica_manager.create_topic("orders", 1, {})
    with_scram(b)
    yield b
    b.close()


@pytest.fixture
def conn(cbroker: InProcessBroker) -> LoopbackConnection:
    return LoopbackConnection(cbroker, ("127.0.0.1", 9092))


def cli(conn: LoopbackConnection, *argv: str) -> str:
    parsed = args(*argv)
    kind, name = configs.entity(parsed)
    out = io.StringIO()
    configs.execute(conn, parsed, kind, name, out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--entity-type", "topics"], "exactly one action: --describe, --alter"),
        (["--describe", "--alter", "--topic", "t"], "exactly one action"),
        (["--describe"], "At least one entity type must be specified"),
        (["--describe", "--entity-type", "planets"], "Invalid entity type planets, the entity"),
        (
            ["--describe", "--entity-type", "brokers", "--entity-name", "0"],
            "--entity-type brokers is not served by broker configs yet",
        ),
        (["--describe", "--entity-type", "clients"], "--entity-type clients is not served"),
        (["--describe", "--topic", "t", "--entity-type", "topics"], "Duplicate entity type"),
        (["--describe", "--topic", "t", "--entity-name", "u"], "should not be used in"),
        (
            ["--alter", "--entity-type", "topics", "--add-config", "a=b"],
            "an entity name must be specified with --alter of topics",
        ),
        (["--alter", "--topic", "t"], "At least one of --add-config, --add-config-file, or"),
        (["--describe", "--topic", "t", "--add-config", "a=b"], "can't be used with option"),
    ],
)
def test_option_checks(argv: list[str], message: str) -> None:
    with pytest.raises(configs.ConfigCommandError, match=message.replace("(", r"\(")):
        configs.entity(args(*argv))


def test_entity_forms() -> None:
    assert configs.entity(args("--describe", "--topic", "t")) == ("topics", "t")
    assert configs.entity(args("--describe", "--entity-type", "topics")) == ("topics", None)
    assert configs.entity(args("--describe", "--entity-type", "users", "--entity-name", "a")) == (
        "users",
        "a",
    )


def test_parse_configs_to_be_added(tmp_path: Path) -> None:
    parse = configs.parse_configs_to_be_added
    assert parse("k1=v1,k2=[a,b], k3 = v3,") == {"k1": "v1", "k2": "a,b", "k3": "v3"}
    # an empty value is allowed (split with limit -1)
    assert parse("ssl.endpoint.identification.algorithm=") == {
        "ssl.endpoint.identification.algorithm": ""
    }
    props = tmp_path / "add.properties"
    props.write_text("retention.ms=5\nsegment.bytes=1024\n")
    assert parse("retention.ms=6", str(props)) == {"retention.ms": "6", "segment.bytes": "1024"}
    for bad in ("k1", "k=v=w", "k1=v1,,k2=v2"):
        with pytest.raises(configs.ConfigCommandError, match='format "key=val"'):
            parse(bad)
    with pytest.raises(configs.ConfigCommandError, match="Invalid character found for config key"):
        parse("k$=v")
    assert configs.parse_configs_to_be_deleted(["a,b", " c "]) == ["a", "b", "c"]


def test_entry_line_is_kafkas() -> None:
    entry = Result(
        name="cleanup.policy",
        value="compact",
        is_sensitive=False,
        synonyms=[
            Synonym(name="cleanup.policy", value="compact", source=1),
            Synonym(name="log.cleanup.policy", value="delete", source=5),
        ],
    )
    assert configs.entry_line(entry) == (
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy"
        "=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}"
    )
    hidden = Result(name="k", value=None, is_sensitive=True, synonyms=[])
    assert configs.entry_line(hidden) == "  k=null sensitive=true synonyms={}"


def test_topic_alter_describe_delete(conn: LoopbackConnection) -> None:
    assert cli(conn, "--topic", "users", "--describe") == "Dynamic configs for topic users are:\n"
    done = cli(conn, "--entity-type", "topics", "--entity-name", "users", "--alter",
               "--add-config", "cleanup.policy=[compact,delete],retention.ms=60000")  # fmt: skip
    assert done == "Completed updating config for topic users.\n"
    assert cli(conn, "--topic", "users", "--describe") == (
        "Dynamic configs for topic users are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000,"
        " DEFAULT_CONFIG:log.retention.hours=168}\n"
    )
    everything = cli(conn, "--topic", "users", "--describe", "--all").splitlines()
    assert everything[0] == "All configs for topic users are:"
    names = [line.split("=", 1)[0].strip() for line in everything[1:]]
    assert names == sorted(names) and "segment.bytes" in names and len(names) > 20
    with pytest.raises(configs.ConfigCommandError, match=r"^Invalid config\(s\): segment.bytes$"):
        cli(conn, "--topic", "users", "--alter", "--delete-config", "retention.ms,segment.bytes")
    assert cli(conn, "--topic", "users", "--alter", "--delete-config", "retention.ms") == (
        "Completed updating config for topic users.\n"
    )
    assert "retention.ms" not in cli(conn, "--topic", "users", "--describe")
    # every topic: listTopics' HashSet order
    every = cli(conn, "--entity-type", "topics", "--describe").splitlines()
    assert [line for line in every if line.startswith("Dynamic")] == [
        "Dynamic configs for topic orders are:",
        "Dynamic configs for topic users are:",
    ]


def test_topic_refusals(conn: LoopbackConnection) -> None:
    with pytest.raises(BrokerRefused, match=r"retention\.ms") as refused:
        cli(conn, "--topic", "users", "--alter", "--add-config", "retention.ms=soon")
    assert refused.value.code == ErrorCode.INVALID_CONFIG
    with pytest.raises(BrokerRefused) as refused:
        cli(conn, "--topic", "nope", "--describe")
    assert refused.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_users_go_through_scram_users(conn: LoopbackConnection) -> None:
    add = "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=x]"
    assert cli(conn, "--entity-type", "users", "--entity-name", "alice", "--alter",
               "--add-config", add) == "Completed updating config for user alice.\n"  # fmt: skip
    assert cli(conn, "--user", "alice", "--describe") == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192,"
        " SCRAM-SHA-512=iterations=4096\n"
    )
    assert cli(conn, "--user", "alice", "--alter", "--delete-config", "SCRAM-SHA-512") == (
        "Completed updating config for user alice.\n"
    )
    assert cli(conn, "--entity-type", "users", "--describe") == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n"
    )
    assert cli(conn, "--user", "bob", "--describe") == ""
    with pytest.raises(configs.ConfigCommandError, match="Only SCRAM credential configs"):
        cli(conn, "--user", "alice", "--alter", "--delete-config", "producer_byte_rate")


def test_run_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert configs.run(args("--describe", "--entity-type", "brokers")) == 1
    assert capsys.readouterr().err.startswith("--entity-type brokers is not served")
