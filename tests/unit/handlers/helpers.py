"""A broker without sockets for the admin-API tests: real logs and partitions
in a temporary dir, the real registry and dispatcher, requests encoded and
responses decoded by the protocol layer, so every call crosses the
version-specific codecs. The request path is the app's own
(``broker.wiring.build_core``), with produce validations run inline; it
offers topic creation and appends with chosen timestamps.

    with AdminBroker(tmp_path) as b:
        resp = b.call(5, CreateTopicsRequest(topics=[...]))
"""

from __future__ import annotations

import itertools
from pathlib import Path

from broker.config import BrokerConfig
from broker.handlers.context import Endpoint
from broker.metrics import BrokerMetrics
from broker.partition.partition import run_here
from broker.protocol import decode_response, encode_request
from broker.protocol.data import Data
from broker.protocol.messages import codec_for
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.handlers.conftest import FakeConnection, app_core, frame_bytes

HOST = "127.0.0.1"
PORT = 19092


class AdminBroker:
    def __init__(self, tmp_path: Path, **overrides: str) -> None:
        props = {"log.dirs": str(tmp_path / "data"), **overrides}
        self.config = BrokerConfig.from_properties(props)
        self.metrics = BrokerMetrics(records_implementation="test", event_loop="none", version="0")
        self.now = 1_700_000_000_000
        core = app_core(self.config, self.metrics, time_ms=self.now_ms, offload=run_here)
        self.log_manager = core.log_manager
        self.replica_manager = core.replica_manager
        self.group_commit = core.group_commit
        self.acl_control = core.acl_control
        self.context = core.context
        self.context.advertised = Endpoint(HOST, PORT)
        self.dispatcher = core.dispatcher
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
