"""The ACLs indexed by resource, and Kafka's rule for one ACL against one request.

Kafka's ``StandardAuthorizerData`` keeps its ACLs in a tree sorted by resource
type and reversed name and walks the prefixes of a resource name. Here each
resource type has two hash maps, literal name -> rules and prefix -> rules,
and the lengths of the prefixes in use, so the ACLs that can apply to a
resource are found with one lookup per distinct prefix length, plus the
name itself and the ``*`` wildcard::

    TypeIndex(TOPIC)
      literal   {"orders": [rule, ...], "*": [rule, ...]}
      prefixed  {"orders-": [rule, ...], "o": [...]}
      lengths   (1, 7)           # name[:1], name[:7] are looked up

A rule is the part of an ACL that is checked against the request: principal,
host (in canonical form), operation and whether it allows.

``find_result`` is ``StandardAuthorizerData.findResult``: a rule applies when
its principal is the request's or ``User:*``, its host the client's or
``*``, and its operation the requested one or ALL; an ALLOW rule for READ,
WRITE, DELETE or ALTER also allows DESCRIBE, and one for ALTER_CONFIGS also
DESCRIBE_CONFIGS. DENY rules imply nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import NamedTuple

from broker.security.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
)

ALL = AclOperation.ALL
DESCRIBE = AclOperation.DESCRIBE
DESCRIBE_CONFIGS = AclOperation.DESCRIBE_CONFIGS
#: ALLOW ACLs of these operations also allow DESCRIBE (``IMPLIES_DESCRIBE``)
IMPLIES_DESCRIBE = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
#: ALLOW ACLs of these operations also allow DESCRIBE_CONFIGS (``IMPLIES_DESCRIBE_CONFIGS``)
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


def canonical_host(host: str) -> str:
    """The form hosts are compared in: an IP address in its standard text form
    (IPv6 compressed; an IPv4-mapped IPv6 address as the IPv4 address, as Java's
    ``InetAddress`` gives it), anything else unchanged."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


class Rule(NamedTuple):
    """One ACL as the authorizer checks it."""

    principal: str
    host: str  # canonical_host of the ACL's host, or "*"
    operation: AclOperation
    allow: bool


def find_result(rule: Rule, principal: str, host: str, operation: int) -> bool | None:
    """True (allowed) / False (denied) if ``rule`` applies to the request, else None."""
    if rule.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if rule.host not in (WILDCARD_HOST, host):
        return None
    op = rule.operation
    if op not in (ALL, operation):
        if not rule.allow:
            return None
        if operation == DESCRIBE:
            if op not in IMPLIES_DESCRIBE:
                return None
        elif operation == DESCRIBE_CONFIGS:
            if op not in IMPLIES_DESCRIBE_CONFIGS:
                return None
        else:
            return None
    return rule.allow


class TypeIndex:
    """The rules of one resource type, by literal name and by prefix."""

    __slots__ = ("lengths", "literal", "prefixed")

    def __init__(self) -> None:
        self.literal: dict[str, list[Rule]] = {}
        self.prefixed: dict[str, list[Rule]] = {}
        self.lengths: tuple[int, ...] = ()

    def rules_for(self, name: str) -> list[list[Rule]]:
        """Every list of rules whose pattern covers the resource ``name``."""
        found = []
        rules = self.literal.get(name)
        if rules:
            found.append(rules)
        if name != WILDCARD_RESOURCE:
            rules = self.literal.get(WILDCARD_RESOURCE)
            if rules:
                found.append(rules)
        size = len(name)
        prefixed = self.prefixed
        for length in self.lengths:
            if length > size:
                break
            rules = prefixed.get(name[:length])
            if rules:
                found.append(rules)
        return found


def build_index(bindings: Iterable[AclBinding]) -> dict[int, TypeIndex]:
    """The rules by resource type code."""
    index: dict[int, TypeIndex] = {}
    for binding in bindings:
        pattern, entry = binding.pattern, binding.entry
        by_type = index.get(pattern.resource_type)
        if by_type is None:
            by_type = index[pattern.resource_type] = TypeIndex()
        host = entry.host if entry.host == WILDCARD_HOST else canonical_host(entry.host)
        rule = Rule(
            entry.principal,
            host,
            entry.operation,
            entry.permission_type == AclPermissionType.ALLOW,
        )
        table = by_type.literal if pattern.pattern_type == PatternType.LITERAL else by_type.prefixed
        table.setdefault(pattern.name, []).append(rule)
    for by_type in index.values():
        by_type.lengths = tuple(sorted({len(prefix) for prefix in by_type.prefixed}))
    return index
