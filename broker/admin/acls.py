"""``broker acls``: kafka-acls.sh for this broker, over its own Kafka protocol.

The options and their meaning are ``AclCommand``'s (Kafka 3.9)::

    broker acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice \\
        --operation Read --operation Describe --topic orders --group billing
    broker acls --bootstrap-server 127.0.0.1:9092 --add --producer --idempotent \\
        --allow-principal User:app --topic orders- --resource-pattern-type prefixed
    broker acls --bootstrap-server 127.0.0.1:9092 --list --topic orders \\
        --resource-pattern-type match
    broker acls --bootstrap-server 127.0.0.1:9092 --remove --force --topic orders

* exactly one of --add, --remove, --list;
* resources: --topic, --group, --transactional-id (each repeatable), --cluster;
  --resource-pattern-type LITERAL (default) or PREFIXED, and for --list and
  --remove also ANY and MATCH (filters);
* entries: --allow-principal / --deny-principal (``User:name``, repeatable),
  --allow-host / --deny-host (default ``*`` for the principals given),
  --operation (repeatable, default All; each must be one the resource type
  supports, or All);
* --producer (Write, Describe, Create on the topics; Write, Describe on the
  transactional ids; IdempotentWrite on the cluster with --idempotent) and
  --consumer (Read, Describe on the topics, Read on the groups);
* --remove without principals removes every ACL of the resource filters;
  it asks before deleting unless --force is given (no terminal: refused);
* --list without a resource lists every ACL; --principal keeps only that
  principal's.

``--command-config FILE`` takes Kafka's client keys for a TLS or SASL
listener (``client_security.py``), as kafka-acls.sh's option does.

Output is kafka-acls.sh's ("Adding ACLs for resource `ResourcePattern(...)`:",
"Current ACLs for resource ..."). Exit 0 on success, 1 when the broker
refused something or could not be reached, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TypedDict

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, check
from broker.admin.client_security import (
    ClientSecurityError,
    UsageError,
    add_connection_arguments,
    command_security,
)
from broker.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from broker.security.acl import (
    ANY_BINDING,
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
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
    parse_principal,
)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
Op = AclOperation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs")
    parser.add_argument("--topic", action="append", default=[], help="topic ('*' = every topic)")
    parser.add_argument("--group", action="append", default=[], help="consumer group")
    parser.add_argument("--transactional-id", action="append", default=[], help="transactional id")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default="LITERAL",
        metavar="TYPE",
        help="LITERAL (default) or PREFIXED; ANY and MATCH for --list and --remove",
    )
    parser.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,"
        " AlterConfigs, IdempotentWrite or All (default All)",
    )
    parser.add_argument("--principal", action="append", default=[], help="--list: only these")
    parser.add_argument("--producer", action="store_true", help="the producer role's ACLs")
    parser.add_argument("--consumer", action="store_true", help="the consumer role's ACLs")
    parser.add_argument("--idempotent", action="store_true", help="--producer: IdempotentWrite")
    parser.add_argument("--force", action="store_true", help="do not ask before removing")


# ---- what the options mean ----------------------------------------------------------------


def _pattern_type(args: argparse.Namespace) -> PatternType:
    try:
        pattern_type = PatternType.from_name(args.resource_pattern_type)
    except ValueError:
        pattern_type = PatternType.UNKNOWN
    if pattern_type == PatternType.UNKNOWN:
        raise UsageError(f"Unknown resource-pattern-type: {args.resource_pattern_type}")
    if args.add and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(
            f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when "
            "adding acls."
        )
    return pattern_type


def resource_filters(args: argparse.Namespace, *, required: bool) -> list[ResourcePatternFilter]:
    """``getResourceFilter``: one filter per resource option, in option order."""
    pattern_type = _pattern_type(args)
    filters = [
        ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in args.topic
    ]
    if pattern_type == PatternType.LITERAL and (args.cluster or args.idempotent):
        filters.append(
            ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
        )
    filters += [
        ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in args.group
    ]
    filters += [
        ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pattern_type)
        for t in args.transactional_id
    ]  # fmt: skip
    if not filters and required:
        raise UsageError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group "
            "<group> or --transactional-id <transactional-id>"
        )
    return list(dict.fromkeys(filters))


def _principals(values: Iterable[str]) -> list[str]:
    out = []
    for value in values:
        principal = value.strip()
        try:
            parse_principal(principal)
        except Exception as exc:
            raise UsageError(str(exc)) from None
        out.append(principal)
    return out


def _entries(
    args: argparse.Namespace, operations: Iterable[AclOperation]
) -> list[AccessControlEntry]:
    """``getAcl``: every (principal, operation, host) for the allowed and the denied."""
    entries = []
    for principals, given_hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        wanted = _principals(principals)
        hosts = [h.strip() for h in given_hosts] or ([WILDCARD_HOST] if wanted else [])
        entries += [
            AccessControlEntry(p, h, op, permission)
            for p in wanted
            for op in operations
            for h in hosts
        ]
    return list(dict.fromkeys(entries))


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    ops: list[AclOperation] = []
    for text in args.operation or ["All"]:
        try:
            op = AclOperation.from_name(text)
        except ValueError:
            op = AclOperation.UNKNOWN
        if op in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise UsageError(f"Invalid operation {text}")
        ops.append(op)
    return ops


def filters_to_entries(
    args: argparse.Namespace,
) -> list[tuple[ResourcePatternFilter, list[AccessControlEntry]]]:
    """``getResourceFilterToAcls``: the entries meant for each resource filter."""
    if args.producer or args.consumer:
        if args.operation or args.deny_principal or args.deny_host:
            raise UsageError(
                "--producer and --consumer infer the operations: no --operation, "
                "--deny-principal or --deny-host"
            )
        if args.producer and not args.topic:
            raise UsageError("With --producer you must specify a --topic")
        if args.consumer and (
            not args.topic
            or not args.group
            or (not args.producer and (args.cluster or args.transactional_id))
        ):
            raise UsageError(
                "With --consumer you must specify a --topic and a --group and no --cluster or "
                "--transactional-id option should be specified."
            )
    elif args.idempotent:
        raise UsageError("The --idempotent option is only available if --producer is set")
    filters = resource_filters(args, required=True)
    result: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not (args.producer or args.consumer):
        entries = _entries(args, _operations(args))
        result = dict.fromkeys(filters, entries)
    if args.producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                result[f] = _entries(args, (Op.WRITE, Op.DESCRIBE, Op.CREATE))
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                result[f] = _entries(args, (Op.WRITE, Op.DESCRIBE))
            elif f.resource_type == ResourceType.CLUSTER and args.idempotent:
                result[f] = _entries(args, (Op.IDEMPOTENT_WRITE,))
    if args.consumer:
        for f in filters:
            ops: dict[ResourceType, tuple[AclOperation, ...]] = {
                ResourceType.TOPIC: (Op.READ, Op.DESCRIBE),
                ResourceType.GROUP: (Op.READ,),
            }
            if f.resource_type in ops:
                extra = _entries(args, ops[f.resource_type])
                result[f] = list(dict.fromkeys(result.get(f, []) + extra))
    for f, entries in result.items():
        valid = (*SUPPORTED_OPERATIONS[f.resource_type], Op.ALL)
        if any(e.operation not in valid for e in entries):
            raise UsageError(
                f"ResourceType {f.resource_type.name} only supports operations "
                + ", ".join(op.pascal for op in valid)
            )
    return list(result.items())


# ---- printing as kafka-acls.sh does -------------------------------------------------------


def pattern_text(rtype: ResourceType, name: str | None, ptype: PatternType) -> str:
    return (
        f"ResourcePattern(resourceType={rtype.name}, name={'<any>' if name is None else name}, "
        f"patternType={ptype.name})"
    )


def entry_text(e: AccessControlEntry) -> str:
    return (
        f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
        f"permissionType={e.permission_type.name})"
    )


def _print_resource(title: str, pattern: str, entries: Iterable[AccessControlEntry]) -> None:
    lines = "\n".join("\t" + entry_text(e) for e in entries)
    print(f"{title} `{pattern}`: \n {lines} \n")


# ---- talking to the broker ------------------------------------------------------------------


class _FilterFields(TypedDict):
    """The filter fields DescribeAclsRequest and DeleteAclsRequest.DeleteAclsFilter share."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


