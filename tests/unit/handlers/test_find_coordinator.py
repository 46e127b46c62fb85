"""FindCoordinator through the real dispatcher: advertised (librdkafka's LZ4
feature flag depends on it) and answered with a non-retriable "no coordinator"."""

from __future__ import annotations

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import ApiVersionsRequest, FindCoordinatorRequest


def test_api_versions_advertises_find_coordinator_from_v0(broker):
    resp = broker.call(ApiVersionsRequest(), 0)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    # librdkafka enables LZ4 only if FindCoordinator v0 overlaps (rdkafka_feature.c)
    assert keys[10] == (0, 6)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_key_is_refused_with_a_message(broker, version):
    resp = broker.call(FindCoordinatorRequest(key="my-group", key_type=0), version)
    assert resp.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert (resp.node_id, resp.host, resp.port) == (-1, "", -1)
    if version >= 1:
        assert "no group coordinator" in resp.error_message


@pytest.mark.parametrize("version", [1, 3])
def test_transaction_key_is_refused(broker, version):
    resp = broker.call(FindCoordinatorRequest(key="txn", key_type=1), version)
    assert resp.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "no transaction coordinator" in resp.error_message


@pytest.mark.parametrize("version", [4, 5, 6])
def test_batched_keys_get_one_answer_each(broker, version):
    resp = broker.call(
        FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b", "c"]), version
    )
    assert [c.key for c in resp.coordinators] == ["a", "b", "c"]
    assert {c.error_code for c in resp.coordinators} == {ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert all((c.node_id, c.host, c.port) == (-1, "", -1) for c in resp.coordinators)
    assert broker.metrics.render().count(b"GROUP_AUTHORIZATION_FAILED") >= 1


def test_unknown_key_type_is_invalid_request(broker):
    resp = broker.call(FindCoordinatorRequest(key="x", key_type=2), 3)
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    resp = broker.call(FindCoordinatorRequest(key_type=2, coordinator_keys=["x"]), 6)
    (c,) = resp.coordinators
    assert c.error_code == ErrorCode.INVALID_REQUEST
    assert c.error_message == "Unsupported key type 2"
