"""A small blocking Kafka client for the broker's own tools (``broker groups``).

It speaks the Kafka protocol through ``broker.protocol`` over one socket per
node, one request at a time::

    request  => size:INT32 RequestHeader body      (encode_request)
    response => size:INT32 ResponseHeader body     (decode_response)

Versions are fixed to ones Kafka 3.9 and this broker both serve; the group
requests go to the group's coordinator (FindCoordinator v3). Errors come
back as :class:`AdminError` with Kafka's code name.
"""

from __future__ import annotations

import struct
from typing import Any

from broker.admin.client_security import PLAINTEXT, ClientSecurity
from broker.errors import ErrorCode
from broker.protocol import decode_response, encode_request
from broker.protocol.data import Data
from broker.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    codec_for,
)

_SIZE = struct.Struct(">i")
EARLIEST = -2
LATEST = -1
CLIENT_ID = "broker-groups-cli"


class AdminError(Exception):
    def __init__(self, code: int, what: str) -> None:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        super().__init__(f"{what}: {name}")
        self.code = code


def parse_bootstrap(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bootstrap server must be host:port, not {text!r}")
    return host, int(port)


class _Connection:
    def __init__(
        self, host: str, port: int, timeout_s: float, security: ClientSecurity = PLAINTEXT
    ) -> None:
        # TLS and SASL as the other admin tools (broker/admin/client_security.py)
        self._sock = security.open(host, port, timeout_s)
        self._correlation = 0
        try:
            security.authenticate(self.call, {})
        except BaseException:
            self._sock.close()
            raise

    def call(self, request: Data, version: int) -> Any:
        self._correlation += 1
        api_key = int(codec_for(request).spec.api_key)
        self._sock.sendall(
            encode_request(version, self._correlation, CLIENT_ID, request).to_bytes()
        )
        (size,) = _SIZE.unpack(self._read(4))
        correlation, body = decode_response(api_key, version, self._read(size))
        if correlation != self._correlation:
            raise AdminError(ErrorCode.CORRUPT_MESSAGE, "response out of order")
        return body

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self._sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self._sock.close()


class AdminClient:
    """``with AdminClient("127.0.0.1:9092") as admin: admin.list_groups()``."""

    def __init__(
        self, bootstrap: str, timeout_s: float = 30.0, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self._timeout_s = timeout_s
        self._security = security
        self._bootstrap = parse_bootstrap(bootstrap)
        self._nodes: dict[tuple[str, int], _Connection] = {}

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._nodes.values():
            conn.close()
        self._nodes.clear()

    def _node(self, address: tuple[str, int]) -> _Connection:
        conn = self._nodes.get(address)
        if conn is None:
            conn = self._nodes[address] = _Connection(*address, self._timeout_s, self._security)
        return conn

    def _call(self, request: Data, version: int, address: tuple[str, int] | None = None) -> Any:
        return self._node(address or self._bootstrap).call(request, version)

    def _coordinator(self, group: str) -> tuple[str, int]:
        resp = self._call(FindCoordinatorRequest(key=group, key_type=0), 3)
        if resp.error_code:
            raise AdminError(resp.error_code, f"FindCoordinator for group {group}")
        return resp.host, resp.port

    # ---- groups ------------------------------------------------------------------------------

    def list_groups(self, states: list[str] | None = None) -> list[Data]:
        resp = self._call(ListGroupsRequest(states_filter=states or []), 4)
        if resp.error_code:
            raise AdminError(resp.error_code, "ListGroups")
        return list(resp.groups)

    def describe_group(self, group: str) -> Data:
        resp = self._call(DescribeGroupsRequest(groups=[group]), 5, self._coordinator(group))
        described: Data = resp.groups[0]
        if described.error_code:
            raise AdminError(described.error_code, f"DescribeGroups {group}")
        return described

    def delete_group(self, group: str) -> int:
        resp = self._call(DeleteGroupsRequest(groups_names=[group]), 2, self._coordinator(group))
        return int(resp.results[0].error_code)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        resp = self._call(
            OffsetFetchRequest(
                groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]
            ),
            8,
            self._coordinator(group),
        )
        fetched = resp.groups[0]
        if fetched.error_code:
            raise AdminError(fetched.error_code, f"OffsetFetch {group}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in fetched.topics
            for p in t.partitions
            if p.committed_offset >= 0
        }

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """A simple commit (no member, generation -1): what kafka-consumer-groups.sh does."""
        topics: dict[str, list[Data]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_metadata=""
                )
            )
        resp = self._call(
            OffsetCommitRequest(
                group_id=group,
                topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in topics.items()
                ],
            ),
            8,
            self._coordinator(group),
        )
        return {
            (t.name, p.partition_index): int(p.error_code)
            for t in resp.topics
            for p in t.partitions
        }

    # ---- topics ------------------------------------------------------------------------------

    def partitions(self, topics: list[str] | None) -> dict[str, list[int]]:
        """Partitions of ``topics`` (None: every topic but the internal ones)."""
        wanted = (
            None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        )
        resp = self._call(MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 9)
        out = {}
        for t in resp.topics:
            if t.error_code:
                raise AdminError(t.error_code, f"Metadata for topic {t.name}")
            if topics is None and t.is_internal:
                continue
            out[t.name] = sorted(p.partition_index for p in t.partitions)
        return out

    def list_offsets(self, targets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """The offset for each partition's timestamp (EARLIEST, LATEST or a time in ms):
        ListOffsets v7; a time past the last record gives the log end offset."""
        topics: dict[str, list[Data]] = {}
        for (topic, partition), ts in sorted(targets.items()):
            topics.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=ts)
            )
        resp = self._call(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                    for t, ps in topics.items()
                ],
            ),
            7,
        )
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    raise AdminError(p.error_code, f"ListOffsets {t.name}-{p.partition_index}")
                out[(t.name, p.partition_index)] = p.offset
        missing = [tp for tp, off in out.items() if off < 0]
        if missing:
            # no record at or after the time: the end of the log, as Kafka's tool does
            out.update(self.list_offsets(dict.fromkeys(missing, LATEST)))
        return out