def _filter_fields(f: AclBindingFilter) -> _FilterFields:
    pf, ef = f.pattern_filter, f.entry_filter
    return {
        "resource_type_filter": int(pf.resource_type),
        "resource_name_filter": pf.name,
        "pattern_type_filter": int(pf.pattern_type),
        "principal_filter": ef.principal,
        "host_filter": ef.host,
        "operation": int(ef.operation),
        "permission_type": int(ef.permission_type),
    }


def _binding(
    resource: DescribeAclsResponse.DescribeAclsResource, acl: DescribeAclsResponse.AclDescription
) -> AclBinding:
    return AclBinding.from_codes(
        resource_type=resource.resource_type,
        name=resource.resource_name,
        pattern_type=resource.pattern_type,
        principal=acl.principal,
        host=acl.host,
        operation=acl.operation,
        permission_type=acl.permission_type,
    )


def describe(conn: AdminConnection, f: AclBindingFilter) -> list[AclBinding]:
    version = conn.version_for(DESCRIBE_ACLS)
    resp = conn.call(DescribeAclsRequest(**_filter_fields(f)), version)
    check(resp.error_code, "DescribeAcls", resp.error_message)
    return [_binding(r, a) for r in resp.resources for a in r.acls]


def create(conn: AdminConnection, bindings: list[AclBinding]) -> None:
    creations = [
        CreateAclsRequest.AclCreation(
            resource_type=int(b.pattern.resource_type),
            resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type),
            principal=b.entry.principal,
            host=b.entry.host,
            operation=int(b.entry.operation),
            permission_type=int(b.entry.permission_type),
        )
        for b in bindings
    ]
    resp = conn.call(CreateAclsRequest(creations=creations), conn.version_for(CREATE_ACLS))
    for b, r in zip(bindings, resp.results, strict=True):
        check(r.error_code, f"CreateAcls {b}", r.error_message)


