"""deploy/compose.yaml, checked against the Dockerfile and the broker's keys."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml

from broker.app_env import overrides_from_env
from broker.config import broker_key
from tests.unit.deploy.support import (
    DEPLOY,
    REPO,
    dockerfile,
    duration_seconds,
    exposed_ports,
    healthcheck,
    one,
    require_tool,
    runtime_stage,
    volumes,
)


def global_args() -> list[tuple[str, str]]:
    return [
        (name, default)
        for name, _, default in (
            i.args.partition("=") for i in dockerfile() if i.keyword == "ARG" and i.stage == -1
        )
    ]


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def broker() -> dict[str, Any]:
    service = compose()["services"]["broker"]
    assert isinstance(service, dict)
    return service


def test_services() -> None:
    assert set(compose()["services"]) == {"broker", "prometheus", "grafana"}


def test_broker_builds_this_dockerfile_offline() -> None:
    build = broker()["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == REPO
    assert (context / build["dockerfile"]).resolve() == REPO / "Dockerfile"
    assert build["network"] == "none"
    declared = {i.args.partition("=")[0] for i in dockerfile() if i.keyword == "ARG"}
    assert set(build["args"]) <= declared


def test_broker_ports_are_the_exposed_ones_on_loopback() -> None:
    published = [p.split(":") for p in broker()["ports"]]
    assert all(host == "127.0.0.1" for host, _, _ in published)
    assert sorted(int(container) for _, _, container in published) == sorted(exposed_ports())


def test_broker_volume_is_the_image_volume() -> None:
    declared = set(compose()["volumes"])
    targets = []
    for spec in broker()["volumes"]:
        source, target = spec.split(":")[:2]
        assert source in declared
        targets.append(target)
    assert targets == volumes()


def test_broker_healthcheck_is_the_image_healthcheck() -> None:
    options, cmd = healthcheck()
    hc = broker()["healthcheck"]
    assert hc["test"] == ["CMD", *cmd]
    for compose_key, docker_key in (
        ("interval", "interval"),
        ("timeout", "timeout"),
        ("start_period", "start-period"),
    ):
        assert duration_seconds(hc[compose_key]) == duration_seconds(options[docker_key])
    assert hc["retries"] == int(options["retries"])


def test_broker_stops_with_the_image_signal_and_enough_grace() -> None:
    assert broker()["stop_signal"] == one(runtime_stage(), "STOPSIGNAL").args
    assert duration_seconds(broker()["stop_grace_period"]) >= 60
    assert "init" not in broker()  # the image's tini already is PID 1


def test_broker_environment_names_known_keys() -> None:
    env = {k: str(v) for k, v in broker()["environment"].items()}
    overrides = overrides_from_env(env)
    assert overrides and len(overrides) == len(env)
    for key in overrides:
        assert broker_key(key) is not None, key


def test_bind_mounts_exist_and_named_volumes_are_declared() -> None:
    declared = set(compose()["volumes"])
    for name, service in compose()["services"].items():
        for spec in service.get("volumes", []):
            source = spec.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), (name, source)
            else:
                assert source in declared, (name, source)


def test_prometheus_reads_the_checked_config() -> None:
    prom = compose()["services"]["prometheus"]
    mounts = dict(v.split(":")[:2] for v in prom["volumes"])
    config_dir = mounts["./prometheus"]
    assert f"--config.file={config_dir}/prometheus.yml" in prom["command"]
    assert all(p.startswith("127.0.0.1:") for p in prom["ports"])
    assert all(p.startswith("127.0.0.1:") for p in compose()["services"]["grafana"]["ports"])


def test_podman_compose_renders_the_file() -> None:
    """podman-compose's own reading: variables interpolated, paths resolved."""
    proc = subprocess.run(
        [require_tool("podman-compose"), "-f", str(DEPLOY / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            k: v
            for k, v in os.environ.items()
            if k not in ("BROKER_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE")
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rendered = yaml.safe_load(proc.stdout)
    broker = rendered["services"]["broker"]
    assert broker["image"] == "localhost/broker:0.1.0"
    assert Path(broker["build"]["context"]).resolve() == REPO
    assert f"RUNTIME_IMAGE={dict(global_args())['RUNTIME_IMAGE']}" in broker["build"]["args"]
    assert rendered["services"]["prometheus"]["image"].startswith("docker.io/prom/prometheus:")


def test_every_service_sets_the_limits_of_containers_conf() -> None:
    """Without explicit limits rootful podman 4 asks runc for 1048576 open
    files and processes, which hosts whose root lacks CAP_SYS_RESOURCE refuse
    ("error setting rlimit type 7"); compose must work without CONTAINERS_CONF."""
    conf = tomllib.loads((DEPLOY / "container" / "containers.conf").read_text())
    expected: dict[str, dict[str, int]] = {}
    for spec in conf["containers"]["default_ulimits"]:
        name, _, limits = spec.partition("=")
        soft, _, hard = limits.partition(":")
        expected[name] = {"soft": int(soft), "hard": int(hard)}
    assert set(expected) == {"nofile", "nproc"}
    for name, service in compose()["services"].items():
        assert service.get("ulimits") == expected, name
    for limits in expected.values():
        assert 0 < limits["soft"] <= limits["hard"] < 1048576
