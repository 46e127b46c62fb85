"""The server assignors: ``range`` (Kafka's ``RangeAssignorTest`` cases) and ``uniform``
(``UniformAssignorTest``'s, and Hypothesis for its invariants: every subscribed partition
given once, to a subscriber, counts balanced, nothing moved when nothing changed)."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.group.consumer.assignor import GroupSpec, MemberSpec
from broker.coordinator.group.consumer.group import SubscriptionType
from broker.coordinator.group.consumer.range_assignor import RangeAssignor
from broker.coordinator.group.consumer.uniform import UniformAssignor

FOO, BAR, BAZ = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS


def spec(members, kind=HOMOGENEOUS, assignments=None, instances=None):
    assignments = assignments or {}
    instances = instances or {}
    inverted: dict[uuid.UUID, dict[int, str]] = {}
    for member_id, assignment in assignments.items():
        for topic_id, parts in assignment.items():
            for p in parts:
                inverted.setdefault(topic_id, {})[p] = member_id
    return GroupSpec(
        {
            m: MemberSpec(None, instances.get(m), frozenset(t), {
                k: frozenset(v) for k, v in assignments.get(m, {}).items()
            })
            for m, t in members.items()
        },
        kind,
        inverted,
    )  # fmt: skip


def flat(result):
    return {m: {(t, p) for t, ps in a.items() for p in ps} for m, a in result.items()}


# ---- range -------------------------------------------------------------------------------------


def test_one_consumer_no_topic():
    assert RangeAssignor().assign(spec({"A": []}), {}) == {"A": {}}


def test_first_assignment_two_consumers_two_topics_same_subscriptions():
    result = RangeAssignor().assign(spec({"A": [FOO, BAR], "B": [FOO, BAR]}), {FOO: 3, BAR: 3})
    assert result == {
        "A": {FOO: frozenset({0, 1}), BAR: frozenset({0, 1})},
        "B": {FOO: frozenset({2}), BAR: frozenset({2})},
    }


def test_first_assignment_three_consumers_three_topics_different_subscriptions():
    members = {"A": [FOO, BAR], "B": [BAR], "C": [BAR, BAZ]}
    result = RangeAssignor().assign(spec(members, HETEROGENEOUS), {FOO: 3, BAR: 3, BAZ: 2})
    assert result == {
        "A": {FOO: frozenset({0, 1, 2}), BAR: frozenset({0})},
        "B": {BAR: frozenset({1})},
        "C": {BAR: frozenset({2}), BAZ: frozenset({0, 1})},
    }


def test_static_members_come_first_by_instance_id():
    members = {"a": [FOO], "z": [FOO], "m": [FOO]}
    result = RangeAssignor().assign(spec(members, instances={"z": "i0", "m": "i1"}), {FOO: 3})
    assert result == {"z": {FOO: frozenset({0})}, "m": {FOO: frozenset({1})},
                      "a": {FOO: frozenset({2})}}  # fmt: skip


# ---- uniform -----------------------------------------------------------------------------------


def test_one_member_no_topic_subscription():
    assert UniformAssignor().assign(spec({"A": []}), {}) == {}


def test_first_assignment_two_members_two_topics():
    result = UniformAssignor().assign(spec({"A": [FOO, BAR], "B": [FOO, BAR]}), {FOO: 3, BAR: 3})
    assert sorted(len(a) for a in flat(result).values()) == [3, 3]
    assert set().union(*flat(result).values()) == {(t, p) for t in (FOO, BAR) for p in range(3)}


def test_reassignment_when_one_member_added_after_initial_assignment():
    before = {"A": {FOO: {0, 1, 2}}, "B": {FOO: {3, 4, 5}}}
    members = {"A": [FOO], "B": [FOO], "C": [FOO]}
    result = flat(UniformAssignor().assign(spec(members, assignments=before), {FOO: 6}))
    assert sorted(len(a) for a in result.values()) == [2, 2, 2]
    # sticky: A and B keep two of their three each, C gets the two they gave up
    assert result["A"] <= {(FOO, p) for p in (0, 1, 2)}
    assert result["B"] <= {(FOO, p) for p in (3, 4, 5)}


def test_reassignment_when_one_member_removed_after_initial_assignment():
    # C left: its target assignment is gone (tombstoned) before the next assignment
    before = {"A": {FOO: {0, 1}}, "B": {FOO: {2, 3}}}
    result = flat(UniformAssignor().assign(spec({"A": [FOO], "B": [FOO]}, assignments=before),
                                           {FOO: 6}))  # fmt: skip
    assert result["A"] >= {(FOO, 0), (FOO, 1)} and result["B"] >= {(FOO, 2), (FOO, 3)}
    assert sorted(len(a) for a in result.values()) == [3, 3]


def test_heterogeneous_subscriptions_give_each_topic_to_its_subscribers():
    members = {"A": [FOO], "B": [FOO, BAR], "C": [BAR]}
    result = flat(UniformAssignor().assign(spec(members, HETEROGENEOUS), {FOO: 4, BAR: 4}))
    assert all(t == FOO for t, _ in result["A"]) and all(t == BAR for t, _ in result["C"])
    assert sorted(len(a) for a in result.values()) == [2, 3, 3]


@st.composite
def groups(draw):
    topic_count = draw(st.integers(1, 3))
    topic_ids = [uuid.UUID(int=i + 1) for i in range(topic_count)]
    partitions = {t: draw(st.integers(0, 12)) for t in topic_ids}
    n = draw(st.integers(1, 6))
    homogeneous = draw(st.booleans())
    members = {}
    for i in range(n):
        members[f"m{i}"] = (
            topic_ids
            if homogeneous
            else draw(st.lists(st.sampled_from(topic_ids), min_size=1, unique=True))
        )
    kind = HOMOGENEOUS if len({frozenset(v) for v in members.values()}) == 1 else HETEROGENEOUS
    return members, partitions, kind


@settings(max_examples=150, deadline=None)
@given(groups())
def test_uniform_assignor_invariants(group):
    members, partitions, kind = group
    assignor = UniformAssignor()
    first = assignor.assign(spec(members, kind), partitions)
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for member_id, tps in flat(first).items():
        for tp in tps:
            assert tp not in owners, tp
            assert tp[0] in members[member_id]  # only to subscribers
            owners[tp] = member_id
    wanted = {(t, p) for ts in members.values() for t in ts for p in range(partitions[t])}
    assert set(owners) == wanted
    if kind is HOMOGENEOUS:
        counts = [len(flat(first).get(m, ())) for m in members]
        assert max(counts) - min(counts) <= 1
    # the same group asked again keeps every partition where it is
    again = assignor.assign(spec(members, kind, assignments=flat_to(first)), partitions)
    assert flat(again) == flat(first) | {m: set() for m in members if m not in first}


def flat_to(result):
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}
