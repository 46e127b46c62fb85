"""deploy/k8s: the StatefulSet, Services, ConfigMap, ServiceMonitor and
PrometheusRule agree with the Dockerfile, the broker's keys and each other."""

from __future__ import annotations

from typing import Any

import yaml

from broker import __version__
from broker.app_env import is_configuration, overrides_from_env, probe_url
from broker.config import BrokerConfig, broker_key, parse_properties
from tests.unit.deploy.support import (
    DEPLOY,
    duration_seconds,
    exposed_ports,
    one,
    runtime_stage,
    user_ids,
    volumes,
)

K8S = DEPLOY / "k8s"


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    out = {}
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((K8S / name).read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_every_manifest_file_is_a_resource() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert files == set(kustomization["resources"])


def statefulset() -> dict[str, Any]:
    return manifests()[("StatefulSet", "broker")]


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = statefulset()["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    (c,) = pod()["containers"]
    assert isinstance(c, dict)
    return c


def cmd_properties_path() -> str:
    cmd = one(runtime_stage(), "CMD").json_args()
    assert cmd[0] == "serve"
    return cmd[1]


def test_container_ports_are_the_exposed_ones() -> None:
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert sorted(ports.values()) == sorted(exposed_ports())
    props = configmap_properties()
    assert props["listeners"].endswith(f":{ports['kafka']}")
    assert props["metrics.listener"].endswith(f":{ports['metrics']}")


def test_probes() -> None:
    c = container()
    healthz = probe_url("0.0.0.0:1").rpartition(":1")[2]  # the path the image's HEALTHCHECK probes
    assert healthz == "/healthz"
    for probe in ("startupProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": healthz, "port": "metrics"}, probe
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    # a slow start (log recovery) is covered by the startup probe, not by killing the pod
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300


def test_data_volume_and_config_mounts() -> None:
    c = container()
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    (claim,) = statefulset()["spec"]["volumeClaimTemplates"]
    assert mounts[claim["metadata"]["name"]]["mountPath"] == volumes()[0]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    # the ConfigMap's file lands where the image's CMD reads it
    config_volume = next(v for v in pod()["volumes"] if "configMap" in v)
    cm = manifests()[("ConfigMap", config_volume["configMap"]["name"])]
    (filename,) = cm["data"]
    mount = mounts[config_volume["name"]]
    assert f"{mount['mountPath']}/{filename}" == cmd_properties_path()
    assert mount["readOnly"] is True


def configmap_properties() -> dict[str, str]:
    cm = manifests()[("ConfigMap", "broker-config")]
    return parse_properties(cm["data"]["server.properties"])


def test_configmap_is_valid_broker_configuration() -> None:
    cfg = BrokerConfig.from_properties(configmap_properties())
    assert [str(d) for d in cfg.log_dirs] == volumes()


def test_security_context_matches_the_image_user() -> None:
    uid, gid = user_ids()
    sc = pod()["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert (sc["runAsUser"], sc["runAsGroup"], sc["fsGroup"]) == (uid, gid, gid)
    csc = container()["securityContext"]
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["capabilities"]["drop"] == ["ALL"]
    if csc.get("readOnlyRootFilesystem"):
        mounted = {m["mountPath"] for m in container()["volumeMounts"]}
        assert "/tmp" in mounted


def test_environment_maps_to_known_keys() -> None:
    env = container()["env"]
    names = [e["name"] for e in env]
    config_env = {e["name"]: e.get("value", "") for e in env if is_configuration(e["name"])}
    assert config_env
    for key in overrides_from_env(config_env):
        assert broker_key(key) is not None, key
    # $(VAR) references need VAR defined earlier in the list
    for i, e in enumerate(env):
        value = e.get("value", "")
        for other in names:
            if f"$({other})" in value:
                assert names.index(other) < i, (e["name"], other)
    advertised = config_env["BROKER_ADVERTISED_LISTENERS"]
    headless = statefulset()["spec"]["serviceName"]
    assert f"$(POD_NAME).{headless}.$(POD_NAMESPACE)" in advertised
    assert pod()["enableServiceLinks"] is False


def test_graceful_shutdown_time() -> None:
    grace = pod()["terminationGracePeriodSeconds"]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert grace >= 60
    # in-flight requests get shutdown.timeout.ms, then the logs are flushed and closed
    shutdown_ms = BrokerConfig.from_properties(configmap_properties()).get("shutdown.timeout.ms")
    assert grace >= shutdown_ms / 1000 + 60
    assert grace == duration_seconds(compose["services"]["broker"]["stop_grace_period"])
    assert "command" not in container() and "args" not in container()  # tini stays PID 1


def test_services() -> None:
    m = manifests()
    headless = m[("Service", statefulset()["spec"]["serviceName"])]
    client = m[("Service", "broker")]
    assert headless["spec"]["clusterIP"] == "None"
    assert client["spec"].get("clusterIP") != "None"
    labels = statefulset()["spec"]["template"]["metadata"]["labels"]
    container_ports = {p["name"] for p in container()["ports"]}
    for svc in (headless, client):
        assert svc["spec"]["selector"].items() <= labels.items()
        assert {p["targetPort"] for p in svc["spec"]["ports"]} == container_ports
    assert statefulset()["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_scrape_annotations_and_service_monitor() -> None:
    annotations = statefulset()["spec"]["template"]["metadata"]["annotations"]
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(ports["metrics"])
    assert annotations["prometheus.io/path"] == "/metrics"
    m = manifests()
    monitor = m[("ServiceMonitor", "broker")]
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        svc
        for (kind, _), svc in m.items()
        if kind == "Service" and selector.items() <= svc["metadata"]["labels"].items()
    ]
    assert len(selected) == 1, "one Service, or every target is scraped twice"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in selected[0]["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    # the alert on a missing target expects job="broker": the operator names the job after the Service
    assert selected[0]["metadata"]["name"] == "broker"


def test_prometheus_rule_is_the_rules_file() -> None:
    rule = manifests()[("PrometheusRule", "broker")]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())
    assert rule["spec"]["groups"] == rules["groups"]


def test_image_is_the_built_one() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    (image,) = kustomization["images"]
    name, _, tag = container()["image"].rpartition(":")
    assert image["name"] == name == "localhost/broker"
    assert image["newTag"] == tag
    version_label = one(runtime_stage(), "ARG").args
    assert version_label == f"VERSION={tag}"
    assert tag == __version__
