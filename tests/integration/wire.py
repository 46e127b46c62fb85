"""Test-side Kafka plumbing: a raw protocol client, a capturing proxy, stored-data readers.

* :class:`RawClient` -- a blocking socket speaking Kafka through
  ``broker.protocol`` (``encode_request`` / ``decode_response``): the tests
  choose every byte a client would otherwise choose (versions, acks,
  batches, replays, garbage).
* :class:`CaptureProxy` -- a TCP proxy on 127.0.0.1 between a real client and
  the broker that keeps a copy of every request frame the client sent; start
  the broker with ``advertised.listeners`` pointing at the proxy so the
  client never bypasses it.
* :func:`stored_batches` / :func:`stored_records` -- what the broker put in a
  partition's segment files, read with ``broker.records.iterate`` (the
  ground truth the tests compare against, never the client's settings).
* :func:`create_topics_on_disk` -- topics with per-topic configs, made with
  the log manager before the broker starts (it loads them at start-up), for
  brokers whose auto-creation is off or whose topics need other configs.
* :func:`produce_request` / :func:`fetch_request` -- request objects.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig
from broker.log.manager import LogManager
from broker.protocol import (
    RequestHeader,
    decode_response,
    encode_request,
    encode_response,
    parse_request_header,
)
from broker.protocol.messages import FetchRequest, MetadataRequest, ProduceRequest, codec_for
from broker.records.batch import RecordBatchHeader
from broker.records.iterate import iter_batches
from broker.records.record import Record

HOST = "127.0.0.1"
_SIZE = struct.Struct(">i")


class ConnectionClosed(Exception):
    """The broker closed the connection (EOF or reset) while we waited for bytes."""


def api_key_of(request: Any) -> int:
    return int(codec_for(request).spec.api_key)


class RawClient:
    """One connection; requests are pipelined, responses read in order."""

    def __init__(
        self, port: int, *, host: str = HOST, client_id: str = "raw-test", timeout: float = 15.0
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.correlation = 0
        self._pending: collections.deque[tuple[int, int, int]] = collections.deque()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # ---- sending ----------------------------------------------------------------------------

    def frame(self, request: Any, version: int) -> bytes:
        """The next request's whole frame (size prefix included), not sent."""
        self.correlation += 1
        return encode_request(version, self.correlation, self.client_id, request).to_bytes()

    def send(self, request: Any, version: int, *, expect_response: bool = True) -> int:
        data = self.frame(request, version)
        self.sock.sendall(data)
        if expect_response:
            self._pending.append((self.correlation, api_key_of(request), version))
        return self.correlation

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    # ---- receiving --------------------------------------------------------------------------

    def _read_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(str(exc)) from exc
            if not chunk:
                raise ConnectionClosed(f"EOF after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def recv_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._read_exact(4))
        return self._read_exact(size)

    def recv(self) -> Any:
        correlation, api_key, version = self._pending.popleft()
        got, body = decode_response(api_key, version, self.recv_frame())
        assert got == correlation, (got, correlation)
        return body

    def call(self, request: Any, version: int) -> Any:
        self.send(request, version)
        return self.recv()

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True when the broker closes the connection within ``timeout`` (any
        bytes it still sends are read and dropped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                if not self.sock.recv(65536):
                    return True
            except TimeoutError:
                return False
            except (ConnectionResetError, BrokenPipeError):
                return True
        return False


# ---- requests ------------------------------------------------------------------------------


def produce_request(
    partitions: Mapping[tuple[str, int], bytes | bytearray | None],
    *,
    acks: int = 1,
    timeout_ms: int = 10_000,
    transactional_id: str | None = None,
) -> Any:
    topics: dict[str, list[Any]] = {}
    for (topic, index), records in partitions.items():
        topics.setdefault(topic, []).append(
            ProduceRequest.PartitionProduceData(
                index=index, records=None if records is None else bytes(records)
            )
        )
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceRequest.TopicProduceData(name=name, partition_data=parts)
            for name, parts in topics.items()
        ],
    )


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int = 4 << 20,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    topic_id: uuid.UUID | None = None,
) -> Any:
    """One partition; ``topic_id`` names the topic in v13+ (:func:`topic_id_of`)."""
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                topic_id=topic_id if topic_id is not None else uuid.UUID(int=0),
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
    )


