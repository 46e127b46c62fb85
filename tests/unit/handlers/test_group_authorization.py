"""The group APIs with an authorizer beyond the matrix's yes/no (``KafkaApisTest``'s
group cases): mixed topics in OffsetCommit, OffsetFetch and OffsetDelete,
the "all offsets" OffsetFetch leaving out topics the principal may not
describe, ListGroups' filter, DescribeGroups' and DeleteGroups' answer order
and KIP-430's authorized operations of a group."""

from __future__ import annotations

from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
)
from broker.security.acl import AclOperation
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.group_requests import (
    offset_commit_request,
    offset_delete_request,
    offset_fetch_request,
)
from tests.unit.handlers.test_authorization_matrix import (
    ALICE,
    CLUSTER,
    DENY,
    GAF,
    GROUP,
    GROUP_SETTINGS,
    TAF,
    TOPIC,
    acl,
    grant,
    secured_broker,
)

Op = AclOperation
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
OMITTED = -(2**31)
READ_BIT, DELETE_BIT, DESCRIBE_BIT = 1 << 3, 1 << 6, 1 << 8


@pytest.fixture
def secured(make_broker: Any) -> InProcessBroker:
    return secured_broker(make_broker, orders_partitions=2)


def as_admin(b: InProcessBroker, request: Any, version: int) -> Any:
    b.conn.principal = "User:admin"
    try:
        return b.call(request, version)
    finally:
        b.conn.principal = ALICE


def commit_request(group: str, offsets: dict[str, list[int]]) -> Any:
    """A simple commit of offset 10 + p to each listed partition p."""
    return offset_commit_request(group, {t: {p: 10 + p for p in ps} for t, ps in offsets.items()})


def codes(response: Any) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def committed(b: InProcessBroker, group: str = "g") -> dict[tuple[str, int], int]:
    shard = b.groups.shard_of(group)
    return {
        (t, p): om.committed_offset
        for t, ps in shard.offsets.offsets.get(group, {}).items()
        for p, om in ps.items()
    }


# ---- OffsetCommit -------------------------------------------------------------------------


def test_offset_commit_with_unauthorized_and_unknown_topics(secured: InProcessBroker) -> None:
    grant(
        secured,
        acl(GROUP, "g", Op.READ),
        acl(TOPIC, "orders", Op.READ),
        acl(TOPIC, "nope", Op.READ),
    )
    resp = secured.call(commit_request("g", {"orders": [0, 1, 7], "other": [0], "nope": [0]}), 8)
    assert codes(resp) == {
        ("orders", 0): ErrorCode.NONE,
        ("orders", 1): ErrorCode.NONE,
        ("orders", 7): UNKNOWN,
        ("other", 0): TAF,
        ("nope", 0): UNKNOWN,
    }
    assert committed(secured) == {("orders", 0): 10, ("orders", 1): 11}
    family = secured.metrics.authorization_failure_family
    assert family.labels("OffsetCommit", "Topic", "Read").value == 1


def test_offset_commit_refused_group_stores_nothing(secured: InProcessBroker) -> None:
    grant(secured, acl(TOPIC, "orders", Op.READ), acl(GROUP, "g", Op.DESCRIBE))
    resp = secured.call(commit_request("g", {"orders": [0, 1]}), 9)
    assert set(codes(resp).values()) == {GAF}
    assert committed(secured) == {}
    family = secured.metrics.authorization_failure_family
    assert family.labels("OffsetCommit", "Group", "Read").value == 1


# ---- OffsetFetch --------------------------------------------------------------------------


fetch_request = offset_fetch_request


