"""Committed offsets and group administration: OffsetCommit (8), OffsetFetch (9),
OffsetDelete (47), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Transcribed from Kafka 3.9's JSON files of the same names. Layouts in
flexible versions (older versions use INT16/INT32 prefixes, no TAG_BUFFER)::

    OffsetCommitRequest v0-9 (flexible 8+) => group_id generation_id_or_member_epoch:INT32 (v1+)
        member_id (v1+) group_instance_id:COMPACT_NULLABLE_STRING (v7+)
        retention_time_ms:INT64 (v2-4) topics:COMPACT_ARRAY TAG_BUFFER
      topics     => name partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 committed_offset:INT64
                    committed_leader_epoch:INT32 (v6+) commit_timestamp:INT64 (v1 only)
                    committed_metadata:COMPACT_NULLABLE_STRING TAG_BUFFER
    OffsetCommitResponse => throttle_time_ms (v3+) topics:[name [partition_index error_code]]

    OffsetFetchRequest v0-9 (flexible 6+) => group_id (v0-7)
        topics:COMPACT_NULLABLE_ARRAY (v0-7, null = all from v2) groups:COMPACT_ARRAY (v8+)
        require_stable:BOOL (v7+) TAG_BUFFER
      groups => group_id member_id:COMPACT_NULLABLE_STRING (v9+) member_epoch:INT32 (v9+)
                topics:COMPACT_NULLABLE_ARRAY TAG_BUFFER
    OffsetFetchResponse => throttle_time_ms (v3+) topics (v0-7) error_code (v2-7) groups (v8+)
      partitions => partition_index committed_offset committed_leader_epoch (v5+)
                    metadata:COMPACT_NULLABLE_STRING error_code

    OffsetDeleteRequest v0 => group_id topics:[name [partition_index]]
    OffsetDeleteResponse v0 => error_code throttle_time_ms
                               topics:[name [partition_index error_code]]

    DescribeGroupsRequest v0-5 (flexible 5+) => groups:[]STRING include_authorized_operations (v3+)
    DescribeGroupsResponse => throttle_time_ms (v1+) groups:[error_code group_id group_state
        protocol_type protocol_data members:[member_id group_instance_id (v4+) client_id
        client_host member_metadata:BYTES member_assignment:BYTES] authorized_operations (v3+)]

    ListGroupsRequest v0-5 (flexible 3+) => states_filter:[]STRING (v4+) types_filter (v5+)
    ListGroupsResponse => throttle_time_ms (v1+) error_code groups:[group_id protocol_type
        group_state (v4+) group_type (v5+)]

    DeleteGroupsRequest v0-2 (flexible 2+) => groups_names:[]STRING
    DeleteGroupsResponse => throttle_time_ms results:[group_id error_code]
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message
from broker.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_OMITTED

OFFSET_COMMIT_REQUEST = message(
    "OffsetCommitRequest",
    api_key=8,
    valid="0-9",
    flexible="8+",
    fields=[
        field("group_id", "string"),
        field("generation_id_or_member_epoch", "int32", "1+", default=-1),
        field("member_id", "string", "1+"),
        field("group_instance_id", "string", "7+", nullable="7+", default=None),
        field("retention_time_ms", "int64", "2-4", default=-1),
        field(
            "topics",
            array(
                "OffsetCommitRequestTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "OffsetCommitRequestPartition",
                            [
                                field("partition_index", "int32"),
                                field("committed_offset", "int64"),
                                field("committed_leader_epoch", "int32", "6+", default=-1),
                                field("commit_timestamp", "int64", "1", default=-1),
                                field("committed_metadata", "string", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

OFFSET_COMMIT_RESPONSE = message(
    "OffsetCommitResponse",
    api_key=8,
    valid="0-9",
    flexible="8+",
    fields=[
        field("throttle_time_ms", "int32", "3+"),
        field(
            "topics",
            array(
                "OffsetCommitResponseTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "OffsetCommitResponsePartition",
                            [field("partition_index", "int32"), field("error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

OFFSET_FETCH_REQUEST = message(
    "OffsetFetchRequest",
    api_key=9,
    valid="0-9",
    flexible="6+",
    fields=[
        field("group_id", "string", "0-7"),
        field(
            "topics",
            array(
                "OffsetFetchRequestTopic",
                [field("name", "string", "0-7"), field("partition_indexes", "[]int32", "0-7")],
            ),
            "0-7",
            nullable="2-7",
        ),
        field(
            "groups",
            array(
                "OffsetFetchRequestGroup",
                [
                    field("group_id", "string", "8+"),
                    field("member_id", "string", "9+", nullable="9+", default=None),
                    field("member_epoch", "int32", "9+", default=-1),
                    field(
                        "topics",
                        array(
                            "OffsetFetchRequestTopics",
                            [
                                field("name", "string", "8+"),
                                field("partition_indexes", "[]int32", "8+"),
                            ],
                        ),
                        "8+",
                        nullable="8+",
                    ),
                ],
            ),
            "8+",
        ),
        field("require_stable", "bool", "7+"),
    ],
)

_FETCHED_PARTITION_V0 = array(
    "OffsetFetchResponsePartition",
    [
        field("partition_index", "int32", "0-7"),
        field("committed_offset", "int64", "0-7"),
        field("committed_leader_epoch", "int32", "5-7", default=-1),
        field("metadata", "string", "0-7", nullable="0-7"),
        field("error_code", "int16", "0-7"),
    ],
)

_FETCHED_PARTITION_V8 = array(
    "OffsetFetchResponsePartitions",
    [
        field("partition_index", "int32", "8+"),
        field("committed_offset", "int64", "8+"),
        field("committed_leader_epoch", "int32", "8+", default=-1),
        field("metadata", "string", "8+", nullable="8+"),
        field("error_code", "int16", "8+"),
    ],
)

OFFSET_FETCH_RESPONSE = message(
    "OffsetFetchResponse",
    api_key=9,
    valid="0-9",
    flexible="6+",
    fields=[
        field("throttle_time_ms", "int32", "3+"),
        field(
            "topics",
            array(
                "OffsetFetchResponseTopic",
                [
                    field("name", "string", "0-7"),
                    field("partitions", _FETCHED_PARTITION_V0, "0-7"),
                ],
            ),
            "0-7",
        ),
        field("error_code", "int16", "2-7"),
        field(
            "groups",
            array(
                "OffsetFetchResponseGroup",
                [
                    field("group_id", "string", "8+"),
                    field(
                        "topics",
                        array(
                            "OffsetFetchResponseTopics",
                            [
                                field("name", "string", "8+"),
                                field("partitions", _FETCHED_PARTITION_V8, "8+"),
                            ],
                        ),
                        "8+",
                    ),
                    field("error_code", "int16", "8+"),
                ],
            ),
            "8+",
        ),
    ],
)

OFFSET_DELETE_REQUEST = message(
    "OffsetDeleteRequest",
    api_key=47,
    valid="0",
    flexible="none",
    fields=[
        field("group_id", "string"),
        field(
            "topics",
            array(
                "OffsetDeleteRequestTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array("OffsetDeleteRequestPartition", [field("partition_index", "int32")]),
                    ),
                ],
            ),
        ),
    ],
)

OFFSET_DELETE_RESPONSE = message(
    "OffsetDeleteResponse",
    api_key=47,
    valid="0",
    flexible="none",
    fields=[
        field("error_code", "int16"),
        field("throttle_time_ms", "int32"),
        field(
            "topics",
            array(
                "OffsetDeleteResponseTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "OffsetDeleteResponsePartition",
                            [field("partition_index", "int32"), field("error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

DESCRIBE_GROUPS_REQUEST = message(
    "DescribeGroupsRequest",
    api_key=15,
    valid="0-5",
    flexible="5+",
    fields=[
        field("groups", "[]string"),
        field("include_authorized_operations", "bool", "3+"),
    ],
)

DESCRIBE_GROUPS_RESPONSE = message(
    "DescribeGroupsResponse",
    api_key=15,
    valid="0-5",
    flexible="5+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field(
            "groups",
            array(
                "DescribedGroup",
                [
                    field("error_code", "int16"),
                    field("group_id", "string"),
                    field("group_state", "string"),
                    field("protocol_type", "string"),
                    field("protocol_data", "string"),
                    field(
                        "members",
                        array(
                            "DescribedGroupMember",
                            [
                                field("member_id", "string"),
                                field(
                                    "group_instance_id", "string", "4+", nullable="4+", default=None
                                ),
                                field("client_id", "string"),
                                field("client_host", "string"),
                                field("member_metadata", "bytes"),
                                field("member_assignment", "bytes"),
                            ],
                        ),
                    ),
                    field(
                        "authorized_operations",
                        "int32",
                        "3+",
                        default=AUTHORIZED_OPERATIONS_OMITTED,
                    ),
                ],
            ),
        ),
    ],
)

LIST_GROUPS_REQUEST = message(
    "ListGroupsRequest",
    api_key=16,
    valid="0-5",
    flexible="3+",
    fields=[field("states_filter", "[]string", "4+"), field("types_filter", "[]string", "5+")],
)

LIST_GROUPS_RESPONSE = message(
    "ListGroupsResponse",
    api_key=16,
    valid="0-5",
    flexible="3+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field("error_code", "int16"),
        field(
            "groups",
            array(
                "ListedGroup",
                [
                    field("group_id", "string"),
                    field("protocol_type", "string"),
                    field("group_state", "string", "4+"),
                    field("group_type", "string", "5+"),
                ],
            ),
        ),
    ],
)

DELETE_GROUPS_REQUEST = message(
    "DeleteGroupsRequest",
    api_key=42,
    valid="0-2",
    flexible="2+",
    fields=[field("groups_names", "[]string")],
)

DELETE_GROUPS_RESPONSE = message(
    "DeleteGroupsResponse",
    api_key=42,
    valid="0-2",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "results",
            array(
                "DeletableGroupResult", [field("group_id", "string"), field("error_code", "int16")]
            ),
        ),
    ],
)
