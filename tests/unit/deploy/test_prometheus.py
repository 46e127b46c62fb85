"""deploy/prometheus: promtool accepts the config and the rules, every alert
fires in the rules' unit tests (and none on a healthy broker), and every metric
the rules use exists in broker/metrics.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.unit.deploy.support import DEPLOY, exported_names, promql_metric_names, require_tool

PROM = DEPLOY / "prometheus"


def promtool(*args: str, cwd: Path = PROM) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("promtool"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def alerts() -> dict[str, dict[str, object]]:
    rules = yaml.safe_load((PROM / "rules.yml").read_text())
    return {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}


def test_promtool_check_config() -> None:
    proc = promtool("check", "config", "prometheus.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 rule files found" in proc.stdout


def test_promtool_check_rules() -> None:
    proc = promtool("check", "rules", "rules.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in proc.stdout


def test_promtool_test_rules() -> None:
    proc = promtool("test", "rules", "rules_test.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_test_rules_can_fail(tmp_path: Path) -> None:
    """The rules test really compares: a raised threshold makes it fail."""
    shutil.copy(PROM / "rules_test.yml", tmp_path)
    rules = (PROM / "rules.yml").read_text()
    assert ") > 0.05\n" in rules
    (tmp_path / "rules.yml").write_text(rules.replace(") > 0.05\n", ") > 0.5\n"))
    proc = promtool("test", "rules", "rules_test.yml", cwd=tmp_path)
    assert proc.returncode != 0
    assert "BrokerFailedProduceRequests" in proc.stdout + proc.stderr


def test_every_alert_fires_in_the_rules_tests_and_stays_quiet_when_healthy() -> None:
    tests = yaml.safe_load((PROM / "rules_test.yml").read_text())["tests"]
    fires: set[str] = set()
    quiet: set[str] = set()
    for case in tests:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert fires == set(alerts())
    assert quiet >= set(alerts())


def test_every_alert_has_a_severity_and_annotations() -> None:
    for name, rule in alerts().items():
        labels = rule.get("labels")
        annotations = rule.get("annotations")
        assert isinstance(labels, dict) and labels.get("severity") in {
            "critical",
            "warning",
            "info",
        }, name
        assert isinstance(annotations, dict), name
        assert annotations.get("summary") and annotations.get("description"), name


def test_rules_use_only_exported_metrics() -> None:
    known = exported_names() | {"up"}
    for name, rule in alerts().items():
        used = promql_metric_names(str(rule["expr"]))
        assert used, name
        assert used <= known, (name, used - known)


def test_scrape_config_targets_the_broker_metrics_port() -> None:
    from broker.config import broker_key

    config = yaml.safe_load((PROM / "prometheus.yml").read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "broker"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    key = broker_key("metrics.listener")
    assert key is not None
    port = str(key.default).rpartition(":")[2]
    assert targets == [f"broker:{port}"]
    # the alert that watches the target uses this job name
    assert 'job="broker"' in str(alerts()["BrokerDown"]["expr"])