def test_offset_fetch_unauthorized_topics_come_last(secured: InProcessBroker) -> None:
    as_admin(secured, commit_request("g", {"orders": [0], "other": [0]}), 8)
    grant(secured, acl(GROUP, "g", Op.DESCRIBE), acl(TOPIC, "orders", Op.DESCRIBE))
    (group,) = secured.call(fetch_request("g", {"other": [0], "orders": [0, 1]}), 8).groups
    assert group.error_code == ErrorCode.NONE
    assert [(t.name, [(p.partition_index, p.committed_offset, p.error_code)
                      for p in t.partitions]) for t in group.topics] == [
        ("orders", [(0, 10, ErrorCode.NONE), (1, -1, ErrorCode.NONE)]),
        ("other", [(0, -1, TAF)]),
    ]  # fmt: skip


def test_offset_fetch_all_leaves_out_topics_not_describable(secured: InProcessBroker) -> None:
    as_admin(secured, commit_request("g", {"orders": [0, 1], "other": [0]}), 8)
    grant(secured, acl(GROUP, "g", Op.DESCRIBE), acl(TOPIC, "orders", Op.DESCRIBE))
    (group,) = secured.call(fetch_request("g", None), 8).groups
    assert group.error_code == ErrorCode.NONE
    assert [t.name for t in group.topics] == ["orders"]
    # a principal that may describe both sees both
    (group,) = as_admin(secured, fetch_request("g", None), 8).groups
    assert sorted(t.name for t in group.topics) == ["orders", "other"]


@pytest.mark.parametrize("version", [1, 2, 7])
def test_offset_fetch_single_group_versions(secured: InProcessBroker, version: int) -> None:
    as_admin(secured, commit_request("g", {"orders": [0]}), 8)
    req = OffsetFetchRequest(
        group_id="g",
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="orders", partition_indexes=[0])],
    )
    resp = secured.call(req, version)
    if version >= 2:
        assert (resp.error_code, resp.topics) == (GAF, [])
    else:  # no top-level error before v2: on each asked-for partition
        ((p,),) = [t.partitions for t in resp.topics]
        assert (p.committed_offset, p.error_code) == (-1, GAF)
    grant(secured, acl(GROUP, "g", Op.DESCRIBE))
    resp = secured.call(req, version)
    ((p,),) = [t.partitions for t in resp.topics]
    assert (p.committed_offset, p.error_code) == (-1, TAF)
    grant(secured, acl(TOPIC, "orders", Op.DESCRIBE))
    resp = secured.call(req, version)
    ((p,),) = [t.partitions for t in resp.topics]
    assert (p.committed_offset, p.error_code) == (10, ErrorCode.NONE)


def test_offset_fetch_batch_answers_each_group(secured: InProcessBroker) -> None:
    grant(secured, acl(GROUP, "a", Op.DESCRIBE), acl(TOPIC, "orders", Op.DESCRIBE))
    req = OffsetFetchRequest(
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in "ab"]
    )
    groups = secured.call(req, 8).groups
    assert [(g.group_id, g.error_code) for g in groups] == [("a", ErrorCode.NONE), ("b", GAF)]


# ---- OffsetDelete -------------------------------------------------------------------------


def test_offset_delete_mixed_topics(secured: InProcessBroker) -> None:
    as_admin(secured, commit_request("g", {"orders": [0, 1], "other": [0]}), 8)
    grant(secured, acl(GROUP, "g", Op.DELETE), acl(TOPIC, "orders", Op.READ))
    req = offset_delete_request("g", {"other": [0], "orders": [0, 9], "gone": [0]})
    resp = secured.call(req, 0)
    assert resp.error_code == ErrorCode.NONE
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in resp.topics] == [
        ("other", [(0, TAF)]),
        ("orders", [(9, UNKNOWN), (0, ErrorCode.NONE)]),
        ("gone", [(0, TAF)]),
    ]  # fmt: skip
    assert committed(secured) == {("orders", 1): 11, ("other", 0): 10}


def test_offset_delete_group_error_replaces_partitions(secured: InProcessBroker) -> None:
    grant(secured, acl(GROUP, "missing", Op.DELETE))
    resp = secured.call(offset_delete_request("missing", {"other": [0]}), 0)
    assert (resp.error_code, resp.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])


# ---- ListGroups / DescribeGroups / DeleteGroups --------------------------------------------