def delete(conn: AdminConnection, filters: list[AclBindingFilter]) -> None:
    request = DeleteAclsRequest(
        filters=[DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(f)) for f in filters]
    )
    resp = conn.call(request, conn.version_for(DELETE_ACLS))
    for r in resp.filter_results:
        check(r.error_code, "DeleteAcls", r.error_message)


def _grouped(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        entries = out.setdefault(b.pattern, [])
        if b.entry not in entries:
            entries.append(b.entry)
    return out


def _confirm(args: argparse.Namespace, message: str) -> bool:
    if args.force:
        return True
    print(message)
    sys.stdout.flush()
    answer = sys.stdin.readline()
    if not answer:
        print("No answer (stdin closed): nothing removed; use --force to remove without asking.")
        return False
    return answer.strip().lower() == "y"


Plan = list[tuple[ResourcePatternFilter, list[AccessControlEntry]]]


def run_add(conn: AdminConnection, plan: Plan) -> None:
    for f, entries in plan:
        pattern = ResourcePattern(f.resource_type, f.name or "", f.pattern_type)
        _print_resource(
            "Adding ACLs for resource", pattern_text(f.resource_type, f.name, f.pattern_type),
            entries,
        )  # fmt: skip
        create(conn, [AclBinding(pattern, e) for e in entries])


def run_remove(conn: AdminConnection, args: argparse.Namespace, plan: Plan) -> int:
    status = 0
    for f, entries in plan:
        where = pattern_text(f.resource_type, f.name, f.pattern_type)
        if not entries:
            question = (
                f"Are you sure you want to delete all ACLs for resource filter `{where}`? (y/n)"
            )
            filters = [AclBindingFilter(f, ANY_BINDING.entry_filter)]
        else:
            lines = "\n".join("\t" + entry_text(e) for e in entries)
            question = (
                f"Are you sure you want to remove ACLs: \n {lines} \n from resource filter "
                f"`{where}`? (y/n)"
            )
            filters = [
                AclBindingFilter(
                    f, AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type)
                )
                for e in entries
            ]
        if _confirm(args, question):
            delete(conn, filters)
        else:
            status = 1
    return status


def run_list(
    conn: AdminConnection, filters: list[ResourcePatternFilter], principals: list[str]
) -> None:
    if filters:
        bindings = [
            b
            for f in filters
            for b in describe(conn, AclBindingFilter(f, ANY_BINDING.entry_filter))
        ]
    else:
        bindings = describe(conn, ANY_BINDING)
    grouped = _grouped(bindings)
    sections: list[tuple[str | None, dict[ResourcePattern, list[AccessControlEntry]]]] = (
        [(None, grouped)]
        if not principals
        else [
            (p, {r: [e for e in es if e.principal == p] for r, es in grouped.items()})
            for p in principals
        ]
    )
    for principal, by_resource in sections:
        if principal is not None:
            print(f"ACLs for principal `{principal}`")
        for pattern, entries in by_resource.items():
            if entries:
                _print_resource(
                    "Current ACLs for resource",
                    pattern_text(pattern.resource_type, pattern.name, pattern.pattern_type),
                    entries,
                )


def run(args: argparse.Namespace) -> int:
    # every usage error is found before connecting
    try:
        if args.principal and not args.list:
            raise UsageError("The --principal option is only available if --list is set")
        if args.list:
            if args.producer or args.consumer or args.allow_principal or args.deny_principal:
                raise UsageError("--list takes no --producer, --consumer or principals to add")
            filters = resource_filters(args, required=False)
            principals = _principals(args.principal)
            plan: Plan = []
        else:
            plan = filters_to_entries(args)
            if args.add and any(not entries for _, entries in plan):
                raise UsageError(
                    "You must specify one of: --allow-principal, --deny-principal when trying "
                    "to add ACLs."
                )
        security = command_security(args)
    except (UsageError, ClientSecurityError) as exc:
        print(f"broker acls: {exc}", file=sys.stderr)
        return 2
    try:
        with AdminConnection.connect(args.bootstrap_server, args.timeout, security) as conn:
            if args.add:
                run_add(conn, plan)
                return 0
            if args.remove:
                return run_remove(conn, args, plan)
            run_list(conn, filters, principals)
            return 0
    except (AdminClientError, BrokerRefused) as exc:
        print(f"Error while executing ACL command: {exc}", file=sys.stderr)
        return 1
