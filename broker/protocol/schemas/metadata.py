"""Metadata (API key 3), versions 0-12, flexible from 9.

Transcribed from Kafka 3.9's ``MetadataRequest.json`` / ``MetadataResponse.json``.
In v0 an empty topic array means "all topics"; from v1 null means "all
topics" and an empty array "none".

Request v9+::

    MetadataRequest => topics:COMPACT_NULLABLE_ARRAY allow_auto_topic_creation:BOOL (v4+)
                       include_cluster_authorized_operations:BOOL (v8-v10)
                       include_topic_authorized_operations:BOOL (v8+) TAG_BUFFER
      topics => topic_id:UUID (v10+) name:COMPACT_NULLABLE_STRING (null only v10+) TAG_BUFFER

Response v9+::

    MetadataResponse => throttle_time_ms:INT32 (v3+) brokers:COMPACT_ARRAY
                        cluster_id:COMPACT_NULLABLE_STRING (v2+) controller_id:INT32 (v1+)
                        topics:COMPACT_ARRAY cluster_authorized_operations:INT32 (v8-v10) TAG_BUFFER
      brokers    => node_id:INT32 host:COMPACT_STRING port:INT32
                    rack:COMPACT_NULLABLE_STRING (v1+) TAG_BUFFER
      topics     => error_code:INT16 name:COMPACT_NULLABLE_STRING (null only v12+)
                    topic_id:UUID (v10+) is_internal:BOOL (v1+) partitions:COMPACT_ARRAY
                    topic_authorized_operations:INT32 (v8+) TAG_BUFFER
      partitions => error_code:INT16 partition_index:INT32 leader_id:INT32
                    leader_epoch:INT32 (v7+) replica_nodes:COMPACT_ARRAY(INT32)
                    isr_nodes:COMPACT_ARRAY(INT32) offline_replicas:COMPACT_ARRAY(INT32) (v5+)
                    TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

#: ``MetadataResponse`` default of the authorized-operations bit fields
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

METADATA_REQUEST = message(
    "MetadataRequest",
    api_key=3,
    valid="0-12",
    flexible="9+",
    fields=[
        field(
            "topics",
            array(
                "MetadataRequestTopic",
                [
                    field("topic_id", "uuid", "10+"),
                    field("name", "string", nullable="10+"),
                ],
            ),
            nullable="1+",
        ),
        field("allow_auto_topic_creation", "bool", "4+", default=True),
        field("include_cluster_authorized_operations", "bool", "8-10"),
        field("include_topic_authorized_operations", "bool", "8+"),
    ],
)

_BROKER = array(
    "MetadataResponseBroker",
    [
        field("node_id", "int32"),
        field("host", "string"),
        field("port", "int32"),
        field("rack", "string", "1+", nullable="1+", default=None),
    ],
)
_PARTITION = array(
    "MetadataResponsePartition",
    [
        field("error_code", "int16"),
        field("partition_index", "int32"),
        field("leader_id", "int32"),
        field("leader_epoch", "int32", "7+", default=-1),
        field("replica_nodes", "[]int32"),
        field("isr_nodes", "[]int32"),
        field("offline_replicas", "[]int32", "5+"),
    ],
)
_TOPIC = array(
    "MetadataResponseTopic",
    [
        field("error_code", "int16"),
        field("name", "string", nullable="12+"),
        field("topic_id", "uuid", "10+"),
        field("is_internal", "bool", "1+", default=False),
        field("partitions", _PARTITION),
        field("topic_authorized_operations", "int32", "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

METADATA_RESPONSE = message(
    "MetadataResponse",
    api_key=3,
    valid="0-12",
    flexible="9+",
    fields=[
        field("throttle_time_ms", "int32", "3+"),
        field("brokers", _BROKER),
        field("cluster_id", "string", "2+", nullable="2+", default=None),
        field("controller_id", "int32", "1+", default=-1),
        field("topics", _TOPIC),
        field(
            "cluster_authorized_operations",
            "int32",
            "8-10",
            default=AUTHORIZED_OPERATIONS_OMITTED,
        ),
    ],
)
