"""Listeners: ``listeners``, ``listener.security.protocol.map`` and ``advertised.listeners``
parsed and checked as Kafka does (``CoreUtils.listenerListToEndPoints``, ``KafkaConfig``)."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.errors import InvalidConfigError
from broker.security_config import parse_protocol_map
from broker.server.listener import ListenerSpec, parse_advertised, parse_listeners

DEFAULT_MAP = parse_protocol_map("m", ("PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_SSL:SASL_SSL"))


def test_several_named_listeners_with_a_protocol_map() -> None:
    pmap = parse_protocol_map(
        "listener.security.protocol.map",
        ("PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_SSL:SASL_SSL", "internal:plaintext"),
    )
    specs = parse_listeners(
        ("PLAINTEXT://:9092", "SSL://:9093", "SASL_SSL://:9094", "internal://127.0.0.1:9095"),
        protocol_map=pmap,
    )
    assert specs == [
        ListenerSpec("PLAINTEXT", "", 9092, "PLAINTEXT"),
        ListenerSpec("SSL", "", 9093, "SSL"),
        ListenerSpec("SASL_SSL", "", 9094, "SASL_SSL"),
        ListenerSpec("INTERNAL", "127.0.0.1", 9095, "PLAINTEXT"),
    ]
    assert specs[2].tls and specs[2].sasl and not specs[3].tls
    assert specs[3].config_prefix == "listener.name.internal."


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        (("FOO://:9092",), "No security protocol defined for listener FOO"),
        (("PLAINTEXT://:9092", "PLAINTEXT://:9093"), "Each listener must have a different name"),
        (("PLAINTEXT://:9092", "SSL://:9092"), "Each listener must have a different port"),
        (("PLAINTEXT:9092",), "expected NAME://host:port"),
        (("PLAINTEXT://host:x",), "is not a number"),
    ],
)
def test_misconfigured_listeners_name_the_key(listeners: tuple[str, ...], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message) as err:
        parse_listeners(listeners, protocol_map=DEFAULT_MAP)
    assert "listeners" in str(err.value)


def test_advertised_listener_must_be_a_listener() -> None:
    specs = parse_listeners(("PLAINTEXT://:9092",), protocol_map=DEFAULT_MAP)
    adv = parse_advertised(("PLAINTEXT://broker-0:19092",), specs, DEFAULT_MAP)
    assert adv["PLAINTEXT"].host == "broker-0"
    with pytest.raises(InvalidConfigError, match=r"advertised.listeners listener names .* SSL"):
        parse_advertised(("SSL://broker-0:19093",), specs, DEFAULT_MAP)


@pytest.mark.parametrize("entry", ["FOO:TLS", "FOO", ":SSL"])
def test_protocol_map_refuses_unknown_protocols(entry: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"listener\.security\.protocol\.map"):
        BrokerConfig.from_properties({"listener.security.protocol.map": entry})


def test_listener_prefixed_keys_are_accepted_and_typed() -> None:
    cfg = BrokerConfig.from_properties(
        {
            "listener.name.sasl_ssl.ssl.keystore.location": "/etc/broker/server.p12",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": "60000",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x required;",
        }
    )
    assert cfg.get("listener.name.sasl_ssl.sasl.enabled.mechanisms") == ("PLAIN", "SCRAM-SHA-512")
    assert cfg.get("listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms") == 60000
    for bad in (
        "listener.name.sasl_ssl.no.such.key",
        "listener.name.sasl_ssl.plain.ssl.keystore.location",  # a mechanism prefix on a TLS key
        "listener.name.sasl_ssl.listeners",
    ):
        with pytest.raises(InvalidConfigError, match="Unknown configuration key"):
            BrokerConfig.from_properties({bad: "x"})
    with pytest.raises(
        InvalidConfigError, match=r"listener\.name\.a\.connections\.max\.reauth\.ms"
    ):
        BrokerConfig.from_properties({"listener.name.a.connections.max.reauth.ms": "-1"})


def test_the_listen_backlog_holds_a_burst_while_accepts_come_in_small_batches() -> None:
    """The loop is handed a small per-wake-up accept batch (ACCEPTS_PER_WAKEUP;
    the stdlib loop accepts that many per wake-up), but the kernel's queue
    keeps the full backlog: a burst of connects larger than the batch all
    complete while the loop is busy and accepts nothing."""
    import asyncio
    import contextlib
    import socket

    from broker.server.listener import ACCEPTS_PER_WAKEUP, start_listener
    from tests.aio import run

    burst = 300
    assert ACCEPTS_PER_WAKEUP < burst < 511

    async def scenario() -> None:
        server, port = await start_listener(
            ListenerSpec("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"), asyncio.Protocol
        )
        with contextlib.ExitStack() as stack:
            # no await: the loop accepts nothing meanwhile, the kernel queues them
            for _ in range(burst):
                s = stack.enter_context(socket.socket())
                s.settimeout(0.5)  # a connect past a full backlog waits for a SYN retry (1 s)
                s.connect(("127.0.0.1", port))
        server.close()
        await server.wait_closed()

    run(scenario())
