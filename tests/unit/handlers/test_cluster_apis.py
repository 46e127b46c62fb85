"""DescribeCluster, FindCoordinator and DescribeLogDirs through the dispatcher."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode
from broker.handlers.registry import HANDLER_CLASSES
from broker.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    FindCoordinatorRequest,
)
from tests.unit.handlers.helpers import HOST, PORT, AdminBroker


@pytest.fixture
def broker(tmp_path):
    with AdminBroker(tmp_path, **{"node.id": "3"}) as b:
        b.create_topic("a", 2)
        b.create_topic("b", 1)
        b.append("a", 1, [1, 2, 3])
        yield b


# ---- DescribeCluster ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_is_this_broker(broker, version):
    resp = broker.call(version, DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert resp.error_code == 0 and resp.error_message is None
    assert resp.cluster_id == broker.log_manager.cluster_id and resp.cluster_id
    assert resp.controller_id == 3
    assert [(b.broker_id, b.host, b.port, b.rack) for b in resp.brokers] == [(3, HOST, PORT, None)]
    assert resp.cluster_authorized_operations == -(2**31)
    if version >= 1:
        assert resp.endpoint_type == 1


def test_describe_cluster_authorized_operations_without_an_authorizer(broker):
    resp = broker.call(1, DescribeClusterRequest(include_cluster_authorized_operations=True))
    ops = {bit for bit in range(32) if resp.cluster_authorized_operations >> bit & 1}
    # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
    assert ops == {5, 7, 8, 9, 10, 11, 12}


@pytest.mark.parametrize(
    ("endpoint", "code", "message"),
    [
        (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE, "but we wanted an endpoint of type CONTROLLER"),
        (7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 7"),
    ],
)
def test_describe_cluster_endpoint_types(broker, endpoint, code, message):
    resp = broker.call(1, DescribeClusterRequest(endpoint_type=endpoint))
    assert resp.error_code == code
    assert message in resp.error_message
    assert resp.brokers == []


# ---- FindCoordinator ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_single_key(broker, version):
    # as on a node that is not the groups' coordinator (tests/unit/groups covers one)
    broker.context.groups = None
    resp = broker.call(version, FindCoordinatorRequest(key="my-group", key_type=0))
    assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (resp.node_id, resp.host, resp.port) == (-1, "", -1)
    if version >= 1:
        assert "serves no consumer groups" in resp.error_message


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batches(broker, version):
    resp = broker.call(
        version, FindCoordinatorRequest(key_type=1, coordinator_keys=["tx-1", "tx-2"])
    )
    assert [(c.key, c.error_code, c.node_id, c.port) for c in resp.coordinators] == [
        ("tx-1", ErrorCode.NONE, 3, PORT),
        ("tx-2", ErrorCode.NONE, 3, PORT),
    ]


@pytest.mark.parametrize("version", [1, 3, 4])
def test_find_coordinator_transaction_keys_without_a_coordinator(broker, version):
    # as on a node that is not the coordinator's
    broker.context.transactions = None
    request = (
        FindCoordinatorRequest(key_type=1, coordinator_keys=["tx-1"])
        if version >= 4
        else FindCoordinatorRequest(key="tx-1", key_type=1)
    )
    resp = broker.call(version, request)
    found = resp.coordinators[0] if version >= 4 else resp
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (found.node_id, found.host, found.port) == (-1, "", -1)
    assert "serves no transactional ids" in found.error_message


def test_find_coordinator_key_types(broker):
    share_v5 = broker.call(5, FindCoordinatorRequest(key_type=2, coordinator_keys=["s"]))
    assert share_v5.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    share_v6 = broker.call(6, FindCoordinatorRequest(key_type=2, coordinator_keys=["s"]))
    assert share_v6.coordinators[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    unknown = broker.call(3, FindCoordinatorRequest(key="k", key_type=9))
    assert unknown.error_code == ErrorCode.INVALID_REQUEST
    assert unknown.error_message == "Unknown coordinator type received: 9"


# ---- DescribeLogDirs ----------------------------------------------------------------------------


def sizes(result):
    return {
        (t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
        for t in result.topics
        for p in t.partitions
    }


@pytest.mark.parametrize("version", range(5))
def test_describe_log_dirs_every_partition(broker, version):
    resp = broker.call(version, DescribeLogDirsRequest(topics=None))
    [result] = resp.results
    assert result.error_code == 0
    assert result.log_dir == str(broker.log_manager.log_dirs[0])
    size_a1 = broker.replica_manager.get_partition("a", 1).log.size
    assert size_a1 > 0
    assert sizes(result) == {
        ("a", 0): (0, 0, False),
        ("a", 1): (size_a1, 0, False),
        ("b", 0): (0, 0, False),
    }
    if version >= 4:
        assert result.total_bytes >= result.usable_bytes > 0
    else:
        assert result.total_bytes == -1


def test_describe_log_dirs_selected_partitions(broker):
    T = DescribeLogDirsRequest.DescribableLogDirTopic
    resp = broker.call(
        2,
        DescribeLogDirsRequest(
            topics=[T(topic="a", partitions=[1, 9]), T(topic="missing", partitions=[0])]
        ),
    )
    [result] = resp.results
    assert set(sizes(result)) == {("a", 1)}
    empty = broker.call(2, DescribeLogDirsRequest(topics=[]))
    assert [r.topics for r in empty.results] == [[]]


def test_describe_log_dirs_two_dirs(tmp_path):
    dirs = f"{tmp_path / 'd1'},{tmp_path / 'd2'}"
    with AdminBroker(tmp_path, **{"log.dirs": dirs}) as b:
        b.create_topic("x", 4)
        resp = b.call(4, DescribeLogDirsRequest(topics=None))
        assert [r.log_dir for r in resp.results] == [str(tmp_path / "d1"), str(tmp_path / "d2")]
        per_dir = [len(sizes(r)) for r in resp.results]
        assert per_dir == [2, 2]


# ---- ApiVersions ---------------------------------------------------------------------------------


def test_api_versions_lists_the_admin_apis_as_declared(broker):
    resp = broker.call(3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    served = {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys}
    expected = {
        (2, 0, 9),
        (10, 0, 6),
        (19, 0, 7),
        (20, 0, 6),
        (23, 0, 4),
        (32, 0, 4),
        (33, 0, 2),
        (35, 0, 4),
        (37, 0, 3),
        (44, 0, 1),
        (60, 0, 1),
    }
    assert expected <= served
    assert served == {(c.API_KEY, c.MIN_VERSION, c.MAX_VERSION) for c in HANDLER_CLASSES}