def ensure_topic(client: RawClient, topic: str) -> int:
    """Metadata v12 for ``topic`` with auto-creation allowed; its partition count."""
    md = client.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=True,
        ),
        12,
    )
    (t,) = md.topics
    assert t.error_code == 0, t
    return len(t.partitions)


def topic_id_of(client: RawClient, topic: str) -> uuid.UUID:
    """The id of an existing topic (Metadata v12)."""
    md = client.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=False,
        ),
        12,
    )
    (t,) = md.topics
    assert t.error_code == 0, t
    assert isinstance(t.topic_id, uuid.UUID), t.topic_id
    return t.topic_id


def only_partition(response: Any) -> Any:
    (topic,) = response.responses
    parts = topic.partitions if hasattr(topic, "partitions") else topic.partition_responses
    (p,) = parts
    return p


def fetch_records(client: RawClient, topic: str, partition: int, offset: int) -> list[Record]:
    """Records from ``offset`` to the high watermark (Fetch v11, repeated)."""
    out: list[Record] = []
    while True:
        p = only_partition(client.call(fetch_request(topic, partition, offset), 11))
        assert p.error_code == 0, p
        data = bytes(p.records or b"")
        got = [r for b in iter_batches(data, file=True) for r in b.records() if r.offset >= offset]
        out += got
        if not got:
            return out
        offset = got[-1].offset + 1
        if offset >= p.high_watermark:
            return out


# ---- what the broker stored ------------------------------------------------------------------


@dataclass
class StoredBatch:
    header: RecordBatchHeader
    records: list[Record]
    segment: str


def stored_batches(data_dir: Path, topic: str, partition: int) -> list[StoredBatch]:
    """Every batch in the partition's segment files, in offset order."""
    part = data_dir / f"{topic}-{partition}"
    out: list[StoredBatch] = []
    for path in sorted(part.glob("*.log")):
        data = path.read_bytes()
        for b in iter_batches(data, file=True):
            assert b.magic == 2, f"{path}: stored batch of magic {b.magic}"
            assert b.is_valid, f"{path}: stored batch at {b.position} fails its CRC"
            out.append(StoredBatch(b.header(), b.records(), path.name))
    return out


def stored_records(data_dir: Path, topic: str, partition: int) -> list[Record]:
    return [r for b in stored_batches(data_dir, topic, partition) for r in b.records]


def check_contiguous(batches: list[StoredBatch], start: int = 0) -> int:
    """Offsets run from ``start`` without gaps across batches and records;
    returns the next offset."""
    expected = start
    for b in batches:
        assert b.header.base_offset == expected, (b.segment, b.header.base_offset, expected)
        assert [r.offset for r in b.records] == list(range(expected, expected + len(b.records))), (
            b.segment
        )
        assert b.header.last_offset == expected + len(b.records) - 1
        expected += len(b.records)
    return expected


