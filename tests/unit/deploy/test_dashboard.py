"""deploy/grafana: the provisioned dashboard is valid JSON, every PromQL query
in it parses (promtool), every metric it names exists in broker/metrics.py,
and the provisioning files point where the compose stack mounts them."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.deploy.support import DEPLOY, exported_names, promql_metric_names, require_tool

GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "broker.json"

#: Grafana's built-in interval variables, replaced by a duration for parsing
BUILTIN_DURATIONS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}


def dashboard() -> dict[str, Any]:
    data = json.loads(DASHBOARD.read_text())
    assert isinstance(data, dict)
    return data


def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for p in items:
        yield p
        yield from panels(p.get("panels", []))


def queries() -> list[tuple[str, str]]:
    """(panel title, expr) of every target."""
    return [
        (p["title"], t["expr"]) for p in panels(dashboard()["panels"]) for t in p.get("targets", [])
    ]


def template_variables() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard()["templating"]["list"]}


def substitute(expr: str) -> str:
    """Grafana variables -> values Prometheus can parse; an unknown variable fails."""
    variables = template_variables()

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in BUILTIN_DURATIONS:
            return BUILTIN_DURATIONS[name]
        assert name in variables, f"unknown dashboard variable ${name} in {expr}"
        return ".*"  # template variables are used in regex matchers (=~)

    out = re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)
    assert "$" not in out, out
    return out


def test_dashboard_is_valid_json_with_unique_panel_ids() -> None:
    data = dashboard()
    assert data["uid"] and data["title"]
    ids = [p["id"] for p in panels(data["panels"])]
    assert len(ids) == len(set(ids))
    assert len(queries()) >= 20


def test_every_query_parses(tmp_path: Path) -> None:
    """promtool parses each query as the expression of a recording rule."""
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": substitute(expr)}
                    for i, (_, expr) in enumerate(queries())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run(
        [require_tool("promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(queries())} rules found" in proc.stdout


def test_a_broken_query_would_be_caught(tmp_path: Path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text(
        yaml.safe_dump(
            {"groups": [{"name": "g", "rules": [{"record": "r", "expr": "sum by (topic (x)"}]}]}
        )
    )
    proc = subprocess.run(
        [require_tool("promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0


@pytest.mark.parametrize("title_expr", queries(), ids=lambda te: te[0])
def test_every_query_uses_exported_metrics(title_expr: tuple[str, str]) -> None:
    title, expr = title_expr
    used = promql_metric_names(substitute(expr))
    assert used, (title, expr)
    missing = used - exported_names()
    assert not missing, f"{title}: {sorted(missing)} not in broker/metrics.py"


def test_variable_queries_use_exported_metrics() -> None:
    for name, var in template_variables().items():
        if var["type"] != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert m, (name, query)
        assert promql_metric_names(substitute(m.group(1))) <= exported_names(), name


def test_the_dashboard_covers_what_operators_asked_for() -> None:
    used = set().union(*(promql_metric_names(substitute(e)) for _, e in queries()))
    for needed in (
        "kafka_topic_produce_message_conversions_total",
        "kafka_client_message_conversions_total",
        "kafka_request_message_conversions_time_seconds_bucket",
        "kafka_request_temporary_memory_bytes_bucket",
        "kafka_topic_bytes_in_total",
        "kafka_topic_bytes_out_total",
        "kafka_request_total_time_seconds_bucket",
        "kafka_log_size_bytes",
    ):
        assert needed in used, needed
    assert any("histogram_quantile" in e for _, e in queries())


def test_panels_use_the_datasource_variable() -> None:
    assert template_variables()["datasource"]["type"] == "datasource"
    for p in panels(dashboard()["panels"]):
        if p.get("targets"):
            assert p["datasource"]["uid"] == "${datasource}", p["title"]


def test_provisioning_matches_the_compose_mounts() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    provider = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "broker.yaml").read_text())
    (p,) = provider["providers"]
    # the dashboards directory is mounted where the provider looks
    assert mounts["./grafana/dashboards"] == p["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    env = compose["services"]["grafana"]["environment"]
    home = env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{p['options']['path']}/{DASHBOARD.name}"
    ds = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    (source,) = ds["datasources"]
    assert source["type"] == "prometheus"
    port = compose["services"]["prometheus"]["ports"][0].rsplit(":", 1)[1]
    assert source["url"] == f"http://prometheus:{port}"
