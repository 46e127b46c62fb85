"""SASL and SCRAM credentials: SaslHandshake (17), SaslAuthenticate (36),
DescribeUserScramCredentials (50), AlterUserScramCredentials (51).

Transcribed from Kafka 3.9's JSON files of the same names::

    SaslHandshakeRequest v0-1 (never flexible) => mechanism:STRING
    SaslHandshakeResponse => error_code:INT16 mechanisms:ARRAY(STRING)

    SaslAuthenticateRequest v0-2 (flexible 2+) => auth_bytes:COMPACT_BYTES TAG_BUFFER
    SaslAuthenticateResponse => error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                                auth_bytes:COMPACT_BYTES session_lifetime_ms:INT64 (v1+)
                                TAG_BUFFER

    DescribeUserScramCredentialsRequest v0 (flexible) => users:COMPACT_NULLABLE_ARRAY TAG_BUFFER
      users => name:COMPACT_STRING TAG_BUFFER
    DescribeUserScramCredentialsResponse => throttle_time_ms:INT32 error_code:INT16
                        error_message:COMPACT_NULLABLE_STRING results:COMPACT_ARRAY TAG_BUFFER
      results => user:COMPACT_STRING error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                 credential_infos:COMPACT_ARRAY TAG_BUFFER
        credential_infos => mechanism:INT8 iterations:INT32 TAG_BUFFER

    AlterUserScramCredentialsRequest v0 (flexible) => deletions:COMPACT_ARRAY
                                                      upsertions:COMPACT_ARRAY TAG_BUFFER
      deletions  => name:COMPACT_STRING mechanism:INT8 TAG_BUFFER
      upsertions => name:COMPACT_STRING mechanism:INT8 iterations:INT32 salt:COMPACT_BYTES
                    salted_password:COMPACT_BYTES TAG_BUFFER
    AlterUserScramCredentialsResponse => throttle_time_ms:INT32 results:COMPACT_ARRAY TAG_BUFFER
      results => user:COMPACT_STRING error_code:INT16 error_message:COMPACT_NULLABLE_STRING
                 TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import array, field, message

SASL_HANDSHAKE_REQUEST = message(
    "SaslHandshakeRequest",
    api_key=17,
    valid="0-1",
    flexible="none",
    fields=[field("mechanism", "string")],
)

SASL_HANDSHAKE_RESPONSE = message(
    "SaslHandshakeResponse",
    api_key=17,
    valid="0-1",
    flexible="none",
    fields=[field("error_code", "int16"), field("mechanisms", "[]string")],
)

SASL_AUTHENTICATE_REQUEST = message(
    "SaslAuthenticateRequest",
    api_key=36,
    valid="0-2",
    flexible="2+",
    fields=[field("auth_bytes", "bytes")],
)

SASL_AUTHENTICATE_RESPONSE = message(
    "SaslAuthenticateResponse",
    api_key=36,
    valid="0-2",
    flexible="2+",
    fields=[
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        field("auth_bytes", "bytes"),
        field("session_lifetime_ms", "int64", "1+"),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "DescribeUserScramCredentialsRequest",
    api_key=50,
    valid="0",
    flexible="0+",
    fields=[
        field("users", array("UserName", [field("name", "string")]), nullable="0+", default=None),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "DescribeUserScramCredentialsResponse",
    api_key=50,
    valid="0",
    flexible="0+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        field(
            "results",
            array(
                "DescribeUserScramCredentialsResult",
                [
                    field("user", "string"),
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+", default=None),
                    field(
                        "credential_infos",
                        array(
                            "CredentialInfo",
                            [field("mechanism", "int8"), field("iterations", "int32")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "AlterUserScramCredentialsRequest",
    api_key=51,
    valid="0",
    flexible="0+",
    fields=[
        field(
            "deletions",
            array("ScramCredentialDeletion", [field("name", "string"), field("mechanism", "int8")]),
        ),
        field(
            "upsertions",
            array(
                "ScramCredentialUpsertion",
                [
                    field("name", "string"),
                    field("mechanism", "int8"),
                    field("iterations", "int32"),
                    field("salt", "bytes"),
                    field("salted_password", "bytes"),
                ],
            ),
        ),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "AlterUserScramCredentialsResponse",
    api_key=51,
    valid="0",
    flexible="0+",
    fields=[
        field("throttle_time_ms", "int32"),
        field(
            "results",
            array(
                "AlterUserScramCredentialsResult",
                [
                    field("user", "string"),
                    field("error_code", "int16"),
                    field("error_message", "string", nullable="0+", default=None),
                ],
            ),
        ),
    ],
)
