"""Configuration: DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Transcribed from Kafka 3.9's ``DescribeConfigs*``, ``AlterConfigs*`` and
``IncrementalAlterConfigs*`` JSON files. Layouts in flexible versions (older
versions use INT16/INT32 prefixes and no TAG_BUFFER)::

    DescribeConfigsRequest v0-4 (flexible 4+) => resources:COMPACT_ARRAY
                                                 include_synonyms:BOOL (v1+)
                                                 include_documentation:BOOL (v3+) TAG_BUFFER
      resources => resource_type:INT8 resource_name:COMPACT_STRING
                   configuration_keys:COMPACT_NULLABLE_ARRAY(COMPACT_STRING) TAG_BUFFER
    DescribeConfigsResponse => throttle_time_ms:INT32 results:COMPACT_ARRAY TAG_BUFFER
      results  => error_code:INT16 error_message:COMPACT_NULLABLE_STRING resource_type:INT8
                  resource_name:COMPACT_STRING configs:COMPACT_ARRAY TAG_BUFFER
      configs  => name:COMPACT_STRING value:COMPACT_NULLABLE_STRING read_only:BOOL
                  is_default:BOOL (v0 only) config_source:INT8 (v1+) is_sensitive:BOOL
                  synonyms:COMPACT_ARRAY (v1+) config_type:INT8 (v3+)
                  documentation:COMPACT_NULLABLE_STRING (v3+) TAG_BUFFER
      synonyms => name:COMPACT_STRING value:COMPACT_NULLABLE_STRING source:INT8 TAG_BUFFER

    AlterConfigsRequest v0-2 (flexible 2+) => resources:COMPACT_ARRAY validate_only:BOOL TAG_BUFFER
      resources => resource_type:INT8 resource_name:COMPACT_STRING configs:COMPACT_ARRAY TAG_BUFFER
      configs   => name:COMPACT_STRING value:COMPACT_NULLABLE_STRING TAG_BUFFER
    IncrementalAlterConfigsRequest v0-1 (flexible 1+): as AlterConfigs, and each config has
      config_operation:INT8 between name and value (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)
    AlterConfigsResponse, IncrementalAlterConfigsResponse => throttle_time_ms:INT32
                                                             responses:COMPACT_ARRAY TAG_BUFFER
      responses => error_code:INT16 error_message:COMPACT_NULLABLE_STRING resource_type:INT8
                   resource_name:COMPACT_STRING TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

DESCRIBE_CONFIGS_REQUEST = message(
    "DescribeConfigsRequest",
    api_key=32,
    valid="0-4",
    flexible="4+",
    fields=[
        field(
            "resources",
            array(
                "DescribeConfigsResource",
                [
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field("configuration_keys", "[]string", nullable="0+"),
                ],
            ),
        ),
        field("include_synonyms", "bool", "1+", default=False),
        field("include_documentation", "bool", "3+", default=False),
    ],
)

_SYNONYM = array(
    "DescribeConfigsSynonym",
    [
        field("name", "string", "1+"),
        field("value", "string", "1+", nullable="0+"),
        field("source", "int8", "1+"),
    ],
)
_RESOURCE_RESULT = array(
    "DescribeConfigsResourceResult",
    [
        field("name", "string"),
        field("value", "string", nullable="0+"),
        field("read_only", "bool"),
        field("is_default", "bool", "0"),
        field("config_source", "int8", "1+", default=-1),
        field("is_sensitive", "bool"),
        field("synonyms", _SYNONYM, "1+"),
        field("config_type", "int8", "3+", default=0),
        field("documentation", "string", "3+", nullable="0+"),
    ],
)

DESCRIBE_CONFIGS_RESPONSE = message(
    "DescribeConfigsResponse",
    api_key=32,
    valid="0-4",
    flexible="4+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "results",
            array(
                "DescribeConfigsResult",
                [
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+"),
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field("configs", _RESOURCE_RESULT),
                ],
            ),
        ),
    ],
)

ALTER_CONFIGS_REQUEST = message(
    "AlterConfigsRequest",
    api_key=33,
    valid="0-2",
    flexible="2+",
    fields=[
        field(
            "resources",
            array(
                "AlterConfigsResource",
                [
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field(
                        "configs",
                        array(
                            "AlterableConfig",
                            [field("name", "string"), field("value", "string", nullable="0+")],
                        ),
                    ),
                ],
            ),
        ),
        field("validate_only", "bool"),
    ],
)

INCREMENTAL_ALTER_CONFIGS_REQUEST = message(
    "IncrementalAlterConfigsRequest",
    api_key=44,
    valid="0-1",
    flexible="1+",
    fields=[
        field(
            "resources",
            array(
                "AlterConfigsResource",
                [
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field(
                        "configs",
                        array(
                            "AlterableConfig",
                            [
                                field("name", "string"),
                                field("config_operation", "int8"),
                                field("value", "string", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
        field("validate_only", "bool"),
    ],
)

_ALTER_RESULT_FIELDS = [
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+"),
    field("resource_type", "int8"),
    field("resource_name", "string"),
]

ALTER_CONFIGS_RESPONSE = message(
    "AlterConfigsResponse",
    api_key=33,
    valid="0-2",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("responses", array("AlterConfigsResourceResponse", _ALTER_RESULT_FIELDS)),
    ],
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = message(
    "IncrementalAlterConfigsResponse",
    api_key=44,
    valid="0-1",
    flexible="1+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("responses", array("AlterConfigsResourceResponse", _ALTER_RESULT_FIELDS)),
    ],
)
