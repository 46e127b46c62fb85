"""Consumer group operations over the admin client (``broker groups``' requests).

Each operation is one request (Kafka's ``Admin`` calls, the ones
``kafka-consumer-groups.sh`` makes), at the highest version both sides
speak within the range the code builds::

    list_groups     ListGroups v0-5 (a state filter needs v4+)   bootstrap
    describe_group  DescribeGroups v0-5                           the group's coordinator
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

from broker.admin.client import AdminClientError, AdminConnection, check
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
)

EARLIEST = -2
LATEST = -1
METADATA, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 3, 2, 8, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42


class GroupAdmin:
    """``with closing(GroupAdmin.connect("127.0.0.1:9092")) as admin: admin.list_groups()``."""

    def __init__(self, bootstrap: AdminConnection, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self._coordinators: dict[tuple[str, int], AdminConnection] = {}

    @classmethod
    def connect(cls, bootstrap: str, timeout_s: float = 30.0) -> GroupAdmin:
        return cls(AdminConnection.connect(bootstrap, timeout_s), timeout_s)

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
            found = AdminConnection.connect(f"{resp.host}:{resp.port}", self._timeout_s)
            self._coordinators[address] = found
        return found

    # ---- groups ------------------------------------------------------------------------------

    def list_groups(self, states: list[str] | None = None) -> list[Data]:
        conn = self._bootstrap
        version = conn.version_for(LIST_GROUPS, lowest=4 if states else None, highest=5)
        resp = conn.call(ListGroupsRequest(states_filter=states or [], types_filter=[]), version)
        check(resp.error_code, "ListGroups")
        return list(resp.groups)

    def describe_group(self, group: str) -> Data:
        conn = self.coordinator(group)
        resp = conn.call(
            DescribeGroupsRequest(groups=[group]), conn.version_for(DESCRIBE_GROUPS, highest=5)
        )
        described: Data = resp.groups[0]
        check(described.error_code, f"DescribeGroups {group}")
        return described

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
        topics: dict[str, list[Data]] = {}
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
            if topics is None and t.is_internal:
                continue
            out[t.name] = sorted(p.partition_index for p in t.partitions)
        return out

    def list_offsets(self, targets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """The offset for each partition's timestamp (EARLIEST, LATEST or a time in ms);
        a time past the last record gives the log end offset, as Kafka's tool has it."""
        topics: dict[str, list[Data]] = {}
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


__all__ = ["EARLIEST", "LATEST", "AdminClientError", "GroupAdmin"]
