"""Listeners: parsing ``listeners`` / ``advertised.listeners`` and binding the Kafka port.

One PLAINTEXT listener (``PLAINTEXT://host:port``; an empty host or
``0.0.0.0`` binds every interface, port 0 picks a free port). The
advertised address defaults to the bound one; a wildcard host is advertised
as the machine's fully qualified name, as Kafka does for an empty host.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass

from broker.errors import InvalidConfigError

SUPPORTED_PROTOCOLS = ("PLAINTEXT",)


@dataclass(frozen=True)
class ListenerSpec:
    name: str
    host: str
    port: int


def parse_listener(value: str, key: str = "listeners") -> ListenerSpec:
    """``PLAINTEXT://host:port`` (host may be empty or a bracketed IPv6 address)."""
    name, sep, rest = value.partition("://")
    if not sep or not name:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {key}: expected NAME://host:port"
        )
    name = name.upper()
    if name not in SUPPORTED_PROTOCOLS:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {key}: listener {name} is not supported "
            f"(only {', '.join(SUPPORTED_PROTOCOLS)})"
        )
    host, colon, port_text = rest.rpartition(":")
    if not colon:
        raise InvalidConfigError(f"Invalid value {value} for configuration {key}: no port")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {key}: port {port_text!r} is not a number"
        ) from None
    if not 0 <= port <= 65535:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {key}: port out of range"
        )
    return ListenerSpec(name, host, port)


def parse_listeners(values: tuple[str, ...] | None, key: str = "listeners") -> ListenerSpec:
    if not values:
        raise InvalidConfigError(f"Configuration {key} is empty")
    specs = [parse_listener(v, key) for v in values]
    if len(specs) != 1:
        raise InvalidConfigError(
            f"Invalid value {','.join(values)} for configuration {key}: this broker serves exactly "
            "one PLAINTEXT listener"
        )
    return specs[0]


def advertised_host(bind_host: str) -> str:
    if bind_host in ("", "0.0.0.0", "::"):
        return socket.getfqdn()
    return bind_host


async def start_listener(
    spec: ListenerSpec,
    protocol_factory: Callable[[], asyncio.BaseProtocol],
    *,
    send_buffer: int = -1,
    receive_buffer: int = -1,
    backlog: int = 511,
) -> tuple[asyncio.AbstractServer, int]:
    """Bind and start serving; returns the server and the bound port."""
    loop = asyncio.get_running_loop()
    host = spec.host or None
    family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        if receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), spec.port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    # the backlog again: create_server listens anew with its own (default 100), and the
    # stdlib loop accepts at most that many connections per wake-up
    server = await loop.create_server(protocol_factory, sock=sock, backlog=backlog)
    port: int = sock.getsockname()[1]
    return server, port
