"""ApiVersions (API key 18), versions 0-4, flexible from 3.

Transcribed from Kafka 3.9's ``ApiVersionsRequest.json`` /
``ApiVersionsResponse.json``. The response always goes out with response
header v0, even in flexible versions (KIP-511; see ``header.py``).

Request::

    ApiVersionsRequest v0-v2 => (empty)
    ApiVersionsRequest v3+   => client_software_name:COMPACT_STRING
                                client_software_version:COMPACT_STRING TAG_BUFFER

Response v3+ (v0 without throttle_time_ms and tags, v1-v2 without tags)::

    ApiVersionsResponse => error_code:INT16 api_keys:COMPACT_ARRAY throttle_time_ms:INT32
                           TAG_BUFFER{0: supported_features, 1: finalized_features_epoch:INT64,
                                      2: finalized_features, 3: zk_migration_ready:BOOL}
      api_keys           => api_key:INT16 min_version:INT16 max_version:INT16 TAG_BUFFER
      supported_features => name:COMPACT_STRING min_version:INT16 max_version:INT16 TAG_BUFFER
      finalized_features => name:COMPACT_STRING max_version_level:INT16 min_version_level:INT16
                            TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

API_VERSIONS_REQUEST = message(
    "ApiVersionsRequest",
    api_key=18,
    valid="0-4",
    flexible="3+",
    fields=[
        field("client_software_name", "string", "3+"),
        field("client_software_version", "string", "3+"),
    ],
)

_API_VERSION = array(
    "ApiVersion",
    [
        field("api_key", "int16"),
        field("min_version", "int16"),
        field("max_version", "int16"),
    ],
)
_SUPPORTED_FEATURE = array(
    "SupportedFeatureKey",
    [
        field("name", "string", "3+"),
        field("min_version", "int16", "3+"),
        field("max_version", "int16", "3+"),
    ],
)
_FINALIZED_FEATURE = array(
    "FinalizedFeatureKey",
    [
        field("name", "string", "3+"),
        field("max_version_level", "int16", "3+"),
        field("min_version_level", "int16", "3+"),
    ],
)

API_VERSIONS_RESPONSE = message(
    "ApiVersionsResponse",
    api_key=18,
    valid="0-4",
    flexible="3+",
    fields=[
        field("error_code", "int16"),
        field("api_keys", _API_VERSION),
        field("throttle_time_ms", "int32", "1+"),
        field("supported_features", _SUPPORTED_FEATURE, "3+", tag=0, tagged="3+"),
        field("finalized_features_epoch", "int64", "3+", default=-1, tag=1, tagged="3+"),
        field("finalized_features", _FINALIZED_FEATURE, "3+", tag=2, tagged="3+"),
        field("zk_migration_ready", "bool", "3+", default=False, tag=3, tagged="3+"),
    ],
)
