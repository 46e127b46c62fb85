"""Several broker processes on one machine (prototype, ``cluster.nodes``).

``broker/partition/cluster_layout.py``: partition p of a topic is led by the
(p mod n)-th node, internal topics by the first; a node answers for the
partitions it leads and NOT_LEADER_OR_FOLLOWER for the others, and Metadata
and FindCoordinator show every node.
"""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode, InvalidConfigError
from broker.partition.cluster_layout import ClusterLayout, NodeAddress
from broker.protocol.messages import FindCoordinatorRequest, MetadataRequest
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.handlers.test_produce_fetch import fetch, produce

NODES = ("0@127.0.0.1:9092", "1@127.0.0.1:9093")


def test_parse_and_leaders():
    layout = ClusterLayout.parse(NODES, 1)
    assert layout is not None
    assert layout.nodes == [NodeAddress(0, "127.0.0.1", 9092), NodeAddress(1, "127.0.0.1", 9093)]
    assert [layout.leader_of("t", p).node_id for p in range(4)] == [0, 1, 0, 1]
    assert [layout.leads("t", p) for p in range(4)] == [False, True, False, True]
    assert layout.leader_of("__consumer_offsets", 7).node_id == 0
    assert ClusterLayout.parse(None, 0) is None
    assert ClusterLayout.parse((), 0) is None


@pytest.mark.parametrize(
    "values",
    [("0@127.0.0.1",), ("x@h:1",), ("0@:1",), ("0@h:1", "0@h:2"), ("1@h:1",)],
)
def test_bad_values_are_refused_naming_the_key(values):
    with pytest.raises(InvalidConfigError, match=r"cluster\.nodes"):
        ClusterLayout.parse(values, 0)


def _node_one(broker):
    broker.replica_manager.create_topic("t", 4, {})
    broker.replica_manager.layout = ClusterLayout.parse(NODES, 1)


def test_a_node_serves_the_partitions_it_leads_only(broker):
    _node_one(broker)
    batch = bytes(build_v2_batch([SimpleRecord(broker.now_ms, b"k", b"v")]).buffer)
    codes = []
    for p in range(4):
        (topic,) = broker.call(produce("t", p, batch), 9).responses
        codes.append(topic.partition_responses[0].error_code)
    led, other = ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert codes == [other, led, other, led]
    (topic,) = broker.call(fetch("t", 0, 0), 12).responses
    assert topic.partitions[0].error_code == other
    (topic,) = broker.call(fetch("t", 1, 0), 12).responses
    assert topic.partitions[0].error_code == ErrorCode.NONE
    # a partition that does not exist is still unknown
    (topic,) = broker.call(produce("t", 9, batch), 9).responses
    assert topic.partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_and_find_coordinator_show_every_node(broker):
    _node_one(broker)
    body = broker.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 9)
    assert [(b.node_id, b.port) for b in body.brokers] == [(0, 9092), (1, 9093)]
    assert body.controller_id == 0
    (topic,) = body.topics
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [
        (0, 0),
        (1, 1),
        (2, 0),
        (3, 1),
    ]
    found = broker.call(FindCoordinatorRequest(key="g", key_type=0), 3)
    assert (found.error_code, found.node_id, found.port) == (ErrorCode.NONE, 0, 9092)
