"""The consumer group protocol (KIP-848) through the dispatcher and codecs: ConsumerGroupHeartbeat
v0/v1, ConsumerGroupDescribe v0/v1, the uniform and range assignors on real topic ids (those
Metadata reports), ListGroups and DescribeGroups on consumer groups, OffsetCommit/OffsetFetch
with member epochs, and a second broker on the same log dir loading the group back."""

from __future__ import annotations

from typing import Any

import pytest

from broker.coordinator.group.consumer.groups import session_timeout_key
from broker.errors import ErrorCode
from broker.protocol.messages import (
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.aio import run
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.group_requests import offset_commit_request

SETTINGS = {"group_initial_rebalance_delay_ms": "0", "offsets_topic_num_partitions": "4"}


@pytest.fixture
def cbroker(make_broker: Any) -> InProcessBroker:
    b: InProcessBroker = make_broker(**SETTINGS)
    b.replica_manager.create_topic("t", 6, {})
    return b


def hb(b: InProcessBroker, member_id: str, epoch: int, version: int = 1, **fields: Any) -> Any:
    fields.setdefault("group_id", "g")
    if epoch == 0:
        fields.setdefault("rebalance_timeout_ms", 30_000)
        fields.setdefault("subscribed_topic_names", ["t"])
        fields.setdefault("topic_partitions", [])
    request = ConsumerGroupHeartbeatRequest(member_id=member_id, member_epoch=epoch, **fields)
    return b.call(request, version)


def topic_id(b: InProcessBroker, name: str = "t") -> Any:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)])
    return b.call(req, 12).topics[0].topic_id


def partitions(resp: Any) -> list[int]:
    assert resp.assignment is not None
    return sorted(p for t in resp.assignment.topic_partitions for p in t.partitions)


def owned(b: InProcessBroker, parts: list[int]) -> list[Any]:
    return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id(b), partitions=parts)]


def test_api_versions_lists_the_consumer_group_apis(cbroker):
    keys = {k.api_key: (k.min_version, k.max_version) for k in
            cbroker.call(ApiVersionsRequest(), 3).api_keys}  # fmt: skip
    assert keys[68] == (0, 1) and keys[69] == (0, 1)


def test_two_members_share_a_topic_with_the_uniform_assignor(cbroker):
    first = hb(cbroker, "m1", 0)
    assert (first.error_code, first.member_epoch, first.heartbeat_interval_ms) == (0, 1, 5000)
    assert first.member_id == "m1"
    assert first.assignment.topic_partitions[0].topic_id == topic_id(cbroker)
    assert partitions(first) == [0, 1, 2, 3, 4, 5]
    second = hb(cbroker, "m2", 0)
    assert second.member_epoch == 2 and partitions(second) == []  # all still owned by m1
    # m1 is asked to give three up, keeps epoch 1 until it does
    revoke = hb(cbroker, "m1", 1)
    assert revoke.member_epoch == 1 and len(partitions(revoke)) == 3
    kept = partitions(revoke)
    done = hb(cbroker, "m1", 1, topic_partitions=owned(cbroker, kept))
    assert done.member_epoch == 2 and done.assignment is None
    got = hb(cbroker, "m2", 2)
    assert sorted(partitions(got) + kept) == [0, 1, 2, 3, 4, 5]
    described = cbroker.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 1).groups[0]
    assert (described.group_state, described.group_epoch, described.assignment_epoch,
            described.assignor_name) == ("Stable", 2, 2, "uniform")  # fmt: skip
    assert {m.member_id: m.member_type for m in described.members} == {"m1": 1, "m2": 1}
    # no regex: null (as Kafka answers)
    assert {m.subscribed_topic_regex for m in described.members} == {None}


def test_range_assignor_by_member_choice(cbroker):
    hb(cbroker, "b", 0, server_assignor="range")
    hb(cbroker, "a", 0, server_assignor="range")
    revoking = hb(cbroker, "b", 1, topic_partitions=owned(cbroker, [0, 1, 2, 3, 4, 5]))
    # range gives "a" (first by member id) 0-2 and "b" 3-5
    assert partitions(revoking) == [3, 4, 5]
    described = cbroker.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 0).groups[0]
    assert described.assignor_name == "range"


def test_heartbeat_errors_carry_kafkas_messages(cbroker):
    resp = hb(cbroker, "", 0)
    assert (resp.error_code, resp.error_message) == (
        ErrorCode.INVALID_REQUEST, "MemberId can't be empty."
    )  # fmt: skip
    resp = hb(cbroker, "m", 0, server_assignor="sticky")
    assert resp.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert resp.error_message == (
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    )
    resp = hb(cbroker, "m", 3)
    assert (resp.error_code, resp.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found."
    )  # fmt: skip
    # v0 generates the member id
    resp = hb(cbroker, "", 0, version=0)
    assert resp.error_code == 0 and resp.member_id and resp.member_epoch == 1


