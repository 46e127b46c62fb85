"""A broker without sockets for the admin-API tests: real logs and partitions
in a temporary dir, the real registry and dispatcher, requests encoded and
responses decoded by the protocol layer, so every call crosses the
version-specific codecs. Unlike ``conftest.InProcessBroker`` it takes the node
id and cluster id from the configuration and the log dirs (DescribeCluster,
DescribeConfigs of the broker resource), and offers topic creation and
appends with chosen timestamps.

    with AdminBroker(tmp_path) as b:
        resp = b.call(5, CreateTopicsRequest(topics=[...]))
"""

from __future__ import annotations

import itertools
from pathlib import Path

from broker.config import BrokerConfig
from broker.handlers.context import BrokerContext, Endpoint
from broker.handlers.registry import HandlerRegistry
from broker.log.manager import LogManager
from broker.metrics import BrokerMetrics
from broker.partition.producer_ids import ProducerIdManager
from broker.partition.replica_manager import ReplicaManager
from broker.protocol import decode_response, encode_request
from broker.protocol.data import Data
from broker.protocol.messages import codec_for
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from broker.security.acl_control import open_acl_control
from broker.server.dispatch import Dispatcher
from broker.server.group_commit import GroupCommit
from tests.unit.handlers.conftest import FakeConnection, frame_bytes

HOST = "127.0.0.1"
PORT = 19092


class AdminBroker:
    def __init__(self, tmp_path: Path, **overrides: str) -> None:
        props = {"log.dirs": str(tmp_path / "data"), **overrides}
        self.config = BrokerConfig.from_properties(props)
        self.log_manager = LogManager(self.config.log_dirs, self.config)
        self.log_manager.startup()
        self.metrics = BrokerMetrics(records_implementation="test", event_loop="none", version="0")
        self.group_commit = GroupCommit()
        self.now = 1_700_000_000_000
        self.replica_manager = ReplicaManager(
            self.log_manager, recorder=self.metrics.validator_recorder, time_ms=self.now_ms
        )
        self.acl_control = open_acl_control(self.config, self.config.log_dirs[0])
        self.context = BrokerContext(
            config=self.config,
            node_id=self.config.node_id,
            cluster_id=self.log_manager.cluster_id or "",
            advertised=Endpoint(HOST, PORT),
            log_manager=self.log_manager,
            replica_manager=self.replica_manager,
            meters=self.metrics,
            durability=self.group_commit,
            producer_ids=ProducerIdManager(self.log_manager.log_dirs[0]),
            acl_control=self.acl_control,
        )
        self.dispatcher = Dispatcher(HandlerRegistry(self.context), self.metrics)
        self.connection = FakeConnection()
        self._correlation = itertools.count(1)
        self.closed = False

    def now_ms(self) -> int:
        return self.now

    def call(self, version: int, request: Data) -> Data:
        """Encode ``request`` in ``version``, dispatch it, decode the response."""
        api_key = codec_for(request).spec.api_key
        correlation = next(self._correlation)
        encoded = encode_request(version, correlation, "admin-test", request)
        frame = b"".join(bytes(s) for s in encoded.segments)[4:]
        segments = self.dispatcher.handle_frame(memoryview(frame), self.connection)
        assert isinstance(segments, list), segments
        response = frame_bytes(segments)
        got, body = decode_response(api_key, version, response[4:])
        assert got == correlation
        return body

    def create_topic(self, name: str, partitions: int = 1, **configs: str) -> None:
        """A topic made the way CreateTopics makes one (``ReplicaManager.create_topic``)."""
        self.replica_manager.create_topic(name, partitions, configs)

    def append(self, topic: str, partition: int, timestamps: list[int]) -> tuple[int, int]:
        """Append one v2 batch with a record per timestamp; (first, last) offset."""
        built = build_v2_batch(
            [SimpleRecord(timestamp=ts, key=b"k%d" % ts, value=b"v%d" % ts) for ts in timestamps]
        )
        p = self.replica_manager.get_partition(topic, partition)
        assert p is not None
        outcome = p.append_records_as_leader(memoryview(bytearray(built.buffer)), 9)
        return outcome.base_offset, outcome.last_offset

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.group_commit.close()
        if self.acl_control is not None:
            self.acl_control.close()
        self.log_manager.shutdown()

    def __enter__(self) -> AdminBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
