"""A shard under test with a manual clock (Kafka's ``GroupMetadataManagerTestContext``).

Time and timers move only when a test advances them (``MockTime`` and
``MockCoordinatorTimer``); writes are recorded and complete at once with
NONE, or with the error a test sets, or are held until the test releases
them, so every step of a rebalance is visible.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker.coordinator.group.classic import Caller
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer.assignor import GroupAssignment, GroupSpec
from broker.coordinator.group.consumer.member import freeze
from broker.coordinator.group.rebalance import OnWritten
from broker.coordinator.group.records import Record
from broker.coordinator.group.shard import Shard
from broker.delayed import DelayedReply
from broker.errors import ErrorCode
from broker.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)

GROUP = "group-id"
PROTOCOL_TYPE = "consumer"


def subscription(*topics: str) -> bytes:
    """A consumer protocol subscription v0: version, topics, empty user data."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return bytes(out + b"\xff\xff\xff\xff")


def protocols(*names: str, topics: tuple[str, ...] = ("foo",)) -> list[Any]:
    return [
        JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=subscription(*topics))
        for n in names
    ]


class Topics:
    """A topics image the test edits (Kafka's ``MetadataImageBuilder``)."""

    def __init__(self) -> None:
        self.version = 0
        self.ids: dict[str, uuid.UUID] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, partitions: int, topic_id: uuid.UUID | None = None) -> uuid.UUID:
        self.ids[name] = topic_id or self.ids.get(name) or uuid.uuid4()
        self.counts[name] = partitions
        self.version += 1
        return self.ids[name]

    def delete(self, name: str) -> None:
        del self.ids[name], self.counts[name]
        self.version += 1

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.ids.get(name)

    def partition_count(self, name: str) -> int | None:
        return self.counts.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, i in self.ids.items() if i == topic_id), None)

    def topic_names(self) -> Iterable[str]:
        return list(self.ids)


