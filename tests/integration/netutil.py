"""Test-side Kafka plumbing for the read-back tests: a raw protocol client and
a proxy that plays an older broker for chosen clients.

* :class:`RawClient` -- one blocking socket speaking Kafka through
  ``broker.protocol`` (``encode_request`` / ``decode_response``), so a test
  picks the exact Fetch version, ``max_wait_ms`` and offsets.
* :class:`VersionCapProxy` -- a TCP proxy on 127.0.0.1 in front of the broker.
  For clients whose client id starts with a given prefix it rewrites the
  ApiVersions answer so that listed APIs stop at a lower max version:
  librdkafka writes magic 1 only to a broker whose Produce ends at v2
  (platform notes), and our broker offers v11. Start the broker with
  ``advertised.listeners`` pointing at the proxy so clients never bypass it.
"""

from __future__ import annotations

import collections
import contextlib
import re
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from broker.protocol import decode_response, encode_request, encode_response, parse_request_header
from broker.protocol.header import RequestHeader
from broker.protocol.messages import FetchRequest, MetadataRequest, ProduceRequest, codec_for
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord

HOST = "127.0.0.1"
API_VERSIONS = 18
_SIZE = struct.Struct(">i")


class RawClient:
    """One connection; requests may be pipelined, responses are read in order."""

    def __init__(self, port: int, *, client_id: str = "raw-test", timeout: float = 15.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.correlation = 0
        self._pending: collections.deque[tuple[int, int, int]] = collections.deque()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _read_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"EOF after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def send(self, request: Any, version: int) -> None:
        self.correlation += 1
        api_key = codec_for(request).spec.api_key
        self.sock.sendall(
            encode_request(version, self.correlation, self.client_id, request).to_bytes()
        )
        self._pending.append((self.correlation, api_key, version))

    def recv(self) -> Any:
        correlation, api_key, version = self._pending.popleft()
        (size,) = _SIZE.unpack(self._read_exact(4))
        got, body = decode_response(api_key, version, self._read_exact(size))
        assert got == correlation, (got, correlation)
        return body

    def call(self, request: Any, version: int) -> Any:
        self.send(request, version)
        return self.recv()


def produce_request(
    topic: str, partition: int, records: bytes, *, acks: int = 1, more: Sequence[Any] = ()
) -> Any:
    """A Produce request for one partition, or several: ``more`` holds further
    ``(topic, partition, records)``, in request order."""
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=t,
                partition_data=[ProduceRequest.PartitionProduceData(index=p, records=r)],
            )
            for t, p, r in [(topic, partition, records), *more]
        ],
    )


def v2_batch(
    values: Sequence[bytes], *, timestamp: int | None = None, compression_type: int = 0
) -> bytes:
    """A v2 batch of keyless records, as a client would send it."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    records = [SimpleRecord(ts, None, v) for v in values]
    return bytes(build_v2_batch(records, compression_type=compression_type).buffer)


def produce(client: RawClient, topic: str, values: Sequence[bytes]) -> int:
    """Produce v9 (acks=1) of one batch; the base offset."""
    response = client.call(produce_request(topic, 0, v2_batch(values)), 9)
    (t,) = response.responses
    (p,) = t.partition_responses
    assert p.error_code == 0, p
    return int(p.base_offset)


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    topic_id: uuid.UUID | None = None,
) -> Any:
    """A Fetch of one partition; ``topic_id`` is for v13+ (which name topics by id)."""
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
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


def auto_create(client: RawClient, topic: str) -> None:
    """Metadata v12 allowing auto-creation (the broker's defaults for the topic)."""
    md = client.call(
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=True,
        ),
        12,
    )
    (t,) = md.topics
    assert t.error_code == 0, t


def topic_id(client: RawClient, topic: str) -> uuid.UUID:
    """The topic's id (Metadata v12); the topic must exist."""
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
    (p,) = topic.partitions
    return p


_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metric_samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of every sample called ``name`` in Prometheus text
    (a line scan: the full parser costs tens of ms per call on a big exposition)."""
    out = []
    for line in exposition.splitlines():
        if not line.startswith(name) or line[len(name) : len(name) + 1] not in ("{", " "):
            continue
        head, _, value = line.rpartition(" ")
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(head)}
        out.append((labels, float(value)))
    return out


def metric_value(exposition: str, name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    return sum(
        value
        for got, value in metric_samples(exposition, name)
        if all(got.get(k) == v for k, v in labels.items())
    )


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


# ---- the proxy ---------------------------------------------------------------------------------


def _cut_frames(buf: bytearray) -> list[bytes]:
    """Complete frames (without their size prefix) cut from the front of ``buf``."""
    frames = []
    while len(buf) >= 4:
        (size,) = _SIZE.unpack_from(buf, 0)
        if len(buf) < 4 + size:
            break
        frames.append(bytes(buf[4 : 4 + size]))
        del buf[: 4 + size]
    return frames


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class VersionCapProxy:
    """Forwards 127.0.0.1:``port`` to the broker; caps ApiVersions for some clients.

    ``caps`` maps a client-id prefix to {api_key: max_version}.
    """

    def __init__(self, target_port: int, caps: Mapping[str, Mapping[int, int]]) -> None:
        self.target_port = target_port
        self.caps = caps
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((HOST, 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._spawn(self._accept_loop)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
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
                client.close()
                continue
            upstream.settimeout(None)
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
            while chunk := src.recv(1 << 16):
                buf += chunk
                # note the rewrite before forwarding: the answer may come at once
                for frame in _cut_frames(buf):
                    header = parse_request_header(frame)
                    caps = self._caps_for(header.client_id)
                    if header.api_key == API_VERSIONS and caps:
                        rewrites[header.correlation_id] = (header, caps)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            _shutdown(dst)

    def _pump_responses(
        self,
        src: socket.socket,
        dst: socket.socket,
        rewrites: dict[int, tuple[RequestHeader, Mapping[int, int]]],
    ) -> None:
        buf = bytearray()
        try:
            while chunk := src.recv(1 << 16):
                buf += chunk
                out = bytearray()
                for frame in _cut_frames(buf):
                    (correlation,) = _SIZE.unpack_from(frame, 0)
                    rewrite = rewrites.pop(correlation, None)
                    if rewrite is None:
                        out += _SIZE.pack(len(frame)) + frame
                    else:
                        out += self._capped(frame, *rewrite)
                if out:
                    dst.sendall(out)
        except OSError:
            pass
        finally:
            _shutdown(dst)

    def _capped(self, frame: bytes, header: RequestHeader, caps: Mapping[int, int]) -> bytes:
        _, body = decode_response(API_VERSIONS, header.api_version, frame)
        if body.error_code != 0:  # a v0 answer to an unsupported version: pass it on
            return _SIZE.pack(len(frame)) + frame
        for entry in body.api_keys:
            if entry.api_key in caps:
                entry.max_version = min(entry.max_version, caps[entry.api_key])
        return encode_response(header, body).to_bytes()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            socks, self._socks = self._socks, []
            threads = list(self._threads)
        for s in socks:
            _shutdown(s)
            s.close()
        for t in threads:
            t.join(timeout=5)
