"""Kafka's JAAS syntax in ``sasl.jaas.config``: the login module and its options.

::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        user_alice="alice-secret" user_bob="bob-secret";

One entry: a class name, a control flag (required, requisite, sufficient,
optional), options ``name=value`` (the value quoted or a plain word), a
terminating ``;`` (``JaasConfig``). PLAIN's users are the ``user_<name>``
options (``PlainServerCallbackHandler``). Parse errors name the key, never
the option values (they hold passwords).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from broker.errors import InvalidConfigError

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_TOKEN = re.compile(
    r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<eq>=)|(?P<semi>;))', re.S
)
_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str]


def parse_jaas(text: str, key: str) -> JaasEntry:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip() == "":
                break
            raise InvalidConfigError(f"Invalid value for configuration {key}: unreadable JAAS")
        pos = match.end()
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append((kind, value))
    bad = InvalidConfigError(
        f"Invalid value for configuration {key}: expected '<LoginModule> required"
        ' name="value" ...;\''
    )
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[-1][0] != "semi":
        raise bad
    if tokens[1][0] != "word" or tokens[1][1].lower() not in _FLAGS:
        raise bad
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise bad
    for i in range(0, len(body), 3):
        (k_kind, name), (eq, _), (v_kind, value) = body[i : i + 3]
        if k_kind != "word" or eq != "eq" or v_kind not in ("word", "quoted"):
            raise bad
        options[name] = value
    return JaasEntry(tokens[0][1], tokens[1][1].lower(), options)


def plain_users(entry: JaasEntry, key: str) -> dict[str, str]:
    if entry.login_module != PLAIN_LOGIN_MODULE:
        raise InvalidConfigError(
            f"Invalid value for configuration {key}: PLAIN needs {PLAIN_LOGIN_MODULE},"
            f" not {entry.login_module}"
        )
    return {k[5:]: v for k, v in entry.options.items() if k.startswith("user_") and k[5:]}