def make_groups(b: InProcessBroker, *names: str) -> None:
    for name in names:
        as_admin(b, commit_request(name, {"orders": [0]}), 8)


def listed(b: InProcessBroker) -> list[str]:
    resp = b.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
    assert resp.error_code == ErrorCode.NONE
    return sorted(g.group_id for g in resp.groups)


def test_list_groups_shows_describable_groups(secured: InProcessBroker) -> None:
    make_groups(secured, "a", "b", "c")
    assert listed(secured) == []
    grant(secured, acl(GROUP, "a", Op.DESCRIBE), acl(GROUP, "c", Op.READ))
    assert listed(secured) == ["a", "c"]  # READ implies DESCRIBE
    grant(secured, acl(GROUP, "a", Op.DESCRIBE, DENY))
    assert listed(secured) == ["c"]
    # silent: the client asked for a list, not for these groups
    family = secured.metrics.authorization_failure_family
    assert family.labels("ListGroups", "Group", "Describe").value == 0
    assert family.labels("ListGroups", "Cluster", "Describe").value == 0


def test_list_groups_with_cluster_describe_shows_every_group(secured: InProcessBroker) -> None:
    make_groups(secured, "a", "b")
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.DESCRIBE), acl(GROUP, "a", Op.DESCRIBE, DENY))
    assert listed(secured) == ["a", "b"]


def test_describe_groups_refused_first_and_authorized_operations(secured: InProcessBroker) -> None:
    make_groups(secured, "a", "b")
    grant(
        secured, acl(GROUP, "a", Op.READ), acl(GROUP, "b", Op.DESCRIBE), acl(GROUP, "b", Op.DELETE)
    )
    req = DescribeGroupsRequest(groups=["a", "x", "b"], include_authorized_operations=True)
    groups = secured.call(req, 5).groups
    assert [(g.group_id, g.error_code) for g in groups] == [
        ("x", GAF),
        ("a", ErrorCode.NONE),
        ("b", ErrorCode.NONE),
    ]
    ops = {g.group_id: g.authorized_operations for g in groups}
    assert ops == {"x": OMITTED, "a": READ_BIT | DESCRIBE_BIT, "b": DESCRIBE_BIT | DELETE_BIT}
    # not asked for (or v0-2): Kafka's "omitted" value
    for version, asked in ((5, False), (2, True)):
        req = DescribeGroupsRequest(groups=["a"], include_authorized_operations=asked)
        (g,) = secured.call(req, version).groups
        assert g.authorized_operations == OMITTED


def test_describe_groups_without_authorizer_gives_every_group_operation(
    make_broker: Any,
) -> None:
    b: InProcessBroker = make_broker(**GROUP_SETTINGS)
    req = DescribeGroupsRequest(groups=["g"], include_authorized_operations=True)
    (g,) = b.call(req, 5).groups
    assert (g.group_state, g.authorized_operations) == (
        "Dead",
        READ_BIT | DESCRIBE_BIT | DELETE_BIT,
    )


def test_delete_groups_refused_answered_after_the_others(secured: InProcessBroker) -> None:
    make_groups(secured, "a", "b")
    grant(secured, acl(GROUP, "b", Op.DELETE))
    resp = secured.call(DeleteGroupsRequest(groups_names=["a", "b", "a", "z"]), 2)
    assert [(r.group_id, r.error_code) for r in resp.results] == [
        ("b", ErrorCode.NONE),
        ("a", GAF),
        ("z", GAF),
    ]
    assert listed(secured) == []
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.DESCRIBE))
    assert listed(secured) == ["a"]