def test_regex_subscription_follows_new_topics(cbroker):
    resp = hb(cbroker, "m", 0, subscribed_topic_names=None, subscribed_topic_regex="t.*")
    assert partitions(resp) == [0, 1, 2, 3, 4, 5]
    cbroker.replica_manager.create_topic("tx", 2, {})
    cbroker.replica_manager.create_topic("other", 2, {})
    resp = hb(cbroker, "m", 1)
    assert resp.member_epoch == 2
    got = {t.topic_id: sorted(t.partitions) for t in resp.assignment.topic_partitions}
    assert got == {topic_id(cbroker): [0, 1, 2, 3, 4, 5], topic_id(cbroker, "tx"): [0, 1]}


def test_new_partitions_reach_the_group(cbroker):
    hb(cbroker, "m", 0)
    cbroker.replica_manager.create_partitions("t", 8)
    resp = hb(cbroker, "m", 1)
    assert resp.member_epoch == 2 and partitions(resp) == list(range(8))


def test_leave_and_describe_errors(cbroker):
    hb(cbroker, "m", 0)
    left = hb(cbroker, "m", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (0, "m", -1)
    groups = cbroker.call(ConsumerGroupDescribeRequest(group_ids=["g", "nope", ""]), 1).groups
    assert [(g.group_id, g.error_code, g.group_state) for g in groups] == [
        ("g", 0, "Empty"),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND, ""),
        ("", ErrorCode.INVALID_GROUP_ID, ""),
    ]


def test_list_and_describe_groups_of_both_types(cbroker):
    hb(cbroker, "m", 0, group_id="modern")
    cbroker.call(offset_commit_request("simple", {"t": {0: 1}}), 8)
    listed = cbroker.call(ListGroupsRequest(), 5).groups
    assert sorted((g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed) == [
        ("modern", "consumer", "Stable", "consumer"),
        ("simple", "", "Empty", "classic"),
    ]

    def names(**filters: Any) -> list[str]:
        req = ListGroupsRequest(**filters)
        return sorted(g.group_id for g in cbroker.call(req, 5).groups)

    assert names(types_filter=["Consumer"]) == ["modern"]
    assert names(types_filter=["classic"]) == ["simple"]
    assert names(types_filter=["share"]) == []
    assert names(states_filter=["stable"]) == ["modern"]
    assert names(states_filter=["Assigning", "Empty"]) == ["simple"]
    assert names(states_filter=["NotAState"]) == []
    # DescribeGroups (the classic API) sees no consumer group: Dead, as Kafka 4.0
    (d,) = cbroker.call(DescribeGroupsRequest(groups=["modern"]), 5).groups
    assert (d.error_code, d.group_state, d.members) == (0, "Dead", [])


def test_offset_commit_and_fetch_with_member_epochs(cbroker):
    joined = hb(cbroker, "m", 0)
    epoch = joined.member_epoch

    def commit(version: int, member_epoch: int) -> int:
        req = offset_commit_request("g", {"t": {0: 9}})
        req.member_id, req.generation_id_or_member_epoch = "m", member_epoch
        return int(cbroker.call(req, version).topics[0].partitions[0].error_code)

    assert commit(9, epoch) == ErrorCode.NONE
    assert commit(9, epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(8, epoch) == ErrorCode.UNSUPPORTED_VERSION

    def fetch(member_id: str | None, member_epoch: int) -> Any:
        req = OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id="g",
                    member_id=member_id,
                    member_epoch=member_epoch,
                    topics=[
                        OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])
                    ],
                )
            ]
        )
        return cbroker.call(req, 9).groups[0]

    assert fetch("m", epoch).topics[0].partitions[0].committed_offset == 9
    assert fetch(None, -1).topics[0].partitions[0].committed_offset == 9
    assert fetch("m", epoch - 1).error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("x", epoch).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_loads_after_restart(tmp_path):
    data = tmp_path / "data"
    first = InProcessBroker(data, **SETTINGS)
    first.replica_manager.create_topic("t", 6, {})
    try:
        hb(first, "m1", 0)
        hb(first, "m2", 0, instance_id="i2")
        revoke = hb(first, "m1", 1)
        req = OffsetCommitRequest(
            group_id="g", generation_id_or_member_epoch=1, member_id="m1",
            topics=offset_commit_request("g", {"t": {0: 4}}).topics,
        )  # fmt: skip
        assert first.call(req, 9).topics[0].partitions[0].error_code == 0
        before = first.groups.shard_of("g").consumer.groups["g"]
        snapshot = (before.group_epoch, before.assignment_epoch, dict(before.members),
                    dict(before.target_assignment), str(before.state))  # fmt: skip
    finally:
        first.close()
    second = InProcessBroker(data, **SETTINGS)
    try:

        async def load() -> None:
            second.groups.startup()
            await second.groups.wait_loaded()

        run(load())
        shard = second.groups.shard_of("g")
        after = shard.consumer.groups["g"]
        assert (after.group_epoch, after.assignment_epoch, dict(after.members),
                dict(after.target_assignment), str(after.state)) == snapshot  # fmt: skip
        assert after.static_members == {"i2": "m2"}
        # every member must heartbeat within its session
        assert second.groups.timer.is_scheduled(session_timeout_key("g", "m1"))
        # m1 goes on where it was: revoking what the new target takes from it
        again = hb(second, "m1", 1, topic_partitions=owned(second, partitions(revoke)))
        assert again.error_code == 0 and again.member_epoch == 2
        assert shard.offsets.get("g", "t", 0).committed_offset == 4
    finally:
        second.close()
