"""The authorizer's decisions, ported from Kafka's ``StandardAuthorizerTest`` and
``BaseAuthorizerTest`` (authorizeByResourceType), plus the decision cache."""

from __future__ import annotations

import pytest

from broker.config import parse_super_users
from broker.errors import InvalidConfigError
from broker.security import authorizer as authorizer_module
from broker.security.acl import (
    ANY_BINDING,
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
from broker.security.acl_index import build_index, canonical_host, find_result
from broker.security.authorizer import StandardAuthorizer

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
LITERAL = PatternType.LITERAL
PREFIXED = PatternType.PREFIXED
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
Op = AclOperation
LOCAL = "127.0.0.1"


def acl(
    rtype: ResourceType,
    name: str,
    ptype: PatternType,
    principal: str,
    host: str,
    op: AclOperation,
    perm: AclPermissionType,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm)
    )


def foo_acl(op: AclOperation, perm: AclPermissionType) -> AclBinding:
    return acl(TOPIC, "foo_", PREFIXED, "User:bob", "*", op, perm)


def bar_acl(op: AclOperation, perm: AclPermissionType) -> AclBinding:
    return acl(GROUP, "bar", LITERAL, "User:*", "*", op, perm)


def make(*bindings: AclBinding, allow_if_no_acl: bool = False) -> StandardAuthorizer:
    return StandardAuthorizer(
        super_users={"User:superman"}, allow_if_no_acl=allow_if_no_acl, bindings=bindings
    )


def decide(
    authz: StandardAuthorizer,
    user: str,
    actions: list[tuple[AclOperation, ResourceType, str]],
    host: str = LOCAL,
) -> list[bool]:
    return [authz.authorize(f"User:{user}", host, op, rt, name) for op, rt, name in actions]


def rule_result(binding: AclBinding, user: str, op: AclOperation) -> bool | None:
    (rule,) = [
        r
        for rules in build_index([binding])[binding.pattern.resource_type].rules_for(
            "foo_bar" if binding.pattern.resource_type == TOPIC else "bar"
        )
        for r in rules
    ]
    return find_result(rule, f"User:{user}", LOCAL, op)


# ---- StandardAuthorizerTest -----------------------------------------------------------------


def test_get_configured_super_users() -> None:
    assert parse_super_users(None) == frozenset()
    assert parse_super_users(" ") == frozenset()
    assert parse_super_users("User:bob;User:alice ") == {"User:bob", "User:alice"}
    assert parse_super_users(";  User:bob  ;  User:alice ") == {"User:bob", "User:alice"}
    with pytest.raises(InvalidConfigError, match="principalType:principalName but got bob"):
        parse_super_users("bob;:alice")


