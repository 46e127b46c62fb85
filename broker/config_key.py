"""One configuration key's declaration (``ConfigKey``), its value types and validators.

The leaf every key table is built from: ``broker.config`` (its own keys and the
one table of broker keys), ``broker.security_config`` and
``broker.group_config_keys`` declare their keys with these and import nothing
else of the broker but its errors. Kafka's ``ConfigDef`` (``Type``, ``Range``,
``ValidString``, ``ValidList``) is the model.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.errors import InvalidConfigError

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)


class ConfigType(enum.Enum):
    """Kafka's ``ConfigDef.Type`` (the ones this product uses)."""

    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    PASSWORD = "password"


Validator = Callable[[str, Any], None]


def in_range(low: float | None = None, high: float | None = None) -> Validator:
    """``ConfigDef.Range.between`` / ``atLeast``."""

    def check(name: str, value: Any) -> None:
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = (
                f"[{low},...]"
                if high is None
                else f"[...,{high}]"
                if low is None
                else f"[{low},...,{high}]"
            )
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: Value must be in {bounds}"
            )

    return check


def one_of(*choices: str, case_sensitive: bool = True) -> Validator:
    """``ConfigDef.ValidString.in`` (``CaseInsensitiveValidString`` when asked)."""

    def check(name: str, value: Any) -> None:
        ok = (
            value in choices
            if case_sensitive
            else str(value).lower() in {c.lower() for c in choices}
        )
        if not ok:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: "
                f"String must be one of: {', '.join(choices)}"
            )

    return check


def list_of(*choices: str, allow_empty: bool = False) -> Validator:
    """``ConfigDef.ValidList.in``."""

    def check(name: str, value: Any) -> None:
        if not value and not allow_empty:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: empty list is not allowed"
            )
        for item in value:
            if item.lower() not in choices:
                raise InvalidConfigError(
                    f"Invalid value {item} for configuration {name}: "
                    f"String must be one of: {', '.join(choices)}"
                )

    return check


def either(*checks: Validator) -> Validator:
    """Passes when any of ``checks`` passes (e.g. gzip level -1 or 1..9)."""

    def check(name: str, value: Any) -> None:
        errors = []
        for c in checks:
            try:
                c(name, value)
                return
            except InvalidConfigError as e:
                errors.append(str(e))
        raise InvalidConfigError(errors[0])

    return check


@dataclass(frozen=True)
class ConfigKey:
    """One declared key."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    #: broker-level keys that set the default of this topic key, highest
    #: precedence first (``ServerTopicConfigSynonyms``); each with a factor
    #: that converts its unit into this key's unit (hours -> ms, ...).
    synonyms: tuple[tuple[str, int], ...] = ()
    #: key has no effect in this product (accepted for compatibility with
    #: admin tools); listed in docs/deviations.md.
    inert: bool = False
