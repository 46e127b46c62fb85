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
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

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
