"""DescribeConfigs through the dispatcher: values, sources, synonyms, types, documentation."""

from __future__ import annotations

import pytest

from broker.config import BROKER_KEYS, TOPIC_KEYS, BrokerConfig, ConfigSource
from broker.errors import ErrorCode
from broker.protocol.messages import DescribeConfigsRequest
from tests.unit.handlers.helpers import AdminBroker

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
STATIC, DEFAULT, TOPIC_CONFIG = (
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG,
    ConfigSource.TOPIC_CONFIG,
)


@pytest.fixture
def broker(tmp_path):
    props = {"log.retention.hours": "24", "log.retention.minutes": "60", "compression.type": "lz4"}
    with AdminBroker(tmp_path, **props) as b:
        b.create_topic("t", 1, **{"retention.ms": "1000", "cleanup.policy": "compact,delete"})
        b.create_topic("plain", 1)
        yield b


def describe(broker, version, *resources, synonyms=False, documentation=False):
    resp = broker.call(
        version,
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=rtype, resource_name=name, configuration_keys=keys
                )
                for rtype, name, keys in resources
            ],
            include_synonyms=synonyms,
            include_documentation=documentation,
        ),
    )
    return resp.results


def configs(result):
    assert result.error_code == 0, result
    return {c.name: c for c in result.configs}


def syn(entry):
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_every_topic_key_with_its_effective_value(broker):
    [result] = describe(broker, 4, (TOPIC, "t", None))
    assert (result.resource_type, result.resource_name) == (TOPIC, "t")
    c = configs(result)
    assert set(c) == set(TOPIC_KEYS)
    assert c["retention.ms"].value == "1000"
    assert c["cleanup.policy"].value == "compact,delete"
    assert c["compression.type"].value == "lz4"
    assert c["preallocate"].value == "false"
    assert c["min.cleanable.dirty.ratio"].value == "0.5"
    assert not any(e.read_only or e.is_sensitive for e in c.values())


