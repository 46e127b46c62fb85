"""Consumer group operations over the admin client (``broker groups``' requests).

Each operation is one request (Kafka's ``Admin`` calls, the ones
``kafka-consumer-groups.sh`` makes), at the highest version both sides
speak within the range the code builds::

    list_groups     ListGroups v0-5 (a state filter needs v4+)   bootstrap
    describe_group  ConsumerGroupDescribe v0-1, then (a classic   the group's coordinator
                    group: GROUP_ID_NOT_FOUND) DescribeGroups v0-5
    delete_group    DeleteGroups v0-2                             the group's coordinator
    committed       OffsetFetch v2-8 (every offset of the group)  the group's coordinator
    commit          OffsetCommit v1-8, a simple commit            the group's coordinator
    partitions      Metadata v1-9                                 bootstrap
    list_offsets    ListOffsets v1-7                              bootstrap

The coordinator is found with FindCoordinator v0-3 and reached on its own
connection unless it is the bootstrap broker. An error code in an answer
raises :class:`BrokerRefused` (Kafka's code name in its text).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, check
from broker.admin.client_security import PLAINTEXT, ClientSecurity
from broker.errors import ErrorCode
from broker.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
)

EARLIEST = -2
LATEST = -1
METADATA, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 3, 2, 8, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, CONSUMER_GROUP_DESCRIBE = 15, 16, 42, 69
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class MemberDescription(NamedTuple):
    member_id: str
    client_id: str
    host: str
    #: (topic, partition) it owns
    partitions: list[tuple[str, int]]


class GroupDescription(NamedTuple):
    """A group of either protocol, as ``Admin.describeConsumerGroups`` gives it."""

    group_id: str
    state: str
    #: "consumer" (KIP-848) or "classic"
    group_type: str
    members: list[MemberDescription]


def owned_partitions(
    assignment: ConsumerGroupDescribeResponse.Assignment | None,
) -> list[tuple[str, int]]:
    """The partitions of a consumer group member's assignment (none when it has none)."""
    if assignment is None:
        return []
    return [(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions]


def assigned_partitions(assignment: bytes) -> list[tuple[str, int]]:
    """The partitions of a consumer protocol assignment (``ConsumerProtocolAssignment``:
    version INT16, then [topic STRING [partition INT32]]); empty if it is not one."""
    out: list[tuple[str, int]] = []
    try:
        pos = 2
        (topics,) = _INT32.unpack_from(assignment, pos)
        pos += 4
        for _ in range(max(topics, 0)):
            (length,) = _INT16.unpack_from(assignment, pos)
            topic = assignment[pos + 2 : pos + 2 + length].decode()
            pos += 2 + length
            (count,) = _INT32.unpack_from(assignment, pos)
            pos += 4
            for _ in range(max(count, 0)):
                out.append((topic, _INT32.unpack_from(assignment, pos)[0]))
                pos += 4
    except (UnicodeDecodeError, struct.error):
        return []
    return out


class GroupAdmin:
    """``with closing(GroupAdmin.connect("127.0.0.1:9092")) as admin: admin.list_groups()``."""

    def __init__(
        self,
        bootstrap: AdminConnection,
        timeout_s: float,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self._security = security
        self._coordinators: dict[tuple[str, int], AdminConnection] = {}

    @classmethod
    def connect(
        cls, bootstrap: str, timeout_s: float = 30.0, security: ClientSecurity = PLAINTEXT
    ) -> GroupAdmin:
        """Connected to ``bootstrap``; ``security`` (TLS, SASL) for every connection."""
        return cls(AdminConnection.connect(bootstrap, timeout_s, security), timeout_s, security)

    def close(self) -> None:
        for conn in self._coordinators.values():
            conn.close()
        self._coordinators.clear()
        self._bootstrap.close()

    def coordinator(self, group: str) -> AdminConnection:
        """The connection to ``group``'s coordinator (FindCoordinator)."""
        conn = self._bootstrap
        version = conn.version_for(FIND_COORDINATOR, highest=3)
        resp = conn.call(FindCoordinatorRequest(key=group, key_type=0), version)
        check(resp.error_code, f"FindCoordinator for group {group}", resp.error_message)
        address = (resp.host, resp.port)
        if address == conn.address:
            return conn
        found = self._coordinators.get(address)
        if found is None:
            found = AdminConnection.connect(
                f"{resp.host}:{resp.port}", self._timeout_s, self._security
            )
            self._coordinators[address] = found
        return found

    # ---- groups ------------------------------------------------------------------------------

    def list_groups(self, states: list[str] | None = None) -> list[ListGroupsResponse.ListedGroup]:
        conn = self._bootstrap
        version = conn.version_for(LIST_GROUPS, lowest=4 if states else None, highest=5)
        resp = conn.call(ListGroupsRequest(states_filter=states or [], types_filter=[]), version)
        check(resp.error_code, "ListGroups")
        return list(resp.groups)

    def describe_group(self, group: str) -> GroupDescription:
        """A consumer group (ConsumerGroupDescribe) or else a classic one (DescribeGroups,
        "Dead" when there is none), as Kafka's admin client describes consumer groups."""
        conn = self.coordinator(group)
        if CONSUMER_GROUP_DESCRIBE in conn.versions:
            version = conn.version_for(CONSUMER_GROUP_DESCRIBE, highest=1)
            found = conn.call(ConsumerGroupDescribeRequest(group_ids=[group]), version).groups[0]
            if found.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                check(found.error_code, f"ConsumerGroupDescribe {group}", found.error_message)
                members = [
                    MemberDescription(
                        m.member_id, m.client_id, m.client_host, owned_partitions(m.assignment)
                    )
                    for m in found.members
                ]
                return GroupDescription(group, found.group_state, "consumer", members)
        resp = conn.call(
            DescribeGroupsRequest(groups=[group]), conn.version_for(DESCRIBE_GROUPS, highest=5)
        )
        described = resp.groups[0]
        check(described.error_code, f"DescribeGroups {group}")
        return GroupDescription(
            group,
            described.group_state,
            "classic",
            [
                MemberDescription(
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    assigned_partitions(bytes(m.member_assignment)),
                )
                for m in described.members
            ],
        )

    def delete_group(self, group: str) -> None:
        conn = self.coordinator(group)
        resp = conn.call(
            DeleteGroupsRequest(groups_names=[group]), conn.version_for(DELETE_GROUPS, highest=2)
        )
        check(resp.results[0].error_code, f"Deletion of group '{group}' failed")

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """Every committed offset of the group (OffsetFetch with no topic list)."""
        conn = self.coordinator(group)
        version = conn.version_for(OFFSET_FETCH, lowest=2, highest=8)
        # v8+ answers per group, v2-7 at the top level, in classes of their own
        fetched: OffsetFetchResponse | OffsetFetchResponse.OffsetFetchResponseGroup
        if version >= 8:
            request = OffsetFetchRequest(
                groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]
            )
            fetched = conn.call(request, version).groups[0]
        else:
            fetched = conn.call(OffsetFetchRequest(group_id=group, topics=None), version)
        check(fetched.error_code, f"OffsetFetch {group}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in fetched.topics
            for p in t.partitions
            if p.committed_offset >= 0
        }

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """A simple commit (no member, generation -1), as kafka-consumer-groups.sh makes;
        returns each partition's error code."""
        topics: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_metadata=""
                )
            )
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in topics.items()
            ],
        )
        conn = self.coordinator(group)
        resp = conn.call(request, conn.version_for(OFFSET_COMMIT, lowest=1, highest=8))
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
        conn = self._bootstrap
        version = conn.version_for(METADATA, lowest=4, highest=9)
        resp = conn.call(MetadataRequest(topics=wanted, allow_auto_topic_creation=False), version)
        out = {}
        for t in resp.topics:
            check(t.error_code, f"Metadata for topic {t.name}")
            # a name is null only in a v10+ answer about a topic asked for by id
            if t.name is None or (topics is None and t.is_internal):
                continue
            out[t.name] = sorted(p.partition_index for p in t.partitions)
        return out

    def list_offsets(self, targets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """The offset for each partition's timestamp (EARLIEST, LATEST or a time in ms);
        a time past the last record gives the log end offset, as Kafka's tool has it."""
        topics: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
        for (topic, partition), ts in sorted(targets.items()):
            topics.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=ts)
            )
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                for t, ps in topics.items()
            ],
        )
        conn = self._bootstrap
        resp = conn.call(request, conn.version_for(LIST_OFFSETS, lowest=1, highest=7))
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                check(p.error_code, f"ListOffsets {t.name}-{p.partition_index}")
                out[(t.name, p.partition_index)] = p.offset
        missing = [tp for tp, off in out.items() if off < 0]
        if missing:
            out.update(self.list_offsets(dict.fromkeys(missing, LATEST)))
        return out


__all__ = ["EARLIEST", "LATEST", "AdminClientError", "BrokerRefused", "GroupAdmin"]
