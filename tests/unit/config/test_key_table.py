"""The one table of broker keys: built from every owner's declarations, whatever was imported."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import broker.app  # noqa: F401  (the running app: every module it loads)
from broker.config import (
    BROKER_KEY_OWNERS,
    BROKER_KEYS,
    BROKER_TOPIC_SYNONYMS,
    build_broker_keys,
)
from broker.config_key import ConfigKey, ConfigType
from broker.handlers.config_entries import broker_key_names

REPO = Path(__file__).resolve().parents[3]

# only broker.config is imported before the key table is read, then what the app loads
FRESH = """
import json
from broker.config import BROKER_KEYS, BROKER_TOPIC_SYNONYMS, BrokerConfig, suggest_key

config = BrokerConfig.from_properties(
    {"group.initial.rebalance.delay.ms": "3", "listener.name.ssl.ssl.keystore.location": "k"}
)
alone = sorted({*BROKER_KEYS, *BROKER_TOPIC_SYNONYMS})
suggested = suggest_key("group.inital.rebalance.delay.ms")

import broker.app
from broker.handlers.config_entries import broker_key_names

print(json.dumps({
    "delay": config.get("group.initial.rebalance.delay.ms"),
    "suggested": suggested,
    "alone": alone,
    "after_app": broker_key_names(),
}))
"""


def test_a_fresh_interpreter_knows_every_key_from_broker_config_alone() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FRESH],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["delay"] == 3
    assert seen["suggested"] == "group.initial.rebalance.delay.ms"
    # the same keys before and after the app's modules load, and as this process sees them
    assert seen["alone"] == seen["after_app"] == broker_key_names()
    assert {"group.initial.rebalance.delay.ms", "sasl.enabled.mechanisms"} <= set(seen["alone"])


def test_no_two_owners_declare_the_same_key() -> None:
    declared = Counter(key.name for keys in BROKER_KEY_OWNERS.values() for key in keys)
    declared.update(list(BROKER_TOPIC_SYNONYMS))
    assert [name for name, count in declared.items() if count > 1] == []
    assert set(BROKER_KEYS) == {key.name for keys in BROKER_KEY_OWNERS.values() for key in keys}
    assert set(BROKER_KEY_OWNERS) == {
        "broker.config",
        "broker.security_config",
        "broker.group_config_keys",
        "broker.transaction_config_keys",
    }


def _key(name: str) -> ConfigKey:
    return ConfigKey(name, ConfigType.INT, 0, "a key")


@pytest.mark.parametrize(
    ("owners", "message"),
    [
        (
            {"a": (_key("x.y"),), "b": (_key("z"), _key("x.y"))},
            "config key x.y declared by a and b",
        ),
        ({"a": (_key("x.y"), _key("x.y"))}, "config key x.y declared by a and a"),
        (
            {"a": (_key("log.retention.hours"),)},
            "config key log.retention.hours declared by a topic key's synonyms and a",
        ),
    ],
)
def test_a_key_declared_twice_is_refused(
    owners: dict[str, tuple[ConfigKey, ...]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_broker_keys(owners, BROKER_TOPIC_SYNONYMS)


def test_the_table_takes_no_registrations() -> None:
    table = build_broker_keys({"a": (_key("x.y"),), "b": (_key("z"),)}, ())
    assert list(table) == ["x.y", "z"]
    with pytest.raises(TypeError):
        BROKER_KEYS["late.key"] = _key("late.key")  # type: ignore[index]
    assert "late.key" not in BROKER_KEYS
