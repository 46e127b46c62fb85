"""The classic group protocol: JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13).

Transcribed from Kafka 3.9's ``JoinGroup*``, ``SyncGroup*``, ``Heartbeat*``
and ``LeaveGroup*`` JSON files. Layouts in flexible versions (older versions
use INT16/INT32 prefixes and no TAG_BUFFER)::

    JoinGroupRequest v0-9 (flexible 6+) => group_id:COMPACT_STRING session_timeout_ms:INT32
        rebalance_timeout_ms:INT32 (v1+) member_id:COMPACT_STRING
        group_instance_id:COMPACT_NULLABLE_STRING (v5+) protocol_type:COMPACT_STRING
        protocols:COMPACT_ARRAY reason:COMPACT_NULLABLE_STRING (v8+) TAG_BUFFER
      protocols => name:COMPACT_STRING metadata:COMPACT_BYTES TAG_BUFFER
    JoinGroupResponse => throttle_time_ms:INT32 (v2+) error_code:INT16 generation_id:INT32
        protocol_type:COMPACT_NULLABLE_STRING (v7+) protocol_name:COMPACT_NULLABLE_STRING
        leader:COMPACT_STRING skip_assignment:BOOL (v9+) member_id:COMPACT_STRING
        members:COMPACT_ARRAY TAG_BUFFER
      members => member_id:COMPACT_STRING group_instance_id:COMPACT_NULLABLE_STRING (v5+)
                 metadata:COMPACT_BYTES TAG_BUFFER

    SyncGroupRequest v0-5 (flexible 4+) => group_id generation_id:INT32 member_id
        group_instance_id (v3+) protocol_type (v5+) protocol_name (v5+) assignments:COMPACT_ARRAY
      assignments => member_id:COMPACT_STRING assignment:COMPACT_BYTES TAG_BUFFER
    SyncGroupResponse => throttle_time_ms (v1+) error_code protocol_type (v5+)
        protocol_name (v5+) assignment:COMPACT_BYTES TAG_BUFFER

    HeartbeatRequest v0-4 (flexible 4+) => group_id generation_id member_id
        group_instance_id (v3+) TAG_BUFFER
    HeartbeatResponse => throttle_time_ms (v1+) error_code TAG_BUFFER

    LeaveGroupRequest v0-5 (flexible 4+) => group_id member_id (v0-2) members (v3+) TAG_BUFFER
      members => member_id group_instance_id:COMPACT_NULLABLE_STRING reason (v5+) TAG_BUFFER
    LeaveGroupResponse => throttle_time_ms (v1+) error_code members (v3+) TAG_BUFFER
      members => member_id group_instance_id error_code TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

JOIN_GROUP_REQUEST = message(
    "JoinGroupRequest",
    api_key=11,
    valid="0-9",
    flexible="6+",
    fields=[
        field("group_id", "string"),
        field("session_timeout_ms", "int32"),
        field("rebalance_timeout_ms", "int32", "1+", default=-1),
        field("member_id", "string"),
        field("group_instance_id", "string", "5+", nullable="5+", default=None),
        field("protocol_type", "string"),
        field(
            "protocols",
            array(
                "JoinGroupRequestProtocol",
                [field("name", "string"), field("metadata", "bytes")],
            ),
        ),
        field("reason", "string", "8+", nullable="8+", default=None),
    ],
)

JOIN_GROUP_RESPONSE = message(
    "JoinGroupResponse",
    api_key=11,
    valid="0-9",
    flexible="6+",
    fields=[
        field("throttle_time_ms", "int32", "2+"),
        field("error_code", "int16"),
        field("generation_id", "int32", default=-1),
        field("protocol_type", "string", "7+", nullable="7+", default=None),
        field("protocol_name", "string", nullable="7+"),
        field("leader", "string"),
        field("skip_assignment", "bool", "9+"),
        field("member_id", "string"),
        field(
            "members",
            array(
                "JoinGroupResponseMember",
                [
                    field("member_id", "string"),
                    field("group_instance_id", "string", "5+", nullable="5+", default=None),
                    field("metadata", "bytes"),
                ],
            ),
        ),
    ],
)

SYNC_GROUP_REQUEST = message(
    "SyncGroupRequest",
    api_key=14,
    valid="0-5",
    flexible="4+",
    fields=[
        field("group_id", "string"),
        field("generation_id", "int32"),
        field("member_id", "string"),
        field("group_instance_id", "string", "3+", nullable="3+", default=None),
        field("protocol_type", "string", "5+", nullable="5+", default=None),
        field("protocol_name", "string", "5+", nullable="5+", default=None),
        field(
            "assignments",
            array(
                "SyncGroupRequestAssignment",
                [field("member_id", "string"), field("assignment", "bytes")],
            ),
        ),
    ],
)

SYNC_GROUP_RESPONSE = message(
    "SyncGroupResponse",
    api_key=14,
    valid="0-5",
    flexible="4+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field("error_code", "int16"),
        field("protocol_type", "string", "5+", nullable="5+", default=None),
        field("protocol_name", "string", "5+", nullable="5+", default=None),
        field("assignment", "bytes"),
    ],
)

HEARTBEAT_REQUEST = message(
    "HeartbeatRequest",
    api_key=12,
    valid="0-4",
    flexible="4+",
    fields=[
        field("group_id", "string"),
        field("generation_id", "int32"),
        field("member_id", "string"),
        field("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
)

HEARTBEAT_RESPONSE = message(
    "HeartbeatResponse",
    api_key=12,
    valid="0-4",
    flexible="4+",
    fields=[field("throttle_time_ms", "int32", "1+"), field("error_code", "int16")],
)

LEAVE_GROUP_REQUEST = message(
    "LeaveGroupRequest",
    api_key=13,
    valid="0-5",
    flexible="4+",
    fields=[
        field("group_id", "string"),
        field("member_id", "string", "0-2"),
        field(
            "members",
            array(
                "MemberIdentity",
                [
                    field("member_id", "string", "3+"),
                    field("group_instance_id", "string", "3+", nullable="3+", default=None),
                    field("reason", "string", "5+", nullable="5+", default=None),
                ],
            ),
            "3+",
        ),
    ],
)

LEAVE_GROUP_RESPONSE = message(
    "LeaveGroupResponse",
    api_key=13,
    valid="0-5",
    flexible="4+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field("error_code", "int16"),
        field(
            "members",
            array(
                "MemberResponse",
                [
                    field("member_id", "string", "3+"),
                    field("group_instance_id", "string", "3+", nullable="3+"),
                    field("error_code", "int16", "3+"),
                ],
            ),
            "3+",
        ),
    ],
)