def metric_value(exposition: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text (0 when the labelled sample is absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def create_topics_on_disk(
    data_dir: Path, topics: Mapping[str, tuple[int, Mapping[str, str]]], **overrides: str
) -> None:
    """Create ``{name: (partitions, topic configs)}`` in ``data_dir`` (no broker
    may hold it); the broker started on it afterwards loads them."""
    config = BrokerConfig.from_properties(
        {"log.dirs": str(data_dir), **{k.replace("_", "."): v for k, v in overrides.items()}}
    )
    manager = LogManager(config.log_dirs, config)
    manager.startup()
    try:
        for name, (count, configs) in topics.items():
            manager.create_topic(name, count, dict(configs))
    finally:
        manager.shutdown()


# ---- capturing proxy -----------------------------------------------------------------------


@dataclass
class CapturedRequest:
    api_key: int
    api_version: int
    client_id: str | None
    frame: bytes  # without the size prefix


@dataclass
class CaptureProxy:
    """Forwards 127.0.0.1:``port`` to the broker, recording client request frames.

    ``caps`` makes the proxy play an older broker for some clients: for a
    client id starting with a key, the ApiVersions answer is rewritten so
    that each listed API's max version is at most the given one (librdkafka
    sends magic 1 only to a broker whose Produce stops at v2; platform notes).
    """

    target_port: int
    port: int = 0
    caps: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    requests: list[CapturedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((HOST, self.port))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._spawn(self._accept_loop)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection((HOST, self.target_port), timeout=10)
            except OSError:
                # the broker is down (stopped, restarting): refuse this client, keep serving
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._socks += [client, upstream]
            rewrites: dict[int, tuple[RequestHeader, Mapping[int, int]]] = {}
            self._spawn(self._pump_requests, client, upstream, rewrites)
            self._spawn(self._pump_responses, upstream, client, rewrites)

    def _caps_for(self, client_id: str | None) -> Mapping[int, int] | None:
        for prefix, caps in self.caps.items():
            if client_id is not None and client_id.startswith(prefix):
                return caps
        return None

    def _pump_requests(
        self,
        src: socket.socket,
        dst: socket.socket,
        rewrites: dict[int, tuple[RequestHeader, Mapping[int, int]]],
    ) -> None:
        buf = bytearray()
        try:
            while True:
                chunk = src.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                # record (and note rewrites) before forwarding: the answer may be quick
                for frame in _cut_frames(buf):
                    header = parse_request_header(frame)
                    caps = self._caps_for(header.client_id)
                    if header.api_key == API_VERSIONS and caps:
                        rewrites[header.correlation_id] = (header, caps)
                    with self._lock:
                        self.requests.append(
                            CapturedRequest(
                                header.api_key, header.api_version, header.client_id, frame
                            )
                        )
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            _shutdown(dst)

    @staticmethod
    def _pump_responses(
        src: socket.socket,
        dst: socket.socket,
        rewrites: dict[int, tuple[RequestHeader, Mapping[int, int]]],
    ) -> None:
        buf = bytearray()
        try:
            while True:
                chunk = src.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                out = bytearray()
                for frame in _cut_frames(buf):
                    (correlation,) = _SIZE.unpack_from(frame, 0)
                    rewrite = rewrites.pop(correlation, None)
                    out += (
                        _SIZE.pack(len(frame)) + frame
                        if rewrite is None
                        else _capped_api_versions(frame, *rewrite)
                    )
                if out:
                    dst.sendall(out)
        except OSError:
            pass
        finally:
            _shutdown(dst)

    def captured(self, api_key: int) -> list[CapturedRequest]:
        with self._lock:
            return [r for r in self.requests if r.api_key == api_key]

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            _shutdown(s)
            s.close()
        for t in self._threads:
            t.join(timeout=5)


API_VERSIONS = 18


def _cut_frames(buf: bytearray) -> list[bytes]:
    """Complete frames (without size prefix) cut from the front of ``buf``."""
    frames = []
    while len(buf) >= 4:
        (size,) = _SIZE.unpack_from(buf, 0)
        if len(buf) < 4 + size:
            break
        frames.append(bytes(buf[4 : 4 + size]))
        del buf[: 4 + size]
    return frames


def _capped_api_versions(frame: bytes, header: RequestHeader, caps: Mapping[int, int]) -> bytes:
    _, body = decode_response(API_VERSIONS, header.api_version, frame)
    if body.error_code != 0:  # answered with a v0 body: pass it on untouched
        return _SIZE.pack(len(frame)) + frame
    for entry in body.api_keys:
        if entry.api_key in caps:
            entry.max_version = min(entry.max_version, caps[entry.api_key])
    return encode_response(header, body).to_bytes()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