def test_allow_everyone_if_no_acl_found_config_enabled() -> None:
    authz = StandardAuthorizer(
        super_users={"User:alice", "User:chris"},
        allow_if_no_acl=True,
        bindings=[acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", Op.READ, ALLOW)],
    )
    assert decide(authz, "Bob", [(Op.READ, TOPIC, "topic1")]) == [False]
    assert decide(authz, "Bob", [(Op.READ, TOPIC, "topic2")]) == [True]


def test_allow_everyone_if_no_acl_found_config_disabled() -> None:
    authz = StandardAuthorizer(
        super_users={"User:alice", "User:chris"},
        allow_if_no_acl=False,
        bindings=[acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", Op.READ, ALLOW)],
    )
    assert decide(authz, "Bob", [(Op.READ, TOPIC, "topic1")]) == [False]
    assert decide(authz, "Bob", [(Op.READ, TOPIC, "topic2")]) == [False]


def test_find_result_implication() -> None:
    # these permissions all imply DESCRIBE
    for op in (Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert rule_result(foo_acl(op, ALLOW), "bob", Op.DESCRIBE) is True
    # CREATE does not imply DESCRIBE
    assert rule_result(foo_acl(Op.CREATE, ALLOW), "bob", Op.DESCRIBE) is None
    # deny ACLs don't do "implication"
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert rule_result(foo_acl(op, DENY), "bob", Op.DESCRIBE) is None
    # exact match
    assert rule_result(foo_acl(Op.DESCRIBE, DENY), "bob", Op.DESCRIBE) is False
    # these permissions all imply DESCRIBE_CONFIGS
    for op in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        assert rule_result(foo_acl(op, ALLOW), "bob", Op.DESCRIBE_CONFIGS) is True
    assert rule_result(foo_acl(Op.ALTER_CONFIGS, DENY), "bob", Op.DESCRIBE_CONFIGS) is None
    assert rule_result(foo_acl(Op.ALTER_CONFIGS, DENY), "bob", Op.ALTER_CONFIGS) is False


def test_find_result_principal_matching() -> None:
    assert rule_result(foo_acl(Op.READ, ALLOW), "bob", Op.READ) is True
    # principal does not match
    assert rule_result(foo_acl(Op.READ, ALLOW), "alice", Op.READ) is None
    # wildcard principal matches anything
    assert rule_result(bar_acl(Op.READ, DENY), "alice", Op.READ) is False


def test_list_acls() -> None:
    foo = [foo_acl(Op.READ, ALLOW), foo_acl(Op.WRITE, ALLOW)]
    bar = [bar_acl(Op.DESCRIBE_CONFIGS, DENY), bar_acl(Op.ALTER_CONFIGS, DENY)]
    authz = make(*foo, *bar)
    assert authz.acls(ANY_BINDING) == [*foo, *bar]
    authz.replace([foo[0], *bar])
    assert authz.acls(ANY_BINDING) == [foo[0], *bar]
    topics = AclBindingFilter(
        ResourcePatternFilter(TOPIC, None, PatternType.ANY), ANY_BINDING.entry_filter
    )
    assert authz.acls(topics) == [foo[0]]


def test_simple_authorizations() -> None:
    authz = make(
        foo_acl(Op.READ, ALLOW),
        foo_acl(Op.WRITE, ALLOW),
        bar_acl(Op.DESCRIBE_CONFIGS, ALLOW),
        bar_acl(Op.ALTER_CONFIGS, ALLOW),
    )
    assert decide(authz, "bob", [(Op.READ, TOPIC, "foo_")]) == [True]
    assert decide(authz, "fred", [(Op.ALTER_CONFIGS, GROUP, "bar")]) == [True]


def test_deny_precedence_with_operation_all() -> None:
    authz = make(
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:alice", "*", Op.READ, ALLOW),
        acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:*", "*", Op.DESCRIBE, ALLOW),
    )
    assert decide(
        authz,
        "alice",
        [
            (Op.WRITE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foo"),
            (Op.DESCRIBE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foobar"),
        ],
    ) == [False, False, False, True]
    assert decide(
        authz,
        "bob",
        [
            (Op.DESCRIBE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foo"),
            (Op.WRITE, TOPIC, "foo"),
            (Op.DESCRIBE, TOPIC, "foobaz"),
            (Op.READ, TOPIC, "foobaz"),
        ],
    ) == [False, False, False, True, False]


def test_topic_acl_with_operation_all() -> None:
    authz = make(
        acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, ALLOW),
        acl(TOPIC, "bar", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
        acl(TOPIC, "baz", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
    )
    assert decide(
        authz,
        "alice",
        [
            (Op.WRITE, TOPIC, "foo"),
            (Op.DESCRIBE_CONFIGS, TOPIC, "bar"),
            (Op.DESCRIBE, TOPIC, "baz"),
        ],
    ) == [True, True, False]
    assert decide(
        authz,
        "bob",
        [(Op.WRITE, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "baz")],
    ) == [True, False, True]
    assert decide(
        authz,
        "malory",
        [(Op.DESCRIBE, TOPIC, "foo"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")],
    ) == [True, False, False]


def test_host_address_acl_validation() -> None:
    host1, host2 = "192.168.1.1", "192.168.1.2"
    authz = make(
        acl(TOPIC, "foo", LITERAL, "User:alice", host1, Op.READ, DENY),
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:bob", host2, Op.READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:*", LOCAL, Op.DESCRIBE, ALLOW),
    )
    actions = [(Op.READ, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "bar")]
    assert decide(authz, "alice", actions, LOCAL) == [True, False, True]
    assert decide(authz, "alice", actions, host1) == [False, False, False]
    assert decide(authz, "alice", actions, host2) == [True, False, False]
    assert decide(authz, "bob", actions, LOCAL) == [False, False, True]
    assert decide(authz, "bob", actions, host1) == [False, False, False]
    assert decide(authz, "bob", actions, host2) == [False, True, True]


def test_authorization_with_many_acls() -> None:
    authz = make(
        acl(TOPIC, "green2", LITERAL, "User:*", "*", Op.READ, ALLOW),
        acl(TOPIC, "green", PREFIXED, "User:bob", "*", Op.READ, ALLOW),
        acl(TOPIC, "betamax4", LITERAL, "User:bob", "*", Op.READ, ALLOW),
        acl(TOPIC, "betamax", LITERAL, "User:bob", "*", Op.READ, ALLOW),
        acl(TOPIC, "beta", PREFIXED, "User:*", "*", Op.READ, ALLOW),
        acl(TOPIC, "alpha", PREFIXED, "User:*", "*", Op.READ, ALLOW),
        acl(TOPIC, "alp", PREFIXED, "User:bob", "*", Op.READ, DENY),
        acl(GROUP, "*", LITERAL, "User:bob", "*", Op.WRITE, ALLOW),
        acl(GROUP, "wheel", LITERAL, "User:*", "*", Op.WRITE, DENY),
    )
    assert decide(authz, "bob", [(Op.READ, TOPIC, "green1"), (Op.WRITE, GROUP, "wheel")]) == [
        True,
        False,
    ]
    assert decide(
        authz,
        "bob",
        [(Op.READ, TOPIC, "alpha"), (Op.WRITE, GROUP, "arbitrary"), (Op.READ, TOPIC, "ala")],
    ) == [False, True, False]


def test_prefix_acls() -> None:
    authz = make(
        acl(TOPIC, "fooa", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
        acl(TOPIC, "foobar", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
        acl(TOPIC, "f", PREFIXED, "User:bob", "*", Op.ALL, ALLOW),
    )
    assert decide(
        authz,
        "bob",
        [(Op.WRITE, TOPIC, "foobarr"), (Op.READ, TOPIC, "goobar"), (Op.READ, TOPIC, "fooa")],
    ) == [True, False, True]
    assert decide(
        authz,
        "alice",
        [(Op.DESCRIBE, TOPIC, "fooa"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")],
    ) == [True, False, False]


# ---- AuthorizerTest (core) ------------------------------------------------------------------


def test_super_user_has_access() -> None:
    authz = make(
        acl(TOPIC, "*", LITERAL, "User:*", "*", Op.ALL, DENY),
        acl(CLUSTER, "kafka-cluster", LITERAL, "User:*", "*", Op.ALL, DENY),
    )
    assert decide(authz, "superman", [(Op.WRITE, TOPIC, "t"), (Op.ALTER, CLUSTER, "kafka-cluster")])
    assert decide(authz, "alice", [(Op.WRITE, TOPIC, "t")]) == [False]


def test_wild_card_acls() -> None:
    authz = make(acl(TOPIC, "*", LITERAL, "User:alice", "*", Op.READ, ALLOW))
    assert decide(authz, "alice", [(Op.READ, TOPIC, "any"), (Op.WRITE, TOPIC, "any")]) == [
        True,
        False,
    ]
    authz.replace(
        [*authz.bindings, acl(TOPIC, "secret", LITERAL, "User:alice", "*", Op.READ, DENY)]
    )
    assert decide(authz, "alice", [(Op.READ, TOPIC, "any"), (Op.READ, TOPIC, "secret")]) == [
        True,
        False,
    ]


def test_no_acl_found_override() -> None:
    # an ACL on the resource for someone else: denied even with allow.everyone.if.no.acl.found
    authz = make(acl(TOPIC, "t", LITERAL, "User:bob", "*", Op.READ, ALLOW), allow_if_no_acl=True)
    assert decide(authz, "alice", [(Op.READ, TOPIC, "t"), (Op.READ, TOPIC, "other")]) == [
        False,
        True,
    ]


def test_acl_inheritance() -> None:
    # ALLOW on an operation implies DESCRIBE (and ALTER_CONFIGS implies DESCRIBE_CONFIGS) only
    for parent, implied in (
        (Op.READ, {Op.READ, Op.DESCRIBE}),
        (Op.WRITE, {Op.WRITE, Op.DESCRIBE}),
        (Op.DELETE, {Op.DELETE, Op.DESCRIBE}),
        (Op.ALTER, {Op.ALTER, Op.DESCRIBE}),
        (Op.ALTER_CONFIGS, {Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}),
        (Op.CREATE, {Op.CREATE}),
        (Op.ALL, {op for op in Op if op not in (Op.UNKNOWN, Op.ANY)}),
    ):
        authz = make(acl(TOPIC, "t", LITERAL, "User:alice", "*", parent, ALLOW))
        got = {
            op
            for op in Op
            if op not in (Op.UNKNOWN, Op.ANY)
            and authz.authorize("User:alice", LOCAL, op, TOPIC, "t")
        }
        assert got == implied, parent
    # DENY of an operation denies it alone (DENY ALL denies everything)
    authz = make(
        acl(TOPIC, "t", LITERAL, "User:alice", "*", Op.ALL, ALLOW),
        acl(TOPIC, "t", LITERAL, "User:alice", "*", Op.READ, DENY),
    )
    assert not authz.authorize("User:alice", LOCAL, Op.READ, TOPIC, "t")
    assert authz.authorize("User:alice", LOCAL, Op.DESCRIBE, TOPIC, "t")


def test_single_character_resource_acls() -> None:
    authz = make(acl(TOPIC, "f", LITERAL, "User:alice", "*", Op.READ, ALLOW))
    assert decide(authz, "alice", [(Op.READ, TOPIC, "f"), (Op.READ, TOPIC, "foo")]) == [True, False]
    authz = make(acl(TOPIC, "_", PREFIXED, "User:alice", "*", Op.READ, ALLOW))
    assert decide(
        authz, "alice", [(Op.READ, TOPIC, "_foo"), (Op.READ, TOPIC, "_"), (Op.READ, TOPIC, "foo_")]
    ) == [
        True,
        True,
        False,
    ]


def test_acls_filter() -> None:
    a = acl(TOPIC, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW)
    b = acl(TOPIC, "ord", PREFIXED, "User:bob", "10.0.0.1", Op.WRITE, DENY)
    c = acl(TOPIC, "*", LITERAL, "User:*", "*", Op.DESCRIBE, ALLOW)
    d = acl(GROUP, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW)
    authz = make(a, b, c, d)

    def flt(
        rtype: ResourceType = ResourceType.ANY,
        name: str | None = None,
        ptype: PatternType = PatternType.ANY,
        principal: str | None = None,
        host: str | None = None,
        op: AclOperation = Op.ANY,
        perm: AclPermissionType = AclPermissionType.ANY,
    ) -> list[AclBinding]:
        return authz.acls(
            AclBindingFilter(
                ResourcePatternFilter(rtype, name, ptype),
                AccessControlEntryFilter(principal, host, op, perm),
            )
        )

    assert flt() == [a, b, c, d]
    assert flt(TOPIC, "orders", PatternType.MATCH) == [a, b, c]
    assert flt(TOPIC, "orders", PatternType.ANY) == [a]
    assert flt(ResourceType.ANY, "orders", LITERAL) == [a, d]
    assert flt(ptype=PREFIXED) == [b]
    assert flt(TOPIC, None, PatternType.MATCH) == [a, b, c]
    assert flt(principal="User:alice") == [a, d]
    assert flt(host="10.0.0.1") == [b]
    assert flt(op=Op.DESCRIBE) == [c]
    assert flt(perm=DENY) == [b]
    assert flt(TOPIC, "other", PatternType.MATCH) == [c]


# ---- BaseAuthorizerTest: authorizeByResourceType --------------------------------------------


def by_type(
    authz: StandardAuthorizer, user: str, host: str, op: AclOperation, rt: ResourceType
) -> bool:
    return authz.authorize_by_resource_type(f"User:{user}", host, op, rt)


def add(authz: StandardAuthorizer, *bindings: AclBinding) -> None:
    authz.replace([*authz.bindings, *bindings])


def remove(authz: StandardAuthorizer, *bindings: AclBinding) -> None:
    authz.replace([b for b in authz.bindings if b not in bindings])


H1, H2 = "192.168.1.1", "192.168.1.2"


def test_authorize_by_resource_type_multiple_add_and_remove() -> None:
    authz = make()
    deny_read = acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.READ, DENY)
    allow_read = acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.READ, ALLOW)
    for _ in range(3):
        assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
        add(authz, allow_read)
        assert by_type(authz, "user1", H1, Op.READ, TOPIC)
        for _ in range(3):
            add(authz, deny_read)
            assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
            remove(authz, deny_read)
            add(authz, allow_read)
            assert by_type(authz, "user1", H1, Op.READ, TOPIC)
        remove(authz, allow_read)
        assert not by_type(authz, "user1", H1, Op.READ, TOPIC)


def test_authorize_by_resource_type_isolation_unrelated_deny_wont_dominate_allow() -> None:
    authz = make(
        acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.READ, DENY),
        acl(TOPIC, "sb1", LITERAL, "User:user2", H1, Op.READ, DENY),
        acl(TOPIC, "sb1", LITERAL, "User:user1", H2, Op.WRITE, DENY),
        acl(TOPIC, "sb1", LITERAL, "User:user2", H2, Op.READ, DENY),
        acl(TOPIC, "sb1", LITERAL, "User:user1", H2, Op.READ, ALLOW),
        acl(TOPIC, "sb2", LITERAL, "User:user1", H2, Op.READ, DENY),
        acl(GROUP, "s", PREFIXED, "User:user1", H2, Op.READ, DENY),
    )
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    assert not by_type(authz, "user1", H1, Op.READ, GROUP)
    assert not by_type(authz, "user1", H1, Op.READ, TXN)
    assert not by_type(authz, "user1", H1, Op.READ, CLUSTER)
    assert by_type(authz, "user1", H2, Op.READ, TOPIC)


def test_authorize_by_resource_type_deny_takes_precedence() -> None:
    authz = make(acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.WRITE, ALLOW))
    assert by_type(authz, "user1", H1, Op.WRITE, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.WRITE, DENY))
    assert not by_type(authz, "user1", H1, Op.WRITE, TOPIC)


def test_authorize_by_resource_type_prefixed_resource_deny_dominate() -> None:
    authz = make()

    def ace(name: str, perm: AclPermissionType) -> AclBinding:
        return acl(GROUP, name, PREFIXED, "User:user1", H1, Op.READ, perm)

    add(authz, ace("abcde", ALLOW))
    assert by_type(authz, "user1", H1, Op.READ, GROUP)
    add(authz, ace("abcd", DENY))
    assert not by_type(authz, "user1", H1, Op.READ, GROUP)
    add(authz, ace("abc", ALLOW))
    assert by_type(authz, "user1", H1, Op.READ, GROUP)
    add(authz, ace("a", DENY))
    assert not by_type(authz, "user1", H1, Op.READ, GROUP)
    add(authz, ace("ab", ALLOW))
    assert not by_type(authz, "user1", H1, Op.READ, GROUP)


def test_authorize_by_resource_type_wildcard_resource_deny_dominate() -> None:
    authz = make(acl(GROUP, "hello", PREFIXED, "User:user1", H1, Op.WRITE, ALLOW))
    assert by_type(authz, "user1", H1, Op.WRITE, GROUP)
    add(authz, acl(GROUP, "*", LITERAL, "User:user1", H1, Op.WRITE, DENY))
    assert not by_type(authz, "user1", H1, Op.WRITE, GROUP)
    add(authz, acl(GROUP, "*", LITERAL, "User:user1", H1, Op.WRITE, ALLOW))
    assert not by_type(authz, "user1", H1, Op.WRITE, GROUP)
    add(authz, acl(GROUP, "aloha", LITERAL, "User:user1", H1, Op.WRITE, ALLOW))
    assert not by_type(authz, "user1", H1, Op.WRITE, GROUP)


def test_authorize_by_resource_type_with_all_operation_ace() -> None:
    authz = make()
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(
        authz,
        acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.WRITE, DENY),
        acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.ALL, ALLOW),
    )
    assert by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.ALL, DENY))
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)


def test_authorize_by_resource_type_with_all_host_ace() -> None:
    authz = make()
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.READ, ALLOW))
    assert by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:user1", "*", Op.READ, DENY))
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:user1", H1, Op.READ, DENY))
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    assert not by_type(authz, "user1", H2, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:user1", "*", Op.READ, ALLOW))
    assert by_type(authz, "user1", H2, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:user1", "*", Op.READ, DENY))
    assert not by_type(authz, "user1", H2, Op.READ, TOPIC)


def test_authorize_by_resource_type_with_all_principal_ace() -> None:
    authz = make()
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:user1", H1, Op.READ, ALLOW))
    assert by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb1", LITERAL, "User:*", H1, Op.READ, DENY))
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:user1", H1, Op.READ, DENY))
    assert not by_type(authz, "user1", H1, Op.READ, TOPIC)
    assert not by_type(authz, "user2", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:*", H1, Op.READ, ALLOW))
    assert by_type(authz, "user2", H1, Op.READ, TOPIC)
    add(authz, acl(TOPIC, "sb2", LITERAL, "User:*", H1, Op.READ, DENY))
    assert not by_type(authz, "user2", H1, Op.READ, TOPIC)


def test_authorize_by_resource_type_super_user_has_access() -> None:
    deny_all = [
        acl(rt, name, LITERAL, "User:*", "*", Op.ALL, DENY)
        for rt, name in ((TOPIC, "*"), (CLUSTER, "*"), (GROUP, "*"), (TXN, "*"))
    ]
    authz = make(*deny_all)
    for rt in (TOPIC, CLUSTER, GROUP, TXN):
        assert by_type(authz, "superman", "192.0.4.4", Op.READ, rt)
        assert not by_type(authz, "alice", "192.0.4.4", Op.READ, rt)


def test_authorize_by_resource_type_no_acl_found_override() -> None:
    assert by_type(make(allow_if_no_acl=True), "alice", H1, Op.WRITE, TOPIC)
    assert not by_type(make(allow_if_no_acl=False), "alice", H1, Op.WRITE, TOPIC)


# ---- beyond Kafka's tests: hosts, authorized operations, the decision cache -----------------


def test_ipv6_and_ipv4_mapped_hosts_match_their_canonical_form() -> None:
    assert canonical_host("0:0:0:0:0:0:0:1") == "::1"
    assert canonical_host("::ffff:10.0.0.1") == "10.0.0.1"
    assert canonical_host("not-an-ip") == "not-an-ip"
    authz = make(
        acl(TOPIC, "t", LITERAL, "User:a", "0:0:0:0:0:0:0:1", Op.READ, ALLOW),
        acl(TOPIC, "t", LITERAL, "User:a", "10.0.0.1", Op.WRITE, ALLOW),
    )
    assert authz.authorize("User:a", "::1", Op.READ, TOPIC, "t")
    assert authz.authorize("User:a", "::ffff:10.0.0.1", Op.WRITE, TOPIC, "t")
    assert not authz.authorize("User:a", "10.0.0.2", Op.WRITE, TOPIC, "t")


def test_authorized_operations_are_kip_430_bit_fields() -> None:
    authz = make(acl(TOPIC, "t", LITERAL, "User:a", "*", Op.WRITE, ALLOW))
    assert authz.authorized_operations("User:a", LOCAL, TOPIC, "t") == (1 << 4) | (1 << 8)
    assert authz.authorized_operations("User:b", LOCAL, TOPIC, "t") == 0
    every_cluster_op = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    assert authz.authorized_operations("User:superman", LOCAL, CLUSTER, "kafka-cluster") == (
        every_cluster_op
    )


def test_cached_decisions_are_dropped_when_acls_change() -> None:
    authz = make(acl(TOPIC, "t", LITERAL, "User:a", "*", Op.WRITE, ALLOW))
    known = authz.decisions("User:a", LOCAL, Op.WRITE, TOPIC)
    assert known.get("t") is None
    assert authz.authorize("User:a", LOCAL, Op.WRITE, TOPIC, "t")
    assert known.get("t") is True  # cached: the next request pays a dict lookup
    add(authz, acl(TOPIC, "t", LITERAL, "User:a", "*", Op.WRITE, DENY))
    assert authz.decisions("User:a", LOCAL, Op.WRITE, TOPIC).get("t") is None
    assert not authz.authorize("User:a", LOCAL, Op.WRITE, TOPIC, "t")
    remove(authz, *authz.bindings)
    assert not authz.authorize("User:a", LOCAL, Op.WRITE, TOPIC, "t")  # no ACL: default deny


def test_decision_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(authorizer_module, "DECISION_CACHE_ENTRIES", 50)
    authz = make(acl(TOPIC, "t", PREFIXED, "User:a", "*", Op.WRITE, ALLOW))
    for i in range(500):
        assert authz.authorize("User:a", LOCAL, Op.WRITE, TOPIC, f"t{i}")
        assert not authz.authorize("User:a", LOCAL, Op.WRITE, TOPIC, f"x{i}")
    cached = sum(len(d) + 1 for d in authz._decisions.values())
    assert cached <= 51
