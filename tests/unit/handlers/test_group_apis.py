"""The group APIs through the real dispatcher and codecs: versions, loading, the internal topic.

An in-process broker with real logs (``conftest.InProcessBroker``): every
request crosses the version's codecs, commits are appended to
``__consumer_offsets`` and fsynced through the group commit, and a second
broker on the same log dir loads them back.
"""

from __future__ import annotations

import asyncio

import pytest

from broker.coordinator.group.config import GROUP_METADATA_TOPIC_NAME
from broker.errors import ErrorCode
from broker.protocol.messages import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
    SyncGroupRequest,
)
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.aio import run
from tests.unit.groups.context import protocols
from tests.unit.handlers.conftest import InProcessBroker

SETTINGS = {"group_initial_rebalance_delay_ms": "0", "offsets_topic_num_partitions": "4"}


@pytest.fixture
def gbroker(make_broker):
    b = make_broker(**SETTINGS)
    b.replica_manager.create_topic("t", 3)
    return b


def _join(b, version, member_id="", group="g"):
    return b.call(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=protocols("range"),
        ),
        version,
    )


async def _join_async(b, version, member_id="", group="g"):
    return await b.call_async(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=protocols("range"),
        ),
        version,
    )


def _commit(b, version, offset, group="g", member_id="", generation=-1, partition=0):
    return b.call(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=partition, committed_offset=offset
                        )
                    ],
                )
            ],
        ),
        version,
    )


def _fetch_v1(b, group="g"):
    resp = b.call(
        OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
        ),
        1,
    )
    return [
        (p.partition_index, p.committed_offset, p.error_code) for p in resp.topics[0].partitions
    ]


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator_answers_this_broker(gbroker, version):
    if version < 4:
        resp = gbroker.call(FindCoordinatorRequest(key="g", key_type=0), version)
        assert (resp.error_code, resp.node_id, resp.port) == (ErrorCode.NONE, 0, 9092)
    else:
        resp = gbroker.call(
            FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), version
        )
        assert [(c.key, c.error_code, c.node_id) for c in resp.coordinators] == [
            ("a", ErrorCode.NONE, 0),
            ("b", ErrorCode.NONE, 0),
        ]
    # the lookup created __consumer_offsets as Kafka's coordinator creates it
    assert gbroker.replica_manager.partition_count(GROUP_METADATA_TOPIC_NAME) == 4
    log = gbroker.replica_manager.get_partition(GROUP_METADATA_TOPIC_NAME, 0).log
    assert log.config.compacted


@pytest.mark.parametrize("version", [3, 4])
def test_find_coordinator_answers_the_requests_listener(gbroker, version):
    """KafkaApis.getCoordinator: the coordinator's address on the listener the
    request came in on (a SASL_SSL client must not be sent to an SSL port)."""
    from broker.handlers.context import Endpoint

    gbroker.context.advertised_listeners = {
        "SSL": Endpoint("broker.example.com", 9093),
        "SASL_SSL": Endpoint("broker.example.com", 9094),
    }
    gbroker.conn.listener_name = "SASL_SSL"
    if version < 4:
        resp = gbroker.call(FindCoordinatorRequest(key="g", key_type=0), version)
        assert (resp.host, resp.port) == ("broker.example.com", 9094)
    else:
        resp = gbroker.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), version)
        assert [(c.host, c.port) for c in resp.coordinators] == [("broker.example.com", 9094)]


@pytest.mark.parametrize("version", range(10))
def test_join_group_every_version(gbroker, version):
    async def scenario():
        first = await _join_async(gbroker, version)
        if version >= 4:
            assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
            first = await _join_async(gbroker, version, first.member_id)
        assert first.error_code == ErrorCode.NONE
        assert first.protocol_name == "range"
        assert first.protocol_type == ("consumer" if version >= 7 else None)
        return first

    joined = run(scenario())
    sync = gbroker.call(
        SyncGroupRequest(
            group_id="g",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=joined.member_id, assignment=b"x"
                )
            ],
        ),
        min(version, 5),
    )
    assert (sync.error_code, sync.assignment) == (ErrorCode.NONE, b"x")
    heartbeat = HeartbeatRequest(
        group_id="g", generation_id=joined.generation_id, member_id=joined.member_id
    )
    assert gbroker.call(heartbeat, min(version, 4)).error_code == ErrorCode.NONE
    leave_version = min(version, 5)
    if leave_version < 3:
        leave = gbroker.call(
            LeaveGroupRequest(group_id="g", member_id=joined.member_id), leave_version
        )
        assert leave.error_code == ErrorCode.NONE
    else:
        leave = gbroker.call(
            LeaveGroupRequest(
                group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id=joined.member_id)]
            ),
            leave_version,
        )
        assert [m.error_code for m in leave.members] == [ErrorCode.NONE]


