"""Kafka's ACL model: what an ACL names, and the filters that select ACLs.

An ACL binding (``org.apache.kafka.common.acl.AclBinding``) is a resource
pattern and an access control entry::

    ResourcePattern     resource_type (Topic, Group, Cluster, TransactionalId)
                        name          ("orders", "orders-" for a prefix, "*" for any,
                                       "kafka-cluster" for the cluster)
                        pattern_type  LITERAL | PREFIXED
    AccessControlEntry  principal     "User:alice", or "User:*" for any principal
                        host          an IP address, or "*" for any host
                        operation     Read, Write, ... or All
                        permission    Allow | Deny

The wire codes are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``); a code Kafka does not know reads as UNKNOWN
(``fromCode``). Filters (``AclBindingFilter``) select bindings for
DescribeAcls and DeleteAcls: a null name, principal or host matches any, ANY
matches any type, operation or permission, and the MATCH pattern type selects
every binding that would apply to the named resource (literal, the "*"
wildcard, and prefixes of it), as ``ResourcePatternFilter.matches`` does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Self

from broker.errors import InvalidRequestError

#: the only name of the CLUSTER resource (``Resource.CLUSTER_NAME``)
CLUSTER_NAME = "kafka-cluster"
#: a LITERAL resource name that matches every name (``ResourcePattern.WILDCARD_RESOURCE``)
WILDCARD_RESOURCE = "*"
#: the principal of ACLs that apply to every principal (``WILDCARD_PRINCIPAL``)
WILDCARD_PRINCIPAL = "User:*"
#: the host of ACLs that apply to every host (``AclEntry.WILDCARD_HOST``)
WILDCARD_HOST = "*"


def _pascal(name: str) -> str:
    """``SecurityUtils.toPascalCase``: TRANSACTIONAL_ID -> TransactionalId."""
    return "".join(part.capitalize() for part in name.split("_"))


class _Coded(enum.IntEnum):
    """A Kafka enum with wire codes; unknown codes read as UNKNOWN (code 0)."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @classmethod
    def from_name(cls, text: str) -> Self:
        """By name, as kafka-acls.sh and ``SecurityUtils`` accept it: ``TRANSACTIONAL_ID``,
        ``TransactionalId``, ``transactional-id`` or ``transactionalid``."""
        wanted = text.strip().replace("-", "").replace("_", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}")

    @property
    def pascal(self) -> str:
        return _pascal(self.name)


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: the resource types this broker keeps ACLs for (it has no delegation tokens
#: and no token-owning users; docs/deviations.md)
SUPPORTED_RESOURCE_TYPES = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)

_O = AclOperation
#: ``AclEntry.supportedOperations``: the operations that mean something on each
#: resource type, in code order; their bits make the KIP-430 authorized operations
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ,
        _O.WRITE,
        _O.CREATE,
        _O.DELETE,
        _O.ALTER,
        _O.DESCRIBE,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DELETE, _O.DESCRIBE),
    ResourceType.CLUSTER: (
        _O.CREATE,
        _O.ALTER,
        _O.DESCRIBE,
        _O.CLUSTER_ACTION,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.WRITE, _O.DESCRIBE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


def operations_bit_field(operations: list[AclOperation] | tuple[AclOperation, ...]) -> int:
    """``Utils.to32BitField`` of the operations' codes (KIP-430 authorized operations)."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


def parse_principal(text: str) -> tuple[str, str]:
    """``SecurityUtils.parseKafkaPrincipal``: ``type:name`` split at the first colon."""
    kind, sep, name = text.partition(":")
    if not text or not sep:
        raise InvalidRequestError(
            f"expected a string in format principalType:principalName but got {text}"
        )
    return kind, name


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"{self.resource_type.pascal}:{self.pattern_type.name}:{self.name}"


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"{self.principal} has {self.permission_type.pascal} permission for operations: "
            f"{self.operation.pascal} from hosts: {self.host}"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    @classmethod
    def from_codes(
        cls,
        *,
        resource_type: int,
        name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission_type: int,
    ) -> AclBinding:
        """A binding from the wire's fields (AclCreation, DescribeAcls' resources and
        their ACLs)."""
        return cls(
            ResourcePattern(
                ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type)
            ),
            AccessControlEntry(
                principal,
                host,
                AclOperation.from_code(operation),
                AclPermissionType.from_code(permission_type),
            ),
        )

    def __str__(self) -> str:
        return f"{self.pattern} {self.entry}"


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    @property
    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or (
            self.pattern_type == PatternType.UNKNOWN
        )

    def matches(self, pattern: ResourcePattern) -> bool:
        """``ResourcePatternFilter.matches``."""
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH) and wanted != pattern.pattern_type:
            return False
        name = self.name
        if name is None:
            return True
        if wanted in (PatternType.ANY, pattern.pattern_type):
            return name == pattern.name
        # MATCH: every pattern that applies to the resource named `name`
        if pattern.pattern_type == PatternType.LITERAL:
            return pattern.name in (name, WILDCARD_RESOURCE)
        return name.startswith(pattern.name)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or (
            self.permission_type == AclPermissionType.UNKNOWN
        )

    def matches(self, entry: AccessControlEntry) -> bool:
        """``AccessControlEntryFilter.matches``."""
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation not in (AclOperation.ANY, entry.operation):
            return False
        return self.permission_type in (AclPermissionType.ANY, entry.permission_type)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    @property
    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown or self.entry_filter.is_unknown

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(
            binding.entry
        )


ANY_BINDING = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)


def check_new_binding(binding: AclBinding) -> None:
    """Refuse a binding that cannot be created, with Kafka's messages
    (``AclApis.handleCreateAcls``, ``AclControlManager.validateNewAcl``):
    InvalidRequestError."""
    pattern, entry = binding.pattern, binding.entry
    rtype = pattern.resource_type
    if rtype == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        raise InvalidRequestError("Invalid empty resource name")
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidRequestError(f"Invalid resourceType {rtype.name}")
    if rtype not in SUPPORTED_RESOURCE_TYPES:
        # Kafka stores them; this broker has no delegation tokens (docs/deviations.md)
        raise InvalidRequestError(
            f"Resource type {rtype.pascal} is not supported by this broker: it has no "
            "delegation tokens. ACLs can name Topic, Group, Cluster and TransactionalId."
        )
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidRequestError(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidRequestError(f"Invalid operation {entry.operation.name}")
    if entry.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidRequestError(f"Invalid permissionType {entry.permission_type.name}")
    parse_principal(entry.principal)
