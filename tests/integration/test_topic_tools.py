"""``broker topics``, ``configs``, ``offsets`` and ``log-dirs`` against the broker as a subprocess.

One PLAINTEXT broker serves the tool tests (each uses its own topics);
records are produced with kafka-python. A second broker with an SSL and a
SASL_PLAINTEXT listener checks what a PLAINTEXT tool says to each, and that
the same tool gets through with a ``--command-config``. Tools run in this
process through ``broker.cli.main`` (their output captured), one through
``python -m broker``.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import cli
from tests.integration.harness import HOST, BrokerProcess, free_port
from tests.integration.security_setup import Pki

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

TIMEOUT = 15
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("tools") / "data"
    data.mkdir()
    with BrokerProcess(data) as b:
        yield b


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def tool(
    capsys: pytest.CaptureFixture[str], bootstrap: str, command: str, *argv: str
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``broker <command> --bootstrap-server ... argv``."""
    capsys.readouterr()
    status = cli.main([command, "--bootstrap-server", bootstrap, "--timeout", "10", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    try:
        for partition, count in per_partition.items():
            for i in range(count):
                producer.send(topic, key=b"k%d" % i, value=b"v" * 100, partition=partition)
        producer.flush(TIMEOUT)
    finally:
        producer.close(TIMEOUT)


def test_compacted_topic_lifecycle(
    broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    b, topic = broker.bootstrap, name("users")
    assert tool(capsys, b, "topics", "--create", "--topic", topic,
                "--config", "cleanup.policy=compact") == (0, f"Created topic {topic}.\n", "")  # fmt: skip
    status, out, err = tool(capsys, b, "topics", "--create", "--topic", topic)
    assert (status, out) == (1, "")
    assert err == f"Error while executing topic command : Topic '{topic}' already exists.\n"
    status, out, _ = tool(capsys, b, "topics", "--describe", "--topic", topic)
    head, part = out.splitlines()
    fields = head.split("\t")
    assert fields[0] == f"Topic: {topic}" and fields[1].startswith("TopicId: ")
    assert fields[2:] == ["PartitionCount: 1", "ReplicationFactor: 1",
                          "Configs: cleanup.policy=compact"]  # fmt: skip
    assert part == (
        f"\tTopic: {topic}\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A"
        "\tLastKnownElr: N/A"
    )
    assert tool(capsys, b, "topics", "--alter", "--topic", topic, "--partitions", "3") == (
        0,
        "",
        "",
    )
    produce(b, topic, {0: 3, 2: 5})
    status, out, _ = tool(capsys, b, "topics", "--describe", "--topic", topic, "--offsets")
    assert "PartitionCount: 3" in out.splitlines()[0]
    assert [line.rsplit("\t", 2)[1:] for line in out.splitlines()[1:]] == [
        ["EarliestOffset: 0", "LatestOffset: 3"],
        ["EarliestOffset: 0", "LatestOffset: 0"],
        ["EarliestOffset: 0", "LatestOffset: 5"],
    ]
    assert tool(capsys, b, "topics", "--list", "--topic", topic) == (0, topic + "\n", "")
    assert tool(capsys, b, "topics", "--delete", "--topic", topic) == (0, "", "")
    status, _, err = tool(capsys, b, "topics", "--describe", "--topic", topic)
    assert status == 1 and err.endswith(f"Topic '{topic}' does not exist as expected\n")


def test_configs_alter_describe_delete(
    broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    b, topic = broker.bootstrap, name("conf")
    assert tool(capsys, b, "topics", "--create", "--topic", topic)[0] == 0
    done = tool(capsys, b, "configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
                "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")  # fmt: skip
    assert done == (0, f"Completed updating config for topic {topic}.\n", "")
    status, out, _ = tool(capsys, b, "configs", "--topic", topic, "--describe")
    assert out.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms="
        "3600000, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    # kafka-topics.sh shows the overrides too (in HashMap order)
    head = tool(capsys, b, "topics", "--describe", "--topic", topic)[1].splitlines()[0]
    shown = head.split("\tConfigs: ")[1]
    assert sorted(shown.replace(",delete", "+delete").split(",")) == [
        "cleanup.policy=compact+delete",
        "retention.ms=3600000",
    ]
    assert tool(capsys, b, "configs", "--topic", topic, "--alter",
                "--delete-config", "retention.ms")[0] == 0  # fmt: skip
    status, out, _ = tool(capsys, b, "configs", "--topic", topic, "--describe")
    assert [line.split("=")[0].strip() for line in out.splitlines()[1:]] == ["cleanup.policy"]
    status, _, err = tool(capsys, b, "configs", "--topic", topic, "--alter",
                          "--add-config", "retention.ms=soon")  # fmt: skip
    assert status == 1 and err.startswith("Error while executing config command: Invalid value")
    status, _, err = tool(capsys, b, "configs", "--entity-type", "brokers", "--entity-name", "0",
                          "--describe")  # fmt: skip
    assert status == 1 and err.startswith("--entity-type brokers is not served")
    status, out, _ = tool(capsys, b, "configs", "--topic", topic, "--describe", "--all")
    assert out.splitlines()[0] == f"All configs for topic {topic} are:"
    assert any(line.startswith("  segment.bytes=") for line in out.splitlines())


def test_offsets_after_producing(broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    b, topic = broker.bootstrap, name("offs")
    assert tool(capsys, b, "topics", "--create", "--topic", topic, "--partitions", "2")[0] == 0
    produce(b, topic, {0: 4, 1: 2})
    assert tool(capsys, b, "offsets", "--topic", topic) == (
        0, f"{topic}:0:4\n{topic}:1:2\n", "",
    )  # fmt: skip
    assert tool(capsys, b, "offsets", "--topic", topic, "--time", "earliest")[1] == (
        f"{topic}:0:0\n{topic}:1:0\n"
    )
    assert tool(capsys, b, "offsets", "--topic-partitions", f"{topic}:1", "--time", "-1")[1] == (
        f"{topic}:1:2\n"
    )
    status, _, err = tool(capsys, b, "offsets", "--topic", "no-such-topic-.*")
    assert status == 1
    assert (
        err == "Error occurred: Could not match any topic-partitions with the specified filters\n"
    )


def test_log_dirs_json(broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    b, topic = broker.bootstrap, name("dirs")
    assert tool(capsys, b, "topics", "--create", "--topic", topic, "--partitions", "2")[0] == 0
    produce(b, topic, {1: 3})
    status, out, _ = tool(capsys, b, "log-dirs", "--describe", "--topic-list", topic)
    head, received, document = out.splitlines()
    assert (status, head) == (0, "Querying brokers for log directories information")
    assert received == "Received log directory information from brokers 0"
    parsed = json.loads(document)
    assert parsed["version"] == 1 and document.endswith(',"version":1}')
    (entry,) = parsed["brokers"]
    (log_dir,) = entry["logDirs"]
    assert (entry["broker"], log_dir["error"], log_dir["logDir"]) == (0, None, str(broker.data_dir))
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sizes[f"{topic}-0"] == 0 and sizes[f"{topic}-1"] > 300
    assert {p["offsetLag"] for p in log_dir["partitions"]} == {0}


def test_python_m_broker_topics(broker: BrokerProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "broker", "topics", "--bootstrap-server", broker.bootstrap,
         "--list", "--exclude-internal"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "__consumer_offsets" not in done.stdout


# ---- a PLAINTEXT tool against TLS and SASL listeners --------------------------------------


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, dict, Path]]:
    root = tmp_path_factory.mktemp("tool-listeners")
    pki = Pki.make(root / "pki")
    data = root / "data"
    data.mkdir()
    b = BrokerProcess(data)
    ports = {"PLAIN": b.port, "SSL": free_port(), "SASL_PLAINTEXT": free_port()}
    password = secrets.token_urlsafe(12)
    b.overrides.update(
        {
            "listeners": ",".join(f"{n}://{HOST}:{p}" for n, p in ports.items()),
            "listener.security.protocol.map": "PLAIN:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            **pki.server_overrides("SSL"),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f'{PLAIN_LOGIN} required user_admin="{password}";'
            ),
        }
    )
    ssl_config = root / "ssl.properties"
    ssl_config.write_text(
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n"
    )
    sasl_config = root / "sasl.properties"
    sasl_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_LOGIN} required username="admin" password="{password}";\n'
    )
    with b:
        yield b, ports, root


def test_plaintext_tool_against_a_tls_listener(
    secured: tuple[BrokerProcess, dict, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, ports, root = secured
    bootstrap = f"{HOST}:{ports['SSL']}"
    status, _, err = tool(capsys, bootstrap, "topics", "--list")
    assert status == 1
    assert "the listener may need TLS or SASL" in err or "the listener needs TLS" in err, err
    assert "--command-config FILE" in err and "security.protocol=SSL" in err
    status, _, err = tool(capsys, bootstrap, "topics", "--command-config",
                          str(root / "ssl.properties"), "--list")  # fmt: skip
    assert (status, err) == (0, "")


def test_plaintext_tool_against_a_sasl_listener(
    secured: tuple[BrokerProcess, dict, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, ports, root = secured
    bootstrap = f"{HOST}:{ports['SASL_PLAINTEXT']}"
    status, _, err = tool(capsys, bootstrap, "offsets")
    assert status == 1
    assert "answered ApiVersions, then closed the connection on Metadata" in err, err
    assert "may need SASL" in err and "--command-config FILE" in err
    assert "security.protocol=SASL_PLAINTEXT" in err
    config = str(root / "sasl.properties")
    topic = name("sasl")
    done = tool(
        capsys, bootstrap, "topics", "--command-config", config, "--create", "--topic", topic
    )
    assert done == (0, f"Created topic {topic}.\n", "")
    assert tool(capsys, bootstrap, "offsets", "--command-config", config, "--topic", topic) == (
        0, f"{topic}:0:0\n", "",
    )  # fmt: skip
