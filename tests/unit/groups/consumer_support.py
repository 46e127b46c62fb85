"""Helpers for the consumer group tests (Kafka's ``ConsumerGroupBuilder``, ``mkAssignment``).

foo, bar = topics(ctx, foo=6, bar=3)                    topic ids in the test's image
member("m1", member_epoch=10, assigned=a((foo, 0, 1)))  a ConsumerGroupMember
build_group(ctx, "g", 10, [m1, m2], {"m1": ...}, 10)    replays the group's records
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from broker.coordinator.group.consumer.group import TopicMetadata
from broker.coordinator.group.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    freeze,
)
from broker.coordinator.group.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    member_subscription_record,
    subscription_metadata_record,
    target_assignment_epoch_record,
    target_assignment_record,
)
from broker.coordinator.group.records import Record
from broker.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from tests.unit.groups.context import GROUP, Context, MockAssignor

__all__ = ["GROUP"]

CLIENT_ID = "client"
CLIENT_HOST = "/127.0.0.1"


def consumer_context(**config: Any) -> tuple[Context, MockAssignor]:
    """A shard with one mock server assignor named "range"."""
    config.setdefault("consumer_group_assignors", ("range",))
    ctx = Context(**config)
    return ctx, ctx.use_assignor(MockAssignor("range"))


def topics(ctx: Context, **counts: int) -> list[uuid.UUID]:
    return [ctx.topics.add(name, n) for name, n in counts.items()]


def a(*topic_partitions: tuple[Any, ...]) -> dict[uuid.UUID, frozenset[int]]:
    """``mkAssignment(mkTopicAssignment(id, p...), ...)``."""
    return freeze({t[0]: t[1:] for t in topic_partitions})


def member(member_id: str, **fields: Any) -> ConsumerGroupMember:
    """A member as Kafka's tests build them: the test client, range, rebalance 5 s."""
    fields.setdefault("client_id", CLIENT_ID)
    fields.setdefault("client_host", CLIENT_HOST)
    fields.setdefault("server_assignor_name", "range")
    fields.setdefault("state", MemberState.STABLE)
    if "subscribed_topic_names" in fields:
        fields["subscribed_topic_names"] = frozenset(fields["subscribed_topic_names"])
    for key in ("assigned_partitions", "partitions_pending_revocation"):
        if key in fields:
            fields[key] = freeze(fields[key])
    return ConsumerGroupMember(member_id, **fields)


def build_group(
    ctx: Context,
    group_id: str,
    epoch: int,
    members: Sequence[ConsumerGroupMember],
    assignments: Mapping[str, Mapping[uuid.UUID, Iterable[int]]],
    assignment_epoch: int,
    metadata: Mapping[str, TopicMetadata] | None = None,
) -> None:
    """``ConsumerGroupBuilder.build``: the group's records, replayed."""
    records: list[Record] = [member_subscription_record(group_id, m) for m in members]
    if metadata is None:
        metadata = {}
        for m in members:
            for name in m.subscribed_topic_names:
                topic_id = ctx.topics.topic_id(name)
                count = ctx.topics.partition_count(name)
                if topic_id is not None and count is not None:
                    metadata[name] = TopicMetadata(topic_id, name, count)
    if metadata:
        records.append(subscription_metadata_record(group_id, metadata))
    records.append(group_epoch_record(group_id, epoch))
    records += [target_assignment_record(group_id, m, freeze(p)) for m, p in assignments.items()]
    records.append(target_assignment_epoch_record(group_id, assignment_epoch))
    records += [current_assignment_record(group_id, m) for m in members]
    ctx.replay(*records)


def owned(*topic_partitions: tuple[Any, ...]) -> list[Any]:
    return [
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t[0], partitions=list(t[1:]))
        for t in topic_partitions
    ]


def response(
    member_id: str | None,
    member_epoch: int,
    interval: int = 5000,
    assignment: Sequence[tuple[Any, ...]] | None = None,
    **fields: Any,
) -> Any:
    """A ConsumerGroupHeartbeatResponse; ``assignment`` as (topic id, partitions...) tuples,
    sorted by topic id as the broker writes them."""
    body = None
    if assignment is not None:
        body = ConsumerGroupHeartbeatResponse.Assignment(
            topic_partitions=[
                ConsumerGroupHeartbeatResponse.TopicPartitions(
                    topic_id=t[0], partitions=sorted(t[1:])
                )
                for t in sorted(assignment, key=lambda t: t[0])
            ]
        )
    return ConsumerGroupHeartbeatResponse(
        member_id=member_id,
        member_epoch=member_epoch,
        heartbeat_interval_ms=interval,
        assignment=body,
        **fields,
    )


def metadata(ctx: Context, *names: str) -> dict[str, TopicMetadata]:
    out = {}
    for name in names:
        topic_id, count = ctx.topics.topic_id(name), ctx.topics.partition_count(name)
        assert topic_id is not None and count is not None
        out[name] = TopicMetadata(topic_id, name, count)
    return out
