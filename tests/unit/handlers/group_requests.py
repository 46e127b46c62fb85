"""Requests of the offset APIs built from plain dicts, for the handler and admin tests.

offset_commit_request("g", {"orders": {0: 5, 1: 7}})     a simple commit (generation -1)
offset_fetch_request("g", {"orders": [0, 1]})            one group, v8+ form (None: all)
offset_delete_request("g", {"orders": [0]})
"""

from __future__ import annotations

from typing import Any

from broker.protocol.messages import (
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from tests.unit.groups.context import protocols


def join_group_request(group: str, member_id: str = "", *, metadata: bytes | None = None) -> Any:
    """A consumer's JoinGroup (session and rebalance timeouts 10 s), protocol "range"
    with a subscription to "foo" unless ``metadata`` replaces it."""
    offered = (
        protocols("range")
        if metadata is None
        else [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)]
    )
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=offered,
    )


def offset_commit_request(group: str, offsets: dict[str, dict[int, int]]) -> Any:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o
                    )
                    for p, o in partitions.items()
                ],
            )
            for topic, partitions in offsets.items()
        ],
    )


def offset_fetch_request(group: str, topics: dict[str, list[int]] | None) -> Any:
    return OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group,
                topics=None
                if topics is None
                else [
                    OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                    for t, ps in topics.items()
                ],
            )
        ]
    )


def offset_delete_request(group: str, topics: dict[str, list[int]]) -> Any:
    return OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=t,
                partitions=[
                    OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=i) for i in ps
                ],
            )
            for t, ps in topics.items()
        ],
    )
