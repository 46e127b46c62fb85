"""What each API does with an authorizer beyond the yes/no of the matrix:
nothing stored by a denied produce, mixed requests, transactional ids,
Metadata's filtering, auto-creation and KIP-430 operations, DescribeCluster,
DeleteTopics by id, CreateTopics' configs, followers, and ACL changes through
the ACL APIs taking effect at once (the decision cache is dropped)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    FetchRequest,
    InitProducerIdRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.security.acl import AclOperation, PatternType
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_authorization_matrix import (
    ALICE,
    AUTHORIZER,
    CLUSTER,
    DENY,
    TOPIC,
    TXN,
    acl,
    batch,
    grant,
)
from tests.unit.handlers.test_produce_fetch import fetch, produce

Op = AclOperation
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
ZERO = uuid.UUID(int=0)
ALL_TOPIC_OPS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
ALL_CLUSTER_OPS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


@pytest.fixture
def secured(make_broker: Any) -> InProcessBroker:
    b: InProcessBroker = make_broker(authorizer_class_name=AUTHORIZER, super_users="User:admin")
    b.replica_manager.create_topic("orders", 2, {})
    b.replica_manager.create_topic("other", 1, {})
    b.conn.principal = ALICE
    return b


def leo(b: InProcessBroker, topic: str, partition: int = 0) -> int:
    p = b.replica_manager.get_partition(topic, partition)
    assert p is not None
    return int(p.log.log_end_offset)


# ---- Produce ------------------------------------------------------------------------------


def two_topics(acks: int = 1) -> Any:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="orders",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch()),
                    ProduceRequest.PartitionProduceData(index=1, records=batch()),
                ],
            ),
            ProduceRequest.TopicProduceData(
                name="other",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch())],
            ),
        ],
    )


def test_denied_produce_stores_nothing(secured: InProcessBroker) -> None:
    grant(secured, acl(TOPIC, "other", Op.WRITE))
    resp = secured.call(two_topics(), 9)
    orders, other = resp.responses
    assert [p.error_code for p in orders.partition_responses] == [TAF, TAF]
    assert (
        orders.partition_responses[0].error_message == "Not authorized to access topics: [orders]"
    )
    assert [(p.error_code, p.base_offset) for p in other.partition_responses] == [(0, 0)]
    assert (leo(secured, "orders", 0), leo(secured, "orders", 1), leo(secured, "other")) == (
        0,
        0,
        3,
    )
    # no topic meters for the denied topic: it never reached the log (as Kafka)
    meters = secured.metrics
    assert meters.produce_requests.labels("orders").value == 0
    assert meters.failed_produce_requests.labels("orders").value == 0
    assert meters.produce_requests.labels("other").value == 1
    # one denial per topic of the request
    assert meters.authorization_failure_family.labels("Produce", "Topic", "Write").value == 1


def test_denied_produce_with_acks_0_closes_the_connection(secured: InProcessBroker) -> None:
    assert secured.send(produce("orders", 0, batch(), acks=0), 9) is None
    assert secured.conn.closed
    assert leo(secured, "orders") == 0


def test_invalid_acks_still_names_denied_topics(secured: InProcessBroker) -> None:
    grant(secured, acl(TOPIC, "other", Op.WRITE))
    orders, other = secured.call(two_topics(acks=2), 9).responses
    assert {p.error_code for p in orders.partition_responses} == {TAF}
    assert {p.error_code for p in other.partition_responses} == {ErrorCode.INVALID_REQUIRED_ACKS}


def transactional_batch() -> bytes:
    return bytes(
        build_v2_batch(
            [SimpleRecord(1_700_000_000_000, b"k", b"v")],
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        ).buffer
    )


def test_transactional_produce_needs_write_on_the_transactional_id(
    secured: InProcessBroker,
) -> None:
    grant(secured, acl(TOPIC, "orders", Op.WRITE))
    req = produce("orders", 0, transactional_batch())
    req.transactional_id = "tx1"
    (p,) = secured.call(req, 9).responses[0].partition_responses
    assert p.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(secured, acl(TXN, "tx1", Op.WRITE))
    (p,) = secured.call(req, 9).responses[0].partition_responses
    # authorized: refused further on, as no transaction can start here yet (no AddPartitionsToTxn)
    assert p.error_code == ErrorCode.INVALID_TXN_STATE
    assert leo(secured, "orders") == 0


def test_acl_changes_through_the_apis_take_effect_at_once(secured: InProcessBroker) -> None:
    def produce_code() -> int:
        resp = secured.call(produce("orders", 0, batch()), 9)
        return int(resp.responses[0].partition_responses[0].error_code)

    assert produce_code() == TAF  # decided, and cached
    secured.conn.principal = "User:admin"
    creation = CreateAclsRequest.AclCreation(
        resource_type=int(TOPIC), resource_name="ord", resource_pattern_type=4,
        principal=ALICE, host="*", operation=int(Op.WRITE), permission_type=3,
    )  # fmt: skip
    assert secured.call(CreateAclsRequest(creations=[creation]), 3).results[0].error_code == 0
    secured.conn.principal = ALICE
    assert produce_code() == 0
    secured.conn.principal = "User:admin"
    f = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=int(TOPIC), resource_name_filter="orders", pattern_type_filter=2,
        principal_filter=ALICE, host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    (result,) = secured.call(DeleteAclsRequest(filters=[f]), 3).filter_results
    assert [m.resource_name for m in result.matching_acls] == ["ord"]
    secured.conn.principal = ALICE
    assert produce_code() == TAF
    assert leo(secured, "orders") == 3


# ---- Fetch, OffsetForLeaderEpoch: followers -------------------------------------------------


def test_fetch_from_a_follower_needs_cluster_action(secured: InProcessBroker) -> None:
    req = fetch("orders", 0, 0)
    req.replica_id = 1
    assert secured.call(req, 12).responses[0].partitions[0].error_code == TAF
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION))
    assert secured.call(req, 12).responses[0].partitions[0].error_code == 0
    # v15+: the replica id is in replica_state
    req15 = fetch("orders", 0, 0)
    req15.replica_state = FetchRequest.ReplicaState(replica_id=1, replica_epoch=-1)
    req15.topics[0].topic_id = uuid.UUID(bytes=secured.log_manager.topic_id("orders"))
    assert secured.call(req15, 15).responses[0].partitions[0].error_code == 0


def test_fetch_of_an_unknown_topic_id_is_unknown_before_unauthorized(
    secured: InProcessBroker,
) -> None:
    req = fetch("orders", 0, 0)
    req.topics[0].topic_id = uuid.uuid4()
    assert secured.call(req, 13).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_offset_for_leader_epoch_with_cluster_action(secured: InProcessBroker) -> None:
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION))
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
    assert secured.call(req, 4).topics[0].partitions[0].error_code == 0


# ---- Metadata ------------------------------------------------------------------------------


def test_metadata_for_every_topic_lists_only_describable_ones(secured: InProcessBroker) -> None:
    assert secured.call(MetadataRequest(topics=None), 12).topics == []
    assert secured.call(MetadataRequest(topics=[]), 0).topics == []  # v0: empty means all
    grant(secured, acl(TOPIC, "oth", Op.READ, ptype=PatternType.PREFIXED))
    assert [t.name for t in secured.call(MetadataRequest(topics=None), 12).topics] == ["other"]
    # filtering is not a denial the client asked about
    family = secured.metrics.authorization_failure_family
    assert family.labels("Metadata", "Topic", "Describe").value == 0
    secured.conn.principal = "User:admin"
    names = [t.name for t in secured.call(MetadataRequest(topics=None), 12).topics]
    assert names == ["orders", "other"]


def test_metadata_by_name_and_by_id(secured: InProcessBroker) -> None:
    orders_id = uuid.UUID(bytes=secured.log_manager.topic_id("orders"))
    req = MetadataRequest(
        topics=[
            MetadataRequest.MetadataRequestTopic(name="orders"),
            MetadataRequest.MetadataRequestTopic(name=None, topic_id=orders_id),
            MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4()),
        ],
        allow_auto_topic_creation=False,
    )
    by_name, by_id, unknown = secured.call(req, 12).topics
    assert (by_name.error_code, by_name.name, by_name.topic_id) == (TAF, "orders", ZERO)
    assert (by_id.error_code, by_id.name, by_id.topic_id) == (TAF, None, orders_id)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_metadata_does_not_disclose_whether_a_topic_exists(secured: InProcessBroker) -> None:
    req = MetadataRequest(
        topics=[
            MetadataRequest.MetadataRequestTopic(name="orders"),
            MetadataRequest.MetadataRequestTopic(name="absent"),
        ],
        allow_auto_topic_creation=False,
    )
    assert [t.error_code for t in secured.call(req, 12).topics] == [TAF, TAF]


def test_metadata_auto_creates_only_with_create(secured: InProcessBroker) -> None:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")])
    grant(secured, acl(TOPIC, "auto", Op.DESCRIBE))
    (t,) = secured.call(req, 12).topics
    assert t.error_code == TAF
    assert secured.replica_manager.partition_count("auto") is None
    grant(secured, acl(TOPIC, "auto", Op.CREATE))
    (t,) = secured.call(req, 12).topics
    assert t.error_code == 0 and len(t.partitions) == 1
    # CREATE on the cluster allows any topic
    grant(secured, acl(TOPIC, "*", Op.DESCRIBE), acl(CLUSTER, "kafka-cluster", Op.CREATE))
    req.topics[0].name = "auto2"
    assert secured.call(req, 12).topics[0].error_code == 0


def test_metadata_authorized_operations(secured: InProcessBroker) -> None:
    grant(
        secured,
        acl(TOPIC, "orders", Op.WRITE),
        acl(TOPIC, "orders", Op.ALTER_CONFIGS),
        acl(CLUSTER, "kafka-cluster", Op.DESCRIBE),
        acl(CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),
    )
    req = MetadataRequest(
        topics=[
            MetadataRequest.MetadataRequestTopic(name="orders"),
            MetadataRequest.MetadataRequestTopic(name="other"),
        ],
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )
    resp = secured.call(req, 10)
    orders, other = resp.topics
    # WRITE, DESCRIBE (implied), ALTER_CONFIGS, DESCRIBE_CONFIGS (implied)
    assert orders.topic_authorized_operations == (1 << 4) | (1 << 8) | (1 << 11) | (1 << 10)
    assert other.error_code == TAF
    assert other.topic_authorized_operations == -(2**31)
    assert resp.cluster_authorized_operations == (1 << 8) | (1 << 12)
    req.include_cluster_authorized_operations = False
    req.include_topic_authorized_operations = False
    resp = secured.call(req, 10)
    assert resp.cluster_authorized_operations == -(2**31)
    assert resp.topics[0].topic_authorized_operations == -(2**31)


def test_metadata_cluster_operations_are_0_without_describe(secured: InProcessBroker) -> None:
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.CREATE))
    req = MetadataRequest(topics=[], include_cluster_authorized_operations=True)
    assert secured.call(req, 9).cluster_authorized_operations == 0


def test_metadata_operations_without_an_authorizer(broker: InProcessBroker) -> None:
    broker.replica_manager.create_topic("t", 1, {})
    req = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="t")],
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )
    resp = broker.call(req, 10)
    assert resp.topics[0].topic_authorized_operations == ALL_TOPIC_OPS
    assert resp.cluster_authorized_operations == ALL_CLUSTER_OPS


# ---- DescribeCluster ------------------------------------------------------------------------


def test_describe_cluster_authorized_operations(secured: InProcessBroker) -> None:
    req = DescribeClusterRequest(include_cluster_authorized_operations=True)
    resp = secured.call(req, 1)
    assert (resp.error_code, resp.cluster_authorized_operations) == (0, 0)
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.ALTER))
    # ALTER implies DESCRIBE
    assert secured.call(req, 1).cluster_authorized_operations == (1 << 7) | (1 << 8)
    secured.conn.principal = "User:admin"
    assert secured.call(req, 1).cluster_authorized_operations == ALL_CLUSTER_OPS
    req.include_cluster_authorized_operations = False
    assert secured.call(req, 1).cluster_authorized_operations == -(2**31)


# ---- DeleteTopics, CreateTopics ---------------------------------------------------------------


def test_delete_topics_by_id_hides_the_name_without_describe(secured: InProcessBroker) -> None:
    orders_id = uuid.UUID(bytes=secured.log_manager.topic_id("orders"))
    req = DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=orders_id)],
        timeout_ms=1000,
    )
    (r,) = secured.call(req, 6).responses
    assert (r.error_code, r.name, r.topic_id) == (TAF, None, orders_id)
    grant(secured, acl(TOPIC, "orders", Op.DESCRIBE))
    (r,) = secured.call(req, 6).responses
    assert (r.error_code, r.name, r.topic_id) == (TAF, "orders", orders_id)
    grant(secured, acl(TOPIC, "orders", Op.DELETE))
    (r,) = secured.call(req, 6).responses
    assert (r.error_code, r.name) == (0, "orders")
    assert secured.replica_manager.partition_count("orders") is None


def test_delete_topics_by_name_unknown_only_when_describable(secured: InProcessBroker) -> None:
    req = DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name="absent")], timeout_ms=1000
    )
    assert secured.call(req, 6).responses[0].error_code == TAF
    grant(secured, acl(TOPIC, "absent", Op.DESCRIBE))
    assert secured.call(req, 6).responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # DELETE on the cluster allows every topic
    grant(secured, acl(CLUSTER, "kafka-cluster", Op.DELETE))
    req.topics[0].name = "other"
    assert secured.call(req, 6).responses[0].error_code == 0


def test_create_topics_configs_need_describe_configs(secured: InProcessBroker) -> None:
    grant(secured, acl(TOPIC, "new", Op.CREATE, ptype=PatternType.PREFIXED))

    def create(name: str) -> Any:
        req = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name, num_partitions=2, replication_factor=1
                )
            ],
            timeout_ms=1000,
        )
        (t,) = secured.call(req, 7).topics
        return t

    t = create("new-1")
    assert (t.error_code, t.topic_config_error_code) == (0, TAF)
    assert (t.num_partitions, t.replication_factor, t.configs) == (-1, -1, [])
    assert secured.replica_manager.partition_count("new-1") == 2
    grant(secured, acl(TOPIC, "new-2", Op.DESCRIBE_CONFIGS))
    t = create("new-2")
    assert (t.error_code, t.topic_config_error_code, t.num_partitions) == (0, 0, 2)
    assert t.configs
    # the internal metadata topic is refused as invalid whatever the ACLs
    assert create("__cluster_metadata").error_code == ErrorCode.INVALID_REQUEST


# ---- InitProducerId ----------------------------------------------------------------------------


def test_init_producer_id_with_write_on_some_topic(secured: InProcessBroker) -> None:
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000)
    assert secured.call(req, 4).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(secured, acl(TOPIC, "orders", Op.WRITE))
    resp = secured.call(req, 4)
    assert resp.error_code == 0 and resp.producer_id >= 0
    # a DENY covering that topic takes it back (KIP-679)
    grant(secured, acl(TOPIC, "orders", Op.WRITE, DENY))
    assert secured.call(req, 4).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
