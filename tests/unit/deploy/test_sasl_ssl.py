"""The SASL_SSL examples: deploy/sasl-ssl/server.properties, the compose
override deploy/compose.sasl-ssl.yaml and the kustomize overlay
deploy/k8s-sasl-ssl. The configuration must start a SASL_SSL listener with
certificates at the paths it names (made here with trustme); the overlay
and the override must agree with it and with the base they change; nothing
secret is committed under deploy/."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from broker.app_env import overrides_from_env
from broker.config import BrokerConfig, broker_key, parse_properties
from broker.metrics import BrokerMetrics
from broker.security.scram_control import ScramControl
from broker.security.scram_store import ScramStore
from broker.security_config import parse_protocol_map
from broker.server.listener import parse_listeners
from broker.startup import listener_security
from tests.integration.security_setup import Pki
from tests.unit.deploy.support import DEPLOY, REPO, exposed_ports, require_tool, volumes

PROPERTIES = DEPLOY / "sasl-ssl" / "server.properties"
OVERLAY = DEPLOY / "k8s-sasl-ssl"
SECRETS = "/etc/broker/secrets"


def properties() -> dict[str, str]:
    return parse_properties(PROPERTIES.read_text())


def test_the_configuration_starts_its_listeners_with_certificates_at_its_paths(
    tmp_path: Path,
) -> None:
    """Every key known, the SASL_SSL listener's TLS context and SCRAM settings
    built from server.pem and ca.pem as an operator makes them."""
    pki = Pki.make(tmp_path / "pki")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "server.pem").write_bytes(pki.chain_pem(pki.server) + pki.key_pem(pki.server, None))
    (secrets / "ca.pem").write_bytes(pki.ca_pem.read_bytes())
    props = {k: v.replace(SECRETS, str(secrets)) for k, v in properties().items()}
    props["log.dirs"] = str(tmp_path / "data")
    cfg = BrokerConfig.from_properties(props)
    protocols = parse_protocol_map(
        "listener.security.protocol.map", cfg.get("listener.security.protocol.map")
    )
    specs = parse_listeners(cfg.get("listeners"), protocol_map=protocols)
    assert {s.name: s.protocol for s in specs} == {"SASL_SSL": "SASL_SSL", "INTERNAL": "PLAINTEXT"}
    assert [s.port for s in specs if s.name == "SASL_SSL"] == exposed_ports()[:1]
    internal = next(s for s in specs if s.name == "INTERNAL")
    assert internal.host == "127.0.0.1"  # the admin listener never leaves the container
    metrics = BrokerMetrics(records_implementation="test", event_loop="none", version="0")
    scram = ScramControl(ScramStore(tmp_path / "data"))
    security = {
        s.name: listener_security(cfg, s, metrics, 10.0, lambda: 0.0, scram_control=scram)
        for s in specs
    }
    sasl_ssl = security["SASL_SSL"]
    assert sasl_ssl.tls is not None and sasl_ssl.sasl is not None
    assert sasl_ssl.sasl.mechanisms == ("SCRAM-SHA-512", "SCRAM-SHA-256")
    assert security["INTERNAL"].tls is None and security["INTERNAL"].sasl is None
    assert cfg.get("authorizer.class.name") and cfg.get("allow.everyone.if.no.acl.found") is False
    assert [str(d) for d in cfg.log_dirs] == [str(tmp_path / "data")]
    assert properties()["log.dirs"] == volumes()[0]


def test_the_overlay_carries_the_same_configuration() -> None:
    assert (OVERLAY / "server.properties").read_text() == PROPERTIES.read_text()


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_the_overlay_patches_the_base_statefulset() -> None:
    kustomization = _yaml(OVERLAY / "kustomization.yaml")
    assert kustomization["resources"] == ["../k8s"]
    (generator,) = kustomization["configMapGenerator"]
    base = {
        (d["kind"], d["metadata"]["name"]): d
        for name in _yaml(DEPLOY / "k8s" / "kustomization.yaml")["resources"]
        for d in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text())
    }
    assert ("ConfigMap", generator["name"]) in base and generator["behavior"] == "replace"
    assert generator["files"] == ["server.properties"]
    assert kustomization["generatorOptions"]["disableNameSuffixHash"] is True
    (patch,) = kustomization["patches"]
    doc = _yaml(OVERLAY / patch["path"])
    assert (doc["kind"], doc["metadata"]["name"]) in base
    pod = doc["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (base_container,) = base[("StatefulSet", "broker")]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == base_container["name"]
    (mount,) = container["volumeMounts"]
    (volume,) = pod["volumes"]
    assert mount["name"] == volume["name"] and mount["readOnly"] is True
    assert mount["mountPath"] == SECRETS
    assert volume["secret"]["secretName"] == "broker-tls"
    assert volume["secret"]["defaultMode"] & 0o007 == 0  # not world-readable
    env = {e["name"]: e["value"] for e in container["env"]}
    advertised = overrides_from_env(env)["advertised.listeners"]
    assert advertised.startswith("SASL_SSL://$(POD_NAME).broker-headless.$(POD_NAMESPACE)")
    base_env = [e["name"] for e in base_container["env"]]
    assert base_env.index("POD_NAME") < base_env.index("BROKER_ADVERTISED_LISTENERS")


def test_the_compose_override() -> None:
    override = _yaml(DEPLOY / "compose.sasl-ssl.yaml")
    assert set(override["services"]) == {"broker"}
    broker = override["services"]["broker"]
    env = {k: str(v) for k, v in broker["environment"].items()}
    for key in overrides_from_env(env):
        assert broker_key(key) is not None, key
    assert env["BROKER_ADVERTISED_LISTENERS"].startswith("SASL_SSL://")
    mounts = {target: source for source, target, _ in (v.rsplit(":", 2) for v in broker["volumes"])}
    assert (DEPLOY / mounts["/etc/broker/server.properties"]).resolve() == PROPERTIES
    assert mounts[SECRETS] == "${BROKER_SECRETS:-./secrets}"
    assert all(v.endswith(":ro") for v in broker["volumes"])
    # the default secrets directory is never committed
    assert "/deploy/secrets/" in (REPO / ".gitignore").read_text().splitlines()


def test_podman_compose_renders_the_override() -> None:
    proc = subprocess.run(
        [require_tool("podman-compose"), "-f", str(DEPLOY / "compose.yaml"),
         "-f", str(DEPLOY / "compose.sasl-ssl.yaml"), "config"],
        capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if k != "BROKER_SECRETS"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broker = yaml.safe_load(proc.stdout)["services"]["broker"]
    assert broker["environment"]["BROKER_ADVERTISED_LISTENERS"] == "SASL_SSL://localhost:9092"
    targets = [v.split(":")[1] for v in broker["volumes"]]
    assert "/etc/broker/server.properties" in targets and SECRETS in targets


#: a key ending in password or secret, or a JAAS config, with a value on its line
_SECRET_VALUE = re.compile(
    r"^[ \t]*(?:[\w.\-]*[._])?(?:password|secret|jaas\.config)[ \t]*[=:][ \t]*\S", re.I | re.M
)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in DEPLOY.rglob("*") if p.is_file() and p.suffix not in (".json", ".png")),
    ids=lambda p: str(p.relative_to(DEPLOY)),
)
def test_nothing_secret_is_committed_under_deploy(path: Path) -> None:
    text = path.read_text(errors="replace")
    assert "PRIVATE KEY" not in text
    found = [m.group(0) for m in _SECRET_VALUE.finditer(text)]
    # Grafana's admin password comes from the environment, "admin" only by default
    found = [f for f in found if "GF_SECURITY_ADMIN_PASSWORD" not in f]
    assert not found, found
