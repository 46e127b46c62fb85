"""``broker groups`` and ``GroupAdmin`` against an in-process broker, without sockets.

The admin client's connection is replaced by one that hands each request to
the broker's real dispatcher (``InProcessBroker.call``) and reports the
broker's ApiVersions, so the version choice, the requests and the CLI's
output are what a run against a live broker gets.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.admin import consumer_groups
from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused
from broker.admin.groups import GroupAdmin, owned_partitions
from broker.errors import ErrorCode
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.admin.loopback import LoopbackConnection
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.group_requests import offset_commit_request
from tests.unit.handlers.test_produce_fetch import produce


@pytest.fixture
def gbroker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data", offsets_topic_num_partitions="2")
    b.replica_manager.create_topic("t", 2, {})
    for partition in (0, 1):
        records = [SimpleRecord(1_700_000_000_000 + i, b"k", b"v") for i in range(10)]
        resp = b.call(produce("t", partition, bytes(build_v2_batch(records).buffer)), 9)
        assert resp.responses[0].partition_responses[0].error_code == 0
    yield b
    b.close()


@pytest.fixture
def admin(gbroker: InProcessBroker) -> GroupAdmin:
    # the broker advertises 127.0.0.1:9092: the bootstrap connection is the coordinator's
    return GroupAdmin(LoopbackConnection(gbroker, ("127.0.0.1", 9092)), 5.0)


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    consumer_groups.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:9092", *argv])


def cli(admin: GroupAdmin, *argv: str) -> tuple[int, list[list[str]]]:
    out = io.StringIO()
    status = consumer_groups.execute(admin, args(*argv), out)
    return status, [line.split() for line in out.getvalue().splitlines() if line.strip()]


def commit(b: InProcessBroker, group: str, offsets: dict[int, int]) -> None:
    resp = b.call(offset_commit_request(group, {"t": offsets}), 8)
    assert {p.error_code for t in resp.topics for p in t.partitions} == {0}


def test_list_describe_reset_delete(admin: GroupAdmin, gbroker: InProcessBroker) -> None:
    commit(gbroker, "billing", {0: 4, 1: 10})
    assert cli(admin, "list") == (0, [["billing"]])
    assert cli(admin, "list", "--state", "Stable") == (0, [])
    status, rows = cli(admin, "describe", "--group", "billing")
    assert status == 0
    assert rows[0] == ["Consumer", "group", "'billing'", "has", "no", "active", "members."]
    assert rows[2:] == [
        ["billing", "t", "0", "4", "10", "6", "-", "-", "-"],
        ["billing", "t", "1", "10", "10", "0", "-", "-", "-"],
    ]
    # a dry run changes nothing; --execute commits, clamped to the log's offsets
    status, rows = cli(admin, "reset-offsets", "--group", "billing", "--all-topics",
                       "--shift-by", "3")  # fmt: skip
    assert (status, rows[1:]) == (0, [["billing", "t", "0", "7"], ["billing", "t", "1", "10"]])
    assert admin.committed("billing") == {("t", 0): 4, ("t", 1): 10}
    status, _ = cli(admin, "reset-offsets", "--group", "billing", "--topic", "t:1",
                    "--to-earliest", "--execute")  # fmt: skip
    assert status == 0
    assert admin.committed("billing") == {("t", 0): 4, ("t", 1): 0}
    status, rows = cli(admin, "reset-offsets", "--group", "billing", "--topic", "t",
                       "--to-datetime", "2023-11-14T22:13:20.005Z")  # fmt: skip
    assert rows[1:] == [["billing", "t", "0", "5"], ["billing", "t", "1", "5"]]
    assert cli(admin, "delete", "--group", "billing") == (
        0,
        [
            [
                "Deletion",
                "of",
                "requested",
                "consumer",
                "groups",
                "('billing')",
                "was",
                "successful.",
            ]
        ],
    )
    assert cli(admin, "describe", "--group", "billing") == (
        0,
        [["Consumer", "group", "'billing'", "does", "not", "exist."]],
    )


def test_list_states_are_kafkas_in_any_case_and_unknown_ones_refused(
    admin: GroupAdmin, gbroker: InProcessBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(gbroker, "billing", {0: 1})
    assert cli(admin, "list", "--state", "stable,EMPTY") == (0, [["billing"]])
    assert cli(admin, "list", "--state", "Stable", "--state", "Reconciling") == (0, [])
    with pytest.raises(SystemExit) as exited:
        args("list", "--state", "Stable,Bogus")
    assert exited.value.code == 2
    assert "Invalid state list 'Stable,Bogus'. Valid states are: " in capsys.readouterr().err


def test_refusals_raise_with_kafkas_error_name(admin: GroupAdmin) -> None:
    with pytest.raises(BrokerRefused, match="Deletion of group 'nope' failed: GROUP_ID_NOT_FOUND"):
        admin.delete_group("nope")
    with pytest.raises(BrokerRefused) as info:
        admin.partitions(["missing"])
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_versions_are_the_highest_both_speak(admin: GroupAdmin) -> None:
    conn = admin.coordinator("g")
    assert isinstance(conn, LoopbackConnection)
    admin.list_groups(["Empty"])
    admin.committed("g")
    admin.commit("g", {("t", 0): 1})
    called = dict(conn.calls)
    assert called["FindCoordinatorRequest"] == 3
    assert called["ListGroupsRequest"] == 5
    assert called["OffsetFetchRequest"] == 8
    assert called["OffsetCommitRequest"] == 8


def test_a_broker_without_list_groups_v4_cannot_filter_states(admin: GroupAdmin) -> None:
    conn = admin.coordinator("g")
    conn.versions[16] = (0, 3)
    assert admin.list_groups() == []
    with pytest.raises(AdminClientError, match="does not serve ListGroups v4-v5"):
        admin.list_groups(["Stable"])


def test_old_offset_fetch_versions_read_the_single_group_form(
    admin: GroupAdmin, gbroker: InProcessBroker
) -> None:
    commit(gbroker, "g", {0: 3})
    conn = admin.coordinator("g")
    conn.versions[9] = (0, 7)
    assert admin.committed("g") == {("t", 0): 3}
    assert ("OffsetFetchRequest", 7) in conn.calls  # type: ignore[attr-defined]


def test_a_coordinator_elsewhere_gets_its_own_connection(
    gbroker: InProcessBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []

    def connect(
        bootstrap: str, timeout_s: float = 30.0, security: object = None
    ) -> AdminConnection:
        opened.append(bootstrap)
        return LoopbackConnection(gbroker, ("127.0.0.1", 9092))

    monkeypatch.setattr(AdminConnection, "connect", staticmethod(connect))
    bootstrap = LoopbackConnection(gbroker, ("localhost", 9092))
    admin = GroupAdmin(bootstrap, 5.0)
    first = admin.coordinator("a")
    assert admin.coordinator("b") is first
    assert opened == ["127.0.0.1:9092"]
    admin.close()
    assert isinstance(first, LoopbackConnection) and first.closed and bootstrap.closed


def test_run_reports_a_refusal(
    admin: GroupAdmin, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(GroupAdmin, "connect", staticmethod(lambda _b, _t=30.0, _s=None: admin))
    assert consumer_groups.run(args("delete", "--group", "nope")) == 1
    assert capsys.readouterr().err == (
        "Error: Deletion of group 'nope' failed: GROUP_ID_NOT_FOUND\n"
    )


def test_describe_a_consumer_protocol_group(admin: GroupAdmin, gbroker: InProcessBroker) -> None:
    from broker.protocol.messages import ConsumerGroupHeartbeatRequest

    joined = gbroker.call(
        ConsumerGroupHeartbeatRequest(
            group_id="modern", member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"], topic_partitions=[],
        ),
        1,
    )  # fmt: skip
    assert joined.error_code == 0
    described = admin.describe_group("modern")
    assert (described.state, described.group_type) == ("Stable", "consumer")
    (m,) = described.members
    assert (m.member_id, m.client_id, sorted(m.partitions)) == (
        "m", "test-client", [("t", 0), ("t", 1)]
    )  # fmt: skip
    status, rows = cli(admin, "describe", "--group", "modern")
    assert status == 0
    assert [r[:3] + r[6:] for r in rows[1:]] == [
        ["modern", "t", "0", "m", "/test", "test-client"],
        ["modern", "t", "1", "m", "/test", "test-client"],
    ]
    # a busy consumer group cannot be reset, as a classic one
    status, _ = cli(admin, "reset-offsets", "--group", "modern", "--all-topics", "--to-earliest")
    assert status == 1


def test_a_broker_without_consumer_group_describe_gets_describe_groups(
    admin: GroupAdmin, gbroker: InProcessBroker
) -> None:
    commit(gbroker, "old", {0: 1})
    conn = admin.coordinator("old")
    del conn.versions[69]
    assert admin.describe_group("old").state == "Empty"
    assert ("ConsumerGroupDescribeRequest", 1) not in conn.calls  # type: ignore[attr-defined]


def test_owned_partitions_of_a_member_with_and_without_an_assignment() -> None:
    from broker.protocol.messages import ConsumerGroupDescribeResponse as Described

    assignment = Described.Assignment(
        topic_partitions=[
            Described.TopicPartitions(topic_name="a", partitions=[2, 0]),
            Described.TopicPartitions(topic_name="b", partitions=[1]),
        ]
    )
    assert owned_partitions(assignment) == [("a", 2), ("a", 0), ("b", 1)]
    # a Member built without one (its default), not a decoded one: no partitions, no crash
    assert owned_partitions(Described.Member().assignment) == []
