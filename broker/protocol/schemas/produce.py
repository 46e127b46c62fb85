"""Produce (API key 0), versions 0-11, flexible from 9.

Transcribed from Kafka 3.9's ``ProduceRequest.json`` / ``ProduceResponse.json``.
Request v9+ (v3-v8 the same with INT16/INT32 length prefixes and no tags;
v0-v2 have no transactional_id)::

    ProduceRequest => transactional_id:COMPACT_NULLABLE_STRING acks:INT16 timeout_ms:INT32
                      topic_data:COMPACT_ARRAY TAG_BUFFER
      topic_data     => name:COMPACT_STRING partition_data:COMPACT_ARRAY TAG_BUFFER
      partition_data => index:INT32 records:COMPACT_RECORDS TAG_BUFFER

Response v10+::

    ProduceResponse => responses:COMPACT_ARRAY throttle_time_ms:INT32
                       TAG_BUFFER{0: node_endpoints}
      responses           => name:COMPACT_STRING partition_responses:COMPACT_ARRAY TAG_BUFFER
      partition_responses => index:INT32 error_code:INT16 base_offset:INT64
                             log_append_time_ms:INT64 (v2+) log_start_offset:INT64 (v5+)
                             record_errors:COMPACT_ARRAY (v8+)
                             error_message:COMPACT_NULLABLE_STRING (v8+)
                             TAG_BUFFER{0: current_leader (v10+)}
      record_errors       => batch_index:INT32 batch_index_error_message:COMPACT_NULLABLE_STRING
                             TAG_BUFFER
      current_leader      => leader_id:INT32 leader_epoch:INT32 TAG_BUFFER
      node_endpoints      => node_id:INT32 host:COMPACT_STRING port:INT32
                             rack:COMPACT_NULLABLE_STRING TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message, struct

PRODUCE_REQUEST = message(
    "ProduceRequest",
    api_key=0,
    valid="0-11",
    flexible="9+",
    fields=[
        field("transactional_id", "string", "3+", nullable="3+", default=None),
        field("acks", "int16"),
        field("timeout_ms", "int32"),
        field(
            "topic_data",
            array(
                "TopicProduceData",
                [
                    field("name", "string"),
                    field(
                        "partition_data",
                        array(
                            "PartitionProduceData",
                            [field("index", "int32"), field("records", "records", nullable="0+")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

_RECORD_ERROR = array(
    "BatchIndexAndErrorMessage",
    [
        field("batch_index", "int32", "8+"),
        field("batch_index_error_message", "string", "8+", nullable="8+", default=None),
    ],
)
_CURRENT_LEADER = struct(
    "LeaderIdAndEpoch",
    [
        field("leader_id", "int32", "10+", default=-1),
        field("leader_epoch", "int32", "10+", default=-1),
    ],
)
_PARTITION_RESPONSE = array(
    "PartitionProduceResponse",
    [
        field("index", "int32"),
        field("error_code", "int16"),
        field("base_offset", "int64"),
        field("log_append_time_ms", "int64", "2+", default=-1),
        field("log_start_offset", "int64", "5+", default=-1),
        field("record_errors", _RECORD_ERROR, "8+"),
        field("error_message", "string", "8+", nullable="8+", default=None),
        field("current_leader", _CURRENT_LEADER, "10+", tag=0, tagged="10+"),
    ],
)
_NODE_ENDPOINT = array(
    "NodeEndpoint",
    [
        field("node_id", "int32", "10+"),
        field("host", "string", "10+"),
        field("port", "int32", "10+"),
        field("rack", "string", "10+", nullable="10+", default=None),
    ],
)

PRODUCE_RESPONSE = message(
    "ProduceResponse",
    api_key=0,
    valid="0-11",
    flexible="9+",
    fields=[
        field(
            "responses",
            array(
                "TopicProduceResponse",
                [field("name", "string"), field("partition_responses", _PARTITION_RESPONSE)],
            ),
        ),
        field("throttle_time_ms", "int32", "1+"),
        field("node_endpoints", _NODE_ENDPOINT, "10+", tag=0, tagged="10+"),
    ],
)
