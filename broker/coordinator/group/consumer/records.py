"""The consumer group records (Kafka's ``GroupCoordinatorRecordHelpers``), as (key, value) bytes.

Keys and values are Kafka's (value version 0, flexible)::

    type 3  ConsumerGroupMetadata              GroupId                 -> Epoch
    type 4  ConsumerGroupPartitionMetadata     GroupId                 -> Topics [TopicId TopicName
                                                                          NumPartitions
                                                                          PartitionMetadata]
    type 5  ConsumerGroupMemberMetadata        GroupId MemberId        -> the member's subscription
    type 6  ConsumerGroupTargetAssignmentMetadata  GroupId             -> AssignmentEpoch
    type 7  ConsumerGroupTargetAssignmentMember    GroupId MemberId    -> TopicPartitions
    type 8  ConsumerGroupCurrentMemberAssignment   GroupId MemberId    -> epochs, state, assigned
                                                                          and pending revocation

A value of None is a tombstone. A group is deleted by the tombstones of
:func:`group_tombstones`, in Kafka's order (every member's current
assignment, target assignment, the assignment epoch, every member's
subscription, the partition metadata, the group epoch), which is the order
the replay checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from broker.coordinator.group.consumer.group import TopicMetadata
from broker.coordinator.group.consumer.member import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
    freeze,
)
from broker.coordinator.group.records import Record
from broker.group_records.messages import encode_key, encode_value
from broker.group_records.schema import Message

CONSUMER_GROUP_METADATA_TYPE = 3
CONSUMER_GROUP_PARTITION_METADATA_TYPE = 4
CONSUMER_GROUP_MEMBER_METADATA_TYPE = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE = 8
CONSUMER_RECORD_TYPES = range(3, 9)
VALUE_VERSION = 0


def _key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    key: Message = {"GroupId": group_id}
    if member_id is not None:
        key["MemberId"] = member_id
    return encode_key(record_type, key)


def _value(record_type: int, value: Message) -> bytes:
    return encode_value(record_type, VALUE_VERSION, value)


def topic_partitions(assignment: Assignment) -> list[Message]:
    """Topics by id, partitions ascending (Kafka writes its maps' order; ours is fixed so
    the same state always makes the same bytes)."""
    return [
        {"TopicId": topic_id, "Partitions": sorted(partitions)}
        for topic_id, partitions in sorted(assignment.items())
    ]


def assignment_from(topics: Iterable[Mapping[str, object]]) -> dict[uuid.UUID, frozenset[int]]:
    """``Utils.assignmentFromTopicPartitions``."""
    return freeze({t["TopicId"]: t["Partitions"] for t in topics})  # type: ignore[misc]


# ---- records -------------------------------------------------------------------------------


def group_epoch_record(group_id: str, epoch: int) -> Record:
    """``newConsumerGroupEpochRecord``."""
    return _key(CONSUMER_GROUP_METADATA_TYPE, group_id), _value(
        CONSUMER_GROUP_METADATA_TYPE, {"Epoch": epoch}
    )


def subscription_metadata_record(group_id: str, metadata: Mapping[str, TopicMetadata]) -> Record:
    """``newConsumerGroupSubscriptionMetadataRecord`` (no rack metadata, as Kafka 4.0)."""
    topics = [
        {"TopicId": m.id, "TopicName": m.name, "NumPartitions": m.num_partitions,
         "PartitionMetadata": []}
        for _, m in sorted(metadata.items())
    ]  # fmt: skip
    return _key(CONSUMER_GROUP_PARTITION_METADATA_TYPE, group_id), _value(
        CONSUMER_GROUP_PARTITION_METADATA_TYPE, {"Topics": topics}
    )


def member_subscription_record(group_id: str, member: ConsumerGroupMember) -> Record:
    """``newConsumerGroupMemberSubscriptionRecord`` (topic names sorted, as Kafka)."""
    classic = member.classic_member_metadata
    value = {
        "InstanceId": member.instance_id,
        "RackId": member.rack_id,
        "ClientId": member.client_id,
        "ClientHost": member.client_host,
        "SubscribedTopicNames": sorted(member.subscribed_topic_names),
        # null when the member has none, as Kafka writes it (its member's field is null)
        "SubscribedTopicRegex": member.subscribed_topic_regex or None,
        "RebalanceTimeoutMs": member.rebalance_timeout_ms,
        "ServerAssignor": member.server_assignor_name,
        "ClassicMemberMetadata": None
        if classic is None
        else {
            "SessionTimeoutMs": classic.session_timeout_ms,
            "SupportedProtocols": [
                {"Name": name, "Metadata": metadata}
                for name, metadata in classic.supported_protocols
            ],
        },
    }
    return _key(CONSUMER_GROUP_MEMBER_METADATA_TYPE, group_id, member.member_id), _value(
        CONSUMER_GROUP_MEMBER_METADATA_TYPE, value
    )


def target_assignment_record(group_id: str, member_id: str, assignment: Assignment) -> Record:
    """``newConsumerGroupTargetAssignmentRecord``."""
    return _key(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE, group_id, member_id), _value(
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE,
        {"TopicPartitions": topic_partitions(assignment)},
    )


def target_assignment_epoch_record(group_id: str, epoch: int) -> Record:
    """``newConsumerGroupTargetAssignmentEpochRecord``."""
    return _key(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE, group_id), _value(
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE, {"AssignmentEpoch": epoch}
    )


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> Record:
    """``newConsumerGroupCurrentAssignmentRecord``."""
    value = {
        "MemberEpoch": member.member_epoch,
        "PreviousMemberEpoch": member.previous_member_epoch,
        "State": int(member.state),
        "AssignedPartitions": topic_partitions(member.assigned_partitions),
        "PartitionsPendingRevocation": topic_partitions(member.partitions_pending_revocation),
    }
    return _key(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE, group_id, member.member_id), _value(
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE, value
    )


# ---- tombstones ----------------------------------------------------------------------------


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """``removeMember``: current assignment, target assignment, subscription (this order)."""
    return [
        (_key(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE, group_id, member_id), None),
        (_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE, group_id, member_id), None),
        (_key(CONSUMER_GROUP_MEMBER_METADATA_TYPE, group_id, member_id), None),
    ]


def group_tombstones(group_id: str, member_ids: Iterable[str]) -> list[Record]:
    """``ConsumerGroup.createGroupTombstoneRecords``."""
    members = list(member_ids)
    records: list[Record] = [
        (_key(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE, group_id, m), None) for m in members
    ]
    records += [
        (_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE, group_id, m), None) for m in members
    ]
    records.append((_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE, group_id), None))
    records += [(_key(CONSUMER_GROUP_MEMBER_METADATA_TYPE, group_id, m), None) for m in members]
    records.append((_key(CONSUMER_GROUP_PARTITION_METADATA_TYPE, group_id), None))
    records.append((_key(CONSUMER_GROUP_METADATA_TYPE, group_id), None))
    return records


# ---- reading values back -------------------------------------------------------------------


def member_with_subscription(member: ConsumerGroupMember, value: Message) -> ConsumerGroupMember:
    """``Builder.updateWith(ConsumerGroupMemberMetadataValue)``."""
    classic = value.get("ClassicMemberMetadata")
    return member.replace(
        instance_id=value["InstanceId"],
        rack_id=value["RackId"],
        client_id=value["ClientId"],
        client_host=value["ClientHost"],
        subscribed_topic_names=frozenset(value["SubscribedTopicNames"]),
        subscribed_topic_regex=value["SubscribedTopicRegex"] or "",
        rebalance_timeout_ms=value["RebalanceTimeoutMs"],
        server_assignor_name=value["ServerAssignor"],
        classic_member_metadata=None
        if classic is None
        else ClassicMemberMetadata(
            classic["SessionTimeoutMs"],
            tuple((p["Name"], bytes(p["Metadata"])) for p in classic["SupportedProtocols"]),
        ),
    )


def subscription_metadata_from(value: Message) -> dict[str, TopicMetadata]:
    return {
        t["TopicName"]: TopicMetadata(t["TopicId"], t["TopicName"], t["NumPartitions"])
        for t in value["Topics"]
    }
