"""The ACL matrix: every served API against a principal with and without the ACL
Kafka requires, DENY beating ALLOW, prefixed patterns, wildcards and super
users (``KafkaApisTest`` / ``AuthorizerIntegrationTest``'s cases), through the
real dispatcher with the principal set on the connection.

Each case names the ACLs that grant the request (``needed``) and reads the
error code the request's answer carries for the resource; without the ACLs
that code is the API's authorization error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import (
    AlterConfigsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    SyncGroupRequest,
)
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.group_requests import (
    join_group_request,
    offset_commit_request,
    offset_delete_request,
    offset_fetch_request,
)
from tests.unit.handlers.test_produce_fetch import fetch, produce

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ALICE = "User:alice"
Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CAF = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
#: one __consumer_offsets partition: the group cases create it (50 would cost each test)
GROUP_SETTINGS = {"offsets_topic_num_partitions": "1"}
TOPIC_CONFIG, BROKER_CONFIG = 2, 4


def acl(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    *,
    principal: str = ALICE,
    ptype: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm)
    )


def grant(b: InProcessBroker, *bindings: AclBinding) -> None:
    assert b.acl_control is not None
    authorizer = b.acl_control.authorizer
    authorizer.replace([*authorizer.bindings, *bindings])


def batch(n: int = 3) -> bytes:
    return bytes(
        build_v2_batch([SimpleRecord(1_700_000_000_000, b"k", b"v%d" % i) for i in range(n)]).buffer
    )


def secured_broker(make_broker: Any, orders_partitions: int = 1) -> InProcessBroker:
    """A broker with the standard authorizer, super user ``User:admin``, topics
    "orders" and "other", and alice's connection."""
    b: InProcessBroker = make_broker(
        authorizer_class_name=AUTHORIZER, super_users="User:admin", **GROUP_SETTINGS
    )
    b.replica_manager.create_topic("orders", orders_partitions, {})
    b.replica_manager.create_topic("other", 1, {})
    b.conn.principal = ALICE
    return b


@pytest.fixture
def secured(make_broker: Any) -> InProcessBroker:
    return secured_broker(make_broker)


# ---- the cases ------------------------------------------------------------------------------


def produce_code(b: InProcessBroker) -> int:
    resp = b.call(produce("orders", 0, batch()), 9)
    return int(resp.responses[0].partition_responses[0].error_code)


def fetch_code(b: InProcessBroker) -> int:
    resp = b.call(fetch("orders", 0, 0), 12)
    return int(resp.responses[0].partitions[0].error_code)


def list_offsets_code(b: InProcessBroker) -> int:
    req = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name="orders",
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
                ],
            )
        ],
    )
    (p,) = b.call(req, 7).topics[0].partitions
    if p.error_code == TAF:
        assert (p.timestamp, p.offset) == (-1, -1)
    return int(p.error_code)


def epoch_code(b: InProcessBroker) -> int:
    req = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic="orders",
                partitions=[
                    OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                        partition=0, current_leader_epoch=-1, leader_epoch=0
                    )
                ],
            )
        ],
    )
    return int(b.call(req, 4).topics[0].partitions[0].error_code)


def metadata_code(b: InProcessBroker) -> int:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")])
    (t,) = b.call(req, 12).topics
    if t.error_code == TAF:
        assert t.topic_id == uuid.UUID(int=0) and t.partitions == []
    return int(t.error_code)


def create_topics_code(b: InProcessBroker) -> int:
    req = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name="orders-new", num_partitions=1, replication_factor=1
            )
        ],
        timeout_ms=1000,
    )
    (t,) = b.call(req, 7).topics
    return int(t.error_code)


def delete_topics_code(b: InProcessBroker) -> int:
    req = DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name="orders")], timeout_ms=1000
    )
    (t,) = b.call(req, 6).responses
    return int(t.error_code)


def create_partitions_code(b: InProcessBroker) -> int:
    req = CreatePartitionsRequest(
        topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(name="orders", count=2, assignments=None)
        ],
        timeout_ms=1000,
    )
    (t,) = b.call(req, 3).results
    return int(t.error_code)


