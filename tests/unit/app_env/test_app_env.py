"""broker.app_env: BROKER_* environment variables as Kafka keys, the entrypoint, the health check."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import app_env
from broker.app_env import (
    PROCESS_SWITCHES,
    healthcheck,
    key_from_env_name,
    metrics_listener,
    overrides_from_env,
    probe_url,
    serve_argv,
)
from broker.config import BROKER_KEYS, BROKER_TOPIC_SYNONYMS, BrokerConfig
from broker.errors import InvalidConfigError

REPO = Path(__file__).resolve().parents[3]


def env_name_for(key: str) -> str:
    """The documented inverse: '-' -> ___, '_' -> __, '.' -> _, upper case."""
    return "BROKER_" + key.replace("-", "___").replace("_", "__").replace(".", "_").upper()


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("BROKER_LOG_DIRS", "log.dirs"),
        ("BROKER_ADVERTISED_LISTENERS", "advertised.listeners"),
        ("BROKER_LISTENERS", "listeners"),
        ("BROKER_METRICS_LISTENER", "metrics.listener"),
        ("BROKER_LOG_RETENTION_HOURS", "log.retention.hours"),
        ("BROKER_NODE_ID", "node.id"),
        ("BROKER_SOME__KEY", "some_key"),
        ("BROKER_SOME___KEY", "some-key"),
        ("BROKER_A__B_C___D", "a_b.c-d"),
    ],
)
def test_env_name_to_key(name: str, key: str) -> None:
    assert key_from_env_name(name) == key
    assert overrides_from_env({name: "v"}) == {key: "v"}


def test_every_declared_broker_key_round_trips() -> None:
    keys = set(BROKER_KEYS) | set(BROKER_TOPIC_SYNONYMS)
    assert len(keys) > 30
    for key in keys:
        assert key_from_env_name(env_name_for(key)) == key


def test_mapped_environment_is_accepted_by_broker_config() -> None:
    env = {
        "BROKER_LOG_DIRS": "/var/lib/broker/data,/mnt/more",
        "BROKER_LISTENERS": "PLAINTEXT://127.0.0.1:19092",
        "BROKER_ADVERTISED_LISTENERS": "PLAINTEXT://broker-0.broker:9092",
        "BROKER_METRICS_LISTENER": "127.0.0.1:19404",
        "BROKER_LOG_SEGMENT_BYTES": "1048576",
        "BROKER_NUM_PARTITIONS": "3",
    }
    cfg = BrokerConfig.from_properties(overrides_from_env(env))
    assert cfg.log_dirs == [Path("/var/lib/broker/data"), Path("/mnt/more")]
    assert cfg.get("listeners") == ("PLAINTEXT://127.0.0.1:19092",)
    assert cfg.get("metrics.listener") == "127.0.0.1:19404"
    assert cfg.get("num.partitions") == 3
    assert cfg.topic_defaults().segment_bytes == 1048576


def test_a_misspelt_variable_is_refused_by_the_config_not_ignored() -> None:
    overrides = overrides_from_env({"BROKER_LOG_DIRZ": "/data"})
    assert overrides == {"log.dirz": "/data"}
    with pytest.raises(InvalidConfigError, match=r"log\.dirz"):
        BrokerConfig.from_properties(overrides)


def test_values_are_kept_verbatim() -> None:
    env = {
        "BROKER_A": "x=y=z",
        "BROKER_B": "  spaced  ",
        "BROKER_C": "",
        "BROKER_D": "PLAINTEXT://[::1]:9092",
    }
    assert overrides_from_env(env) == {
        "a": "x=y=z",
        "b": "  spaced  ",
        "c": "",
        "d": "PLAINTEXT://[::1]:9092",
    }


def test_other_variables_are_ignored() -> None:
    env = {
        "PATH": "/usr/bin",
        "KAFKA_LOG_DIRS": "/kafka",
        "broker_log_dirs": "/lower-case-prefix",
        "XBROKER_LOG_DIRS": "/x",
        "BROKER": "bare",
    }
    assert overrides_from_env(env) == {}


def test_process_switches_are_not_configuration() -> None:
    env = dict.fromkeys(PROCESS_SWITCHES, "1") | {"BROKER_LOG_DIRS": "/d"}
    assert overrides_from_env(env) == {"log.dirs": "/d"}


def test_kubernetes_service_links_are_not_configuration() -> None:
    # what the kubelet injects for a Service named "broker" with ports 9092 and 9404
    env = {
        "BROKER_SERVICE_HOST": "10.0.0.7",
        "BROKER_SERVICE_PORT": "9092",
        "BROKER_SERVICE_PORT_KAFKA": "9092",
        "BROKER_SERVICE_PORT_METRICS": "9404",
        "BROKER_PORT": "tcp://10.0.0.7:9092",
        "BROKER_PORT_9092_TCP": "tcp://10.0.0.7:9092",
        "BROKER_PORT_9092_TCP_PROTO": "tcp",
        "BROKER_PORT_9092_TCP_PORT": "9092",
        "BROKER_PORT_9092_TCP_ADDR": "10.0.0.7",
        "BROKER_PORT_9404_UDP": "udp://10.0.0.7:9404",
        "BROKER_LOG_DIRS": "/d",
    }
    assert overrides_from_env(env) == {"log.dirs": "/d"}
    # near misses are configuration (and then rejected by BrokerConfig if unknown)
    assert overrides_from_env({"BROKER_PORTS": "1"}) == {"ports": "1"}
    assert overrides_from_env({"BROKER_SERVICE_HOSTS": "1"}) == {"service.hosts": "1"}


def test_every_switch_the_code_reads_is_declared() -> None:
    """A new BROKER_* switch read with os.environ must join PROCESS_SWITCHES,
    or the entrypoint would pass it to the broker as an unknown key."""
    pattern = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["'](BROKER_[A-Z0-9_]+)""")
    read: set[str] = set()
    for path in [*(REPO / "broker").rglob("*.py"), *(REPO / "tests").glob("*.py")]:
        read |= set(pattern.findall(path.read_text()))
    assert "BROKER_NO_EXTENSIONS" in read  # the scan sees what it should
    assert read <= PROCESS_SWITCHES, read - PROCESS_SWITCHES


