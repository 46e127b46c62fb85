"""The Dockerfile: hadolint-clean, offline multi-stage build of the wheel with
its compiled twin, a non-root runtime whose ports, volume, health check and
entrypoint agree with the broker's configuration and the build scripts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from broker.app_env import probe_url
from broker.config import BrokerConfig, parse_properties
from tests.unit.deploy.support import (
    DEPLOY,
    REPO,
    dockerfile,
    exposed_ports,
    healthcheck,
    one,
    runtime_stage,
    user_ids,
    volumes,
)
from tests.unit.deploy.support import require_tool as tool

CONTAINER = DEPLOY / "container"


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("hadolint"), "--no-color", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hadolint_clean() -> None:
    proc = hadolint(REPO / "Dockerfile")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_really_lints(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN cd /tmp && apt-get install curl\n")
    proc = hadolint(bad)
    assert proc.returncode != 0
    assert "DL3003" in proc.stdout


def global_args() -> dict[str, str]:
    out = {}
    for inst in dockerfile():
        if inst.keyword == "ARG" and inst.stage == -1:
            name, _, default = inst.args.partition("=")
            out[name] = default
    return out


def script_default(script: str, variable: str) -> str:
    m = re.search(rf"\${{{variable}:-([^}}]+)}}", (CONTAINER / script).read_text())
    assert m, (script, variable)
    return m.group(1)


def test_multi_stage_from_the_local_base_images() -> None:
    froms = [i for i in dockerfile() if i.keyword == "FROM"]
    assert [f.args for f in froms] == ["${BUILDER_IMAGE} AS build", "${RUNTIME_IMAGE}"]
    args = global_args()
    for script in ("build-base-images.sh", "build-image.sh"):
        assert args["BUILDER_IMAGE"] == script_default(script, "BUILDER_BASE")
        assert args["RUNTIME_IMAGE"] == script_default(script, "RUNTIME_BASE")


def test_build_stage_is_offline_and_keeps_the_compiled_twin() -> None:
    build = [i for i in dockerfile() if i.stage == 0]
    env = " ".join(i.args for i in build if i.keyword == "ENV")
    assert "PIP_NO_INDEX=1" in env
    assert "PIP_FIND_LINKS=/wheelhouse" in env
    copies = [i.words() for i in build if i.keyword == "COPY"]
    assert ["deploy/container/wheelhouse/", "/wheelhouse/"] in copies
    assert 'wheelhouse="$here/wheelhouse"' in (CONTAINER / "build-image.sh").read_text()
    run = one(build, "RUN").args
    assert "pip wheel" in run
    assert "rglob('_*_c.pyx')" in run and "import_module" in run
    script = (CONTAINER / "build-image.sh").read_text()
    assert "--network none" in script


def test_runtime_user_is_numeric_and_not_root() -> None:
    uid, gid = user_ids()
    assert uid >= 1000 and gid >= 1000
    run = " ".join(i.args for i in runtime_stage() if i.keyword == "RUN")
    assert f"--uid {uid}" in run and f"--gid {gid}" in run
    assert f"chown -R {uid}:{gid} /var/lib/broker" in run


def default_properties() -> tuple[str, dict[str, str]]:
    """(path in the image, contents) of the shipped server.properties."""
    copies = [i.words() for i in runtime_stage() if i.keyword == "COPY"]
    (dest,) = [c[1] for c in copies if c[0] == "deploy/container/server.properties"]
    return dest, parse_properties((CONTAINER / "server.properties").read_text())


def test_default_configuration_is_valid_and_matches_the_image() -> None:
    path, props = default_properties()
    cfg = BrokerConfig.from_properties(props)
    assert [str(d) for d in cfg.log_dirs] == volumes()
    (listener,) = cfg.get("listeners")
    kafka_port = int(listener.rsplit(":", 1)[1])
    metrics_port = int(str(cfg.get("metrics.listener")).rsplit(":", 1)[1])
    assert exposed_ports() == [kafka_port, metrics_port]
    # the command serves exactly this file
    cmd = one(runtime_stage(), "CMD").json_args()
    assert cmd == ["serve", path]
    # and the working directory holds the volume (a relative log.dir lands there)
    workdir = one(runtime_stage(), "WORKDIR").args
    assert volumes()[0].startswith(workdir + "/")


def test_entrypoint_is_tini_then_the_env_mapping_entrypoint() -> None:
    entry = one(runtime_stage(), "ENTRYPOINT").json_args()
    assert entry == ["/usr/bin/tini", "--", "python", "-m", "broker.app_env"]
    assert one(runtime_stage(), "STOPSIGNAL").args == "SIGTERM"
    # tini is in the runtime base image
    assert "tini" in (CONTAINER / "build-base-images.sh").read_text()


def test_healthcheck_probes_healthz_with_the_served_configuration() -> None:
    options, cmd = healthcheck()
    path, _ = default_properties()
    assert cmd == ["python", "-m", "broker.app_env", "healthcheck", path]
    assert probe_url("0.0.0.0:9404").endswith("/healthz")
    assert {"interval", "timeout", "start-period", "retries"} <= set(options)


def dockerignore_patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def ignored(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or a parent decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for pattern in dockerignore_patterns():
        negate = pattern.startswith("!")
        rx = _pattern_regex(pattern.lstrip("!").strip("/"))
        if any(rx.fullmatch(p) for p in prefixes):
            result = not negate
    return result


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "data/orders-0/00000000000000000000.log",
        "build/lib/broker/__init__.py",
        "broker/records/_scan_c.cpython-311-x86_64-linux-gnu.so",
        "broker/records/_scan_c.c",
        "broker/records/__pycache__/scan.cpython-311.pyc",
        "broker.egg-info/PKG-INFO",
        "tests/unit/app_env/test_app_env.py",
        "deploy/k8s/statefulset.yaml",
    ],
)
def test_dockerignore_excludes(path: str) -> None:
    assert ignored(path)


def test_dockerignore_keeps_every_copied_source() -> None:
    sources = [
        i.words()[0]
        for i in dockerfile()
        if i.keyword == "COPY" and not i.args.startswith("--from")
    ]
    assert len(sources) >= 4
    for src in sources:
        assert not ignored(src.rstrip("/")), src
        if "wheelhouse" not in src:  # made by build-image.sh
            assert (REPO / src).exists(), src
    for source in (REPO / "broker").rglob("*"):
        rel = source.relative_to(REPO).as_posix()
        if source.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in rel:
            assert not ignored(rel), rel
    assert not ignored("deploy/container/wheelhouse/uvloop-0.21.0-cp311-cp311-x.whl")