def describe_configs_code(resource_type: int, name: str) -> Callable[[InProcessBroker], int]:
    def call(b: InProcessBroker) -> int:
        req = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=None
                )
            ]
        )
        (r,) = b.call(req, 4).results
        return int(r.error_code)

    return call


def alter_configs_code(resource_type: int, name: str) -> Callable[[InProcessBroker], int]:
    def call(b: InProcessBroker) -> int:
        configs = [AlterConfigsRequest.AlterableConfig(name="retention.ms", value="1000")]
        req = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=configs if resource_type == TOPIC_CONFIG else [],
                )
            ]
        )
        (r,) = b.call(req, 2).responses
        return int(r.error_code)

    return call


def incremental_alter_code(b: InProcessBroker) -> int:
    req = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=TOPIC_CONFIG,
                resource_name="orders",
                configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(
                        name="retention.ms", config_operation=0, value="1000"
                    )
                ],
            )
        ]
    )
    (r,) = b.call(req, 1).responses
    return int(r.error_code)


def log_dirs_code(b: InProcessBroker) -> int:
    resp = b.call(DescribeLogDirsRequest(topics=None), 4)
    if resp.error_code == CAF:
        assert resp.results == []
    return int(resp.error_code)


def coordinator_code(key_type: int, key: str) -> Callable[[InProcessBroker], int]:
    def call(b: InProcessBroker) -> int:
        req = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
        (c,) = b.call(req, 4).coordinators
        return int(c.error_code)

    return call


def init_producer_id_code(b: InProcessBroker) -> int:
    resp = b.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
    return int(resp.error_code)


def describe_acls_code(b: InProcessBroker) -> int:
    req = DescribeAclsRequest(
        resource_type_filter=1, pattern_type_filter=1, resource_name_filter=None,
        principal_filter=None, host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    return int(b.call(req, 3).error_code)


def create_acls_code(b: InProcessBroker) -> int:
    creation = CreateAclsRequest.AclCreation(
        resource_type=2,
        resource_name="x",
        resource_pattern_type=3,
        principal="User:bob",
        host="*",
        operation=3,
        permission_type=3,
    )
    (r,) = b.call(CreateAclsRequest(creations=[creation]), 3).results
    return int(r.error_code)


def delete_acls_code(b: InProcessBroker) -> int:
    f = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=2, pattern_type_filter=3, resource_name_filter="x",
        principal_filter=None, host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    (r,) = b.call(DeleteAclsRequest(filters=[f]), 3).filter_results
    return int(r.error_code)


# ---- the group APIs (KafkaApis.handle*GroupRequest, handleOffset*Request) ------------------


def join_group_code(b: InProcessBroker) -> int:
    resp = b.call(join_group_request("g1"), 5)
    if resp.error_code == GAF:
        assert (resp.member_id, resp.generation_id, resp.leader) == ("", -1, "")
    return int(resp.error_code)


def sync_group_code(b: InProcessBroker) -> int:
    req = SyncGroupRequest(
        group_id="g1", generation_id=1, member_id="m", protocol_type="consumer",
        protocol_name="range", assignments=[],
    )  # fmt: skip
    return int(b.call(req, 5).error_code)


def heartbeat_code(b: InProcessBroker) -> int:
    return int(
        b.call(HeartbeatRequest(group_id="g1", generation_id=1, member_id="m"), 4).error_code
    )


def leave_group_code(b: InProcessBroker) -> int:
    req = LeaveGroupRequest(
        group_id="g1", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]
    )
    resp = b.call(req, 5)
    if resp.error_code == GAF:
        assert resp.members == []
    else:
        assert [m.error_code for m in resp.members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    return int(resp.error_code)


def offset_commit_code(b: InProcessBroker) -> int:
    ((p,),) = [
        t.partitions for t in b.call(offset_commit_request("g1", {"orders": {0: 5}}), 9).topics
    ]
    return int(p.error_code)


def offset_fetch(b: InProcessBroker) -> Any:
    (group,) = b.call(offset_fetch_request("g1", {"orders": [0]}), 8).groups
    return group


def offset_fetch_group_code(b: InProcessBroker) -> int:
    group = offset_fetch(b)
    if group.error_code == GAF:
        assert group.topics == []
    return int(group.error_code)


def offset_fetch_topic_code(b: InProcessBroker) -> int:
    group = offset_fetch(b)
    assert group.error_code == ErrorCode.NONE
    ((p,),) = [t.partitions for t in group.topics]
    assert p.committed_offset == -1
    return int(p.error_code)


def describe_groups_code(b: InProcessBroker) -> int:
    (g,) = b.call(DescribeGroupsRequest(groups=["g1"]), 5).groups
    if g.error_code == GAF:
        assert g.group_state == "" and g.members == []
    return int(g.error_code)


def delete_groups_code(b: InProcessBroker) -> int:
    (r,) = b.call(DeleteGroupsRequest(groups_names=["g1"]), 2).results
    return int(r.error_code)


def offset_delete(b: InProcessBroker) -> Any:
    return b.call(offset_delete_request("g1", {"orders": [0]}), 0)


def offset_delete_group_code(b: InProcessBroker) -> int:
    resp = offset_delete(b)
    if resp.error_code == GAF:
        assert resp.topics == []
    return int(resp.error_code)


def offset_delete_topic_code(b: InProcessBroker) -> int:
    b.groups.shard_of("g1").classic.get_or_create_group("g1", True)  # an empty group
    resp = offset_delete(b)
    assert resp.error_code == ErrorCode.NONE
    ((p,),) = [t.partitions for t in resp.topics]
    return int(p.error_code)


def consumer_group_heartbeat_code(b: InProcessBroker) -> int:
    req = ConsumerGroupHeartbeatRequest(
        group_id="g1", member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
        subscribed_topic_names=["orders"], topic_partitions=[],
    )  # fmt: skip
    return int(b.call(req, 1).error_code)


def consumer_group_describe_code(b: InProcessBroker) -> int:
    (g,) = b.call(ConsumerGroupDescribeRequest(group_ids=["g1"]), 1).groups
    return int(g.error_code)


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[InProcessBroker], int]
    #: (resource type, resource name, operation) ACLs that together grant the request
    needed: tuple[tuple[ResourceType, str, AclOperation], ...]
    denied: ErrorCode
    allowed: ErrorCode = ErrorCode.NONE
    #: ACLs granted in every test with an authorizer (the checks made before ``needed``'s)
    given: tuple[tuple[ResourceType, str, AclOperation], ...] = ()


