"""FindCoordinator (key 10), versions 0-6: served so clients see this broker's real
feature set, answered with "no coordinator here".

Why it is served at all: librdkafka derives its feature flags from the
ApiVersions answer, and its LZ4 flag depends on FindCoordinator v0 being
advertised (``rdkafka_feature.c``: "LZ4 ... GroupCoordinator was released in
0.8.2"). A broker that does not list FindCoordinator makes every librdkafka
producer configured with ``compression.type=lz4`` silently send uncompressed
batches (``rd_kafka_msgset_writer_select_MsgVersion`` drops the codec).

Behaviour: this broker has no group or transaction coordinator, so every key
is refused with a non-retriable error and a message saying so, as
InitProducerId refuses transactional ids (docs/deviations.md): a consumer
that subscribes with a group.id, or a transactional producer, fails at once
with a clear reason instead of retrying COORDINATOR_NOT_AVAILABLE forever.

- key_type 0 (group) -> GROUP_AUTHORIZATION_FAILED
- key_type 1 (transaction) -> TRANSACTIONAL_ID_AUTHORIZATION_FAILED
- any other key_type -> INVALID_REQUEST (Kafka: "Unsupported key type")

Coordinator fields of an error answer are Kafka's: node_id -1, host "",
port -1 (``FindCoordinatorResponse.prepareErrorResponse``).

Version notes: v1+ key_type, throttle_time_ms and error_message; v3+
flexible; v4+ a batch of keys (``coordinator_keys``) answered one
``coordinators`` entry each; v6 adds the share-group key type.
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.data import Data
from broker.protocol.messages import FindCoordinatorResponse

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def refusal(key_type: int) -> tuple[ErrorCode, str]:
    if key_type == GROUP_KEY_TYPE:
        return (
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
            "This broker has no group coordinator: consumer groups are not supported. "
            "Assign partitions to the consumer instead of subscribing with a group.id.",
        )
    if key_type == TRANSACTION_KEY_TYPE:
        return (
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "This broker has no transaction coordinator: transactions are not supported. "
            "Produce without a transactional.id.",
        )
    return ErrorCode.INVALID_REQUEST, f"Unsupported key type {key_type}"


class FindCoordinatorHandler(RequestHandler):
    API_KEY = 10
    MIN_VERSION = 0
    MAX_VERSION = 6

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        version = ctx.header.api_version
        key_type = request.key_type if version >= 1 else GROUP_KEY_TYPE
        code, message = refusal(key_type)
        if version >= 4:
            keys = list(request.coordinator_keys)
            ctx.count_error(code, len(keys))
            return FindCoordinatorResponse(
                coordinators=[
                    FindCoordinatorResponse.Coordinator(
                        key=key,
                        node_id=-1,
                        host="",
                        port=-1,
                        error_code=code,
                        error_message=message,
                    )
                    for key in keys
                ]
            )
        ctx.count_error(code)
        return FindCoordinatorResponse(
            error_code=code,
            error_message=message if version >= 1 else None,
            node_id=-1,
            host="",
            port=-1,
        )