class MockAssignor:
    """``MockPartitionAssignor``: answers the assignment the test prepared."""

    def __init__(self, name: str = "range") -> None:
        self.name = name
        self.prepared: GroupAssignment = {}
        self.calls: list[GroupSpec] = []
        self.error: Exception | None = None

    def prepare(self, assignment: Mapping[str, Mapping[uuid.UUID, Iterable[int]]]) -> None:
        self.prepared = {m: freeze(a) for m, a in assignment.items()}

    def assign(self, spec: GroupSpec, partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
        self.calls.append(spec)
        if self.error is not None:
            raise self.error
        return dict(self.prepared)


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class ManualTimer:
    """Keyed timers run in deadline order (then scheduling order) when time advances."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.tasks: dict[str, tuple[int, int, Callable[[], None]]] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()

    def schedule(self, key: str, delay_ms: int, operation: Callable[[], None]) -> None:
        entry = (self.clock.now + delay_ms, next(self._seq), operation)
        self.tasks[key] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], key))

    def cancel(self, key: str) -> None:
        self.tasks.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self.tasks

    def deadline(self, key: str) -> int:
        return self.tasks[key][0]

    def advance(self, ms: int) -> None:
        target = self.clock.now + ms
        while self._heap and self._heap[0][0] <= target:
            deadline, seq, key = heapq.heappop(self._heap)
            current = self.tasks.get(key)
            if current is None or current[1] != seq:
                continue  # cancelled or rescheduled since
            del self.tasks[key]
            self.clock.now = deadline
            current[2]()
        self.clock.now = target


class Context:
    def __init__(self, **config: Any) -> None:
        config.setdefault("classic_group_initial_rebalance_delay_ms", 0)
        self.config = GroupConfig(**config)
        self.clock = Clock()
        self.timer = ManualTimer(self.clock)
        self.written: list[list[Record]] = []
        self.fail_with: ErrorCode | None = None
        self.hold = False
        self.held: list[OnWritten] = []
        self.topics = Topics()
        self.shard = Shard(
            0,
            self.config,
            timer=self.timer,
            time_ms=self.clock,
            writer=self._write,
            topics=self.topics,
        )
        self.shard.on_loaded()

    @property
    def groups(self) -> Any:
        return self.shard.classic.groups

    def group(self, group_id: str = GROUP) -> Any:
        return self.groups[group_id]

    def _write(self, _index: int, records: list[Record], on_done: OnWritten | None) -> None:
        self.written.append(records)
        done = on_done or (lambda _code: None)
        if self.fail_with is not None:
            done(self.fail_with)
        elif self.hold:
            self.held.append(done)
        else:
            done(ErrorCode.NONE)

    def release(self, code: ErrorCode = ErrorCode.NONE) -> None:
        held, self.held = self.held, []
        for done in held:
            done(code)

    # ---- the consumer protocol ------------------------------------------------------------

    @property
    def consumer(self) -> Any:
        return self.shard.consumer

    def use_assignor(self, assignor: Any) -> Any:
        """The group's only server assignor (``withConsumerGroupAssignors``)."""
        self.shard.consumer.assignors = {assignor.name: assignor}
        self.shard.consumer.default_assignor = assignor.name
        return assignor

    def consumer_heartbeat(self, **fields: Any) -> tuple[Any, list[Record]]:
        """A ConsumerGroupHeartbeat through the shard: (response, records it wrote)."""
        before = len(self.written)
        fields.setdefault("group_id", GROUP)
        request = ConsumerGroupHeartbeatRequest(**fields)
        reply = self.shard.consumer.heartbeat("client", "/127.0.0.1", request)
        records = [r for batch in self.written[before:] for r in batch]
        return (reply.value if reply.done() else reply), records

    def replay(self, *records: Record) -> None:
        self.shard.apply(list(records))

    # ---- requests -------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        protocol_names: tuple[str, ...] = ("range",),
        protocol_type: str = PROTOCOL_TYPE,
        session_ms: int = 10_000,
        rebalance_ms: int = 5_000,
        version: int = 9,
        client_id: str = "client",
        topics: tuple[str, ...] = ("foo",),
    ) -> DelayedReply[Any]:
        request = JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=protocols(*protocol_names, topics=topics),
        )
        return self.shard.classic.join(Caller(client_id, "/127.0.0.1", version), request)

    def join_new(self, **kw: Any) -> DelayedReply[Any]:
        """A dynamic member's two-step join (KIP-394): the reply of its second JoinGroup."""
        first = self.join(**kw)
        assert first.value.error_code == ErrorCode.MEMBER_ID_REQUIRED
        return self.join(first.value.member_id, **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> DelayedReply[Any]:
        request = SyncGroupRequest(
            group_id=group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )
        return self.shard.classic.sync(Caller("client", "/127.0.0.1", 5), request)

    def heartbeat(self, member_id: str, generation: int, *, instance_id: str | None = None) -> int:
        request = HeartbeatRequest(
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        return int(self.shard.classic.heartbeat(request).error_code)

    def leave(self, *members: tuple[str, str | None], group_id: str = GROUP) -> Any:
        request = LeaveGroupRequest(
            group_id=group_id,
            members=[
                LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i)
                for m, i in members
            ],
        )
        reply = self.shard.classic.leave(request)
        return reply.value if reply.done() else reply

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        instance_id: str | None = None,
        version: int = 9,
        metadata: str = "",
        retention_ms: int = -1,
        group_id: str = GROUP,
    ) -> DelayedReply[Any]:
        topics: dict[str, list[Any]] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_metadata=metadata
                )
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            retention_time_ms=retention_ms,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in topics.items()
            ],
        )
        return self.shard.offsets.commit(request, version, request.topics)

    def stable_group(self, members: int = 1, **kw: Any) -> list[str]:
        """Members joined and synced (the first is the leader); returns their ids."""
        ids = []
        replies = []
        for _ in range(members):
            first = self.join(**kw)
            ids.append(first.value.member_id)
        for member_id in ids:
            replies.append(self.join(member_id, **kw))
        # the first member joined alone and completed at once; every later one rebalances
        if not all(r.done() for r in replies):
            self.timer.advance(0)
        assert all(r.done() for r in replies), replies
        generation = self.group().generation_id
        leader = self.group().leader_id
        for member_id in ids:
            assignments = (
                {m: b"assignment-" + m.encode() for m in ids} if member_id == leader else {}
            )
            self.sync(member_id, generation, assignments)
        assert str(self.group().state) == "Stable"
        return ids