def grant_given(b: InProcessBroker, case: Case) -> None:
    grant(b, *(acl(rt, name, op) for rt, name, op in case.given))


CASES = [
    Case("Produce", produce_code, ((TOPIC, "orders", Op.WRITE),), TAF),
    Case("Fetch", fetch_code, ((TOPIC, "orders", Op.READ),), TAF),
    Case("ListOffsets", list_offsets_code, ((TOPIC, "orders", Op.DESCRIBE),), TAF),
    Case("OffsetForLeaderEpoch", epoch_code, ((TOPIC, "orders", Op.DESCRIBE),), TAF),
    Case("Metadata", metadata_code, ((TOPIC, "orders", Op.DESCRIBE),), TAF),
    Case("CreateTopics", create_topics_code, ((TOPIC, "orders-new", Op.CREATE),), TAF),
    Case(
        "DeleteTopics",
        delete_topics_code,
        ((TOPIC, "orders", Op.DESCRIBE), (TOPIC, "orders", Op.DELETE)),
        TAF,
    ),
    Case("CreatePartitions", create_partitions_code, ((TOPIC, "orders", Op.ALTER),), TAF),
    Case(
        "DescribeConfigs-topic",
        describe_configs_code(TOPIC_CONFIG, "orders"),
        ((TOPIC, "orders", Op.DESCRIBE_CONFIGS),),
        TAF,
    ),
    Case(
        "DescribeConfigs-broker",
        describe_configs_code(BROKER_CONFIG, "0"),
        ((CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS),),
        CAF,
    ),
    Case(
        "AlterConfigs-topic",
        alter_configs_code(TOPIC_CONFIG, "orders"),
        ((TOPIC, "orders", Op.ALTER_CONFIGS),),
        TAF,
    ),
    Case(
        "AlterConfigs-broker",
        alter_configs_code(BROKER_CONFIG, "0"),
        ((CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS),),
        CAF,
    ),
    Case(
        "IncrementalAlterConfigs",
        incremental_alter_code,
        ((TOPIC, "orders", Op.ALTER_CONFIGS),),
        TAF,
    ),
    Case("DescribeLogDirs", log_dirs_code, ((CLUSTER, "kafka-cluster", Op.DESCRIBE),), CAF),
    Case(
        "FindCoordinator-group",
        coordinator_code(0, "g1"),
        ((GROUP, "g1", Op.DESCRIBE),),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.NONE,  # this broker coordinates every group
    ),
    Case(
        "FindCoordinator-transaction",
        coordinator_code(1, "tx1"),
        ((TXN, "tx1", Op.DESCRIBE),),
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.NONE,  # this broker coordinates every transactional id
    ),
    Case(
        "InitProducerId",
        init_producer_id_code,
        ((CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),),
        CAF,
    ),
    Case("DescribeAcls", describe_acls_code, ((CLUSTER, "kafka-cluster", Op.DESCRIBE),), CAF),
    Case("CreateAcls", create_acls_code, ((CLUSTER, "kafka-cluster", Op.ALTER),), CAF),
    Case("DeleteAcls", delete_acls_code, ((CLUSTER, "kafka-cluster", Op.ALTER),), CAF),
    Case(
        "JoinGroup",
        join_group_code,
        ((GROUP, "g1", Op.READ),),
        GAF,
        ErrorCode.MEMBER_ID_REQUIRED,  # KIP-394: the first join of a dynamic member
    ),
    Case("SyncGroup", sync_group_code, ((GROUP, "g1", Op.READ),), GAF, ErrorCode.UNKNOWN_MEMBER_ID),
    Case("Heartbeat", heartbeat_code, ((GROUP, "g1", Op.READ),), GAF, ErrorCode.UNKNOWN_MEMBER_ID),
    Case("LeaveGroup", leave_group_code, ((GROUP, "g1", Op.READ),), GAF),
    Case(
        "OffsetCommit-group",
        offset_commit_code,
        ((TOPIC, "orders", Op.READ), (GROUP, "g1", Op.READ)),
        GAF,
    ),
    Case(
        "OffsetCommit-topic",
        offset_commit_code,
        ((TOPIC, "orders", Op.READ),),
        TAF,
        given=((GROUP, "g1", Op.READ),),
    ),
    Case(
        "OffsetFetch-group",
        offset_fetch_group_code,
        ((TOPIC, "orders", Op.DESCRIBE), (GROUP, "g1", Op.DESCRIBE)),
        GAF,
    ),
    Case(
        "OffsetFetch-topic",
        offset_fetch_topic_code,
        ((TOPIC, "orders", Op.DESCRIBE),),
        TAF,
        given=((GROUP, "g1", Op.DESCRIBE),),
    ),
    Case("DescribeGroups", describe_groups_code, ((GROUP, "g1", Op.DESCRIBE),), GAF),
    Case(
        "DeleteGroups",
        delete_groups_code,
        ((GROUP, "g1", Op.DELETE),),
        GAF,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "OffsetDelete-group",
        offset_delete_group_code,
        ((TOPIC, "orders", Op.READ), (GROUP, "g1", Op.DELETE)),
        GAF,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "ConsumerGroupHeartbeat-group",
        consumer_group_heartbeat_code,
        ((TOPIC, "orders", Op.DESCRIBE), (GROUP, "g1", Op.READ)),
        GAF,
    ),
    Case(
        "ConsumerGroupHeartbeat-topic",
        consumer_group_heartbeat_code,
        ((TOPIC, "orders", Op.DESCRIBE),),
        TAF,
        given=((GROUP, "g1", Op.READ),),
    ),
    Case(
        "ConsumerGroupDescribe",
        consumer_group_describe_code,
        ((GROUP, "g1", Op.DESCRIBE),),
        GAF,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ),
    Case(
        "OffsetDelete-topic",
        offset_delete_topic_code,
        ((TOPIC, "orders", Op.READ),),
        TAF,
        given=((GROUP, "g1", Op.DELETE),),
    ),
]
IDS = [c.id for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_denied_without_acl(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    # ACLs on other resources change nothing
    grant(secured, acl(TOPIC, "other", Op.READ), acl(GROUP, "g2", Op.ALL))
    assert case.call(secured) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_allowed_with_acl(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(secured, *(acl(rt, name, op) for rt, name, op in case.needed))
    assert case.call(secured) == case.allowed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_deny_beats_allow(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    rt, name, op = case.needed[-1]
    grant(
        secured,
        *(acl(rt, n, Op.ALL) for rt, n, _ in case.needed),
        acl(rt, name, op, DENY),
    )
    assert case.call(secured) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_deny_for_everyone_beats_allow(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    rt, _name, op = case.needed[-1]
    grant(
        secured,
        *(acl(rt, n, o) for rt, n, o in case.needed),
        acl(rt, "*", op, DENY, principal="User:*"),
    )
    assert case.call(secured) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_prefixed_acl(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(
        secured,
        *(acl(rt, name[:2], op, ptype=PatternType.PREFIXED) for rt, name, op in case.needed),
    )
    assert case.call(secured) == case.allowed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_prefixed_acl_of_another_prefix(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(
        secured,
        *(acl(rt, "zz", op, ptype=PatternType.PREFIXED) for rt, _, op in case.needed),
    )
    assert case.call(secured) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wildcard_principal_and_resource(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(secured, *(acl(rt, "*", op, principal="User:*") for rt, _, op in case.needed))
    assert case.call(secured) == case.allowed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_acl_for_another_host(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(secured, *(acl(rt, name, op, host="10.9.9.9") for rt, name, op in case.needed))
    assert case.call(secured) == case.denied
    grant(secured, *(acl(rt, name, op, host="127.0.0.1") for rt, name, op in case.needed))
    assert case.call(secured) == case.allowed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_super_user(secured: InProcessBroker, case: Case) -> None:
    grant_given(secured, case)
    grant(secured, *(acl(rt, "*", Op.ALL, DENY, principal="User:*") for rt, _, _ in case.needed))
    secured.conn.principal = "User:admin"
    assert case.call(secured) == case.allowed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_allow_everyone_if_no_acl_found(make_broker: Any, case: Case) -> None:
    b: InProcessBroker = make_broker(
        authorizer_class_name=AUTHORIZER, allow_everyone_if_no_acl_found="true", **GROUP_SETTINGS
    )
    b.replica_manager.create_topic("orders", 1, {})
    b.conn.principal = ALICE
    assert case.call(b) == case.allowed
    grant_given(b, case)
    # ACLs on the resources for someone else: no longer "no ACL found" (the
    # cluster and "*" ones close the fallbacks: CREATE or DELETE on the cluster,
    # CLUSTER_ACTION, WRITE on any topic)
    grant(
        b,
        *(acl(rt, name, op, principal="User:bob") for rt, name, op in case.needed),
        acl(CLUSTER, "kafka-cluster", Op.DESCRIBE, principal="User:bob"),
        acl(TOPIC, "*", Op.READ, principal="User:bob"),
    )
    assert case.call(b) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_authorizer_allows_everything(make_broker: Any, case: Case) -> None:
    broker: InProcessBroker = make_broker(**GROUP_SETTINGS)
    broker.replica_manager.create_topic("orders", 1, {})
    broker.conn.principal = ALICE
    expected = ErrorCode.SECURITY_DISABLED if "Acls" in case.id else case.allowed
    assert case.call(broker) == expected


def test_denials_are_counted_per_api(secured: InProcessBroker) -> None:
    produce_code(secured)
    produce_code(secured)
    fetch_code(secured)
    family = secured.metrics.authorization_failure_family
    assert family.labels("Produce", "Topic", "Write").value == 2
    assert family.labels("Fetch", "Topic", "Read").value == 1
    errors = secured.metrics.request_errors
    assert errors.labels("Produce", "TOPIC_AUTHORIZATION_FAILED").value == 2
