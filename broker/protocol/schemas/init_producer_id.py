"""InitProducerId (API key 22), versions 0-5, flexible from 2.

Transcribed from Kafka 3.9's ``InitProducerIdRequest.json`` /
``InitProducerIdResponse.json``. Layouts (v2+; v0-v1 use NULLABLE_STRING and
no tags)::

    InitProducerIdRequest  => transactional_id:COMPACT_NULLABLE_STRING
                              transaction_timeout_ms:INT32 producer_id:INT64 (v3+)
                              producer_epoch:INT16 (v3+) TAG_BUFFER
    InitProducerIdResponse => throttle_time_ms:INT32 error_code:INT16 producer_id:INT64
                              producer_epoch:INT16 TAG_BUFFER
"""

from __future__ import annotations

from broker.protocol.schema import field, message

INIT_PRODUCER_ID_REQUEST = message(
    "InitProducerIdRequest",
    api_key=22,
    valid="0-5",
    flexible="2+",
    fields=[
        field("transactional_id", "string", nullable="0+"),
        field("transaction_timeout_ms", "int32"),
        field("producer_id", "int64", "3+", default=-1),
        field("producer_epoch", "int16", "3+", default=-1),
    ],
)

INIT_PRODUCER_ID_RESPONSE = message(
    "InitProducerIdResponse",
    api_key=22,
    valid="0-5",
    flexible="2+",
    fields=[
        field("throttle_time_ms", "int32"),
        field("error_code", "int16"),
        field("producer_id", "int64", default=-1),
        field("producer_epoch", "int16"),
    ],
)
