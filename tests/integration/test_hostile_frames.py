"""Malformed and random frames against a broker process, while a good client works.

A seeded generator sends a bounded number of hostile frames (a few hundred,
over a handful of connections, reconnecting when the broker closes one):

    random       a size prefix and random bytes
    truncated    a valid request cut short, its size prefix fixed to match
    garbage      a valid request header of every served API, then random bytes
    bitflip      a valid request with a few random bits flipped after the size prefix
    records      a valid Produce whose records are random or broken batches
    unknown      valid headers with API keys the broker does not serve
    versions     served APIs at versions outside their range
    huge         size prefixes above socket.request.max.bytes, negative, or
                 large and never sent in full
    bomb         a zstd batch that inflates to 256 MiB

After each frame (except those that leave the broker waiting for more
bytes, and Fetch requests whose flipped bits ask for a long poll) an
ApiVersions probe goes out on the same connection; the broker
must answer the probe (so it answered or ignored the frame) or close the
connection -- never hang, never answer out of order. Meanwhile a separate
raw client produces and fetches back, and must succeed throughout and
after. At the end the broker process is alive, ready, and its log has
warnings for the violations but no traceback.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from broker.errors import ErrorCode, KafkaError
from broker.protocol import (
    DecodeError,
    decode_request,
    decode_response,
    encode_request,
    encode_request_header,
    parse_request_header,
)
from broker.protocol.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    MetadataRequest,
)
from broker.records.batch import CompressionType, pack_header, write_crc
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord, encode_v2_record
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.wire import (
    ConnectionClosed,
    RawClient,
    create_topics_on_disk,
    fetch_records,
    fetch_request,
    only_partition,
    produce_request,
)

pytestmark = pytest.mark.integration

#: another seed explores other frames: HOSTILE_SEED=n pytest tests/integration/test_hostile_frames.py
SEED = int(os.environ.get("HOSTILE_SEED", "1125"))
FRAMES = 360
MAX_FRAME = 8 * 1024 * 1024
PROBE_CORRELATION = 0x7AB1E
_SIZE = struct.Struct(">i")


def valid_requests(now_ms: int) -> list[tuple[Any, int]]:
    """One valid request per served API and a few versions, (request, version)."""
    records = bytes(
        build_v2_batch([SimpleRecord(now_ms, b"k", b"hostile" * 20) for _ in range(3)]).buffer
    )
    return [
        (produce_request({("target", 0): records}), 9),
        (produce_request({("target", 1): records}), 3),
        (produce_request({("target", 0): records}, acks=-1), 11),
        (fetch_request("target", 0, 0), 11),
        (fetch_request("target", 1, 0), 4),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="target")]), 12),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="target")]), 1),
        (ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"), 3),
        (ApiVersionsRequest(), 0),
        (InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4),
        (FindCoordinatorRequest(key="g", key_type=0), 2),
    ]


def zstd_bomb(now_ms: int, inflated: int = 256 * 1024 * 1024) -> bytes:
    """A v2 batch whose zstd payload decompresses to ``inflated`` bytes of records."""
    value = bytes(1024 * 1024)
    record = encode_v2_record(0, 0, None, value, ())
    count = inflated // len(record)
    cctx = zstandard.ZstdCompressor(level=1).compressobj()
    parts = []
    for i in range(count):
        parts.append(cctx.compress(encode_v2_record(i, 0, None, value, ())))
    parts.append(cctx.flush())
    payload = b"".join(parts)
    out = bytearray(61 + len(payload))
    out[61:] = payload
    pack_header(
        out,
        0,
        base_offset=0,
        batch_length=len(out) - 12,
        partition_leader_epoch=-1,
        attributes=int(CompressionType.ZSTD),
        last_offset_delta=count - 1,
        base_timestamp=now_ms,
        max_timestamp=now_ms,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=count,
    )
    write_crc(out, 0, len(out))
    return bytes(out)


class Hostile:
    """Frames of each kind; ``probe`` says whether an ApiVersions probe may follow
    (False when the broker is meant to wait for more bytes)."""

    def __init__(self, rng: random.Random, now_ms: int) -> None:
        self.rng = rng
        self.valid = [
            encode_request(v, 1000 + i, "fuzz", req).to_bytes()
            for i, (req, v) in enumerate(valid_requests(now_ms))
        ]
        self.bomb = zstd_bomb(now_ms)

    def random(self) -> tuple[bytes, bool]:
        body = self.rng.randbytes(self.rng.randrange(0, 3000))
        return _SIZE.pack(len(body)) + body, True

    def truncated(self) -> tuple[bytes, bool]:
        frame = self.rng.choice(self.valid)
        cut = self.rng.randrange(4, len(frame) - 1)
        body = frame[4:cut]
        return _SIZE.pack(len(body)) + body, True

    def garbage(self) -> tuple[bytes, bool]:
        api_key, version = self.rng.choice(
            [
                *[(0, 3), (0, 9), (0, 11), (1, 4), (1, 11), (1, 16), (3, 0), (3, 12), (18, 3)],
                *[(22, 0), (22, 4), (10, 0), (10, 4), (10, 6)],
            ]
        )
        head = encode_request_header(api_key, version, self.rng.randrange(1 << 31), "fuzz")
        body = head + self.rng.randbytes(self.rng.randrange(0, 600))
        return _SIZE.pack(len(body)) + body, True

    def bitflip(self) -> tuple[bytes, bool]:
        frame = bytearray(self.rng.choice(self.valid))
        for _ in range(self.rng.randrange(1, 6)):
            position = self.rng.randrange(4, len(frame))
            frame[position] ^= 1 << self.rng.randrange(8)
        return bytes(frame), True

    def records(self) -> tuple[bytes, bool]:
        good = bytearray(
            build_v2_batch([SimpleRecord(1, b"k", b"v" * 30) for _ in range(4)]).buffer
        )
        choice = self.rng.randrange(5)
        if choice == 0:
            data = self.rng.randbytes(self.rng.randrange(0, 400))
        elif choice == 1:  # a lying batch length
            data = bytes(good)
            data = data[:8] + _SIZE.pack(self.rng.randrange(-5, 1 << 30)) + data[12:]
        elif choice == 2:  # a corrupted record section with a fixed CRC
            good[self.rng.randrange(61, len(good))] ^= 0xFF
            write_crc(good, 0, len(good))
            data = bytes(good)
        elif choice == 3:  # a wrong record count with a fixed CRC
            good[57:61] = _SIZE.pack(self.rng.choice([-1, 0, 1, 99, 1 << 30]))
            write_crc(good, 0, len(good))
            data = bytes(good)
        else:  # codec ids 5-7 and garbage compressed payloads
            good[22] = (good[22] & 0xF8) | self.rng.randrange(1, 8)
            write_crc(good, 0, len(good))
            data = bytes(good)
        req = produce_request({("target", self.rng.randrange(2)): data})
        return encode_request(9, 77, "fuzz", req).to_bytes(), True

    def unknown(self) -> tuple[bytes, bool]:
        api_key = self.rng.choice([2, 8, 9, 11, 19, 32, 44, 60, 68, 74, 999, 32767, -1, -32768])
        head = struct.pack(">hhi", api_key, 0, 5) + struct.pack(">h", 4) + b"fuzz"
        body = head + self.rng.randbytes(20)
        return _SIZE.pack(len(body)) + body, True

    def versions(self) -> tuple[bytes, bool]:
        api_key, version = self.rng.choice(
            [(0, 12), (0, 300), (0, -1), (1, 18), (3, 13), (22, 6), (10, 7), (18, 5), (18, 127)]
        )
        head = struct.pack(">hhi", api_key, version, 9) + struct.pack(">h", 4) + b"fuzz"
        body = head + bytes(16)
        return _SIZE.pack(len(body)) + body, True

    def huge(self) -> tuple[bytes, bool]:
        kind = self.rng.randrange(4)
        if kind == 0:  # above the limit: closed at once, nothing allocated
            size = self.rng.choice([MAX_FRAME + 1, 0x7FFFFFFF, 200 * 1024 * 1024])
            return _SIZE.pack(size) + b"\x00\x00\x00", True
        if kind == 1:
            return _SIZE.pack(self.rng.choice([-1, -(2**31), -4])), True
        if kind == 2:  # zero-size frame: no header
            return _SIZE.pack(0), True
        # under the limit, announced and never completed: the broker waits for more
        return _SIZE.pack(MAX_FRAME - 10) + self.rng.randbytes(1000), False


def answered_promptly(frame: bytes) -> bool:
    """False for a frame the broker may rightly answer late: a Fetch (bits
    flipped into) long-polling for more than a second holds back every later
    answer on its connection, as in Kafka."""
    try:
        header = parse_request_header(frame[4:])
        request = decode_request(header, frame[4:])
    except (DecodeError, KeyError, KafkaError):  # undecodable, unknown key or version
        return True
    return not (header.api_key == 1 and request.max_wait_ms > 1000)


def probe_frame() -> bytes:
    return encode_request(0, PROBE_CORRELATION, "probe", ApiVersionsRequest()).to_bytes()


class Prober:
    """A connection sending hostile frames, each followed by an ApiVersions probe."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.connections = 0
        self.closed_by_broker = 0
        self.answered = 0

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection((HOST, self.port), timeout=10)
            self.connections += 1
        return self.sock

    def _drop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send(self, frame: bytes, probe: bool) -> None:
        sock = self._connect()
        try:
            sock.sendall(frame + (probe_frame() if probe else b""))
        except (BrokenPipeError, ConnectionResetError):
            self.closed_by_broker += 1
            self._drop()
            return
        if not probe:
            time.sleep(0.02)
            self._drop()
            return
        client = _Reader(sock)
        try:
            while True:
                response = client.frame()
                (correlation,) = _SIZE.unpack_from(response, 0)
                if correlation == PROBE_CORRELATION:
                    _, body = decode_response(18, 0, response)
                    assert body.error_code == ErrorCode.NONE
                    self.answered += 1
                    return
        except ConnectionClosed:
            self.closed_by_broker += 1
            self._drop()

    def close(self) -> None:
        self._drop()


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(str(exc)) from exc
            if not chunk:
                raise ConnectionClosed("EOF")
            out += chunk
        return bytes(out)

    def frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._exact(4))
        return self._exact(size)