def test_sync_group_v5_needs_protocol_type_and_name(gbroker):
    resp = gbroker.call(SyncGroupRequest(group_id="g", generation_id=1, member_id="m"), 5)
    assert resp.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_session_timeout_bounds(gbroker):
    for timeout in (5_999, 1_800_001):
        resp = gbroker.call(
            JoinGroupRequest(
                group_id="g",
                session_timeout_ms=timeout,
                protocol_type="consumer",
                protocols=protocols("range"),
            ),
            5,
        )
        assert resp.error_code == ErrorCode.INVALID_SESSION_TIMEOUT


def test_join_group_invalid_group_id(gbroker):
    resp = _join(gbroker, 5, group="")
    assert resp.error_code == ErrorCode.INVALID_GROUP_ID


@pytest.mark.parametrize("version", [0, 1, 2, 5, 8])
def test_simple_commit_and_fetch(gbroker, version):
    resp = _commit(gbroker, version, 42)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert _fetch_v1(gbroker) == [(0, 42, 0), (1, -1, 0)]


def test_commit_to_unknown_partition(gbroker):
    resp = _commit(gbroker, 8, 1, partition=9)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_offset_fetch_all_and_batched(gbroker):
    _commit(gbroker, 8, 5, group="a")
    _commit(gbroker, 8, 6, group="b", partition=2)
    resp = gbroker.call(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(group_id="a", topics=None),
                OffsetFetchRequest.OffsetFetchRequestGroup(group_id="b", topics=None),
            ]
        ),
        8,
    )
    got = {
        g.group_id: [
            (t.name, p.partition_index, p.committed_offset) for t in g.topics for p in t.partitions
        ]
        for g in resp.groups
    }
    assert got == {"a": [("t", 0, 5)], "b": [("t", 2, 6)]}


def test_offsets_load_after_restart(tmp_path):
    data = tmp_path / "data"
    first = InProcessBroker(data, **SETTINGS)
    first.replica_manager.create_topic("t", 3)
    try:
        for offset in (1, 2, 3):
            _commit(first, 8, offset)
        _commit(first, 8, 7, group="other")
    finally:
        first.close()
    second = InProcessBroker(data, **SETTINGS)
    try:

        async def load():
            second.groups.startup()
            # before the shard is loaded: COORDINATOR_LOAD_IN_PROGRESS (v1: on every partition)
            early = _fetch_v1(second)
            await second.groups.wait_loaded()
            return early

        early = run(load())
        assert early == [
            (0, -1, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
            (1, -1, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        ]
        assert _fetch_v1(second) == [(0, 3, 0), (1, -1, 0)]
        assert _fetch_v1(second, "other") == [(0, 7, 0), (1, -1, 0)]
        listed = second.call(ListGroupsRequest(), 4)
        assert sorted((g.group_id, g.group_state) for g in listed.groups) == [
            ("g", "Empty"),
            ("other", "Empty"),
        ]
    finally:
        second.close()


def test_internal_topic_is_listed_as_internal_and_refuses_produce(gbroker):
    gbroker.call(FindCoordinatorRequest(key="g", key_type=0), 3)
    meta = gbroker.call(MetadataRequest(topics=None), 9)
    internal = {t.name: t.is_internal for t in meta.topics}
    assert internal == {"t": False, GROUP_METADATA_TOPIC_NAME: True}
    records = build_v2_batch([SimpleRecord(value=b"x")]).buffer
    resp = gbroker.call(
        ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=GROUP_METADATA_TOPIC_NAME,
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)],
                )
            ],
        ),
        9,
    )
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_by_name_creates_the_internal_topic_as_the_coordinator(gbroker):
    resp = gbroker.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=GROUP_METADATA_TOPIC_NAME)]
        ),
        9,
    )
    assert len(resp.topics[0].partitions) == 4 and resp.topics[0].is_internal


