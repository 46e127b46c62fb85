"""Offsets: ListOffsets (2), OffsetForLeaderEpoch (23), DeleteRecords (21).

Transcribed from Kafka 3.9's ``ListOffsets*``, ``OffsetForLeaderEpoch*`` and
``DeleteRecords*`` JSON files. Layouts in flexible versions (older versions
use INT16/INT32 prefixes and no TAG_BUFFER)::

    ListOffsetsRequest v0-9 (flexible 6+) => replica_id:INT32 isolation_level:INT8 (v2+)
                                              topics:COMPACT_ARRAY TAG_BUFFER
      topics     => name:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 current_leader_epoch:INT32 (v4+) timestamp:INT64
                    max_num_offsets:INT32 (v0 only) TAG_BUFFER
    ListOffsetsResponse => throttle_time_ms:INT32 (v2+) topics:COMPACT_ARRAY TAG_BUFFER
      topics     => name:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 error_code:INT16 old_style_offsets:ARRAY(INT64) (v0 only)
                    timestamp:INT64 (v1+) offset:INT64 (v1+) leader_epoch:INT32 (v4+) TAG_BUFFER

    OffsetForLeaderEpochRequest v0-4 (flexible 4+) => replica_id:INT32 (v3+)
                                                      topics:COMPACT_ARRAY TAG_BUFFER
      topics     => topic:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition:INT32 current_leader_epoch:INT32 (v2+) leader_epoch:INT32 TAG_BUFFER
    OffsetForLeaderEpochResponse => throttle_time_ms:INT32 (v2+) topics:COMPACT_ARRAY TAG_BUFFER
      topics     => topic:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => error_code:INT16 partition:INT32 leader_epoch:INT32 (v1+) end_offset:INT64
                    TAG_BUFFER

    DeleteRecordsRequest v0-2 (flexible 2+) => topics:COMPACT_ARRAY timeout_ms:INT32 TAG_BUFFER
      topics     => name:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 offset:INT64 TAG_BUFFER
    DeleteRecordsResponse => throttle_time_ms:INT32 topics:COMPACT_ARRAY TAG_BUFFER
      topics     => name:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 low_watermark:INT64 error_code:INT16 TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

LIST_OFFSETS_REQUEST = message(
    "ListOffsetsRequest",
    api_key=2,
    valid="0-9",
    flexible="6+",
    fields=[
        field("replica_id", "int32"),
        field("isolation_level", "int8", "2+"),
        field(
            "topics",
            array(
                "ListOffsetsTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "ListOffsetsPartition",
                            [
                                field("partition_index", "int32"),
                                field("current_leader_epoch", "int32", "4+", default=-1),
                                field("timestamp", "int64"),
                                field("max_num_offsets", "int32", "0", default=1),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

_LIST_OFFSETS_PARTITION_RESPONSE = array(
    "ListOffsetsPartitionResponse",
    [
        field("partition_index", "int32"),
        field("error_code", "int16"),
        field("old_style_offsets", "[]int64", "0"),
        field("timestamp", "int64", "1+", default=-1),
        field("offset", "int64", "1+", default=-1),
        field("leader_epoch", "int32", "4+", default=-1),
    ],
)

LIST_OFFSETS_RESPONSE = message(
    "ListOffsetsResponse",
    api_key=2,
    valid="0-9",
    flexible="6+",
    fields=[
        field("throttle_time_ms", "int32", "2+"),
        field(
            "topics",
            array(
                "ListOffsetsTopicResponse",
                [
                    field("name", "string"),
                    field("partitions", _LIST_OFFSETS_PARTITION_RESPONSE),
                ],
            ),
        ),
    ],
)

OFFSET_FOR_LEADER_EPOCH_REQUEST = message(
    "OffsetForLeaderEpochRequest",
    api_key=23,
    valid="0-4",
    flexible="4+",
    fields=[
        field("replica_id", "int32", "3+", default=-2),
        field(
            "topics",
            array(
                "OffsetForLeaderTopic",
                [
                    field("topic", "string"),
                    field(
                        "partitions",
                        array(
                            "OffsetForLeaderPartition",
                            [
                                field("partition", "int32"),
                                field("current_leader_epoch", "int32", "2+", default=-1),
                                field("leader_epoch", "int32"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = message(
    "OffsetForLeaderEpochResponse",
    api_key=23,
    valid="0-4",
    flexible="4+",
    fields=[
        field("throttle_time_ms", "int32", "2+"),
        field(
            "topics",
            array(
                "OffsetForLeaderTopicResult",
                [
                    field("topic", "string"),
                    field(
                        "partitions",
                        array(
                            "EpochEndOffset",
                            [
                                field("error_code", "int16"),
                                field("partition", "int32"),
                                field("leader_epoch", "int32", "1+", default=-1),
                                field("end_offset", "int64", default=-1),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

DELETE_RECORDS_REQUEST = message(
    "DeleteRecordsRequest",
    api_key=21,
    valid="0-2",
    flexible="2+",
    fields=[
        field(
            "topics",
            array(
                "DeleteRecordsTopic",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "DeleteRecordsPartition",
                            [field("partition_index", "int32"), field("offset", "int64")],
                        ),
                    ),
                ],
            ),
        ),
        field("timeout_ms", "int32"),
    ],
)

DELETE_RECORDS_RESPONSE = message(
    "DeleteRecordsResponse",
    api_key=21,
    valid="0-2",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "topics",
            array(
                "DeleteRecordsTopicResult",
                [
                    field("name", "string"),
                    field(
                        "partitions",
                        array(
                            "DeleteRecordsPartitionResult",
                            [
                                field("partition_index", "int32"),
                                field("low_watermark", "int64"),
                                field("error_code", "int16"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
