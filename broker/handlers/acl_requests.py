"""What the ACL APIs share: wire structs <-> the ACL model, and their first checks.

The filters of DescribeAcls and DeleteAcls and the creations of CreateAcls
carry Kafka's codes (``broker/protocol/schemas/acls.py``); a code Kafka does
not know reads as UNKNOWN, and a filter or creation with an UNKNOWN part is
answered INVALID_REQUEST (Kafka's request classes throw while parsing, which
closes the connection; docs/deviations.md).

Before anything else each ACL API checks the cluster permission (DESCRIBE
for DescribeAcls, ALTER for CreateAcls and DeleteAcls:
CLUSTER_AUTHORIZATION_FAILED), then that an authorizer is configured
(SECURITY_DISABLED), as ``AclApis`` does.
"""

from __future__ import annotations

from broker.protocol.data import Data
from broker.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

#: messages of Kafka's answers (``Errors`` defaults, ``AclApis``)
CLUSTER_DENIED = "Cluster authorization failed."
NO_AUTHORIZER = "No Authorizer is configured on the broker."


def binding_filter(data: Data) -> AclBindingFilter:
    """The filter of a DescribeAclsRequest or of one DeleteAclsFilter."""
    return AclBindingFilter(
        ResourcePatternFilter(
            ResourceType.from_code(data.resource_type_filter),
            data.resource_name_filter,
            PatternType.from_code(data.pattern_type_filter),
        ),
        AccessControlEntryFilter(
            data.principal_filter,
            data.host_filter,
            AclOperation.from_code(data.operation),
            AclPermissionType.from_code(data.permission_type),
        ),
    )


def filter_problem(f: AclBindingFilter) -> str | None:
    """Why the filter cannot be used (``AclControlManager.validateFilter``), or None."""
    if f.pattern_filter.is_unknown:
        return "Unknown patternFilter."
    if f.entry_filter.is_unknown:
        return "Unknown entryFilter."
    return None


def creation_binding(c: Data) -> AclBinding:
    """The binding one AclCreation asks for (``CreateAclsRequest.aclBinding``)."""
    return AclBinding(
        ResourcePattern(
            ResourceType.from_code(c.resource_type),
            c.resource_name,
            PatternType.from_code(c.resource_pattern_type),
        ),
        AccessControlEntry(
            c.principal,
            c.host,
            AclOperation.from_code(c.operation),
            AclPermissionType.from_code(c.permission_type),
        ),
    )


def group_by_pattern(
    bindings: list[AclBinding],
) -> list[tuple[ResourcePattern, list[AccessControlEntry]]]:
    """``DescribeAclsResponse.aclsResources``: the entries of each pattern, in the
    order the patterns first appear."""
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        entries = by_pattern.setdefault(b.pattern, [])
        if b.entry not in entries:
            entries.append(b.entry)
    return list(by_pattern.items())
