"""Fetch (API key 1), versions 0-17, flexible from 12.

Transcribed from Kafka 3.9's ``FetchRequest.json`` / ``FetchResponse.json``.
Topic names give way to topic ids in v13; ``replica_id`` moves into the
tagged ``replica_state`` in v15. Request v12+::

    FetchRequest => replica_id:INT32 (v0-v14) max_wait_ms:INT32 min_bytes:INT32
                    max_bytes:INT32 (v3+) isolation_level:INT8 (v4+) session_id:INT32 (v7+)
                    session_epoch:INT32 (v7+) topics:COMPACT_ARRAY
                    forgotten_topics_data:COMPACT_ARRAY (v7+) rack_id:COMPACT_STRING (v11+)
                    TAG_BUFFER{0: cluster_id:COMPACT_NULLABLE_STRING, 1: replica_state (v15+)}
      replica_state         => replica_id:INT32 replica_epoch:INT64 TAG_BUFFER
      topics                => topic:COMPACT_STRING (v0-v12) topic_id:UUID (v13+)
                               partitions:COMPACT_ARRAY TAG_BUFFER
      partitions            => partition:INT32 current_leader_epoch:INT32 (v9+) fetch_offset:INT64
                               last_fetched_epoch:INT32 (v12+) log_start_offset:INT64 (v5+)
                               partition_max_bytes:INT32
                               TAG_BUFFER{0: replica_directory_id:UUID (v17+)}
      forgotten_topics_data => topic:COMPACT_STRING (v7-v12) topic_id:UUID (v13+)
                               partitions:COMPACT_ARRAY(INT32) TAG_BUFFER

Response v12+::

    FetchResponse => throttle_time_ms:INT32 (v1+) error_code:INT16 (v7+) session_id:INT32 (v7+)
                     responses:COMPACT_ARRAY TAG_BUFFER{0: node_endpoints (v16+)}
      responses  => topic:COMPACT_STRING (v0-v12) topic_id:UUID (v13+) partitions:COMPACT_ARRAY
                    TAG_BUFFER
      partitions => partition_index:INT32 error_code:INT16 high_watermark:INT64
                    last_stable_offset:INT64 (v4+) log_start_offset:INT64 (v5+)
                    aborted_transactions:COMPACT_NULLABLE_ARRAY (v4+)
                    preferred_read_replica:INT32 (v11+) records:COMPACT_NULLABLE_RECORDS
                    TAG_BUFFER{0: diverging_epoch, 1: current_leader, 2: snapshot_id}
      aborted_transactions => producer_id:INT64 first_offset:INT64 TAG_BUFFER
      diverging_epoch      => epoch:INT32 end_offset:INT64 TAG_BUFFER
      current_leader       => leader_id:INT32 leader_epoch:INT32 TAG_BUFFER
      snapshot_id          => end_offset:INT64 epoch:INT32 TAG_BUFFER
      node_endpoints       => node_id:INT32 host:COMPACT_STRING port:INT32
                              rack:COMPACT_NULLABLE_STRING TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message, struct

_REPLICA_STATE = struct(
    "ReplicaState",
    [
        field("replica_id", "int32", "15+", default=-1),
        field("replica_epoch", "int64", "15+", default=-1),
    ],
)
_FETCH_PARTITION = array(
    "FetchPartition",
    [
        field("partition", "int32"),
        field("current_leader_epoch", "int32", "9+", default=-1),
        field("fetch_offset", "int64"),
        field("last_fetched_epoch", "int32", "12+", default=-1),
        field("log_start_offset", "int64", "5+", default=-1),
        field("partition_max_bytes", "int32"),
        field("replica_directory_id", "uuid", "17+", tag=0, tagged="17+"),
    ],
)
_FETCH_TOPIC = array(
    "FetchTopic",
    [
        field("topic", "string", "0-12"),
        field("topic_id", "uuid", "13+"),
        field("partitions", _FETCH_PARTITION),
    ],
)
_FORGOTTEN_TOPIC = array(
    "ForgottenTopic",
    [
        field("topic", "string", "7-12"),
        field("topic_id", "uuid", "13+"),
        field("partitions", "[]int32", "7+"),
    ],
)

FETCH_REQUEST = message(
    "FetchRequest",
    api_key=1,
    valid="0-17",
    flexible="12+",
    fields=[
        field("cluster_id", "string", "12+", nullable="12+", default=None, tag=0, tagged="12+"),
        field("replica_id", "int32", "0-14", default=-1),
        field("replica_state", _REPLICA_STATE, "15+", tag=1, tagged="15+"),
        field("max_wait_ms", "int32"),
        field("min_bytes", "int32"),
        field("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        field("isolation_level", "int8", "4+", default=0),
        field("session_id", "int32", "7+", default=0),
        field("session_epoch", "int32", "7+", default=-1),
        field("topics", _FETCH_TOPIC),
        field("forgotten_topics_data", _FORGOTTEN_TOPIC, "7+"),
        field("rack_id", "string", "11+", default=""),
    ],
)

_ABORTED_TRANSACTION = array(
    "AbortedTransaction",
    [
        field("producer_id", "int64", "4+"),
        field("first_offset", "int64", "4+"),
    ],
)
_DIVERGING_EPOCH = struct(
    "EpochEndOffset",
    [
        field("epoch", "int32", "12+", default=-1),
        field("end_offset", "int64", "12+", default=-1),
    ],
)
_CURRENT_LEADER = struct(
    "LeaderIdAndEpoch",
    [
        field("leader_id", "int32", "12+", default=-1),
        field("leader_epoch", "int32", "12+", default=-1),
    ],
)
_SNAPSHOT_ID = struct(
    "SnapshotId",
    [
        field("end_offset", "int64", default=-1),
        field("epoch", "int32", default=-1),
    ],
)
_PARTITION_DATA = array(
    "PartitionData",
    [
        field("partition_index", "int32"),
        field("error_code", "int16"),
        field("high_watermark", "int64"),
        field("last_stable_offset", "int64", "4+", default=-1),
        field("log_start_offset", "int64", "5+", default=-1),
        field("diverging_epoch", _DIVERGING_EPOCH, "12+", tag=0, tagged="12+"),
        field("current_leader", _CURRENT_LEADER, "12+", tag=1, tagged="12+"),
        field("snapshot_id", _SNAPSHOT_ID, "12+", tag=2, tagged="12+"),
        field("aborted_transactions", _ABORTED_TRANSACTION, "4+", nullable="4+"),
        field("preferred_read_replica", "int32", "11+", default=-1),
        field("records", "records", nullable="0+"),
    ],
)
_TOPIC_RESPONSE = array(
    "FetchableTopicResponse",
    [
        field("topic", "string", "0-12"),
        field("topic_id", "uuid", "13+"),
        field("partitions", _PARTITION_DATA),
    ],
)
_NODE_ENDPOINT = array(
    "NodeEndpoint",
    [
        field("node_id", "int32", "16+"),
        field("host", "string", "16+"),
        field("port", "int32", "16+"),
        field("rack", "string", "16+", nullable="16+", default=None),
    ],
)

FETCH_RESPONSE = message(
    "FetchResponse",
    api_key=1,
    valid="0-17",
    flexible="12+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field("error_code", "int16", "7+"),
        field("session_id", "int32", "7+", default=0),
        field("responses", _TOPIC_RESPONSE),
        field("node_endpoints", _NODE_ENDPOINT, "16+", tag=0, tagged="16+"),
    ],
)
