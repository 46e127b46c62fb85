"""The operator endpoint: /metrics, /healthz, /readyz."""

from __future__ import annotations

import asyncio

from broker.server.http import OpsEndpoint
from tests.aio import run


async def get(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def test_paths_and_readiness():
    async def main():
        ep = OpsEndpoint(lambda: b"kafka_x 1\n")
        port = await ep.start("127.0.0.1", 0)
        try:
            m = await get(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert m.startswith(b"HTTP/1.1 200 OK")
            assert m.endswith(b"kafka_x 1\n")
            assert b"version=0.0.4" in m
            assert (await get(port, b"GET /healthz HTTP/1.0\r\n\r\n")).startswith(b"HTTP/1.1 200")
            assert (await get(port, b"GET /readyz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 503")
            ep.ready = True
            assert (await get(port, b"GET /readyz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200")
            assert (await get(port, b"GET /nope HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404")
            assert (await get(port, b"POST /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405")
            assert (await get(port, b"garbage\r\n\r\n")).startswith(b"HTTP/1.1 400")
            head = await get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
            assert head.endswith(b"\r\n\r\n")
        finally:
            await ep.stop()

    run(main())


def test_oversized_head_is_dropped_without_answer():
    async def main():
        ep = OpsEndpoint(lambda: b"")
        port = await ep.start("127.0.0.1", 0)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /" + b"a" * 100_000)
            await writer.drain()
            try:
                answer = await reader.read()
            except ConnectionResetError:  # closed with our bytes unread: RST
                answer = b""
            assert answer == b""
            writer.close()
        finally:
            await ep.stop()

    run(main())
