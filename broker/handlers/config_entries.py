"""Configuration entries as DescribeConfigs and CreateTopics (v5+) report them.

One entry per key: its effective value as a string (``ConfigDef.convertToString``:
lists joined with commas, booleans ``true``/``false``), where the value came
from (``ConfigSource``), whether it is read-only or sensitive, its synonyms,
its type and its documentation. Built from the key tables of
``broker/config.py`` (every topic key, every broker key and every broker
synonym of a topic key)::

    entry    => name value source read_only is_sensitive synonyms config_type documentation
    synonyms => (name value source)*   highest precedence first

Topic keys (``ConfigHelper.createTopicConfigEntry``): the topic's override
(TOPIC_CONFIG) if it has one, then the broker keys that set its default
(``ServerTopicConfigSynonyms``, in precedence order): those set in the
broker's configuration (STATIC_BROKER_CONFIG), then those that have a
built-in default (DEFAULT_CONFIG). The entry's source is the first
synonym's, DEFAULT_CONFIG when there is none. Unlike Kafka, a topic key
whose broker synonyms are unit variants (``log.retention.ms`` /
``.minutes`` / ``.hours``, ``log.roll.ms`` / ``.hours`` ...) lists all of them,
so ``retention.ms`` set through ``log.retention.hours`` reports
STATIC_BROKER_CONFIG instead of DEFAULT_CONFIG (docs/deviations.md).

Broker keys (``ConfigHelper.createBrokerConfigEntry``): the value set in the
broker's configuration or the built-in default (None when a key has
neither, e.g. ``log.retention.ms``); synonyms are the key's unit variants
from the described key on (Kafka's ``dropWhile``); every broker key is
read-only because this broker has no dynamic broker configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from broker.config import (
    BROKER_KEYS,
    BROKER_TOPIC_SYNONYMS,
    TOPIC_KEYS,
    BrokerConfig,
    ConfigSource,
    TopicConfig,
    broker_key,
    format_value,
)
from broker.config_key import ConfigKey, ConfigType

#: ``DescribeConfigsResponse.ConfigType`` ids
CONFIG_TYPE_IDS = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.PASSWORD: 9,
}


class Synonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: list[Synonym]
    config_type: int
    documentation: str


def _string(key: ConfigKey, value: Any) -> str | None:
    if key.type is ConfigType.PASSWORD:
        return None
    return format_value(key, value)


def _broker_synonyms(broker: BrokerConfig, names: Iterable[str]) -> list[Synonym]:
    """``ConfigHelper.configSynonyms`` without dynamic configs: every name set
    in the broker's configuration, then every name with a built-in default."""
    names = list(names)
    out: list[Synonym] = []
    for name in names:
        if broker.is_set(name):
            key = broker_key(name)
            assert key is not None
            out.append(
                Synonym(name, _string(key, broker.values[name]), ConfigSource.STATIC_BROKER_CONFIG)
            )
    for name in names:
        key = broker_key(name)
        assert key is not None
        if key.default is not None:
            out.append(Synonym(name, _string(key, key.default), ConfigSource.DEFAULT_CONFIG))
    return out


def topic_entry(
    broker: BrokerConfig, name: str, config: TopicConfig, overrides: Mapping[str, str]
) -> ConfigEntry:
    """The entry of topic key ``name`` for a topic whose effective config is
    ``config`` and whose overrides are ``overrides``."""
    key = TOPIC_KEYS[name]
    value = _string(key, config.value_of(name))
    synonyms = _broker_synonyms(broker, (syn for syn, _ in key.synonyms))
    if name in overrides:
        synonyms.insert(0, Synonym(name, value, ConfigSource.TOPIC_CONFIG))
    return ConfigEntry(
        name=name,
        value=value,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=False,
        is_sensitive=key.type is ConfigType.PASSWORD,
        synonyms=synonyms,
        config_type=CONFIG_TYPE_IDS.get(key.type, 0),
        documentation=key.doc,
    )


def topic_entries(
    broker: BrokerConfig, config: TopicConfig, overrides: Mapping[str, str]
) -> list[ConfigEntry]:
    """Every topic key, by name."""
    return [topic_entry(broker, name, config, overrides) for name in sorted(TOPIC_KEYS)]


def _unit_group(name: str) -> list[str]:
    """``DynamicBrokerConfig.brokerConfigSynonyms``: the unit variants of a
    broker key (log.retention.ms/.minutes/.hours ...), or the key alone."""
    found = BROKER_TOPIC_SYNONYMS.get(name)
    if found is None:
        return [name]
    synonyms = [syn for syn, _ in TOPIC_KEYS[found[0]].synonyms]
    return synonyms if len(synonyms) > 1 else [name]


def broker_key_names() -> list[str]:
    """Every broker-level key: broker-only keys and broker synonyms of topic keys."""
    return sorted({*BROKER_KEYS, *BROKER_TOPIC_SYNONYMS})


def broker_entry(broker: BrokerConfig, name: str) -> ConfigEntry:
    key = broker_key(name)
    assert key is not None
    value = _string(key, broker.values[name] if broker.is_set(name) else key.default)
    synonyms = _broker_synonyms(broker, _unit_group(name))
    # Kafka's dropWhile: the synonyms from the described key on
    while synonyms and synonyms[0].name != name:
        synonyms.pop(0)
    return ConfigEntry(
        name=name,
        value=value,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=True,
        is_sensitive=key.type is ConfigType.PASSWORD,
        synonyms=synonyms,
        config_type=CONFIG_TYPE_IDS.get(key.type, 0),
        documentation=key.doc,
    )


def broker_entries(broker: BrokerConfig) -> list[ConfigEntry]:
    return [broker_entry(broker, name) for name in broker_key_names()]
