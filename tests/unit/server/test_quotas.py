"""Connection quotas: max.connections, max.connections.per.ip and its overrides
(Kafka's ConnectionQuotas, SocketServerConfigs)."""

from __future__ import annotations

import resource

import pytest

from broker.config import BrokerConfig
from broker.config_key import INT_MAX
from broker.errors import InvalidConfigError
from broker.server import quotas
from broker.server.quotas import ConnectionQuotas, normalize, resolve_overrides


def test_defaults_are_kafkas() -> None:
    cfg = BrokerConfig()
    assert cfg.get("max.connections") == INT_MAX
    assert cfg.get("max.connections.per.ip") == INT_MAX
    assert cfg.get("max.connections.per.ip.overrides") == ""
    assert cfg.get("connections.max.idle.ms") == 600_000


def test_per_ip_limit_refuses_the_connection_one_too_many() -> None:
    q = ConnectionQuotas(per_ip=2)
    assert q.admit("10.0.0.1") is None
    assert q.admit("10.0.0.1") is None
    assert q.admit("10.0.0.1") == quotas.MAX_CONNECTIONS_PER_IP
    assert q.admit("10.0.0.2") is None  # another address has its own count
    assert q.count("10.0.0.1") == 2 and q.total == 3  # the refused one is not counted
    q.release("10.0.0.1")
    assert q.admit("10.0.0.1") is None


def test_max_connections_counts_every_address() -> None:
    q = ConnectionQuotas(max_connections=2)
    assert q.admit("10.0.0.1") is None
    assert q.admit("10.0.0.2") is None
    assert q.admit("10.0.0.3") == quotas.MAX_CONNECTIONS
    q.release("10.0.0.1")
    assert q.count("10.0.0.1") == 0
    assert q.admit("10.0.0.3") is None


def test_overrides_replace_the_per_ip_default_for_their_address() -> None:
    q = ConnectionQuotas(per_ip=0, overrides={"10.0.0.1": 1, "::ffff:10.0.0.2": 3})
    assert q.admit("10.0.0.9") == quotas.MAX_CONNECTIONS_PER_IP  # 0 for the rest
    assert q.admit("10.0.0.1") is None
    assert q.admit("10.0.0.1") == quotas.MAX_CONNECTIONS_PER_IP
    assert q.limit_for("10.0.0.2") == 3  # written as an IPv4-mapped address


def test_addresses_are_compared_in_one_spelling() -> None:
    assert normalize("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalize("0:0:0:0:0:0:0:1") == "::1"
    assert normalize("fe80::1%eth0") == "fe80::1"
    assert normalize("not-an-address") == "not-an-address"


def test_override_hostnames_resolve_to_every_address() -> None:
    resolved = resolve_overrides({"localhost": 5, "127.0.0.2": 1})
    assert resolved["127.0.0.1"] == 5
    assert resolved["127.0.0.2"] == 1


def test_an_override_that_does_not_resolve_stops_the_start() -> None:
    with pytest.raises(OSError, match="cannot resolve"):
        resolve_overrides({"no-such-host.invalid": 1})


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("", {}),
        ("hostName:100,127.0.0.1:200", {"hostName": 100, "127.0.0.1": 200}),
        (" a:1 , b:2 ", {"a": 1, "b": 2}),
        ("::1:7", {"::1": 7}),  # split at the last ':' (Kafka's Csv.parseCsvMap)
        ("a:1,a:2", {"a": 2}),  # the last one wins, as in Kafka
        ("h:0", {"h": 0}),
    ],
)
def test_override_syntax_is_kafkas(value: str, parsed: dict[str, int]) -> None:
    from broker.config import parse_host_counts

    assert parse_host_counts("max.connections.per.ip.overrides", value) == parsed
    BrokerConfig.from_properties({"max.connections.per.ip.overrides": value})


@pytest.mark.parametrize("value", ["host", "host:", ":5", "host:-1", "host:x", "a b:1", "h:1,"])
def test_malformed_overrides_are_refused(value: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"max\.connections\.per\.ip\.overrides"):
        BrokerConfig.from_properties({"max.connections.per.ip.overrides": value})


def test_negative_limits_are_refused() -> None:
    for key in ("max.connections", "max.connections.per.ip"):
        with pytest.raises(InvalidConfigError, match=key):
            BrokerConfig.from_properties({key: "-1"})


def test_descriptor_cap_leaves_the_logs_their_descriptors() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = quotas.descriptor_cap()
    assert 1 <= cap <= soft - quotas.DESCRIPTOR_RESERVE
