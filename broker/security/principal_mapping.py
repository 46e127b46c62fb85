"""``ssl.principal.mapping.rules``: a client certificate's subject -> a user name.

Kafka's ``SslPrincipalMapper``: a comma-separated list of rules, tried in
order; the first that gives a name wins, and no rule applying refuses the
connection::

    DEFAULT                               the whole distinguished name
    RULE:pattern/replacement/             if pattern matches the whole DN, the DN with the
    RULE:pattern/replacement/L            match replaced (``$1`` back references), lower-
    RULE:pattern/replacement/U            or upper-cased

    ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=([^,]+).*$/$1/L,DEFAULT

The DN is RFC 2253 text, most specific attribute first
(``CN=alice,OU=eng,O=Example,C=US``), as Java's ``X500Principal.getName()``
prints it. A slash inside a pattern or replacement is escaped with a
backslash, as in Kafka. Patterns are Python regular expressions,
which agree with Java's for what such rules use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from broker.errors import InvalidConfigError

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    """No rule applies to the DN (Kafka's ``NoMatchingRule``): the client is refused."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        match = self.pattern.fullmatch(dn)
        if match is None:
            return None
        result = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), dn)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


def _python_replacement(java: str, groups: int) -> str:
    """Java's replacement syntax ($1, \\$ literal) as ``re.sub``'s; a back reference
    past the groups is cut down (``$12`` with one group is ``$1`` then ``2``) as
    Kafka's ``escapeLiteralBackReferences`` does, and left literal if none is left."""
    out = []
    i = 0
    while i < len(java):
        ch = java[i]
        if ch == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        match = _BACK_REFERENCE.match(java, i)
        if ch == "$" and match is not None:
            digits = match.group(1)
            while len(digits) > 1 and int(digits) > groups:
                digits = digits[:-1]
            if int(digits) <= groups:
                out.append(f"\\g<{int(digits)}>")
                i += 1 + len(digits)
                continue
            out.append("$")
            i += 1
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def parse_rules(text: str | None, key: str = "ssl.principal.mapping.rules") -> list[Rule]:
    source = "DEFAULT" if text is None else text.strip()
    rules = []
    for found in _SPLITTER.finditer(source):
        item = found.group(1)
        match = _PARSER.match(item)
        if match is None or match.end() != len(item):
            raise InvalidConfigError(f"Invalid value {text} for configuration {key}: {item}")
        if match.group(1) is not None:
            rules.append(Rule())
        elif match.group(2) is not None:
            try:
                pattern = re.compile(match.group(2))
            except re.error as exc:
                raise InvalidConfigError(
                    f"Invalid value {text} for configuration {key}: {item}: {exc}"
                ) from None
            rules.append(Rule(pattern, match.group(4), match.group(6)))
        elif match.group(7):
            raise InvalidConfigError(f"Invalid value {text} for configuration {key}: {item}")
        if found.end() >= len(source):
            break
    return rules


class PrincipalMapper:
    def __init__(self, text: str | None) -> None:
        self.rules = parse_rules(text)

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}")
