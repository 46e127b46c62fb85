"""Topic administration: CreateTopics (19), DeleteTopics (20), CreatePartitions (37).

Transcribed from Kafka 3.9's ``CreateTopics*``, ``DeleteTopics*`` and
``CreatePartitions*`` JSON files. Layouts in flexible versions (older
versions use INT16/INT32 prefixes and no TAG_BUFFER)::

    CreateTopicsRequest v0-7 (flexible 5+) => topics:COMPACT_ARRAY timeout_ms:INT32
                                              validate_only:BOOL (v1+) TAG_BUFFER
      topics      => name:COMPACT_STRING num_partitions:INT32 replication_factor:INT16
                     assignments:COMPACT_ARRAY configs:COMPACT_ARRAY TAG_BUFFER
      assignments => partition_index:INT32 broker_ids:COMPACT_ARRAY(INT32) TAG_BUFFER
      configs     => name:COMPACT_STRING value:COMPACT_NULLABLE_STRING TAG_BUFFER
    CreateTopicsResponse => throttle_time_ms:INT32 (v2+) topics:COMPACT_ARRAY TAG_BUFFER
      topics  => name:COMPACT_STRING topic_id:UUID (v7+) error_code:INT16
                 error_message:COMPACT_NULLABLE_STRING (v1+) num_partitions:INT32 (v5+)
                 replication_factor:INT16 (v5+) configs:COMPACT_NULLABLE_ARRAY (v5+)
                 TAG_BUFFER{0: topic_config_error_code:INT16}
      configs => name:COMPACT_STRING value:COMPACT_NULLABLE_STRING read_only:BOOL
                 config_source:INT8 is_sensitive:BOOL TAG_BUFFER

    DeleteTopicsRequest v0-6 (flexible 4+) => topics:COMPACT_ARRAY (v6+)
                                              topic_names:COMPACT_ARRAY(COMPACT_STRING) (v0-v5)
                                              timeout_ms:INT32 TAG_BUFFER
      topics => name:COMPACT_NULLABLE_STRING topic_id:UUID TAG_BUFFER
    DeleteTopicsResponse => throttle_time_ms:INT32 (v1+) responses:COMPACT_ARRAY TAG_BUFFER
      responses => name:COMPACT_NULLABLE_STRING (null only v6+) topic_id:UUID (v6+)
                   error_code:INT16 error_message:COMPACT_NULLABLE_STRING (v5+) TAG_BUFFER

    CreatePartitionsRequest v0-3 (flexible 2+) => topics:COMPACT_ARRAY timeout_ms:INT32
                                                  validate_only:BOOL TAG_BUFFER
      topics      => name:COMPACT_STRING count:INT32 assignments:COMPACT_NULLABLE_ARRAY TAG_BUFFER
      assignments => broker_ids:COMPACT_ARRAY(INT32) TAG_BUFFER
    CreatePartitionsResponse => throttle_time_ms:INT32 results:COMPACT_ARRAY TAG_BUFFER
      results => name:COMPACT_STRING error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                 TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

_CREATABLE_TOPIC = array(
    "CreatableTopic",
    [
        field("name", "string"),
        field("num_partitions", "int32"),
        field("replication_factor", "int16"),
        field(
            "assignments",
            array(
                "CreatableReplicaAssignment",
                [field("partition_index", "int32"), field("broker_ids", "[]int32")],
            ),
        ),
        field(
            "configs",
            array(
                "CreatableTopicConfig",
                [field("name", "string"), field("value", "string", nullable="0+")],
            ),
        ),
    ],
)

CREATE_TOPICS_REQUEST = message(
    "CreateTopicsRequest",
    api_key=19,
    valid="0-7",
    flexible="5+",
    fields=[
        field("topics", _CREATABLE_TOPIC),
        field("timeout_ms", "int32", default=60000),
        field("validate_only", "bool", "1+", default=False),
    ],
)

_CREATABLE_TOPIC_CONFIGS = array(
    "CreatableTopicConfigs",
    [
        field("name", "string", "5+"),
        field("value", "string", "5+", nullable="5+"),
        field("read_only", "bool", "5+"),
        field("config_source", "int8", "5+", default=-1),
        field("is_sensitive", "bool", "5+"),
    ],
)
_CREATABLE_TOPIC_RESULT = array(
    "CreatableTopicResult",
    [
        field("name", "string"),
        field("topic_id", "uuid", "7+"),
        field("error_code", "int16"),
        field("error_message", "string", "1+", nullable="0+"),
        field("topic_config_error_code", "int16", "5+", tag=0, tagged="5+"),
        field("num_partitions", "int32", "5+", default=-1),
        field("replication_factor", "int16", "5+", default=-1),
        field("configs", _CREATABLE_TOPIC_CONFIGS, "5+", nullable="5+"),
    ],
)

CREATE_TOPICS_RESPONSE = message(
    "CreateTopicsResponse",
    api_key=19,
    valid="0-7",
    flexible="5+",
    fields=[
        field("throttle_time_ms", "int32", "2+"),
        field("topics", _CREATABLE_TOPIC_RESULT),
    ],
)

DELETE_TOPICS_REQUEST = message(
    "DeleteTopicsRequest",
    api_key=20,
    valid="0-6",
    flexible="4+",
    fields=[
        field(
            "topics",
            array(
                "DeleteTopicState",
                [
                    field("name", "string", "6+", nullable="6+", default=None),
                    field("topic_id", "uuid", "6+"),
                ],
            ),
            "6+",
        ),
        field("topic_names", "[]string", "0-5"),
        field("timeout_ms", "int32"),
    ],
)

DELETE_TOPICS_RESPONSE = message(
    "DeleteTopicsResponse",
    api_key=20,
    valid="0-6",
    flexible="4+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field(
            "responses",
            array(
                "DeletableTopicResult",
                [
                    field("name", "string", nullable="6+"),
                    field("topic_id", "uuid", "6+"),
                    field("error_code", "int16"),
                    field("error_message", "string", "5+", nullable="5+", default=None),
                ],
            ),
        ),
    ],
)

CREATE_PARTITIONS_REQUEST = message(
    "CreatePartitionsRequest",
    api_key=37,
    valid="0-3",
    flexible="2+",
    fields=[
        field(
            "topics",
            array(
                "CreatePartitionsTopic",
                [
                    field("name", "string"),
                    field("count", "int32"),
                    field(
                        "assignments",
                        array("CreatePartitionsAssignment", [field("broker_ids", "[]int32")]),
                        nullable="0+",
                    ),
                ],
            ),
        ),
        field("timeout_ms", "int32"),
        field("validate_only", "bool"),
    ],
)

CREATE_PARTITIONS_RESPONSE = message(
    "CreatePartitionsResponse",
    api_key=37,
    valid="0-3",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "results",
            array(
                "CreatePartitionsTopicResult",
                [
                    field("name", "string"),
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+", default=None),
                ],
            ),
        ),
    ],
)
