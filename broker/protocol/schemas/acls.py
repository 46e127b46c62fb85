"""ACL administration: DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

Transcribed from Kafka 3.9's ``DescribeAcls*``, ``CreateAcls*`` and
``DeleteAcls*`` JSON files. Codes: resource type (2 Topic, 3 Group,
4 Cluster, 5 TransactionalId, ...), pattern type (1 ANY, 2 MATCH, 3 LITERAL,
4 PREFIXED), operation (1 ANY, 2 ALL, 3 READ ...), permission type (1 ANY,
2 DENY, 3 ALLOW). v0 has no pattern type field: it reads as LITERAL (3).
Layouts in flexible versions (older versions use INT16/INT32 prefixes and no
TAG_BUFFER)::

    DescribeAclsRequest v0-3 (flexible 2+) => resource_type_filter:INT8
                             resource_name_filter:COMPACT_NULLABLE_STRING
                             pattern_type_filter:INT8 (v1+) principal_filter:COMPACT_NULLABLE_STRING
                             host_filter:COMPACT_NULLABLE_STRING operation:INT8
                             permission_type:INT8 TAG_BUFFER
    DescribeAclsResponse => throttle_time_ms:INT32 error_code:INT16
                            error_message:COMPACT_NULLABLE_STRING resources:COMPACT_ARRAY TAG_BUFFER
      resources => resource_type:INT8 resource_name:COMPACT_STRING pattern_type:INT8 (v1+)
                   acls:COMPACT_ARRAY TAG_BUFFER
      acls      => principal:COMPACT_STRING host:COMPACT_STRING operation:INT8
                   permission_type:INT8 TAG_BUFFER

    CreateAclsRequest v0-3 (flexible 2+) => creations:COMPACT_ARRAY TAG_BUFFER
      creations => resource_type:INT8 resource_name:COMPACT_STRING
                   resource_pattern_type:INT8 (v1+) principal:COMPACT_STRING host:COMPACT_STRING
                   operation:INT8 permission_type:INT8 TAG_BUFFER
    CreateAclsResponse => throttle_time_ms:INT32 results:COMPACT_ARRAY TAG_BUFFER
      results => error_code:INT16 error_message:COMPACT_NULLABLE_STRING TAG_BUFFER

    DeleteAclsRequest v0-3 (flexible 2+) => filters:COMPACT_ARRAY TAG_BUFFER
      filters => (the fields of DescribeAclsRequest) TAG_BUFFER
    DeleteAclsResponse => throttle_time_ms:INT32 filter_results:COMPACT_ARRAY TAG_BUFFER
      filter_results => error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                        matching_acls:COMPACT_ARRAY TAG_BUFFER
      matching_acls  => error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                        resource_type:INT8 resource_name:COMPACT_STRING pattern_type:INT8 (v1+)
                        principal:COMPACT_STRING host:COMPACT_STRING operation:INT8
                        permission_type:INT8 TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import Field, array, field, message

#: PatternType.LITERAL: what a v0 request or response means
LITERAL = 3


def _filter_fields() -> list[Field]:
    return [
        field("resource_type_filter", "int8"),
        field("resource_name_filter", "string", nullable="0+"),
        field("pattern_type_filter", "int8", "1+", default=LITERAL),
        field("principal_filter", "string", nullable="0+"),
        field("host_filter", "string", nullable="0+"),
        field("operation", "int8"),
        field("permission_type", "int8"),
    ]


DESCRIBE_ACLS_REQUEST = message(
    "DescribeAclsRequest", api_key=29, valid="0-3", flexible="2+", fields=_filter_fields()
)

DESCRIBE_ACLS_RESPONSE = message(
    "DescribeAclsResponse",
    api_key=29,
    valid="0-3",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        field(
            "resources",
            array(
                "DescribeAclsResource",
                [
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field("pattern_type", "int8", "1+", default=LITERAL),
                    field(
                        "acls",
                        array(
                            "AclDescription",
                            [
                                field("principal", "string"),
                                field("host", "string"),
                                field("operation", "int8"),
                                field("permission_type", "int8"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

CREATE_ACLS_REQUEST = message(
    "CreateAclsRequest",
    api_key=30,
    valid="0-3",
    flexible="2+",
    fields=[
        field(
            "creations",
            array(
                "AclCreation",
                [
                    field("resource_type", "int8"),
                    field("resource_name", "string"),
                    field("resource_pattern_type", "int8", "1+", default=LITERAL),
                    field("principal", "string"),
                    field("host", "string"),
                    field("operation", "int8"),
                    field("permission_type", "int8"),
                ],
            ),
        ),
    ],
)

CREATE_ACLS_RESPONSE = message(
    "CreateAclsResponse",
    api_key=30,
    valid="0-3",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "results",
            array(
                "AclCreationResult",
                [
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+", default=None),
                ],
            ),
        ),
    ],
)

DELETE_ACLS_REQUEST = message(
    "DeleteAclsRequest",
    api_key=31,
    valid="0-3",
    flexible="2+",
    fields=[field("filters", array("DeleteAclsFilter", _filter_fields()))],
)

DELETE_ACLS_RESPONSE = message(
    "DeleteAclsResponse",
    api_key=31,
    valid="0-3",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "filter_results",
            array(
                "DeleteAclsFilterResult",
                [
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+", default=None),
                    field(
                        "matching_acls",
                        array(
                            "DeleteAclsMatchingAcl",
                            [
                                field("error_code", "int16"),
                                field("error_message", "string", nullable="0+", default=None),
                                field("resource_type", "int8"),
                                field("resource_name", "string"),
                                field("pattern_type", "int8", "1+", default=LITERAL),
                                field("principal", "string"),
                                field("host", "string"),
                                field("operation", "int8"),
                                field("permission_type", "int8"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
