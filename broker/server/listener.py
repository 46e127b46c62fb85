"""Listeners: parsing ``listeners`` / ``advertised.listeners`` and binding the Kafka ports.

``listeners`` names one or more listeners, ``NAME://host:port``; a name is
a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) or any name
``listener.security.protocol.map`` gives a protocol::

    listeners=PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094,INTERNAL://127.0.0.1:9095
    listener.security.protocol.map=INTERNAL:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT

An empty host or ``0.0.0.0`` binds every interface, port 0 picks a free
port. ``advertised.listeners`` gives, per listener name, the address
Metadata and DescribeCluster tell clients that came in on that listener
(Kafka's rule: a client is always pointed at the listener it used); a
listener it does not name advertises its bound address, a wildcard host as
the machine's fully qualified name, as Kafka does for an empty host.

The checks (``CoreUtils.listenerListToEndPoints``, ``KafkaConfig``): a name
without a protocol, a name or a port used twice, an advertised name that is
not a listener stop the broker at start, each with a message naming the key.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.errors import InvalidConfigError

#: the protocols of listeners that need no entry in listener.security.protocol.map
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ListenerSpec:
    #: the listener's name, upper case (Kafka's ``ListenerName.normalised``)
    name: str
    host: str
    port: int
    #: its security protocol
    protocol: str = "PLAINTEXT"

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def config_prefix(self) -> str:
        """``listener.name.<name>.``: where the listener's own keys live."""
        return f"listener.name.{self.name.lower()}."


#: what a listeners value looks like, told in every message about one
LISTENERS_FORM = "NAME://host:port[,NAME://host:port]"


def _bad(key: str, values: str, what: str) -> InvalidConfigError:
    return InvalidConfigError(
        f"Invalid value {values} for configuration {key}: {what}; expected {LISTENERS_FORM}"
    )


def parse_listener(
    value: str,
    key: str = "listeners",
    protocol_map: dict[str, str] | None = None,
    whole: str | None = None,
) -> ListenerSpec:
    """``NAME://host:port`` (host may be empty or a bracketed IPv6 address); the
    message of a bad entry says which part is wrong (``whole``: the key's value)."""
    values = value if whole is None else whole
    name, sep, rest = value.partition("://")
    if not sep or not name:
        part = "no listener name before '://'" if sep else "no '://' after the listener name"
        raise _bad(key, values, f"{value!r} has {part}")
    name = name.upper()
    protocols = protocol_map if protocol_map is not None else {p: p for p in SECURITY_PROTOCOLS}
    protocol = protocols.get(name)
    if protocol is None:
        raise InvalidConfigError(
            f"Invalid value {values} for configuration {key}: No security protocol defined for"
            f" listener {name} (listener.security.protocol.map names"
            f" {', '.join(sorted(protocols))}): name the listener after a protocol"
            f" ({', '.join(SECURITY_PROTOCOLS)}) or add {name}:<PROTOCOL> to"
            " listener.security.protocol.map"
        )
    host, colon, port_text = rest.rpartition(":")
    if not colon:
        raise _bad(key, values, f"{value!r} has no port after the host")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise _bad(key, values, f"port {port_text!r} of {value!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise _bad(key, values, f"port {port} of {value!r} is out of range (0-65535)")
    return ListenerSpec(name, host, port, protocol)


def parse_listeners(
    values: Sequence[str] | None,
    key: str = "listeners",
    protocol_map: dict[str, str] | None = None,
) -> list[ListenerSpec]:
    """Every listener of ``values``; names and (non-zero) ports must differ."""
    if not values:
        raise InvalidConfigError(f"Configuration {key} is empty; expected {LISTENERS_FORM}")
    whole = ",".join(values)
    specs = [parse_listener(v, key, protocol_map, whole) for v in values]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidConfigError(
            f"Invalid value {whole} for configuration {key}: Each listener must have"
            f" a different name ({', '.join(twice)} is used twice); name the others after"
            " their protocol or add names to listener.security.protocol.map"
        )
    if key == "listeners":
        ports = [s.port for s in specs if s.port]
        dup = sorted({p for p in ports if ports.count(p) > 1})
        if dup:
            raise InvalidConfigError(
                f"Invalid value {whole} for configuration {key}: Each listener must"
                f" have a different port ({', '.join(map(str, dup))} is used twice)"
            )
    return specs


def parse_advertised(
    values: Sequence[str] | None, listeners: Sequence[ListenerSpec], protocol_map: dict[str, str]
) -> dict[str, ListenerSpec]:
    """``advertised.listeners`` by listener name; each must be a listener."""
    if not values:
        return {}
    specs = parse_listeners(values, "advertised.listeners", protocol_map)
    known = {s.name for s in listeners}
    unknown = [s.name for s in specs if s.name not in known]
    if unknown:
        raise InvalidConfigError(
            "advertised.listeners listener names must be equal to or a subset of the ones"
            f" defined in listeners. Found {', '.join(unknown)}. The valid options based on"
            f" the current configuration are {', '.join(sorted(known))}"
        )
    return {s.name: s for s in specs}


def advertised_host(bind_host: str) -> str:
    if bind_host in ("", "0.0.0.0", "::"):
        return socket.getfqdn()
    return bind_host


#: connections the stdlib event loop accepts per wake-up of a listener (uvloop
#: accepts until the queue is empty, each connection a cheap callback)
ACCEPTS_PER_WAKEUP = 32


async def start_listener(
    spec: ListenerSpec,
    protocol_factory: Callable[[], asyncio.BaseProtocol],
    *,
    send_buffer: int = -1,
    receive_buffer: int = -1,
    backlog: int = 511,
    ssl_context: ssl.SSLContext | None = None,
    ssl_handshake_timeout: float | None = None,
) -> tuple[asyncio.AbstractServer, int]:
    """Bind and start serving; returns the server and the bound port.

    With ``ssl_context`` the loop's own TLS transport serves the listener
    (asyncio's or uvloop's ``SSLProtocol``): the protocol is created at
    accept, gets ``connection_made`` once the handshake is done, and reads
    decrypted bytes through ``get_buffer`` / ``buffer_updated`` as on a
    plain socket. A handshake that takes longer than
    ``ssl_handshake_timeout`` is aborted by the loop."""
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
    # create_server listens anew with the backlog it is given, and the stdlib loop
    # also accepts at most that many connections per wake-up (a task each); given
    # 511, a flood of connects took whole iterations of hundreds of accepts, and a
    # client's request waited behind them (a good producer's p99 grew many times
    # over in pure Python; docs/performance.md). So it gets ACCEPTS_PER_WAKEUP, and
    # the listen backlog is set again
    tls: dict[str, Any] = {}
    if ssl_context is not None:  # the loop refuses a handshake timeout without TLS
        tls = {"ssl": ssl_context, "ssl_handshake_timeout": ssl_handshake_timeout}
    server = await loop.create_server(
        protocol_factory, sock=sock, backlog=min(backlog, ACCEPTS_PER_WAKEUP), **tls
    )
    sock.listen(backlog)
    port: int = sock.getsockname()[1]
    return server, port
