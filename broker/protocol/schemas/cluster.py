"""Cluster discovery: DescribeCluster (60), FindCoordinator (10), DescribeLogDirs (35).

Transcribed from Kafka 3.9's ``DescribeCluster*``, ``FindCoordinator*`` and
``DescribeLogDirs*`` JSON files. Layouts in flexible versions (older
versions use INT16/INT32 prefixes and no TAG_BUFFER)::

    DescribeClusterRequest v0-1 (always flexible) => include_cluster_authorized_operations:BOOL
                                                     endpoint_type:INT8 (v1+) TAG_BUFFER
    DescribeClusterResponse => throttle_time_ms:INT32 error_code:INT16
                               error_message:COMPACT_NULLABLE_STRING endpoint_type:INT8 (v1+)
                               cluster_id:COMPACT_STRING controller_id:INT32 brokers:COMPACT_ARRAY
                               cluster_authorized_operations:INT32 TAG_BUFFER
      brokers => broker_id:INT32 host:COMPACT_STRING port:INT32 rack:COMPACT_NULLABLE_STRING
                 TAG_BUFFER

    FindCoordinatorRequest v0-6 (flexible 3+) => key:COMPACT_STRING (v0-v3) key_type:INT8 (v1+)
                                coordinator_keys:COMPACT_ARRAY(COMPACT_STRING) (v4+) TAG_BUFFER
    FindCoordinatorResponse => throttle_time_ms:INT32 (v1+) error_code:INT16 (v0-v3)
                               error_message:COMPACT_NULLABLE_STRING (v1-v3) node_id:INT32 (v0-v3)
                               host:COMPACT_STRING (v0-v3) port:INT32 (v0-v3)
                               coordinators:COMPACT_ARRAY (v4+) TAG_BUFFER
      coordinators => key:COMPACT_STRING node_id:INT32 host:COMPACT_STRING port:INT32
                      error_code:INT16 error_message:COMPACT_NULLABLE_STRING TAG_BUFFER

    DescribeLogDirsRequest v0-4 (flexible 2+) => topics:COMPACT_NULLABLE_ARRAY TAG_BUFFER
      topics => topic:COMPACT_STRING partitions:COMPACT_ARRAY(INT32) TAG_BUFFER
    DescribeLogDirsResponse => throttle_time_ms:INT32 error_code:INT16 (v3+) results:COMPACT_ARRAY
                               TAG_BUFFER
      results    => error_code:INT16 log_dir:COMPACT_STRING topics:COMPACT_ARRAY
                    total_bytes:INT64 (v4+) usable_bytes:INT64 (v4+) TAG_BUFFER
      topics     => name:COMPACT_STRING partitions:COMPACT_ARRAY TAG_BUFFER
      partitions => partition_index:INT32 partition_size:INT64 offset_lag:INT64
                    is_future_key:BOOL TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message
from broker.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_OMITTED

DESCRIBE_CLUSTER_REQUEST = message(
    "DescribeClusterRequest",
    api_key=60,
    valid="0-1",
    flexible="0+",
    fields=[
        field("include_cluster_authorized_operations", "bool"),
        field("endpoint_type", "int8", "1+", default=1),
    ],
)

DESCRIBE_CLUSTER_RESPONSE = message(
    "DescribeClusterResponse",
    api_key=60,
    valid="0-1",
    flexible="0+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        field("endpoint_type", "int8", "1+", default=1),
        field("cluster_id", "string"),
        field("controller_id", "int32", default=-1),
        field(
            "brokers",
            array(
                "DescribeClusterBroker",
                [
                    field("broker_id", "int32"),
                    field("host", "string"),
                    field("port", "int32"),
                    field("rack", "string", nullable="0+", default=None),
                ],
            ),
        ),
        field("cluster_authorized_operations", "int32", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

FIND_COORDINATOR_REQUEST = message(
    "FindCoordinatorRequest",
    api_key=10,
    valid="0-6",
    flexible="3+",
    fields=[
        field("key", "string", "0-3"),
        field("key_type", "int8", "1+", default=0),
        field("coordinator_keys", "[]string", "4+"),
    ],
)

FIND_COORDINATOR_RESPONSE = message(
    "FindCoordinatorResponse",
    api_key=10,
    valid="0-6",
    flexible="3+",
    fields=[
        field("throttle_time_ms", "int32", "1+"),
        field("error_code", "int16", "0-3"),
        field("error_message", "string", "1-3", nullable="1-3"),
        field("node_id", "int32", "0-3"),
        field("host", "string", "0-3"),
        field("port", "int32", "0-3"),
        field(
            "coordinators",
            array(
                "Coordinator",
                [
                    field("key", "string", "4+"),
                    field("node_id", "int32", "4+"),
                    field("host", "string", "4+"),
                    field("port", "int32", "4+"),
                    field("error_code", "int16", "4+"),
                    field("error_message", "string", "4+", nullable="4+"),
                ],
            ),
            "4+",
        ),
    ],
)

DESCRIBE_LOG_DIRS_REQUEST = message(
    "DescribeLogDirsRequest",
    api_key=35,
    valid="0-4",
    flexible="2+",
    fields=[
        field(
            "topics",
            array(
                "DescribableLogDirTopic",
                [field("topic", "string"), field("partitions", "[]int32")],
            ),
            nullable="0+",
        ),
    ],
)

_LOG_DIR_PARTITION = array(
    "DescribeLogDirsPartition",
    [
        field("partition_index", "int32"),
        field("partition_size", "int64"),
        field("offset_lag", "int64"),
        field("is_future_key", "bool"),
    ],
)

DESCRIBE_LOG_DIRS_RESPONSE = message(
    "DescribeLogDirsResponse",
    api_key=35,
    valid="0-4",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("error_code", "int16", "3+"),
        field(
            "results",
            array(
                "DescribeLogDirsResult",
                [
                    field("error_code", "int16"),
                    field("log_dir", "string"),
                    field(
                        "topics",
                        array(
                            "DescribeLogDirsTopic",
                            [field("name", "string"), field("partitions", _LOG_DIR_PARTITION)],
                        ),
                    ),
                    field("total_bytes", "int64", "4+", default=-1),
                    field("usable_bytes", "int64", "4+", default=-1),
                ],
            ),
        ),
    ],
)
