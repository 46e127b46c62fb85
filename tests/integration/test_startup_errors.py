"""A broker process that cannot start says why in one line and exits non-zero.

``python -m broker serve`` as a subprocess on 127.0.0.1: a Kafka port or the
metrics port taken by a socket the test holds, a log dir under a regular
file, a malformed ``listeners`` value. Each ends within the test's bound with
exit code 1 (the machine) or 2 (the configuration), one ``broker:`` line on
stderr naming the listener, port, key or file, and no traceback. What the
failed start bound is closed again: the other port is free afterwards. The
harness's :class:`BrokerProcess` reads that line to start again on fresh ports
when a port it found free was taken before the broker bound it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import HOST, BrokerProcess, free_port

pytestmark = pytest.mark.integration


def serve(*overrides: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "broker", "serve"]
    for item in overrides:
        args += ["--override", item]
    env = {**os.environ, "BROKER_LOG_LEVEL": "WARNING"}
    env.setdefault("BROKER_EVENT_LOOP", "uvloop")
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def the_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("broker: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def taken() -> Iterator[int]:
    """A port on 127.0.0.1 held by a listening socket of the test."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def bindable(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def test_a_kafka_port_in_use_names_the_listener_and_port(tmp_path: Path, taken: int) -> None:
    metrics = free_port()
    proc = serve(
        f"listeners=PLAINTEXT://{HOST}:{free_port()},INTERNAL://{HOST}:{taken}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        f"metrics.listener={HOST}:{metrics}",
        f"log.dirs={tmp_path / 'data'}",
    )
    assert proc.returncode == 1
    assert the_line(proc) == (
        f"broker: cannot start: listener INTERNAL ({HOST}:{taken}): port {taken} is already in"
        " use (another broker running?); stop it or set listeners to a free port"
    )
    assert bindable(metrics)  # the metrics endpoint it had bound is closed again
    # the logs were closed: a start on the same log dir is not refused for its lock
    proc = serve(f"listeners=PLAINTEXT://{HOST}:{taken}", f"log.dirs={tmp_path / 'data'}",
                 "metrics.listener=")  # fmt: skip
    assert "already in use" in the_line(proc)


def test_the_metrics_port_in_use_names_metrics_listener(tmp_path: Path, taken: int) -> None:
    proc = serve(
        f"listeners=PLAINTEXT://{HOST}:{free_port()}",
        f"metrics.listener={HOST}:{taken}",
        f"log.dirs={tmp_path / 'data'}",
    )
    assert proc.returncode == 1
    assert the_line(proc) == (
        f"broker: cannot start: metrics.listener ({HOST}:{taken}): port {taken} is already in"
        " use (another broker running?); stop it or set metrics.listener to a free port"
    )


def test_a_log_dir_that_cannot_be_made_names_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = serve(
        f"listeners=PLAINTEXT://{HOST}:0", "metrics.listener=", f"log.dirs={blocker / 'data'}"
    )
    assert proc.returncode == 1
    line = the_line(proc)
    assert line.startswith(f"broker: cannot start: log.dirs: cannot use {blocker / 'data'}")
    assert "Not a directory; set log.dirs to directories the broker may create and write" in line


def test_a_malformed_listeners_value_is_one_line(tmp_path: Path) -> None:
    proc = serve("listeners=PLAINTEXT//127.0.0.1:9092", f"log.dirs={tmp_path / 'data'}")
    assert proc.returncode == 2
    assert the_line(proc) == (
        "broker: configuration error: Invalid value PLAINTEXT//127.0.0.1:9092 for configuration"
        " listeners: 'PLAINTEXT//127.0.0.1:9092' has no '://' after the listener name;"
        " expected NAME://host:port[,NAME://host:port]"
    )
    assert not (tmp_path / "data").exists()


def test_the_harness_hands_out_a_port_once() -> None:
    # two binds to port 0 in a row may return one port; a broker given it for
    # both listeners cannot start (the cause of a CI failure)
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_the_harness_retries_a_start_whose_port_was_taken_meanwhile(
    tmp_path: Path, taken: int
) -> None:
    broker = BrokerProcess(tmp_path / "data")
    broker.overrides["listeners"] = f"PLAINTEXT://{HOST}:{taken}"
    broker.port = taken
    with broker:
        assert broker.port != taken
        assert broker.overrides["listeners"] == f"PLAINTEXT://{HOST}:{broker.port}"
        assert f"port {taken} is already in use" in broker.log()
