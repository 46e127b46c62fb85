"""CreateAcls, DescribeAcls and DeleteAcls through the real dispatcher, every version.

Kafka's answers (``AclApis``, ``AclControlManager``, ``AuthorizerTest``'s
ACL management cases): SECURITY_DISABLED without an authorizer,
CLUSTER_AUTHORIZATION_FAILED without ALTER (create, delete) or DESCRIBE
(describe) on the cluster, INVALID_REQUEST for bad creations and filters,
filters with ANY / MATCH / LITERAL / PREFIXED, and the ACLs kept across a
restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from broker.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.unit.handlers.conftest import InProcessBroker

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ANY_PATTERN, MATCH = PatternType.ANY, PatternType.MATCH
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def secured(make_broker: Any, **overrides: str) -> InProcessBroker:
    b: InProcessBroker = make_broker(
        authorizer_class_name=AUTHORIZER, super_users="User:admin", **overrides
    )
    b.conn.principal = "User:admin"
    return b


def creation(
    name: str,
    op: AclOperation = Op.READ,
    *,
    rtype: ResourceType = TOPIC,
    ptype: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    perm: AclPermissionType = ALLOW,
) -> Any:
    return CreateAclsRequest.AclCreation(
        resource_type=int(rtype),
        resource_name=name,
        resource_pattern_type=int(ptype),
        principal=principal,
        host=host,
        operation=int(op),
        permission_type=int(perm),
    )


def filter_fields(
    rtype: ResourceType = ResourceType.ANY,
    name: str | None = None,
    ptype: PatternType = ANY_PATTERN,
    principal: str | None = None,
    host: str | None = None,
    op: AclOperation = Op.ANY,
    perm: AclPermissionType = AclPermissionType.ANY,
) -> dict[str, Any]:
    return {
        "resource_type_filter": int(rtype),
        "resource_name_filter": name,
        "pattern_type_filter": int(ptype),
        "principal_filter": principal,
        "host_filter": host,
        "operation": int(op),
        "permission_type": int(perm),
    }


def create(b: InProcessBroker, *creations: Any, version: int = 3) -> list[tuple[int, Any]]:
    resp = b.call(CreateAclsRequest(creations=list(creations)), version)
    return [(r.error_code, r.error_message) for r in resp.results]


def describe(b: InProcessBroker, version: int = 3, **kw: Any) -> Any:
    return b.call(DescribeAclsRequest(**filter_fields(**kw)), version)


def described(b: InProcessBroker, version: int = 3, **kw: Any) -> set[tuple[Any, ...]]:
    resp = describe(b, version, **kw)
    assert resp.error_code == ErrorCode.NONE, resp.error_message
    return {
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in resp.resources
        for a in r.acls
    }


def delete(b: InProcessBroker, *filters: dict[str, Any], version: int = 3) -> Any:
    return b.call(
        DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**f) for f in filters]),
        version,
    )


def row(
    name: str,
    op: AclOperation = Op.READ,
    rtype: ResourceType = TOPIC,
    ptype: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    perm: AclPermissionType = ALLOW,
) -> tuple[Any, ...]:
    return (int(rtype), name, int(ptype), principal, host, int(op), int(perm))


# ---- without an authorizer, without the cluster permission --------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_security_disabled_without_an_authorizer(broker: InProcessBroker, version: int) -> None:
    resp = describe(broker, version)
    assert resp.error_code == ErrorCode.SECURITY_DISABLED
    assert resp.error_message == "No Authorizer is configured on the broker."
    assert (
        create(broker, creation("t"), creation("u"), version=version)
        == [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker.")] * 2
    )
    resp = delete(broker, filter_fields(), version=version)
    assert [r.error_code for r in resp.filter_results] == [ErrorCode.SECURITY_DISABLED]


def test_acl_apis_need_the_cluster_permission(make_broker: Any) -> None:
    b = secured(make_broker)
    b.conn.principal = "User:alice"
    assert describe(b).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert create(b, creation("t")) == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    ]
    resp = delete(b, filter_fields())
    assert [r.error_code for r in resp.filter_results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    # the super user lets alice alter (create, delete) ACLs; ALTER implies DESCRIBE
    b.conn.principal = "User:admin"
    assert create(b, creation("kafka-cluster", Op.ALTER, rtype=CLUSTER)) == [(0, None)]
    b.conn.principal = "User:alice"
    assert create(b, creation("t")) == [(0, None)]
    assert described(b) == {row("kafka-cluster", Op.ALTER, CLUSTER), row("t")}
    assert (
        b.metrics.authorization_failure_family.labels("DescribeAcls", "Cluster", "Describe").value
        == 1
    )
    assert (
        b.metrics.authorization_failure_family.labels("CreateAcls", "Cluster", "Alter").value == 1
    )


# ---- create ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_and_describe_every_version(make_broker: Any, version: int) -> None:
    b = secured(make_broker)
    literal = [
        creation("orders"),
        creation("orders", Op.WRITE, principal="User:bob", host="10.0.0.1", perm=DENY),
        creation("g1", Op.READ, rtype=GROUP),
        creation("kafka-cluster", Op.IDEMPOTENT_WRITE, rtype=CLUSTER, principal="User:*"),
        creation("tx", Op.WRITE, rtype=ResourceType.TRANSACTIONAL_ID),
    ]
    assert create(b, *literal, version=version) == [(0, None)] * 5
    expected = {
        row("orders"),
        row("orders", Op.WRITE, principal="User:bob", host="10.0.0.1", perm=DENY),
        row("g1", Op.READ, GROUP),
        row("kafka-cluster", Op.IDEMPOTENT_WRITE, CLUSTER, principal="User:*"),
        row("tx", Op.WRITE, ResourceType.TRANSACTIONAL_ID),
    }
    # a v0 filter is LITERAL (the field does not exist in v0)
    assert described(b, version, ptype=LITERAL) == expected
    if version >= 1:
        assert create(b, creation("ord", ptype=PREFIXED), version=version) == [(0, None)]
        assert described(b, version, ptype=PREFIXED) == {row("ord", ptype=PREFIXED)}
        assert described(b, version) == expected | {row("ord", ptype=PREFIXED)}
    resp = describe(b, version, rtype=TOPIC, name="orders", ptype=LITERAL)
    # one resource, two entries
    assert [(r.resource_name, len(r.acls)) for r in resp.resources] == [("orders", 2)]


def test_creating_an_existing_acl_changes_nothing(make_broker: Any) -> None:
    b = secured(make_broker)
    assert create(b, creation("t"), creation("t")) == [(0, None), (0, None)]
    assert create(b, creation("t")) == [(0, None)]
    assert described(b) == {row("t")}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            creation("other", rtype=CLUSTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (creation(""), "Invalid empty resource name"),
        (creation("t", rtype=ResourceType.ANY), "Invalid resourceType ANY"),
        (creation("t", rtype=ResourceType.UNKNOWN), "Invalid resourceType UNKNOWN"),
        (creation("t", rtype=ResourceType.DELEGATION_TOKEN), "no delegation tokens"),
        (creation("t", ptype=MATCH), "Invalid patternType MATCH"),
        (creation("t", ptype=ANY_PATTERN), "Invalid patternType ANY"),
        (creation("t", Op.ANY), "Invalid operation ANY"),
        (creation("t", Op.UNKNOWN), "Invalid operation UNKNOWN"),
        (creation("t", perm=AclPermissionType.ANY), "Invalid permissionType ANY"),
        (creation("t", principal="alice"), "principalType:principalName but got alice"),
    ],
)
def test_invalid_creations_are_refused_one_by_one(make_broker: Any, bad: Any, message: str) -> None:
    b = secured(make_broker)
    (first, second) = create(b, bad, creation("ok"))
    assert first[0] == ErrorCode.INVALID_REQUEST
    assert message in first[1]
    assert second == (0, None)
    assert described(b) == {row("ok")}


def test_unknown_codes_read_as_unknown(make_broker: Any) -> None:
    b = secured(make_broker)
    odd = creation("t")
    odd.operation = 99
    (result,) = create(b, odd)
    assert result == (ErrorCode.INVALID_REQUEST, "Invalid operation UNKNOWN")


# ---- describe and delete filters ------------------------------------------------------------


def seeded(make_broker: Any) -> InProcessBroker:
    b = secured(make_broker)
    assert (
        create(
            b,
            creation("orders"),
            creation("ord", Op.WRITE, ptype=PREFIXED, principal="User:bob"),
            creation("*", Op.DESCRIBE, principal="User:*"),
            creation("orders", rtype=GROUP),
        )
        == [(0, None)] * 4
    )
    return b


def test_describe_filters(make_broker: Any) -> None:
    b = seeded(make_broker)
    orders = row("orders")
    ord_prefix = row("ord", Op.WRITE, ptype=PREFIXED, principal="User:bob")
    wildcard = row("*", Op.DESCRIBE, principal="User:*")
    group = row("orders", rtype=GROUP)
    assert described(b) == {orders, ord_prefix, wildcard, group}
    assert described(b, rtype=TOPIC, name="orders", ptype=MATCH) == {orders, ord_prefix, wildcard}
    assert described(b, rtype=TOPIC, name="orders", ptype=ANY_PATTERN) == {orders}
    assert described(b, name="orders", ptype=LITERAL) == {orders, group}
    assert described(b, ptype=PREFIXED) == {ord_prefix}
    assert described(b, principal="User:bob") == {ord_prefix}
    assert described(b, op=Op.DESCRIBE, perm=ALLOW) == {wildcard}
    assert described(b, rtype=GROUP) == {group}
    assert described(b, rtype=TOPIC, name="nothing", ptype=LITERAL) == set()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rtype": ResourceType.UNKNOWN}, "Unknown patternFilter."),
        ({"ptype": PatternType.UNKNOWN}, "Unknown patternFilter."),
        ({"op": Op.UNKNOWN}, "Unknown entryFilter."),
        ({"perm": AclPermissionType.UNKNOWN}, "Unknown entryFilter."),
    ],
)
def test_unknown_filters_are_invalid(
    make_broker: Any, fields: dict[str, Any], message: str
) -> None:
    b = seeded(make_broker)
    resp = describe(b, **fields)
    assert (resp.error_code, resp.error_message) == (ErrorCode.INVALID_REQUEST, message)
    resp = delete(b, filter_fields(**fields), filter_fields(name="nothing"))
    assert [(r.error_code, r.error_message) for r in resp.filter_results] == [
        (ErrorCode.INVALID_REQUEST, message),
        (0, None),
    ]
    assert len(described(b)) == 4


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_delete_with_filters_every_version(make_broker: Any, version: int) -> None:
    b = seeded(make_broker)
    resp = delete(
        b,
        filter_fields(rtype=TOPIC, name="orders", ptype=LITERAL),
        filter_fields(name="orders", ptype=LITERAL),
        filter_fields(rtype=TOPIC, name="nothing", ptype=LITERAL),
        version=version,
    )
    got = [
        [
            (
                m.error_code,
                m.resource_type,
                m.resource_name,
                m.pattern_type,
                m.principal,
                m.operation,
            )
            for m in r.matching_acls
        ]
        for r in resp.filter_results
    ]
    assert [r.error_code for r in resp.filter_results] == [0, 0, 0]
    topic = (0, int(TOPIC), "orders", int(LITERAL), "User:alice", int(Op.READ))
    group = (0, int(GROUP), "orders", int(LITERAL), "User:alice", int(Op.READ))
    # an ACL matched by two filters is listed by both
    assert got == [[topic], [topic, group], []]
    remaining = described(b)
    assert row("orders") not in remaining and row("orders", rtype=GROUP) not in remaining
    if version >= 1:
        resp = delete(b, filter_fields(rtype=TOPIC, name="orders-eu", ptype=MATCH), version=version)
        (result,) = resp.filter_results
        assert {m.resource_name for m in result.matching_acls} == {"ord", "*"}
        assert described(b) == set()


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    overrides = {"authorizer_class_name": AUTHORIZER, "super_users": "User:admin"}
    b = InProcessBroker(tmp_path / "data", **overrides)
    b.conn.principal = "User:admin"
    try:
        assert create(b, creation("kept"), creation("gone", ptype=PREFIXED)) == [(0, None)] * 2
        delete(b, filter_fields(name="gone", ptype=PREFIXED))
    finally:
        b.close()
    again = InProcessBroker(tmp_path / "data", **overrides)
    again.conn.principal = "User:admin"
    try:
        assert described(again) == {row("kept")}
    finally:
        again.close()
    assert (tmp_path / "data" / "acls.json").exists()
