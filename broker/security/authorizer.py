"""The authorizer: Kafka's ``StandardAuthorizer`` decisions, cached per request key.

A decision on (principal, host, operation, resource type, resource name),
as ``StandardAuthorizerData.authorize`` / ``findAclRule`` make it:

1. a principal listed in ``super.users`` is allowed everything;
2. otherwise the ACLs whose pattern covers the resource are gathered (the
   LITERAL name, the LITERAL ``*`` wildcard, every PREFIXED pattern that
   begins the name; ``acl_index.py``); one of them that applies to the
   request (principal or ``User:*``, host or ``*``, operation or ALL, with
   the implied operations) and DENYs decides: denied. DENY wins;
3. else one that applies and ALLOWs: allowed;
4. else, when some ACL names the resource (for anyone): denied; when none
   does, ``allow.everyone.if.no.acl.found`` decides (default false: denied).

The decision cache. The authorizer runs on the event loop only, so the
cache is plain dicts: (principal, host, operation, resource type) -> {name:
allowed}. A produce request takes the inner dict once and then pays one
``dict.get`` per topic; a miss computes the decision from the index and
stores it. Any change of the ACLs replaces the index and drops the whole
cache, so no decision outlives the ACLs it came from. The cache is bounded
(``DECISION_CACHE_ENTRIES``): past it, it starts again empty, so names
invented by a client cannot grow it without end.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.security.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    operations_bit_field,
)
from broker.security.acl_index import TypeIndex, build_index, canonical_host, find_result
from broker.security.audit import AuditLog

#: decisions kept before the cache starts again (about 100 bytes each)
DECISION_CACHE_ENTRIES = 1 << 17
#: the resource name ``Authorizer.authorizeByResourceType`` checks first (super users,
#: wildcard ACLs, allow.everyone.if.no.acl.found)
_HARDCODED_NAME = "hardcode"


class StandardAuthorizer:
    """ACL decisions; see the module docstring. Event loop thread only."""

    def __init__(
        self,
        *,
        super_users: Iterable[str] = (),
        allow_if_no_acl: bool = False,
        bindings: Iterable[AclBinding] = (),
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._bindings: tuple[AclBinding, ...] = ()
        self._index: dict[int, TypeIndex] = {}
        self._decisions: dict[tuple[str, str, int, int], dict[str, bool]] = {}
        self._cached = 0
        #: the log of denials (written by the handlers, which know the request)
        self.audit = AuditLog()
        self.replace(bindings)

    # ---- the ACLs -----------------------------------------------------------------------------

    @property
    def bindings(self) -> tuple[AclBinding, ...]:
        return self._bindings

    @property
    def acl_count(self) -> int:
        return len(self._bindings)

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Make ``bindings`` (duplicates dropped, order kept) the ACLs; drops every
        cached decision."""
        self._bindings = tuple(dict.fromkeys(bindings))
        self._index = build_index(self._bindings)
        self._decisions = {}
        self._cached = 0

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACLs the filter matches (``StandardAuthorizer.acls``)."""
        return [b for b in self._bindings if binding_filter.matches(b)]

    # ---- decisions ----------------------------------------------------------------------------

    def decisions(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> dict[str, bool]:
        """The cached decisions of one principal and host for one operation on one
        resource type, by resource name. Look a name up with ``.get(name)``; on
        None call :meth:`decide`. Valid until the ACLs change (take it again per
        request). The produce path passes the codes as plain ints
        (``int(AclOperation.WRITE)``): an IntEnum in the key hashes through a
        slower path."""
        key = (principal, host, operation, resource_type)
        known = self._decisions.get(key)
        if known is None:
            self._count_entry()
            known = self._decisions[key] = {}
        return known

    def decide(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
    ) -> bool:
        """Compute one decision and cache it."""
        allowed = self._evaluate(principal, host, operation, resource_type, name)
        self.decisions(principal, host, operation, resource_type)[name] = allowed
        self._count_entry()
        return allowed

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether the principal, connected from ``host``, may do ``operation`` on
        the resource (a LITERAL resource name, as every request names one)."""
        allowed = self.decisions(principal, host, operation, resource_type).get(name)
        if allowed is None:
            allowed = self.decide(principal, host, operation, resource_type, name)
        return allowed

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType, name: str
    ) -> int:
        """KIP-430's bit field of the operations the principal may do on the resource
        (``AuthHelper.authorizedOperations``)."""
        return operations_bit_field(
            [
                op
                for op in SUPPORTED_OPERATIONS[resource_type]
                if self.authorize(principal, host, op, resource_type, name)
            ]
        )

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may do ``operation`` on at least one resource of
        the type: ``Authorizer.authorizeByResourceType`` (KIP-679), which
        InitProducerId uses for idempotent producers without IDEMPOTENT_WRITE on
        the cluster. An ALLOW counts unless a DENY covers it: a LITERAL deny of
        the same name, a PREFIXED deny that begins it, or a ``*`` deny."""
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN) or operation in (
            AclOperation.ANY,
            AclOperation.UNKNOWN,
        ):
            raise ValueError(f"authorize_by_resource_type({operation.name}, {resource_type.name})")
        if self.authorize(principal, host, operation, resource_type, _HARDCODED_NAME):
            return True
        host = canonical_host(host)
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allowed: list[tuple[PatternType, str]] = []
        wildcard_allow = False
        for binding in self._bindings:
            pattern, entry = binding.pattern, binding.entry
            if pattern.resource_type != resource_type:
                continue
            if entry.host != WILDCARD_HOST and canonical_host(entry.host) != host:
                continue
            if entry.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if entry.operation not in (operation, AclOperation.ALL):
                continue
            literal = pattern.pattern_type == PatternType.LITERAL
            if entry.permission_type == AclPermissionType.DENY:
                if literal and pattern.name == WILDCARD_RESOURCE:
                    return False
                (deny_literal if literal else deny_prefixed).add(pattern.name)
            elif literal and pattern.name == WILDCARD_RESOURCE:
                wildcard_allow = True
            else:
                allowed.append((pattern.pattern_type, pattern.name))
        if wildcard_allow:
            return True
        for pattern_type, name in allowed:
            if pattern_type == PatternType.LITERAL and name in deny_literal:
                continue
            if any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                continue
            return True
        return False

    # ---- internals ----------------------------------------------------------------------------

    def _count_entry(self) -> None:
        self._cached += 1
        if self._cached > DECISION_CACHE_ENTRIES:
            self._decisions = {}
            self._cached = 0

    def _evaluate(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        by_type = self._index.get(resource_type)
        found = by_type.rules_for(name) if by_type is not None else []
        if not found:
            return self.allow_if_no_acl
        host = canonical_host(host)
        allowed = False
        for rules in found:
            for rule in rules:
                result = find_result(rule, principal, host, operation)
                if result is None:
                    continue
                if not result:
                    return False  # DENY wins
                allowed = True
        return allowed
