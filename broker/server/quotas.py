"""Connection quotas: ``max.connections``, ``max.connections.per.ip`` and its overrides.

Kafka's ``ConnectionQuotas`` (``core/.../network/SocketServer.scala``, 3.9):
a connection counts against the broker and against its peer's IP address
from accept to close. Per IP, the limit is the override for that address
(``max.connections.per.ip.overrides``, ``host:count,...``; hostnames are
resolved once, at start) or ``max.connections.per.ip``; a connection that
would be one too many is closed at accept (``TooManyConnectionsException``).
``max.connections`` differs: Kafka's acceptor *waits* for a free slot
(``waitForConnectionSlot``, ``AcceptorBlockedPercent``) while new
connections queue in the listen backlog; we close the new connection at
accept, as for the per-IP limit (docs/deviations.md says why).

The effective ``max.connections`` is also kept below the process's
file-descriptor limit (:func:`descriptor_cap`), so connections can never take
the descriptors the logs need to roll segments.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import resource
import socket
from collections.abc import Mapping

from broker.config_key import INT_MAX

log = logging.getLogger(__name__)

MAX_CONNECTIONS = "max_connections"
MAX_CONNECTIONS_PER_IP = "max_connections_per_ip"
#: refusal reasons, as the metrics label them
REASONS = (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_IP)


class ConnectionQuotas:
    """Counts open connections, in total and per peer address."""

    __slots__ = ("_counts", "max_connections", "overrides", "per_ip", "total")

    def __init__(
        self,
        max_connections: int = INT_MAX,
        per_ip: int = INT_MAX,
        overrides: Mapping[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.per_ip = per_ip
        #: address (as :func:`normalize` writes it) -> its limit
        self.overrides = {normalize(a): n for a, n in (overrides or {}).items()}
        self.total = 0
        self._counts: dict[str, int] = {}

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.per_ip)

    def admit(self, address: str) -> str | None:
        """Count a new connection from ``address``, or name the limit it would
        break (and count nothing)."""
        count = self._counts.get(address, 0)
        if count >= self.limit_for(address):
            return MAX_CONNECTIONS_PER_IP
        if self.total >= self.max_connections:
            return MAX_CONNECTIONS
        self._counts[address] = count + 1
        self.total += 1
        return None

    def release(self, address: str) -> None:
        count = self._counts.get(address, 0)
        if count <= 1:
            self._counts.pop(address, None)
        else:
            self._counts[address] = count - 1
        self.total -= 1

    def count(self, address: str) -> int:
        return self._counts.get(address, 0)


def normalize(address: str) -> str:
    """One spelling per address: ``ipaddress``'s, with IPv4-mapped IPv6 as IPv4
    (Java's ``InetAddress`` does the same)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def resolve_overrides(overrides: Mapping[str, int]) -> dict[str, int]:
    """Hosts of ``max.connections.per.ip.overrides`` -> addresses, once at start.

    Kafka resolves each host with ``InetAddress.getByName`` (its first
    address); we take every address the name has (``localhost`` is
    127.0.0.1 and ::1), since a client may come from any of them. A name
    that does not resolve stops the start, as in Kafka."""
    out: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except socket.gaierror as exc:
            raise OSError(
                f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc}"
            ) from exc
        for info in infos:
            out[normalize(str(info[4][0]))] = count
    return out


#: descriptors kept for the logs and everything else: at least this many, or
#: this fraction of the limit, above what was open at start
DESCRIPTOR_RESERVE = 256
DESCRIPTOR_RESERVE_FRACTION = 0.1


def descriptor_cap() -> int:
    """The most connections the file-descriptor limit leaves room for: the soft
    ``RLIMIT_NOFILE`` less the descriptors open now (the logs, loaded before the
    listener starts) less a reserve for segments rolled and topics created
    later. Kafka accepts until ``accept`` fails with "Too many open files", and
    then log rolls fail the same way."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return INT_MAX
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 0
    reserve = max(DESCRIPTOR_RESERVE, int(soft * DESCRIPTOR_RESERVE_FRACTION))
    return max(1, min(INT_MAX, soft - open_now - reserve))
