"""``broker offsets`` and ``broker log-dirs`` against an in-process broker: GetOffsetShell's
time names and order, LogDirsCommand's JSON."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.admin import log_dirs, offsets
from broker.admin.client_security import PLAINTEXT
from broker.admin.topic_requests import TopicAdmin
from broker.protocol.messages import DescribeLogDirsResponse
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.admin.loopback import LoopbackConnection
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_produce_fetch import produce

T0 = 1_700_000_000_000


@pytest.fixture
def obroker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data")
    b.replica_manager.create_topic("t", 11, {})
    b.replica_manager.create_topic("u", 1, {})
    # t-2: timestamps T0+0..4, the largest at offset 3; t-10: 2 records
    for partition, stamps in ((2, [0, 1, 2, 9, 4]), (10, [0, 1])):
        records = [SimpleRecord(T0 + s, b"k", b"v") for s in stamps]
        resp = b.call(produce("t", partition, bytes(build_v2_batch(records).buffer)), 9)
        assert resp.responses[0].partition_responses[0].error_code == 0
    yield b
    b.close()


@pytest.fixture
def admin(obroker: InProcessBroker) -> TopicAdmin:
    return TopicAdmin(LoopbackConnection(obroker, ("127.0.0.1", 9092)))


def offsets_cli(admin: TopicAdmin, *argv: str) -> tuple[list[str], str]:
    parser = argparse.ArgumentParser()
    offsets.add_arguments(parser)
    a = parser.parse_args(["--bootstrap-server", "x:1", *argv])
    errors = io.StringIO()
    found = offsets.fetch_offsets(
        admin, offsets.rules(a), offsets.parse_time(a.time), a.exclude_internal_topics, errors
    )
    return [f"{t}:{p}:{o}" for t, p, o in found], errors.getvalue()


def test_parse_time() -> None:
    assert [offsets.parse_time(t) for t in ("latest", "earliest", "max-timestamp")] == [-1, -2, -3]
    assert offsets.parse_time("-4") == -4 and offsets.parse_time("1700000000000") == T0
    with pytest.raises(offsets.OffsetsError, match=r"^Malformed time argument soon\. Please use"):
        offsets.parse_time("soon")


def test_topic_partitions_exclude_topic_and_partitions() -> None:
    a = argparse.Namespace(topic_partitions="t:1", topic="t", partitions=None)
    with pytest.raises(offsets.OffsetsError, match="cannot be used with --topic or --partitions"):
        offsets.rules(a)


def test_offsets_in_kafkas_order(admin: TopicAdmin) -> None:
    lines, errors = offsets_cli(admin, "--topic", "t", "--partitions", "2,10,3")
    # sorted as the text "t-10" < "t-2" < "t-3"
    assert (lines, errors) == (["t:10:2", "t:2:5", "t:3:0"], "")
    assert offsets_cli(admin, "--topic-partitions", "t:2", "--time", "earliest")[0] == ["t:2:0"]
    assert offsets_cli(admin, "--topic-partitions", "t:2", "--time", "-3")[0] == ["t:2:3"]
    # the first offset with a timestamp at or after the time; none past the last record
    assert offsets_cli(admin, "--topic-partitions", "t:2,t:10", "--time", str(T0 + 2))[0] == [
        "t:2:2"
    ]
    assert offsets_cli(admin, "--topic-partitions", "t:9-11,u")[0] == ["t:10:2", "t:9:0", "u:0:0"]


def test_no_match(admin: TopicAdmin) -> None:
    with pytest.raises(offsets.OffsetsError, match="Could not match any topic-partitions"):
        offsets_cli(admin, "--topic", "nothing")


def test_log_dirs_json(admin: TopicAdmin, obroker: InProcessBroker) -> None:
    parser = argparse.ArgumentParser()
    log_dirs.add_arguments(parser)
    a = parser.parse_args(["--bootstrap-server", "x:1", "--describe", "--topic-list", "u,t"])
    out = io.StringIO()
    log_dirs.describe(admin, a, PLAINTEXT, out)
    head, received, document = out.getvalue().splitlines()
    assert head == "Querying brokers for log directories information"
    assert received == "Received log directory information from brokers 0"
    assert document.startswith('{"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":')
    assert document.endswith(f'"error":null,"logDir":"{obroker.config.log_dirs[0]}"}}]}}],'
                             '"version":1}')  # fmt: skip
    parsed = json.loads(document)
    sizes = {p["partition"]: p["size"] for p in parsed["brokers"][0]["logDirs"][0]["partitions"]}
    assert len(sizes) == 12 and sizes["t-2"] > sizes["t-10"] > 0 and sizes["u-0"] == 0
    a.topic_list = "u"
    out = io.StringIO()
    log_dirs.describe(admin, a, PLAINTEXT, out)
    assert '[{"partition":"u-0","size":0,"offsetLag":0,"isFuture":false}]' in out.getvalue()
    a.broker_list = "0,4"
    with pytest.raises(log_dirs.LogDirsError, match=r"from --broker-list: 4\. Current existent"):
        log_dirs.describe(admin, a, PLAINTEXT, out)


def test_log_dirs_json_layout_and_error() -> None:
    R = DescribeLogDirsResponse
    result = R.DescribeLogDirsResult(
        error_code=56,
        log_dir="/d",
        topics=[
            R.DescribeLogDirsTopic(
                name="t",
                partitions=[
                    R.DescribeLogDirsPartition(
                        partition_index=i, partition_size=10 * i, offset_lag=0, is_future_key=False
                    )
                    for i in (0, 1)
                ],
            )
        ],
    )
    assert log_dirs.describe_json({0: [result]}, set()) == (
        '{"brokers":[{"broker":0,"logDirs":[{"partitions":['
        '{"partition":"t-1","size":10,"offsetLag":0,"isFuture":false},'
        '{"partition":"t-0","size":0,"offsetLag":0,"isFuture":false}],'
        '"error":"org.apache.kafka.common.errors.KafkaStorageException","logDir":"/d"}]}],'
        '"version":1}'
    )