def test_dump_log_offsets_decoder(gbroker):
    from tests.unit.log.test_dump import run_dump

    group = "dumped"
    joined = run(_join_async(gbroker, 3, group=group))
    gbroker.call(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=joined.member_id, assignment=b"x"
                )
            ],
        ),
        3,
    )
    _commit(gbroker, 8, 42, group=group, member_id=joined.member_id, generation=1)
    index = gbroker.groups.partition_for(group)
    log = gbroker.replica_manager.get_partition(GROUP_METADATA_TOPIC_NAME, index).log
    segment = log.segments[0].log.path
    status, out, err = run_dump("--files", str(segment), "--offsets-decoder")
    assert status == 0, err
    lines = [line for line in out.splitlines() if line.startswith("| offset:")]
    assert 'key: {"type":"2","data":{"group":"dumped"}} payload: {"version":"3","data":' in lines[0]
    assert '"protocolType":"consumer","generation":1' in lines[1]
    assert (
        'key: {"type":"1","data":{"group":"dumped","topic":"t","partition":0}} '
        'payload: {"version":"3","data":{"offset":42,"leaderEpoch":-1,"metadata":"",'
    ) in lines[2]


def test_oversized_member_metadata_is_refused_at_join(gbroker):
    big = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"x" * 2_000_000)
    request = JoinGroupRequest(
        group_id="big",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[big],
    )
    # its group record could never be stored (max.message.bytes of __consumer_offsets):
    # MESSAGE_TOO_LARGE at once (Kafka: UNKNOWN_SERVER_ERROR at the SyncGroup)
    joined = gbroker.call(request, 3)
    assert joined.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "big" not in gbroker.groups.shard_of("big").classic.groups


def test_a_group_record_too_large_fails_the_sync_with_message_too_large(gbroker):
    half = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"x" * 600_000)

    async def scenario():
        request = JoinGroupRequest(
            group_id="big",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=[half],
        )
        # two members, each storable alone, not together (v3: no member id round trip)
        return await asyncio.gather(gbroker.call_async(request, 3), gbroker.call_async(request, 3))

    joined = run(scenario())
    assert [j.error_code for j in joined] == [0, 0]
    leader = next(j for j in joined if j.member_id == j.leader)
    sync = gbroker.call(
        SyncGroupRequest(
            group_id="big",
            generation_id=leader.generation_id,
            member_id=leader.member_id,
            assignments=[],
        ),
        3,
    )
    assert sync.error_code == ErrorCode.MESSAGE_TOO_LARGE
    index = gbroker.groups.partition_for("big")
    log = gbroker.replica_manager.get_partition(GROUP_METADATA_TOPIC_NAME, index).log
    assert log.size < 1000


def test_list_groups_with_an_unknown_state_lists_none(gbroker):
    _commit(gbroker, 8, 1, group="simple")
    assert [
        g.group_id for g in gbroker.call(ListGroupsRequest(states_filter=["Empty"]), 4).groups
    ] == ["simple"]
    assert gbroker.call(ListGroupsRequest(states_filter=["Bogus"]), 4).groups == []


def test_an_existing_topic_is_loaded_at_the_first_lookup(tmp_path):
    data = tmp_path / "data"
    first = InProcessBroker(data, **SETTINGS)
    first.replica_manager.create_topic("t", 3)
    try:
        _commit(first, 8, 9)
    finally:
        first.close()
    # a coordinator that was not started finds the topic when a request needs it
    second = InProcessBroker(data, **{**SETTINGS, "offsets_topic_num_partitions": "50"})
    try:

        async def lookup():
            early = _fetch_v1(second)
            await second.groups.wait_loaded()
            return early

        assert run(lookup())[0][2] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        # the topic's own partition count routes groups, not the configured 50
        assert second.groups.num_partitions == 4
        assert _fetch_v1(second) == [(0, 9, 0), (1, -1, 0)]
    finally:
        second.close()