@pytest.mark.parametrize(
    "name",
    ["BROKER_", "BROKER__LOG", "BROKER_LOG_", "BROKER_LOG____DIRS", "BROKER_A_____B"],
)
def test_malformed_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidConfigError):
        overrides_from_env({name: "v"})


def test_two_variables_for_one_key_are_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"both set log\.dirs"):
        overrides_from_env({"BROKER_LOG_DIRS": "/a", "BROKER_log_dirs": "/b"})


def test_custom_prefix() -> None:
    env = {"KAFKA_LOG_DIRS": "/k", "BROKER_LOG_DIRS": "/b"}
    assert overrides_from_env(env, prefix="KAFKA_") == {"log.dirs": "/k"}


def test_result_does_not_depend_on_environment_order() -> None:
    env = {"BROKER_Z": "1", "BROKER_A": "2", "BROKER_M": "3"}
    reordered = dict(reversed(env.items()))
    assert list(overrides_from_env(env)) == list(overrides_from_env(reordered)) == ["a", "m", "z"]


# ---- the entrypoint's command line ------------------------------------------------------


def test_serve_gets_overrides_after_the_file_and_before_explicit_flags() -> None:
    env = {"BROKER_LOG_DIRS": "/d", "BROKER_NODE_ID": "3", "HOME": "/root"}
    argv = serve_argv(["serve", "/etc/broker/server.properties", "--override", "node.id=5"], env)
    assert argv == [
        "serve",
        "/etc/broker/server.properties",
        "--override",
        "log.dirs=/d",
        "--override",
        "node.id=3",
        "--override",
        "node.id=5",
    ]


def test_serve_without_a_file() -> None:
    assert serve_argv(["serve"], {"BROKER_LOG_DIRS": "/d"}) == [
        "serve",
        "--override",
        "log.dirs=/d",
    ]
    assert serve_argv(["serve", "--override", "a=b"], {"BROKER_C": "d"}) == [
        "serve",
        "--override",
        "c=d",
        "--override",
        "a=b",
    ]


def test_other_commands_pass_through_untouched() -> None:
    env = {"BROKER_LOG_DIRS": "/d"}
    assert serve_argv(["--version"], env) == ["--version"]
    assert serve_argv(["dump-log", "x.log"], env) == ["dump-log", "x.log"]
    assert serve_argv([], env) == []


def test_entrypoint_execs_the_broker_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "broker.app_env", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "broker 0.1.0"


def test_entrypoint_refuses_a_malformed_variable_before_starting() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "broker.app_env", "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"BROKER_LOG____DIRS": "/d", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert "BROKER_LOG____DIRS" in proc.stderr


# ---- the health check -------------------------------------------------------------------


