"""``broker acls``: what its options mean (AclCommand's rules), without a broker."""

from __future__ import annotations

import argparse

import pytest

from broker.admin import acls
from broker.admin.client import AdminClientError, parse_bootstrap
from broker.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
)

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    acls.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:1", *argv])


def plan(*argv: str) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    return {f: set(entries) for f, entries in acls.filters_to_entries(parse(*argv))}


def entry(
    principal: str, op: AclOperation, perm: AclPermissionType = ALLOW, host: str = "*"
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def lit(rtype: ResourceType, name: str) -> ResourcePatternFilter:
    return ResourcePatternFilter(rtype, name, PatternType.LITERAL)


def test_allow_and_deny_principals_hosts_and_operations() -> None:
    got = plan(
        "--add", "--allow-principal", "User:a", "--deny-principal", "User:b",
        "--deny-host", "10.0.0.1", "--operation", "Alter", "--operation", "describe",
        "--topic", "t", "--cluster",
    )  # fmt: skip
    expected = {
        entry("User:a", Op.ALTER),
        entry("User:a", Op.DESCRIBE),
        entry("User:b", Op.ALTER, DENY, "10.0.0.1"),
        entry("User:b", Op.DESCRIBE, DENY, "10.0.0.1"),
    }
    assert got == {lit(TOPIC, "t"): expected, lit(CLUSTER, "kafka-cluster"): expected}


def test_operation_defaults_to_all_and_must_suit_the_resource() -> None:
    assert plan("--add", "--allow-principal", "User:a", "--group", "g") == {
        lit(GROUP, "g"): {entry("User:a", Op.ALL)}
    }
    with pytest.raises(acls.UsageError, match="ResourceType GROUP only supports operations"):
        plan("--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g")
    with pytest.raises(acls.UsageError, match="Invalid operation Nope"):
        plan("--add", "--allow-principal", "User:a", "--operation", "Nope", "--topic", "t")


def test_producer_and_consumer_roles() -> None:
    got = plan(
        "--add", "--producer", "--consumer", "--idempotent", "--allow-principal", "User:p",
        "--topic", "t", "--group", "g", "--transactional-id", "tx",
    )  # fmt: skip
    assert got == {
        lit(TOPIC, "t"): {
            entry("User:p", op) for op in (Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.READ)
        },
        lit(ResourceType.TRANSACTIONAL_ID, "tx"): {
            entry("User:p", Op.WRITE),
            entry("User:p", Op.DESCRIBE),
        },
        lit(CLUSTER, "kafka-cluster"): {entry("User:p", Op.IDEMPOTENT_WRITE)},
        lit(GROUP, "g"): {entry("User:p", Op.READ)},
    }
    with pytest.raises(
        acls.UsageError, match="With --consumer you must specify a --topic and a --group"
    ):
        plan("--add", "--consumer", "--allow-principal", "User:p", "--topic", "t")
    with pytest.raises(acls.UsageError, match="infer the operations"):
        plan(
            "--add",
            "--producer",
            "--operation",
            "Read",
            "--allow-principal",
            "User:p",
            "--topic",
            "t",
        )
    with pytest.raises(acls.UsageError, match="only available if --producer"):
        plan("--add", "--idempotent", "--allow-principal", "User:p", "--topic", "t")


def test_pattern_types() -> None:
    got = plan(
        "--add",
        "--allow-principal",
        "User:a",
        "--topic",
        "ord",
        "--resource-pattern-type",
        "prefixed",
    )
    assert list(got) == [ResourcePatternFilter(TOPIC, "ord", PatternType.PREFIXED)]
    with pytest.raises(acls.UsageError, match="not valid when adding acls"):
        plan(
            "--add",
            "--allow-principal",
            "User:a",
            "--topic",
            "t",
            "--resource-pattern-type",
            "match",
        )
    with pytest.raises(acls.UsageError, match="Unknown resource-pattern-type"):
        plan("--remove", "--topic", "t", "--resource-pattern-type", "sideways")
    # removal and listing take filters; the cluster is only ever LITERAL
    got = plan("--remove", "--topic", "t", "--cluster", "--resource-pattern-type", "match")
    assert got == {ResourcePatternFilter(TOPIC, "t", PatternType.MATCH): set()}


def test_a_resource_is_required_and_principals_are_checked() -> None:
    with pytest.raises(acls.UsageError, match="at least one resource"):
        plan("--add", "--allow-principal", "User:a")
    with pytest.raises(acls.UsageError, match="principalType:principalName"):
        plan("--add", "--allow-principal", "alice", "--topic", "t")


def test_usage_errors_exit_2_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    # port 1 on 127.0.0.1 refuses connections: a usage error must come first
    assert acls.run(parse("--add", "--topic", "t")) == 2
    assert "--allow-principal, --deny-principal" in capsys.readouterr().err
    assert acls.run(parse("--remove", "--principal", "User:a", "--topic", "t")) == 2
    assert acls.run(parse("--list", "--force")) == 1  # valid: fails to connect
    assert "cannot connect" in capsys.readouterr().err


def test_output_is_kafka_acls_text() -> None:
    assert acls.pattern_text(TOPIC, "t", PatternType.LITERAL) == (
        "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    )
    assert acls.pattern_text(TOPIC, None, PatternType.ANY).startswith(
        "ResourcePattern(resourceType=TOPIC, name=<any>"
    )
    assert acls.entry_text(entry("User:a", Op.IDEMPOTENT_WRITE, DENY, "h")) == (
        "(principal=User:a, host=h, operation=IDEMPOTENT_WRITE, permissionType=DENY)"
    )


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]
    with pytest.raises(AdminClientError):
        parse_bootstrap("nohost")