def test_consumer_group_describe_refused_first_and_authorized_operations(
    secured: InProcessBroker,
) -> None:
    from broker.protocol.messages import ConsumerGroupDescribeRequest

    grant(secured, acl(GROUP, "a", Op.READ))
    req = ConsumerGroupDescribeRequest(group_ids=["a", "x"], include_authorized_operations=True)
    groups = secured.call(req, 1).groups
    assert [(g.group_id, g.error_code) for g in groups] == [
        ("x", GAF),
        ("a", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    # operations only for a group described without error
    assert [g.authorized_operations for g in groups] == [OMITTED, OMITTED]


# ---- the consumer group protocol: topics (Kafka 4.0, KAFKA-18813) ------------------------------


def heartbeat(b: InProcessBroker, member_id: str, **fields: Any) -> Any:
    from broker.protocol.messages import ConsumerGroupHeartbeatRequest

    request = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        topic_partitions=[],
        **fields,
    )
    return b.call(request, 1)


def assigned_topics(b: InProcessBroker, resp: Any) -> set[str]:
    topics = b.groups.topics
    names = {topics.topic_id(name): name for name in topics.topic_names()}
    return {names[t.topic_id] for t in resp.assignment.topic_partitions}


def test_consumer_group_heartbeat_needs_describe_on_each_subscribed_topic(
    secured: InProcessBroker,
) -> None:
    grant(secured, acl(GROUP, "g", Op.READ), acl(TOPIC, "orders", Op.DESCRIBE))
    resp = heartbeat(secured, "m1", subscribed_topic_names=["orders", "other"])
    assert resp.error_code == TAF
    assert resp.error_message == "Not authorized to access topics: [other]"
    assert "g" not in secured.groups.shard_of("g").consumer.groups
    family = secured.metrics.authorization_failure_family
    assert family.labels("ConsumerGroupHeartbeat", "Topic", "Describe").value == 1
    resp = heartbeat(secured, "m1", subscribed_topic_names=["orders"])
    assert resp.error_code == ErrorCode.NONE
    assert assigned_topics(secured, resp) == {"orders"}


def test_a_regex_resolves_to_the_topics_its_member_may_describe(
    secured: InProcessBroker,
) -> None:
    grant(secured, acl(GROUP, "g", Op.READ), acl(TOPIC, "orders", Op.DESCRIBE))
    resp = heartbeat(secured, "m1", subscribed_topic_regex="o.*")
    assert resp.error_code == ErrorCode.NONE
    # "other" matches too, but alice may not describe it: left out, and not reported
    assert assigned_topics(secured, resp) == {"orders"}
    group = secured.groups.shard_of("g").consumer.groups["g"]
    assert group.regex_topics == {"o.*": frozenset({"orders"})}
    family = secured.metrics.authorization_failure_family
    assert family.labels("ConsumerGroupHeartbeat", "Topic", "Describe").value == 0
    # a member of the same regex reuses the resolution; the admin's refresh (a new
    # regex) resolves every regex of the group with the admin's ACLs
    secured.conn.principal = "User:admin"
    resp = heartbeat(secured, "m2", subscribed_topic_regex="other")
    assert resp.error_code == ErrorCode.NONE
    assert group.regex_topics == {"o.*": frozenset({"orders", "other"}), "other": {"other"}}


def test_consumer_group_describe_hides_a_group_with_topics_not_describable(
    secured: InProcessBroker,
) -> None:
    from broker.protocol.messages import ConsumerGroupDescribeRequest

    secured.conn.principal = "User:admin"
    assert heartbeat(secured, "m1", subscribed_topic_names=["orders", "other"]).error_code == 0
    secured.conn.principal = ALICE
    grant(secured, acl(GROUP, "g", Op.DESCRIBE), acl(TOPIC, "orders", Op.DESCRIBE))
    req = ConsumerGroupDescribeRequest(group_ids=["g"], include_authorized_operations=True)
    (group,) = secured.call(req, 1).groups
    assert (group.error_code, group.members, group.authorized_operations) == (TAF, [], OMITTED)
    assert group.error_message == (
        "The described group uses topics that the client is not authorized to describe."
    )
    grant(secured, acl(TOPIC, "other", Op.DESCRIBE))
    (group,) = secured.call(req, 1).groups
    assert group.error_code == ErrorCode.NONE and len(group.members) == 1
    assert group.authorized_operations == DESCRIBE_BIT