def test_metrics_listener_resolution_order(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    assert metrics_listener(None, {}) == "0.0.0.0:9404"
    assert metrics_listener(props, {}) == "0.0.0.0:9404"  # missing file: defaults
    props.write_text("# ops\nmetrics.listener=0.0.0.0:19404\nlog.dirs=/d\n")
    assert metrics_listener(props, {}) == "0.0.0.0:19404"
    env = {"BROKER_METRICS_LISTENER": "127.0.0.1:29404"}
    assert metrics_listener(props, env) == "127.0.0.1:29404"


@pytest.mark.parametrize(
    ("listener", "url"),
    [
        ("0.0.0.0:9404", "http://127.0.0.1:9404/healthz"),
        (":9404", "http://127.0.0.1:9404/healthz"),
        ("127.0.0.2:9405", "http://127.0.0.2:9405/healthz"),
        ("[::]:9404", "http://[::1]:9404/healthz"),
        ("[::1]:9404", "http://[::1]:9404/healthz"),
        ("broker-0.broker:9404", "http://broker-0.broker:9404/healthz"),
    ],
)
def test_probe_url(listener: str, url: str) -> None:
    assert probe_url(listener) == url


@pytest.mark.parametrize("listener", ["9404", "host:", "host:port"])
def test_probe_url_refuses_what_is_not_host_port(listener: str) -> None:
    with pytest.raises(InvalidConfigError):
        probe_url(listener)


@pytest.fixture
def ops_endpoint() -> Iterator[int]:
    """The broker's real /healthz endpoint on 127.0.0.1, on a loop in a thread."""
    import asyncio

    from broker.server.http import OpsEndpoint

    loop = asyncio.new_event_loop()
    endpoint = OpsEndpoint(lambda: b"")
    port = loop.run_until_complete(endpoint.start("127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.run_until_complete(endpoint.stop())
        loop.close()


def test_healthcheck_against_the_real_endpoint(
    ops_endpoint: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"BROKER_METRICS_LISTENER": f"0.0.0.0:{ops_endpoint}"}
    assert healthcheck([], env) == 0
    props = tmp_path / "server.properties"
    props.write_text(f"metrics.listener=127.0.0.1:{ops_endpoint}\n")
    assert healthcheck([str(props)], {}) == 0
    assert capsys.readouterr().err == ""


def test_healthcheck_fails_when_nothing_listens(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the port is free again: connection refused
    assert healthcheck([], {"BROKER_METRICS_LISTENER": f"127.0.0.1:{port}"}) == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_healthcheck_fails_on_a_non_200_answer(
    ops_endpoint: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /readyz answers 503 until the app flips ready: the same probe code must see a failure
    monkeypatch.setattr(app_env, "probe_url", lambda listener: f"http://{listener}/readyz")
    assert healthcheck([], {"BROKER_METRICS_LISTENER": f"127.0.0.1:{ops_endpoint}"}) == 1


def test_healthcheck_fails_when_the_endpoint_is_off(capsys: pytest.CaptureFixture[str]) -> None:
    assert healthcheck([], {"BROKER_METRICS_LISTENER": ""}) == 1
    assert "empty" in capsys.readouterr().err


# ---- misspelt variables and serve --check -------------------------------------------------


def test_a_misspelt_variable_is_named_with_the_variable_it_should_be() -> None:
    with pytest.raises(InvalidConfigError) as err:
        app_env.check_names({"BROKER_NUM_PARTITION": "3", "BROKER_LOG_DIRS": "/d"})
    assert str(err.value) == (
        "environment variable BROKER_NUM_PARTITION sets num.partition, which is not a"
        " configuration key: did you mean BROKER_NUM_PARTITIONS (num.partitions)?"
    )
    with pytest.raises(InvalidConfigError, match=r"the process switch BROKER_EVENT_LOOP\?"):
        app_env.check_names({"BROKER_EVENTLOOP": "asyncio"})
    with pytest.raises(InvalidConfigError, match=r"BROKER_ZZZZ sets zzzz.*: unset it"):
        app_env.check_names({"BROKER_ZZZZ": "1"})
    # declared keys, switches and service links pass
    app_env.check_names(
        {"BROKER_NUM_PARTITIONS": "3", "BROKER_EVENT_LOOP": "asyncio", "BROKER_PORT": "tcp://x"}
    )


@pytest.mark.parametrize(
    "key", ["some_key.x-y", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"]
)
def test_variable_names_for_keys_map_back(key: str) -> None:
    assert key_from_env_name(app_env.env_name_for_key(key)) == key


def entrypoint(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.app_env", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_entrypoint_names_a_misspelt_variable_in_one_line() -> None:
    proc = entrypoint({"BROKER_NUM_PARTITION": "3"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "broker: configuration error: environment variable BROKER_NUM_PARTITION sets"
        " num.partition, which is not a configuration key: did you mean"
        " BROKER_NUM_PARTITIONS (num.partitions)?"
    ]


def test_entrypoint_serve_check(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = entrypoint(
        {"BROKER_LOG_DIRS": str(data), "BROKER_LISTENERS": "PLAINTEXT://127.0.0.1:19092"},
        "--check",
        "--override",
        "num.partitions=3",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "configuration OK: listeners PLAINTEXT://127.0.0.1:19092 (PLAINTEXT);"
        f" metrics.listener 0.0.0.0:9404; log.dirs {data}\n"
    )
    assert not data.exists()
    proc = entrypoint({"BROKER_LISTENERS": "PLAINTEXT://127.0.0.1:x"}, "--check")
    assert proc.returncode == 2
    assert "port 'x' of 'PLAINTEXT://127.0.0.1:x' is not a number" in proc.stderr
    assert "Traceback" not in proc.stderr
