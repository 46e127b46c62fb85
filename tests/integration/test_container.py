"""The container image, built and run with podman.

Builds the base images when they are missing and the image (both cached by
podman after the first run), then runs it: as a non-root user with the
compiled twin, through tini and the BROKER_* entrypoint, and end to end:
host networking on free 127.0.0.1 ports, readiness, the health check, records
produced with confluent-kafka, the metrics, SIGTERM, exit code 0 and the
clean-shutdown marker in the mounted log dir. Every container gets a unique
name and is removed by the test that started it.

CI installs podman, buildah, runc and mmdebstrap (scripts/install-system-deps.sh);
a missing tool fails these tests, it does not skip them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import free_port

pytestmark = [pytest.mark.container, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
CONTAINER_DIR = REPO / "deploy" / "container"
CONTAINERS_CONF = CONTAINER_DIR / "containers.conf"
BUILD_TIMEOUT_S = 1800


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(
            f"{tool} is not installed: run `make test-deps` (scripts/install-system-deps.sh)",
            pytrace=False,
        )


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(
    *args: str, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["podman", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=podman_env(),
        check=False,
    )
    if check and proc.returncode != 0:
        pytest.fail(f"podman {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def image() -> str:
    """The broker image, built by deploy/container/build-image.sh."""
    for tool in ("podman", "buildah", "runc", "mmdebstrap"):
        require(tool)
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", str(CONTAINER_DIR / "build-image.sh")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={**podman_env(), "PYTHON": sys.executable},
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"build-image.sh exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    name = proc.stdout.strip().splitlines()[-1]
    print(f"image {name} ready in {time.monotonic() - start:.0f} s")
    return name


def unique_name() -> str:
    return f"broker-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def container_name() -> Iterator[str]:
    """A unique container name; whatever runs under it is removed afterwards."""
    name = unique_name()
    try:
        yield name
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)


def test_image_configuration(image: str) -> None:
    (info,) = json.loads(podman("image", "inspect", image).stdout)
    config = info["Config"]
    assert config["User"] == "10001:10001"
    assert set(config["ExposedPorts"]) == {"9092/tcp", "9404/tcp"}
    assert set(config["Volumes"]) == {"/var/lib/broker/data"}
    assert config["Entrypoint"][:2] == ["/usr/bin/tini", "--"]
    assert config["StopSignal"] == "SIGTERM"
    # docker format: the HEALTHCHECK survived the build
    health = info.get("Healthcheck")
    assert health, "no HEALTHCHECK in the image (built without --format docker?)"
    assert health["Test"][:4] == ["CMD", "python", "-m", "broker.app_env"]
    assert health["Test"][4] == "healthcheck"


def test_runs_as_non_root_with_the_compiled_twin(image: str, container_name: str) -> None:
    twins = [
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in sorted((REPO / "broker").rglob("_*_c.pyx"))
    ]
    assert twins
    script = (
        "import importlib, os, pathlib, sys\n"
        "p = pathlib.Path('/var/lib/broker/data/probe'); p.write_text('x')\n"
        "print(os.getuid(), os.getgid())\n"
        "for name in sys.argv[1:]:\n"
        "    print(name, importlib.import_module(name).__file__.endswith('.so'))\n"
    )
    proc = podman(
        "run", "--rm", "--name", container_name, "--network", "none",
        "--entrypoint", "python", image, "-I", "-c", script, *twins,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    assert lines[0] == "10001 10001"
    assert lines[1:] == [f"{t} True" for t in twins]
    # and the modules that choose between the twins pick the compiled ones
    proc = podman(
        "run", "--rm", "--name", container_name, "--network", "none",
        "--entrypoint", "python", image, "-I", "-c",
        "from broker.records import scan; print(scan.IMPLEMENTATION)",
    )  # fmt: skip
    assert proc.stdout.strip() == "compiled"


def test_entrypoint_hands_other_commands_to_the_broker(image: str, container_name: str) -> None:
    proc = podman("run", "--rm", "--name", container_name, "--network", "none", image, "--version")
    assert proc.stdout.strip() == "broker 0.1.0"


def test_entrypoint_refuses_a_malformed_variable(image: str, container_name: str) -> None:
    proc = podman(
        "run", "--rm", "--name", container_name, "--network", "none",
        "-e", "BROKER_LOG____DIRS=/x", image,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "BROKER_LOG____DIRS" in proc.stderr


def test_healthcheck_reports_a_broker_that_does_not_answer(image: str, container_name: str) -> None:
    # the image's health check, run by hand in a container whose broker never starts
    proc = podman(
        "run", "--rm", "--name", container_name, "--network", "none",
        "--entrypoint", "python", image,
        "-m", "broker.app_env", "healthcheck", "/etc/broker/server.properties",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "http://127.0.0.1:9404/healthz" in proc.stderr


# ---- end to end: serve, produce, scrape, SIGTERM ---------------------------------------

BROKER_UID = 10001
TOPIC = "container-e2e"
RECORDS = [
    (f"key-{i}".encode(), f"container value {i} {uuid.uuid4().hex}".encode()) for i in range(5)
]


def http_get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def container_state(name: str) -> dict[str, object]:
    (info,) = json.loads(podman("container", "inspect", name).stdout)
    state: dict[str, object] = info["State"]
    return state


def wait_ready(name: str, metrics_port: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if container_state(name)["Status"] != "running":
            logs = podman("logs", name, check=False)
            pytest.fail(f"the broker container stopped while starting:\n{logs.stdout}{logs.stderr}")
        try:
            if http_get(metrics_port, "/readyz")[0] == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.25)
    logs = podman("logs", name, check=False)
    pytest.fail(f"/readyz not 200 after {timeout} s:\n{logs.stdout}{logs.stderr}")


def produce(kafka_port: int) -> list[tuple[int, int]]:
    """(partition, offset) of each record, acknowledged with acks=all.

    kafka-python: librdkafka (confluent-kafka) only sends magic 2 batches to a
    broker that also advertises Fetch v4+, and falls back to magic 0 inside
    Produce v10 otherwise, which Kafka (and this broker) refuse.
    """
    with warnings.catch_warnings():  # kafka-python's import uses a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{kafka_port}",
        acks="all",
        linger_ms=0,
        request_timeout_ms=30000,
    )
    try:
        futures = [producer.send(TOPIC, key=key, value=value) for key, value in RECORDS]
        producer.flush(45)
        metadata = [f.get(timeout=45) for f in futures]
    finally:
        producer.close(timeout=10)
    return [(m.partition, m.offset) for m in metadata]


def scrape(metrics_port: int) -> str:
    status, body = http_get(metrics_port, "/metrics")
    assert status == 200
    return body.decode()


def sample_value(exposition: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(exposition):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    raise AssertionError(f"{name}{labels} not in the exposition")


def test_serve_produce_scrape_and_stop_cleanly(
    image: str, container_name: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, BROKER_UID, BROKER_UID)
    kafka_port, metrics_port = free_port(), free_port()
    listener = f"PLAINTEXT://127.0.0.1:{kafka_port}"
    env = {
        "BROKER_LISTENERS": listener,
        "BROKER_ADVERTISED_LISTENERS": listener,
        "BROKER_METRICS_LISTENER": f"127.0.0.1:{metrics_port}",
    }
    # the suite's two runs exercise both twins and both loops inside the image too
    for switch in ("BROKER_NO_EXTENSIONS", "BROKER_EVENT_LOOP"):
        if switch in os.environ:
            env[switch] = os.environ[switch]
    env_args = [a for k, v in env.items() for a in ("--env", f"{k}={v}")]
    podman(
        "run", "--detach", "--name", container_name, "--network", "host",
        "--health-interval", "disable",  # no systemd timers here; run it by hand below
        "--volume", f"{data}:/var/lib/broker/data", *env_args, image,
    )  # fmt: skip
    wait_ready(container_name, metrics_port)

    # the image's HEALTHCHECK, with the metrics port from BROKER_METRICS_LISTENER
    health = podman("healthcheck", "run", container_name, check=False)
    assert health.returncode == 0, health.stdout + health.stderr

    delivered = produce(kafka_port)
    assert sorted(delivered) == [(0, i) for i in range(len(RECORDS))]

    exposition = scrape(metrics_port)
    assert sample_value(exposition, "kafka_topic_messages_in_total", topic=TOPIC) == len(RECORDS)
    assert sample_value(exposition, "kafka_requests_total", request="Produce") >= 1
    expected_impl = "python" if os.environ.get("BROKER_NO_EXTENSIONS") else "compiled"
    assert (
        sample_value(exposition, "kafka_broker_build_info", records_implementation=expected_impl)
        == 1
    )
    lint = subprocess.run(
        ["promtool", "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr

    # the records are in the mounted log dir, in Kafka's file layout
    segment = data / f"{TOPIC}-0" / "00000000000000000000.log"
    content = segment.read_bytes()
    for key, value in RECORDS:
        assert key in content and value in content

    # SIGTERM through tini: a clean shutdown, exit code 0, the marker written
    podman("kill", "--signal", "TERM", container_name)
    waited = podman("wait", container_name, timeout=150)
    logs = podman("logs", container_name, check=False)
    assert waited.stdout.strip() == "0", logs.stdout + logs.stderr
    assert (data / ".kafka_cleanshutdown").exists(), sorted(p.name for p in data.iterdir())


PROMETHEUS_TAG = "localhost/broker-prometheus:bookworm"


@pytest.fixture(scope="module")
def prometheus_image() -> str:
    """Prometheus from Debian's package (deploy/container/build-prometheus-image.sh):
    compose's route on a host with no image registry."""
    for tool in ("podman", "mmdebstrap"):
        require(tool)
    proc = subprocess.run(
        ["bash", str(CONTAINER_DIR / "build-prometheus-image.sh")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={**podman_env(), "PROMETHEUS_TAG": PROMETHEUS_TAG},
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"build-prometheus-image.sh exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return PROMETHEUS_TAG


def prometheus_query(port: int, query: str) -> list[dict[str, object]]:
    status, body = http_get(port, "/api/v1/query?query=" + urllib.parse.quote(query))
    assert status == 200, body
    result: list[dict[str, object]] = json.loads(body)["data"]["result"]
    return result


def test_prometheus_image_from_debian_scrapes_the_broker_with_the_rules(
    image: str, prometheus_image: str, container_name: str, tmp_path: Path
) -> None:
    kafka_port, metrics_port, prometheus_port = free_port(), free_port(), free_port()
    listener = f"PLAINTEXT://127.0.0.1:{kafka_port}"
    podman(
        "run", "--detach", "--name", container_name, "--network", "host",
        "--health-interval", "disable",
        "--env", f"BROKER_LISTENERS={listener}", "--env", f"BROKER_ADVERTISED_LISTENERS={listener}",
        "--env", f"BROKER_METRICS_LISTENER=127.0.0.1:{metrics_port}", image,
    )  # fmt: skip
    wait_ready(container_name, metrics_port)
    # compose's own configuration, the target moved to the host network's port
    config = tmp_path / "prometheus"
    config.mkdir()
    shipped = (REPO / "deploy" / "prometheus" / "prometheus.yml").read_text()
    assert '"broker:9404"' in shipped
    (config / "prometheus.yml").write_text(
        shipped.replace('"broker:9404"', f'"127.0.0.1:{metrics_port}"').replace(
            "scrape_interval: 15s", "scrape_interval: 1s"
        )
    )
    shutil.copy(REPO / "deploy" / "prometheus" / "rules.yml", config / "rules.yml")
    config.chmod(0o755)
    prometheus = unique_name()
    try:
        podman(
            "run", "--detach", "--name", prometheus, "--network", "host",
            "--volume", f"{config}:/etc/prometheus:ro", prometheus_image,
            "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
        )  # fmt: skip
        deadline = time.monotonic() + 60
        up: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            try:
                up = prometheus_query(prometheus_port, 'up{job="broker"}')
            except OSError:
                up = []  # not listening yet
            if up and up[0]["value"][1] == "1":  # type: ignore[index]
                break
            time.sleep(0.5)
        logs = podman("logs", prometheus, check=False)
        assert up and up[0]["value"][1] == "1", (up, logs.stderr[-2000:])  # type: ignore[index]
        status, body = http_get(prometheus_port, "/api/v1/rules")
        groups = json.loads(body)["data"]["groups"]
        assert status == 200 and groups and all(g["rules"] for g in groups), body[:500]
    finally:
        podman("rm", "--force", "--time", "0", prometheus, check=False)
