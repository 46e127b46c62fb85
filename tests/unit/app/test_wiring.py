"""``broker.wiring.build_core``: the request path ``BrokerApp.start`` builds (and the
handler tests' ``InProcessBroker`` with it): one object of each part, joined."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.metrics import BrokerMetrics, NullMetrics
from broker.partition.partition import run_here
from broker.startup import check_configuration
from broker.wiring import BrokerCore, build_core, open_log_manager, request_meters


@contextmanager
def core_of(tmp_path: Path, **props: str) -> Iterator[BrokerCore]:
    config = BrokerConfig.from_properties({"log.dirs": str(tmp_path / "data"), **props})
    metrics = BrokerMetrics(records_implementation="test", event_loop="test", version="0")
    plan = check_configuration(config, metrics)
    meters = request_meters(config, metrics)
    log_manager = open_log_manager(config, meters=meters, metrics=metrics)
    log_manager.startup()
    try:
        yield build_core(
            config, plan, log_manager, meters=meters, time_ms=lambda: 1000, offload=run_here
        )
    finally:
        log_manager.shutdown()


@pytest.fixture
def core(tmp_path: Path) -> Iterator[BrokerCore]:
    with core_of(tmp_path) as made:
        yield made


def test_the_parts_are_joined_once(core: BrokerCore) -> None:
    context = core.context
    assert context.log_manager is core.log_manager
    assert context.replica_manager is core.replica_manager
    assert context.durability is core.group_commit
    assert context.producer_ids is core.producer_ids
    assert context.scram_control is core.scram_control
    assert core.groups is not None and context.groups is core.groups
    assert core.groups.replica_manager is core.replica_manager
    assert context.registry is not None  # the dispatcher's handlers exist
    assert context.cluster_id == core.log_manager.cluster_id and context.cluster_id
    assert core.acl_control is None  # no authorizer.class.name


def test_metrics_disabled_wires_no_ops(tmp_path: Path) -> None:
    with core_of(tmp_path, **{"metrics.enabled": "false"}) as core:
        assert isinstance(core.context.meters, NullMetrics)


def test_a_node_that_is_not_the_coordinator_serves_no_groups(tmp_path: Path) -> None:
    props = {"node.id": "1", "cluster.nodes": "0@127.0.0.1:9092,1@127.0.0.1:9093"}
    with core_of(tmp_path, **props) as core:
        assert core.groups is None and core.context.groups is None
        assert core.replica_manager.layout is not None