class GoodClient(threading.Thread):
    """Produces (acks=1) and fetches back what it produced, until told to stop."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True, name="good-client")
        self.port = port
        self.stop_event = threading.Event()
        self.round_trips = 0
        self.errors: list[str] = []
        self.produced: list[bytes] = []

    def run(self) -> None:
        deadline = time.monotonic() + 120
        try:
            with RawClient(self.port, client_id="good") as client:
                n = 0
                while not self.stop_event.is_set() and time.monotonic() < deadline:
                    values = [f"good-{n}-{i}".encode() * 8 for i in range(10)]
                    n += 1
                    batch = build_v2_batch(
                        [SimpleRecord(int(time.time() * 1000), None, v) for v in values]
                    ).buffer
                    p = only_partition(client.call(produce_request({("good", 0): batch}), 9))
                    if p.error_code != ErrorCode.NONE or p.base_offset != len(self.produced):
                        self.errors.append(f"produce: {p}")
                        return
                    self.produced += values
                    fetched = fetch_records(client, "good", 0, p.base_offset)
                    if [r.value for r in fetched] != values:
                        self.errors.append(f"fetch at {p.base_offset}: {fetched[:2]}")
                        return
                    self.round_trips += 1
                    time.sleep(0.01)
        except Exception as exc:
            self.errors.append(repr(exc))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    data = tmp_path / "data"
    create_topics_on_disk(data, {"good": (1, {}), "target": (2, {})})
    with BrokerProcess(
        data, auto_create_topics_enable="false", socket_request_max_bytes=str(MAX_FRAME)
    ) as b:
        yield b


def test_hostile_frames_never_hurt_the_broker_or_other_clients(broker: BrokerProcess) -> None:
    rng = random.Random(SEED)
    hostile = Hostile(rng, int(time.time() * 1000))
    kinds = {
        "random": 40,
        "truncated": 50,
        "garbage": 70,
        "bitflip": 110,
        "records": 50,
        "unknown": 15,
        "versions": 15,
        "huge": 10,
    }
    assert sum(kinds.values()) == FRAMES
    plan = [k for k, n in kinds.items() for _ in range(n)]
    rng.shuffle(plan)

    good = GoodClient(broker.port)
    good.start()
    probers = [Prober(broker.port) for _ in range(3)]
    started = time.monotonic()
    try:
        for i, kind in enumerate(plan):
            frame, probe = getattr(hostile, kind)()
            probers[i % len(probers)].send(frame, probe and answered_promptly(frame))
            assert broker.proc is not None and broker.proc.poll() is None, f"broker died at {kind}"
        # the decompression bomb, on a connection of its own
        with RawClient(broker.port) as c:
            p = only_partition(c.call(produce_request({("target", 0): hostile.bomb}), 9))
            assert p.error_code in (ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE), p
        # ApiVersions above its range is answered (v0 body, UNSUPPORTED_VERSION), not closed
        with RawClient(broker.port) as c:
            # header v2 (ApiVersions is flexible from v3), then a body from the future
            head = struct.pack(">hhi", 18, 99, 4242) + struct.pack(">h", 4) + b"fuzz\x00"
            frame = head + b"\x05future\x02\x31\x00" + bytes(7)
            c.send_raw(_SIZE.pack(len(frame)) + frame)
            correlation, body = decode_response(18, 0, c.recv_frame())
            assert correlation == 4242 and body.error_code == ErrorCode.UNSUPPORTED_VERSION
            assert {k.api_key for k in body.api_keys} >= {0, 1, 3, 18}
    finally:
        for prober in probers:
            prober.close()
        elapsed = time.monotonic() - started
        time.sleep(0.3)  # the good client goes on after the storm
        good.stop_event.set()
        good.join(30)
    assert not good.errors, good.errors
    assert good.round_trips >= 10, (good.round_trips, elapsed)

    answered = sum(p.answered for p in probers)
    closed = sum(p.closed_by_broker for p in probers)
    assert answered > 30 and closed > 100, (answered, closed)
    assert broker.proc is not None and broker.proc.poll() is None
    assert broker.ready()
    # and still serves a fresh client in full
    with RawClient(broker.port) as c:
        assert [r.value for r in fetch_records(c, "good", 0, 0)] == good.produced
    log = broker.log()
    assert "Traceback" not in log, log
    assert "ERROR" not in log, log
    assert "WARNING broker.server.connection: closing connection from" in log