def test_sources_and_synonyms_in_precedence_order(broker):
    [t, plain] = describe(broker, 1, (TOPIC, "t", None), (TOPIC, "plain", None), synonyms=True)
    rt = configs(t)["retention.ms"]
    assert rt.config_source == TOPIC_CONFIG
    assert syn(rt) == [
        ("retention.ms", "1000", TOPIC_CONFIG),
        ("log.retention.minutes", "60", STATIC),
        ("log.retention.hours", "24", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    rp = configs(plain)["retention.ms"]
    # log.retention.minutes wins over log.retention.hours (ServerTopicConfigSynonyms order)
    assert (rp.value, rp.config_source) == ("3600000", STATIC)
    assert syn(rp)[0] == ("log.retention.minutes", "60", STATIC)
    ct = configs(plain)["compression.type"]
    assert (ct.config_source, syn(ct)) == (
        STATIC,
        [("compression.type", "lz4", STATIC), ("compression.type", "producer", DEFAULT)],
    )
    sb = configs(plain)["segment.bytes"]
    assert (sb.config_source, syn(sb)) == (DEFAULT, [("log.segment.bytes", "1073741824", DEFAULT)])
    sm = configs(plain)["segment.ms"]
    assert (sm.value, syn(sm)) == ("604800000", [("log.roll.hours", "168", DEFAULT)])


def test_synonyms_only_when_asked(broker):
    [result] = describe(broker, 1, (TOPIC, "t", None), synonyms=False)
    assert all(e.synonyms == [] for e in result.configs)
    assert configs(result)["retention.ms"].config_source == TOPIC_CONFIG


def test_v0_reports_is_default_and_no_source(broker):
    [result] = describe(broker, 0, (TOPIC, "t", None))
    c = configs(result)
    assert c["retention.ms"].is_default is False
    assert c["compression.type"].is_default is False  # static broker config
    assert c["segment.bytes"].is_default is True
    assert c["segment.bytes"].config_source == -1  # not on the wire before v1


def test_types_and_documentation_from_v3(broker):
    [v3] = describe(broker, 3, (TOPIC, "t", None), documentation=True)
    c = configs(v3)
    types = {
        n: c[n].config_type for n in ("preallocate", "compression.type", "index.interval.bytes")
    }
    assert types == {"preallocate": 1, "compression.type": 2, "index.interval.bytes": 3}
    assert (c["retention.ms"].config_type, c["min.cleanable.dirty.ratio"].config_type) == (5, 6)
    assert c["cleanup.policy"].config_type == 7
    assert c["retention.ms"].documentation == TOPIC_KEYS["retention.ms"].doc
    [undocumented] = describe(broker, 3, (TOPIC, "t", None))
    assert all(e.documentation is None for e in undocumented.configs)
    [v2] = describe(broker, 2, (TOPIC, "t", None), documentation=True)
    assert all(e.config_type == 0 and not e.documentation for e in v2.configs)  # not on the wire


def test_configuration_keys_filter(broker):
    [result] = describe(broker, 4, (TOPIC, "t", ["retention.ms", "no.such.key"]))
    assert [c.name for c in result.configs] == ["retention.ms"]
    [all_of_them] = describe(broker, 4, (TOPIC, "t", []))
    assert len(all_of_them.configs) == len(TOPIC_KEYS)


def test_topic_errors(broker):
    results = describe(
        broker, 4, (TOPIC, "missing", None), (TOPIC, "bad/name", None), (TOPIC, "t", None)
    )
    assert [r.error_code for r in results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.NONE,
    ]
    assert results[0].configs == [] and "missing" in results[0].error_message


def test_broker_resource(broker):
    [result] = describe(broker, 4, (BROKER, "0", None), synonyms=True, documentation=True)
    c = configs(result)
    assert set(BROKER_KEYS) <= set(c)
    assert {"log.retention.hours", "log.segment.bytes", "message.max.bytes"} <= set(c)
    assert all(e.read_only for e in c.values())
    hours = c["log.retention.hours"]
    assert (hours.value, hours.config_source) == ("24", STATIC)
    assert syn(hours) == [
        ("log.retention.hours", "24", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    minutes = c["log.retention.minutes"]
    assert syn(minutes) == [
        ("log.retention.minutes", "60", STATIC),
        ("log.retention.hours", "24", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    ms = c["log.retention.ms"]  # unset, and no default of its own
    assert (ms.value, ms.config_source, ms.synonyms) == (None, DEFAULT, [])
    nodes = c["node.id"]
    assert (nodes.value, nodes.config_source, nodes.config_type) == ("0", DEFAULT, 3)
    assert c["log.dirs"].config_source == STATIC
    assert (
        c["auto.create.topics.enable"].documentation == BROKER_KEYS["auto.create.topics.enable"].doc
    )


def test_broker_synonym_defaults_match_kafka():
    config = BrokerConfig()
    assert config.get("log.retention.hours") == 168
    assert config.get("log.retention.minutes") is None
    assert config.get("log.retention.ms") is None
    assert config.get("log.roll.hours") == 168
    assert config.get("log.roll.jitter.hours") == 0
    assert config.get("log.flush.interval.ms") is None
    assert config.get("message.max.bytes") == 1048588


def test_broker_resource_names(broker):
    results = describe(broker, 4, (BROKER, "", None), (BROKER, "3", None), (BROKER, "zero", None))
    assert (results[0].error_code, results[0].configs) == (0, [])
    assert results[1].error_code == ErrorCode.INVALID_REQUEST
    assert results[1].error_message == (
        "Unexpected broker id, expected 0 or empty string, but received 3"
    )
    assert results[2].error_message == "Broker id must be an integer, but it is: zero"


def test_other_resource_types_fail_alone(broker):
    results = describe(broker, 4, (BROKER_LOGGER, "0", None), (99, "x", None), (TOPIC, "t", None))
    assert [r.error_code for r in results] == [
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NONE,
    ]
    assert results[0].error_message == "Resource type BROKER_LOGGER is not supported by this broker"
    assert results[1].error_message == "Unknown resource type 99"
