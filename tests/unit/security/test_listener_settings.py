"""Which listener-prefixed keys fall back to the broker-wide key, as in Kafka 3.9.

``listener.name.<l>.<key>`` wins over ``<key>`` (``AbstractConfig.valuesWithPrefixOverride``)
except where Kafka says otherwise:

* ``ssl.client.auth`` on a SASL_SSL listener: the prefixed key only (KIP-684,
  ``ChannelBuilders.create``); an SSL listener falls back;
* ``sasl.jaas.config`` and ``sasl.server.callback.handler.class``: only with the
  listener and the mechanism prefix (``JaasContext.loadServerContext``,
  ``SaslChannelBuilder.createServerCallbackHandlers``);
* ``connections.max.reauth.ms``: the mechanism's, then the listener's, then the broker's
  (``SaslChannelBuilder.createConnectionsMaxReauthMsMap``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.errors import InvalidConfigError
from broker.metrics import BrokerMetrics
from broker.security.tls import TlsSettings, listener_key_name, listener_value
from broker.server.listener_security import ListenerSecurity
from broker.startup import check_configuration, mechanism_setting
from tests.integration.security_setup import Pki

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'


def test_broker_wide_client_auth_applies_to_ssl_listeners_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    c = BrokerConfig.from_properties({"ssl.client.auth": "required"})
    with caplog.at_level(logging.WARNING, "broker.security.tls"):
        assert TlsSettings.from_config(c, "MTLS", "SSL").client_auth == "required"
        assert not caplog.records
        sasl_ssl = TlsSettings.from_config(c, "SASL_SSL", "SASL_SSL")
    assert sasl_ssl.client_auth == "none"
    assert "applies to SSL listeners only (KIP-684)" in caplog.text
    assert "listener.name.sasl_ssl.ssl.client.auth" in caplog.text
    assert listener_value(c, "SASL_SSL", "ssl.client.auth", "SASL_SSL") == "none"
    assert listener_value(c, "SASL_SSL", "ssl.client.auth") == "required"  # no protocol: plain rule
    assert listener_key_name(c, "SASL_SSL", "ssl.client.auth", "SASL_SSL") == (
        "listener.name.sasl_ssl.ssl.client.auth"
    )
    assert sasl_ssl.key("ssl.client.auth") == "listener.name.sasl_ssl.ssl.client.auth"
    assert sasl_ssl.key("ssl.keystore.location") == (
        "ssl.keystore.location (or listener.name.sasl_ssl.ssl.keystore.location)"
    )


def test_a_sasl_ssl_listener_asks_for_certificates_with_its_own_key() -> None:
    c = BrokerConfig.from_properties(
        {"ssl.client.auth": "none", "listener.name.sasl_ssl.ssl.client.auth": "requested"}
    )
    assert TlsSettings.from_config(c, "SASL_SSL", "SASL_SSL").client_auth == "requested"
    assert TlsSettings.from_config(c, "SSL", "SSL").client_auth == "none"


def test_other_tls_keys_fall_back_on_a_sasl_ssl_listener() -> None:
    c = BrokerConfig.from_properties(
        {
            "ssl.keystore.location": "/etc/broker/server.pem",
            "ssl.enabled.protocols": "TLSv1.3",
            "listener.name.sasl_ssl.ssl.truststore.location": "/etc/broker/ca.pem",
        }
    )
    s = TlsSettings.from_config(c, "SASL_SSL", "SASL_SSL")
    assert s.keystore_location == "/etc/broker/server.pem"
    assert s.protocols == ("TLSv1.3",)
    assert s.truststore_location == "/etc/broker/ca.pem"


def test_jaas_and_callback_handler_need_the_listener_and_mechanism_prefix() -> None:
    c = BrokerConfig.from_properties(
        {
            "sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_ssl.sasl.jaas.config": PLAIN_JAAS,
            "sasl.server.callback.handler.class": "x.Y",
        }
    )
    assert mechanism_setting(c, "SASL_SSL", "PLAIN", "sasl.jaas.config") == (
        "listener.name.sasl_ssl.plain.sasl.jaas.config",
        None,
    )
    handler = mechanism_setting(c, "SASL_SSL", "OAUTHBEARER", "sasl.server.callback.handler.class")
    assert handler == (
        "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
        None,
    )
    c = BrokerConfig.from_properties({"listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS})
    assert mechanism_setting(c, "SASL_SSL", "PLAIN", "sasl.jaas.config")[1] == PLAIN_JAAS


def test_reauth_falls_back_from_mechanism_to_listener_to_broker() -> None:
    key = "connections.max.reauth.ms"
    c = BrokerConfig.from_properties({key: "1000"})
    assert mechanism_setting(c, "SASL_SSL", "PLAIN", key) == (key, 1000)
    c = BrokerConfig.from_properties({key: "1000", f"listener.name.sasl_ssl.{key}": "2000"})
    assert mechanism_setting(c, "SASL_SSL", "PLAIN", key) == (f"listener.name.sasl_ssl.{key}", 2000)
    c = BrokerConfig.from_properties(
        {f"listener.name.sasl_ssl.{key}": "2000", f"listener.name.sasl_ssl.plain.{key}": "3000"}
    )
    assert mechanism_setting(c, "SASL_SSL", "PLAIN", key)[1] == 3000
    assert mechanism_setting(c, "SASL_SSL", "SCRAM-SHA-512", key)[1] == 2000
    assert mechanism_setting(BrokerConfig(), "SASL_SSL", "PLAIN", key) == (key, 0)


def plan(tmp_path: Path, **props: str) -> dict[str, ListenerSecurity]:
    pki = Pki.make(tmp_path / "pki")
    settings = {
        "listeners": "MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "MTLS:SSL,SASL_SSL:SASL_SSL",
        "log.dirs": str(tmp_path / "data"),
        **pki.server_overrides("MTLS"),
        **pki.server_overrides("SASL_SSL"),
        **props,
    }
    metrics = BrokerMetrics(records_implementation="test", event_loop="none", version="0")
    return dict(check_configuration(BrokerConfig.from_properties(settings), metrics).security)


def test_the_start_resolves_sasl_settings_as_kafka(tmp_path: Path) -> None:
    """A PLAIN listener whose JAAS line is broker-wide is refused, naming the key to set
    and why the one given is not read; with the full prefix it starts."""
    mechanisms = {"listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN"}
    with pytest.raises(InvalidConfigError) as err:
        plan(tmp_path, **mechanisms, **{"sasl.jaas.config": PLAIN_JAAS})
    assert str(err.value).startswith(
        "listener SASL_SSL enables PLAIN but names no users: set"
        " listener.name.sasl_ssl.plain.sasl.jaas.config to"
    )
    assert "(sasl.jaas.config is not read by a broker" in str(err.value)
    security = plan(
        tmp_path,
        **mechanisms,
        **{
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "ssl.client.auth": "required",
        },
    )
    mtls, sasl_ssl = security["MTLS"], security["SASL_SSL"]
    assert mtls.tls is not None and sasl_ssl.tls is not None
    assert mtls.tls.settings.client_auth == "required"
    assert sasl_ssl.tls.settings.client_auth == "none"
