"""The deploy tests' own instruments: the catalogue's derived series names and
the PromQL metric-name reader must be right for the other checks to mean anything."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.unit.deploy.support import (
    catalogue,
    duration_seconds,
    exported_names,
    exposition_with_every_child,
    promql_metric_names,
)


def test_derived_series_names_are_the_exposed_ones() -> None:
    exposed = {
        sample.name
        for fam in text_string_to_metric_families(exposition_with_every_child())
        for sample in fam.samples
    }
    assert exposed == exported_names()


def test_catalogue_has_the_kafka_families() -> None:
    fams = catalogue()
    assert fams["kafka_topic_messages_in"].type == "counter"
    assert "kafka_topic_messages_in_total" in fams["kafka_topic_messages_in"].samples
    assert fams["kafka_request_total_time_seconds"].type == "histogram"
    assert fams["kafka_log_size_bytes"].type == "gauge"
    assert len(fams) >= 30


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('up{job="broker"} == 0', {"up"}),
        (
            "sum by (topic) (rate(kafka_topic_messages_in_total[5m]))",
            {"kafka_topic_messages_in_total"},
        ),
        (
            "sum(rate(a_total[5m])) by (topic, le) / on (topic) group_left (x) b offset 1h",
            {"a_total", "b"},
        ),
        (
            'histogram_quantile(0.99, sum by (le, request) (rate(h_bucket{request!~"Produce|Fetch", x="}"}[5m]))) > 1e-3',
            {"h_bucket"},
        ),
        ('label_replace(m, "dst", "$1", "src", "(.*)") and bool n unless o', {"m", "n", "o"}),
        ("sum without (instance) (g) - ignoring (le) h", {"g", "h"}),
    ],
)
def test_promql_metric_names(expr: str, names: set[str]) -> None:
    assert promql_metric_names(expr) == names


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10), ("1m30s", 90), ("500ms", 0.5)])
def test_duration_seconds(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds
