"""docs/metrics.md names every metric the registry exports, with its type,
labels and Kafka JMX name, and nothing that does not exist; its alert table is
the rules file's."""

from __future__ import annotations

import re

import yaml
from prometheus_client.parser import text_string_to_metric_families

from broker.metrics import BrokerMetrics
from tests.unit.deploy.support import DEPLOY, REPO, catalogue, exposition_with_every_child

DOC = REPO / "docs" / "metrics.md"


def doc_text() -> str:
    return DOC.read_text()


def metric_rows() -> dict[str, list[str]]:
    """First-cell metric name -> the row's cells, for every metric table row."""
    rows: dict[str, list[str]] = {}
    for line in doc_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(kafka_[a-z0-9_]+)`", cells[0]) if line.startswith("|") else None
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} has two rows"
            rows[m.group(1)] = cells
    return rows


def documented_name(family_name: str, family_type: str) -> str:
    """How the page names a family: counters with _total, histograms by their base name."""
    return family_name + "_total" if family_type == "counter" else family_name


def test_every_exported_metric_has_one_row() -> None:
    expected = {documented_name(f.name, f.type) for f in catalogue().values()}
    assert set(metric_rows()) == expected


def test_no_metric_named_that_does_not_exist() -> None:
    fams = catalogue()
    known = {s for f in fams.values() for s in f.samples} | {
        f.name for f in fams.values() if f.type == "histogram"
    }
    mentioned = set(re.findall(r"\bkafka_[a-z0-9_]*[a-z0-9]", doc_text()))
    assert mentioned
    assert mentioned <= known, sorted(mentioned - known)


def test_types_and_labels_match_the_registry() -> None:
    labels: dict[str, set[str]] = {}
    for fam in text_string_to_metric_families(exposition_with_every_child()):
        for sample in fam.samples:
            labels.setdefault(fam.name, set()).update(set(sample.labels) - {"le"})
    rows = metric_rows()
    for fam in catalogue().values():
        cells = rows[documented_name(fam.name, fam.type)]
        assert cells[1] == fam.type, fam.name
        doc_labels = {
            w for w in re.split(r"[,\s]+", re.sub(r"\(.*?\)", "", cells[2])) if w and w != "–"
        }
        assert doc_labels == labels[fam.name], fam.name


def test_kafka_jmx_names_from_the_help_text() -> None:
    rows = metric_rows()
    checked = 0
    for fam in catalogue().values():
        names = re.findall(r"\(([A-Z][A-Za-z.]+)\)", fam.documentation)
        if not names:
            continue
        jmx = names[-1].rpartition(".")[2]  # Log.LogEndOffset -> LogEndOffset
        row = rows[documented_name(fam.name, fam.type)]
        assert f"name={jmx}" in row[3], (fam.name, jmx, row[3])
        checked += 1
    assert checked >= 20
    # and the JMX domains of Kafka's BrokerTopicMetrics, RequestMetrics, Log, LogFlushStats
    text = doc_text()
    for domain in (
        "kafka.server:type=BrokerTopicMetrics",
        "kafka.network:type=RequestMetrics",
        "kafka.log:type=Log,",
        "kafka.log:type=LogFlushStats",
    ):
        assert domain in text


def test_label_cap_is_the_registry_default() -> None:
    metrics = BrokerMetrics(records_implementation="compiled", event_loop="uvloop", version="0")
    assert f"At most {metrics.max_client_label_values} distinct" in doc_text()


def test_alert_table_is_the_rules_file() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())
    severities = {r["alert"]: r["labels"]["severity"] for g in rules["groups"] for r in g["rules"]}
    documented = {}
    section = doc_text().split("## What to alert on", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*(\w+)\s*\|", line)
        if m:
            documented[m.group(1)] = m.group(2)
    assert documented == severities
