"""Kafka 3.9's key and value schemas of ``__consumer_offsets``, and their serde.

Transcribed from ``group-coordinator/src/main/resources/common/message/``
(field names as there). ``decode_record`` / ``encode_key`` /
``encode_value`` are ``CoordinatorRecordSerde``: a key is its record type
(the key message's version) and the key message; a value is its version and
the value message, or None (a tombstone).

Versions written (``MetadataVersion`` of Kafka 3.9 at its latest IBP):
OffsetCommitValue v3, or v1 when the commit carries an expire timestamp
(OffsetCommit v2-v4 with a retention time); GroupMetadataValue v3.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.group_records.schema import (
    GroupRecordError,
    Message,
    Schema,
    UnknownRecordTypeError,
    f,
    schema,
)

OFFSET_COMMIT_KEY = schema(
    "OffsetCommitKey",
    "0-1",
    None,
    [f("group", "string", "0-1"), f("topic", "string", "0-1"), f("partition", "int32", "0-1")],
)

OFFSET_COMMIT_VALUE = schema(
    "OffsetCommitValue",
    "0-4",
    "4+",
    [
        f("offset", "int64"),
        f("leaderEpoch", "int32", "3+", default=-1),
        f("metadata", "string"),
        f("commitTimestamp", "int64"),
        f("expireTimestamp", "int64", "1", default=-1),
    ],
)

GROUP_METADATA_KEY = schema("GroupMetadataKey", "2", None, [f("group", "string", "2")])

GROUP_METADATA_VALUE = schema(
    "GroupMetadataValue",
    "0-4",
    "4+",
    [
        f("protocolType", "string"),
        f("generation", "int32"),
        f("protocol", "string", nullable="0+"),
        f("leader", "string", nullable="0+"),
        f("currentStateTimestamp", "int64", "2+", default=-1),
        f(
            "members",
            "[]",
            fields=[
                f("memberId", "string"),
                f("groupInstanceId", "string", "3+", nullable="3+", default="null"),
                f("clientId", "string"),
                f("clientHost", "string"),
                f("rebalanceTimeout", "int32", "1+", default=-1),
                f("sessionTimeout", "int32"),
                f("subscription", "bytes"),
                f("assignment", "bytes"),
            ],
        ),
    ],
)

_TOPIC_PARTITIONS = [f("TopicId", "uuid"), f("Partitions", "[]int32")]

CONSUMER_GROUP_METADATA_KEY = schema(
    "ConsumerGroupMetadataKey", "3", None, [f("GroupId", "string", "3")]
)
CONSUMER_GROUP_METADATA_VALUE = schema(
    "ConsumerGroupMetadataValue", "0", "0+", [f("Epoch", "int32")]
)
CONSUMER_GROUP_PARTITION_METADATA_KEY = schema(
    "ConsumerGroupPartitionMetadataKey", "4", None, [f("GroupId", "string", "4")]
)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = schema(
    "ConsumerGroupPartitionMetadataValue",
    "0",
    "0+",
    [
        f(
            "Topics",
            "[]",
            fields=[
                f("TopicId", "uuid"),
                f("TopicName", "string"),
                f("NumPartitions", "int32"),
                f(
                    "PartitionMetadata",
                    "[]",
                    fields=[f("Partition", "int32"), f("Racks", "[]string")],
                ),
            ],
        )
    ],
)
CONSUMER_GROUP_MEMBER_METADATA_KEY = schema(
    "ConsumerGroupMemberMetadataKey",
    "5",
    None,
    [f("GroupId", "string", "5"), f("MemberId", "string", "5")],
)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = schema(
    "ConsumerGroupMemberMetadataValue",
    "0",
    "0+",
    [
        f("InstanceId", "string", nullable="0+"),
        f("RackId", "string", nullable="0+"),
        f("ClientId", "string"),
        f("ClientHost", "string"),
        f("SubscribedTopicNames", "[]string"),
        f("SubscribedTopicRegex", "string", nullable="0+"),
        f("RebalanceTimeoutMs", "int32", default=-1),
        f("ServerAssignor", "string", nullable="0+"),
        f(
            "ClassicMemberMetadata",
            "struct",
            nullable="0+",
            tag=0,
            fields=[
                f("SessionTimeoutMs", "int32"),
                f(
                    "SupportedProtocols",
                    "[]",
                    fields=[f("Name", "string"), f("Metadata", "bytes")],
                ),
            ],
        ),
    ],
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = schema(
    "ConsumerGroupTargetAssignmentMetadataKey", "6", None, [f("GroupId", "string", "6")]
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = schema(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", [f("AssignmentEpoch", "int32")]
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = schema(
    "ConsumerGroupTargetAssignmentMemberKey",
    "7",
    None,
    [f("GroupId", "string", "7"), f("MemberId", "string", "7")],
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = schema(
    "ConsumerGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    [f("TopicPartitions", "[]", fields=_TOPIC_PARTITIONS)],
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = schema(
    "ConsumerGroupCurrentMemberAssignmentKey",
    "8",
    None,
    [f("GroupId", "string", "8"), f("MemberId", "string", "8")],
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = schema(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    [
        f("MemberEpoch", "int32"),
        f("PreviousMemberEpoch", "int32"),
        f("State", "int8"),
        f("AssignedPartitions", "[]", fields=_TOPIC_PARTITIONS),
        f("PartitionsPendingRevocation", "[]", fields=_TOPIC_PARTITIONS),
    ],
)

OFFSET_COMMIT_TYPE = 1  # the type Kafka writes (0 is the older key, same fields)
GROUP_METADATA_TYPE = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3

#: record type -> (key schema, value schema)
RECORD_TYPES: dict[int, tuple[Schema, Schema]] = {
    0: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
}


class CoordinatorRecord(NamedTuple):
    """A decoded record: its type and key, and its value version and value (None: tombstone)."""

    record_type: int
    key: Message
    value_version: int
    value: Message | None


def _version(buf: bytes | memoryview, what: str) -> int:
    if len(buf) < 2:
        raise GroupRecordError(f"Could not read version from {what}'s buffer.")
    return int.from_bytes(buf[:2], "big", signed=True)


def decode_record(key: bytes | memoryview, value: bytes | memoryview | None) -> CoordinatorRecord:
    """``CoordinatorRecordSerde.deserialize``: UnknownRecordTypeError for a type we
    do not know, GroupRecordError for bytes that do not fit their schema."""
    record_type = _version(key, "key")
    schemas = RECORD_TYPES.get(record_type)
    if schemas is None:
        raise UnknownRecordTypeError(record_type)
    key_schema, value_schema = schemas
    key_message = key_schema.read(memoryview(key)[2:], record_type)
    if value is None:
        return CoordinatorRecord(record_type, key_message, -1, None)
    version = _version(value, "value")
    return CoordinatorRecord(
        record_type, key_message, version, value_schema.read(memoryview(value)[2:], version)
    )


def encode_key(record_type: int, key: Message) -> bytes:
    schemas = RECORD_TYPES.get(record_type)
    if schemas is None:
        raise UnknownRecordTypeError(record_type)
    return record_type.to_bytes(2, "big") + schemas[0].write(key, record_type)


def encode_value(record_type: int, version: int, value: Message) -> bytes:
    schemas = RECORD_TYPES.get(record_type)
    if schemas is None:
        raise UnknownRecordTypeError(record_type)
    return version.to_bytes(2, "big") + schemas[1].write(value, version)


def _str16(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 32767:
        raise GroupRecordError(f"string of {len(raw)} bytes is too long")
    return len(raw).to_bytes(2, "big") + raw


_KEY_HEAD = OFFSET_COMMIT_TYPE.to_bytes(2, "big")
_V3_HEAD = struct.Struct(">hqi")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1, packed directly (the commit hot path; the schema writes the same)."""
    return _KEY_HEAD + _str16(group) + _str16(topic) + _INT32.pack(partition)


def offset_commit_value(
    offset: int, leader_epoch: int, metadata: str, commit_timestamp: int, expire_timestamp: int
) -> bytes:
    """``newOffsetCommitRecord``'s value: v1 with an expire timestamp, else v3 (packed
    directly: the commit hot path; the schema writes the same bytes)."""
    if expire_timestamp == -1:
        return (
            _V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch)
            + _str16(metadata)
            + _INT64.pack(commit_timestamp)
        )
    version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    return encode_value(
        OFFSET_COMMIT_TYPE,
        version,
        {
            "offset": offset,
            "leaderEpoch": leader_epoch,
            "metadata": metadata,
            "commitTimestamp": commit_timestamp,
            "expireTimestamp": expire_timestamp,
        },
    )


def group_metadata_key(group: str) -> bytes:
    return encode_key(GROUP_METADATA_TYPE, {"group": group})
