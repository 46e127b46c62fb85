"""A produce load generator meant to run in its own process, on its own core.

``python -m bench.loadgen --port P --topic T ...`` builds its ProduceRequests
once (:func:`build_frames`: one v2 batch of ``record-bytes`` values per
partition, about ``request-bytes`` each, encoded once with
``broker.protocol``), then replays them round-robin over one connection,
keeping at most ``window`` requests in flight, until ``requests`` were
answered or ``seconds`` passed. Replaying is legal: non-idempotent batches
carry base offset 0 and the broker assigns offsets; it patches its own
receive buffer, never the sender's bytes.

Prints one JSON line: requests, records, bytes answered, elapsed seconds,
per-request latencies (send to answer) p50/p99 in ms, error codes seen.
``--cpu N`` pins the process to that core first.

``--tls --ca-file CA.pem`` speaks TLS to an SSL listener (the server's
certificate checked against the CA, not its host name). TLS needs one
thread per ``ssl`` object, so it runs on the asyncio engine (uvloop when
installed): one task writes while the window allows, one reads the answers.
``--engine asyncio`` runs a PLAINTEXT baseline through the same code, so a
TLS/PLAINTEXT ratio compares the transports and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import socket
import ssl
import struct
import threading
import time
from typing import Any

from broker.protocol import decode_response
from broker.protocol.messages import ProduceRequest
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord

_SIZE = struct.Struct(">i")
NOW_MS = int(time.time() * 1000)


def build_batch(request_bytes: int, record_bytes: int) -> tuple[bytes, int]:
    """A v2 batch of null-key records with ``record_bytes`` values, at most
    ``request_bytes`` long (as many records as fit); returns it and its record count."""
    value = (b"0123456789abcdefghijklmnopqrstuvwxyz" * (record_bytes // 36 + 1))[:record_bytes]
    one = len(build_v2_batch([SimpleRecord(NOW_MS, None, value)] * 2).buffer) - len(
        build_v2_batch([SimpleRecord(NOW_MS, None, value)]).buffer
    )
    count = max(1, (request_bytes - 61) // (one + 2))
    while True:
        built = build_v2_batch([SimpleRecord(NOW_MS, None, value) for _ in range(count)])
        if len(built.buffer) <= request_bytes or count == 1:
            return bytes(built.buffer), count
        count -= max(1, (len(built.buffer) - request_bytes) // one)


def build_frames(
    topic: str,
    partitions: int,
    request_bytes: int,
    record_bytes: int,
    acks: int,
    version: int = 9,
    *,
    partition_ids: list[int] | None = None,
) -> tuple[list[bytes], int]:
    """One whole request frame per partition (``partition_ids``, default
    0 .. partitions - 1); returns them and records per frame."""
    from broker.protocol import encode_request

    batch, count = build_batch(request_bytes, record_bytes)
    frames = []
    for p in partition_ids if partition_ids is not None else range(partitions):
        request = ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout_ms=30_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=p, records=batch)],
                )
            ],
        )
        frames.append(encode_request(version, p + 1, "loadgen", request).to_bytes())
    return frames, count


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(
    port: int,
    frames: list[bytes],
    records_per_frame: int,
    *,
    window: int,
    requests: int,
    seconds: float,
    warmup: int = 0,
    version: int = 9,
) -> dict[str, Any]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    slots = threading.Semaphore(window)
    sent_at: collections.deque[float] = collections.deque()
    latencies: list[float] = []
    errors: collections.Counter[int] = collections.Counter()
    answered = [0]
    stop = threading.Event()
    started = [0.0]

    sent = [0]
    sending_done = threading.Event()

    def reader() -> None:
        buf = bytearray()
        rsock = sock.dup()  # its own timeout; the sender blocks as long as it must
        rsock.settimeout(0.5)
        while not (sending_done.is_set() and answered[0] >= sent[0]):
            try:
                chunk = rsock.recv(1 << 18)
            except TimeoutError:
                continue
            if not chunk:
                errors[-999] += 1  # the broker closed the connection
                stop.set()
                break
            buf += chunk
            while len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf, 0)
                if len(buf) < 4 + size:
                    break
                _, body = decode_response(0, version, bytes(buf[4 : 4 + size]))
                del buf[: 4 + size]
                now = time.perf_counter()
                t0 = sent_at.popleft()
                for td in body.responses:
                    for p in td.partition_responses:
                        errors[p.error_code] += 1
                answered[0] += 1
                if answered[0] == warmup:
                    started[0] = now
                elif answered[0] > warmup:
                    latencies.append((now - t0) * 1000)
                slots.release()
        rsock.close()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    deadline = time.perf_counter() + seconds
    if warmup == 0:
        started[0] = time.perf_counter()
    while sent[0] < warmup + requests and not stop.is_set():
        if time.perf_counter() > deadline:
            break
        if not slots.acquire(timeout=1):
            continue
        sent_at.append(time.perf_counter())
        sock.sendall(frames[sent[0] % len(frames)])
        sent[0] += 1
    sending_done.set()
    thread.join(timeout=60)
    elapsed = time.perf_counter() - started[0]
    sock.close()
    done = max(answered[0] - warmup, 0)
    frame_bytes = sum(len(f) for f in frames) / len(frames)
    return {
        "requests": done,
        "records": done * records_per_frame,
        "bytes": done * frame_bytes,
        "elapsed": elapsed,
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "errors": {str(k): v for k, v in errors.items()},
    }


def run_async(
    port: int,
    frames: list[bytes],
    records_per_frame: int,
    *,
    window: int,
    requests: int,
    seconds: float,
    warmup: int = 0,
    version: int = 9,
    tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """What :func:`run` does, on an event loop (TLS or not)."""
    try:
        import uvloop

        factory: Any = uvloop.new_event_loop
    except ImportError:
        factory = asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(
            _run_async(port, frames, records_per_frame, window=window, requests=requests,
                       seconds=seconds, warmup=warmup, version=version, tls=tls)
        )  # fmt: skip


async def _run_async(
    port: int,
    frames: list[bytes],
    records_per_frame: int,
    *,
    window: int,
    requests: int,
    seconds: float,
    warmup: int,
    version: int,
    tls: ssl.SSLContext | None,
) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=tls, server_hostname="localhost" if tls else None, limit=1 << 22
    )
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    slots = asyncio.Semaphore(window)
    sent_at: collections.deque[float] = collections.deque()
    latencies: list[float] = []
    errors: collections.Counter[int] = collections.Counter()
    total = warmup + requests
    state = {"sent": 0, "answered": 0, "started": 0.0}
    deadline = time.perf_counter() + seconds

    async def send() -> None:
        while state["sent"] < total and time.perf_counter() < deadline:
            await slots.acquire()
            sent_at.append(time.perf_counter())
            writer.write(frames[int(state["sent"]) % len(frames)])
            state["sent"] += 1
            await writer.drain()

    async def receive(sender: asyncio.Future[None]) -> None:
        give_up = deadline + 60
        while not (sender.done() and state["answered"] >= state["sent"]):
            if time.perf_counter() > give_up:
                errors[-998] += 1  # answers missing
                return
            try:
                head = await asyncio.wait_for(reader.readexactly(4), 0.5)
            except TimeoutError:
                continue  # nothing arrived; readexactly consumed nothing
            except asyncio.IncompleteReadError:
                errors[-999] += 1  # the broker closed the connection
                return
            (size,) = _SIZE.unpack(head)
            _, body = decode_response(0, version, await reader.readexactly(size))
            now = time.perf_counter()
            t0 = sent_at.popleft()
            for td in body.responses:
                for part in td.partition_responses:
                    errors[part.error_code] += 1
            state["answered"] += 1
            if state["answered"] == warmup:
                state["started"] = now
            elif state["answered"] > warmup:
                latencies.append((now - t0) * 1000)
            slots.release()

    if warmup == 0:
        state["started"] = time.perf_counter()
    sender = asyncio.ensure_future(send())
    await receive(sender)
    sender.cancel()
    elapsed = time.perf_counter() - state["started"]
    writer.close()
    done = max(int(state["answered"]) - warmup, 0)
    frame_bytes = sum(len(f) for f in frames) / len(frames)
    return {
        "requests": done,
        "records": done * records_per_frame,
        "bytes": done * frame_bytes,
        "elapsed": elapsed,
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "errors": {str(k): v for k, v in errors.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--request-bytes", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--acks", type=int, default=1)
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--cpu", type=int, default=-1)
    parser.add_argument(
        "--partition-ids",
        default="",
        help="comma-separated partitions to send to (default: 0 .. --partitions - 1)",
    )
    parser.add_argument("--engine", choices=("threads", "asyncio"), default="threads")
    parser.add_argument("--tls", action="store_true", help="TLS (the asyncio engine)")
    parser.add_argument("--ca-file", help="--tls: the CA that signed the broker's certificate")
    args = parser.parse_args()
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    ids = [int(x) for x in args.partition_ids.split(",")] if args.partition_ids else None
    frames, count = build_frames(
        args.topic,
        args.partitions,
        args.request_bytes,
        args.record_bytes,
        args.acks,
        partition_ids=ids,
    )
    options: dict[str, Any] = {
        "window": args.window,
        "requests": args.requests,
        "seconds": args.seconds,
        "warmup": args.warmup,
    }
    if args.tls or args.engine == "asyncio":
        tls = None
        if args.tls:
            tls = ssl.create_default_context(cafile=args.ca_file)
            tls.check_hostname = False
        result = run_async(args.port, frames, count, tls=tls, **options)
    else:
        result = run(args.port, frames, count, **options)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
