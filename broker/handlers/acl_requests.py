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

import logging
from collections.abc import Iterable

from broker.errors import ErrorCode
from broker.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
)
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
from broker.security.acl_control import MAX_ACLS_PER_REQUEST, AclControl

log = logging.getLogger(__name__)

#: messages of Kafka's answers (``Errors`` defaults, ``AclApis``)
CLUSTER_DENIED = "Cluster authorization failed."
NO_AUTHORIZER = "No Authorizer is configured on the broker."


def batch_too_large(verb: str) -> str:
    """POLICY_VIOLATION's message past MAX_ACLS_PER_REQUEST (``verb``: created, deleted)."""
    return (
        "Unable to perform excessively large batch operation: at most "
        f"{MAX_ACLS_PER_REQUEST} ACLs can be {verb} by one request."
    )


def mark_unstored(
    control: AclControl,
    results: Iterable[
        CreateAclsResponse.AclCreationResult | DeleteAclsResponse.DeleteAclsFilterResult
    ],
    exc: OSError,
) -> None:
    """The ACL file could not be written: every result of the change says so."""
    log.error("cannot write the ACL file %s: %s", control.store.path, exc)
    for result in results:
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        result.error_message = f"The ACLs could not be stored: {exc}"


def binding_filter(
    data: DescribeAclsRequest | DeleteAclsRequest.DeleteAclsFilter,
) -> AclBindingFilter:
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


def creation_binding(c: CreateAclsRequest.AclCreation) -> AclBinding:
    """The binding one AclCreation asks for (``CreateAclsRequest.aclBinding``)."""
    return AclBinding.from_codes(
        resource_type=c.resource_type,
        name=c.resource_name,
        pattern_type=c.resource_pattern_type,
        principal=c.principal,
        host=c.host,
        operation=c.operation,
        permission_type=c.permission_type,
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
