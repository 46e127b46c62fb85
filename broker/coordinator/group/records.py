"""The records a group operation writes (``CoordinatorRecordHelpers``), as (key, value) bytes.

A value of None is a tombstone: compaction keeps the latest record per key,
and loading replays them in order with the last one winning.
"""

from __future__ import annotations

from broker.coordinator.group.classic_group import ClassicGroup
from broker.group_records.messages import (
    GROUP_METADATA_TYPE,
    GROUP_METADATA_VALUE,
    GROUP_METADATA_VALUE_VERSION,
    encode_value,
    group_metadata_key,
    offset_commit_key,
    offset_commit_value,
)

#: (key, value or None for a tombstone)
Record = tuple[bytes, bytes | None]


def group_metadata_record(group: ClassicGroup, assignment: dict[str, bytes]) -> Record:
    """``newGroupMetadataRecord``: the group, its generation and every member."""
    members = [
        {
            "memberId": member.member_id,
            "groupInstanceId": member.group_instance_id,
            "clientId": member.client_id,
            "clientHost": member.client_host,
            "rebalanceTimeout": member.rebalance_timeout_ms,
            "sessionTimeout": member.session_timeout_ms,
            "subscription": member.metadata(group.protocol_name),
            "assignment": assignment[member.member_id],
        }
        for member in group.members.values()
    ]
    value = GROUP_METADATA_VALUE.new(
        GROUP_METADATA_VALUE_VERSION,
        protocolType=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        currentStateTimestamp=group.current_state_timestamp,
        members=members,
    )
    return group_metadata_key(group.group_id), encode_value(
        GROUP_METADATA_TYPE, GROUP_METADATA_VALUE_VERSION, value
    )


def empty_group_metadata_record(group: ClassicGroup) -> Record:
    """``newEmptyGroupMetadataRecord``: a group that exists with no members."""
    value = GROUP_METADATA_VALUE.new(
        GROUP_METADATA_VALUE_VERSION,
        protocolType="",
        generation=0,
        protocol=None,
        leader=None,
        currentStateTimestamp=group.current_state_timestamp,
        members=[],
    )
    return group_metadata_key(group.group_id), encode_value(
        GROUP_METADATA_TYPE, GROUP_METADATA_VALUE_VERSION, value
    )


def group_tombstone(group_id: str) -> Record:
    return group_metadata_key(group_id), None


def offset_commit_record(
    group_id: str,
    topic: str,
    partition: int,
    *,
    offset: int,
    leader_epoch: int,
    metadata: str,
    commit_timestamp: int,
    expire_timestamp: int,
) -> Record:
    return offset_commit_key(group_id, topic, partition), offset_commit_value(
        offset, leader_epoch, metadata, commit_timestamp, expire_timestamp
    )


def offset_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return offset_commit_key(group_id, topic, partition), None
