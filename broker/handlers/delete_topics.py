"""DeleteTopics (key 20), versions 0-6.

Behaviour (KRaft: ``ControllerApis.deleteTopics``, ``ReplicationControlManager``):
- ``delete.topic.enable=false``: every topic fails, INVALID_REQUEST before
  v3, TOPIC_DELETION_DISABLED from v3.
- v6 topics are named by name or by id: both -> INVALID_REQUEST, neither ->
  INVALID_REQUEST; a name or id given twice -> INVALID_REQUEST for it; a
  name whose topic id was also given -> INVALID_REQUEST for the name.
- Unknown name -> UNKNOWN_TOPIC_OR_PARTITION, unknown id -> UNKNOWN_TOPIC_ID.
- Authorization (with an authorizer, ``ControllerApis.deleteTopics``): DELETE
  on the cluster allows every topic; otherwise a topic named by name needs
  DESCRIBE on it (else TOPIC_AUTHORIZATION_FAILED, whether it exists or not)
  and, if it exists, DELETE (else TOPIC_AUTHORIZATION_FAILED); a topic named
  by id needs DELETE, else TOPIC_AUTHORIZATION_FAILED with its name only if
  the principal may DESCRIBE it.
- Deleting a topic: every partition log is closed and its folder renamed
  ``<topic>-<p>.<id>-delete`` (removed after ``file.delete.delay.ms``), its
  config overrides are removed, and its per-topic metrics are forgotten.
  The response carries the topic's name and id.
- Results come in request order (Kafka shuffles them so that positions do
  not reveal which topics exist to an unauthorised client; here each result
  carries only what its request entry named, so positions reveal nothing
  more; docs/deviations.md).

Version notes:
- v1+: throttle_time_ms. v3+: TOPIC_DELETION_DISABLED. v4+: flexible. v5+:
  error_message. v6: topics by name or id; results carry topic_id and a
  nullable name.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.partition.internal_topics import is_internal_topic
from broker.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

ZERO_UUID = uuid.UUID(int=0)
_Result = DeleteTopicsResponse.DeletableTopicResult


class DeleteTopicsHandler(RequestHandler[DeleteTopicsRequest]):
    API_KEY = 20
    MIN_VERSION = 0
    MAX_VERSION = 6

    def handle(self, ctx: RequestContext, request: DeleteTopicsRequest) -> Reply:
        version = ctx.header.api_version
        if version >= 6:
            wanted: list[tuple[str | None, uuid.UUID]] = [
                (t.name, t.topic_id or ZERO_UUID) for t in request.topics
            ]
        else:
            wanted = [(name, ZERO_UUID) for name in request.topic_names]
        if not self.broker.config.get("delete.topic.enable"):
            code = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
            disabled = "Topic deletion is disabled (delete.topic.enable=false)."
            results = []
            for given_name, given_id in wanted:
                ctx.count_error(code)
                results.append(
                    _Result(
                        name=given_name, topic_id=given_id, error_code=code, error_message=disabled
                    )
                )
            return DeleteTopicsResponse(responses=results)

        lm = self.broker.log_manager
        rm = self.broker.replica_manager
        every_topic = self.broker.authorizer is None or self.authorize_cluster(
            ctx, AclOperation.DELETE, report_denial=False
        )

        def may(operation: AclOperation, topic: str) -> bool:
            # a DESCRIBE denial is not reported: the DELETE one is what was asked
            return every_topic or self.authorize(
                ctx, operation, ResourceType.TOPIC, topic,
                report_denial=operation == AclOperation.DELETE,
            )  # fmt: skip

        names = Counter(n for n, tid in wanted if n is not None and tid == ZERO_UUID)
        ids = Counter(tid for n, tid in wanted if n is None and tid != ZERO_UUID)
        id_names = {lm.topic_for_id(tid.bytes) for tid in ids if ids[tid] == 1}
        results = []
        for given_name, given_id in wanted:
            name: str | None = given_name
            topic_id = given_id
            code = ErrorCode.NONE
            message: str | None = None
            if name is not None and topic_id != ZERO_UUID:
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            elif name is None and topic_id == ZERO_UUID:
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    "Neither topic name nor id were specified.",
                )
            elif name is not None and names[name] > 1:
                code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
            elif name is None and ids[topic_id] > 1:
                code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic id."
            elif name is None:
                name = lm.topic_for_id(topic_id.bytes)
                if name is None:
                    code, message = (
                        ErrorCode.UNKNOWN_TOPIC_ID,
                        f"Topic id {topic_id} does not exist.",
                    )
                elif not may(AclOperation.DELETE, name):
                    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    if not may(AclOperation.DESCRIBE, name):
                        name = None
            elif not may(AclOperation.DESCRIBE, name) or (
                rm.partition_count(name) is not None and not may(AclOperation.DELETE, name)
            ):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif name in id_names:
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                )
            if code == ErrorCode.NONE and name is not None:
                if topic_id == ZERO_UUID:
                    tid = lm.topic_id(name)
                    topic_id = uuid.UUID(bytes=tid) if tid else ZERO_UUID
                code, message = self._delete(name)
            ctx.count_error(code)
            results.append(
                _Result(name=name, topic_id=topic_id, error_code=code, error_message=message)
            )
        return DeleteTopicsResponse(responses=results)

    def _delete(self, name: str) -> tuple[ErrorCode, str | None]:
        rm = self.broker.replica_manager
        if rm.partition_count(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
        try:
            rm.delete_topic(name)
        except KafkaError as exc:
            log.warning("deleting topic %s failed: %s", name, exc)
            return exc.code, str(exc)
        except Exception as exc:
            log.exception("unexpected error deleting topic %s", name)
            return ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)
        self.broker.meters.forget_topic(name)
        if self.broker.groups is not None and not is_internal_topic(name):
            # committed offsets of the topic go too (GroupCoordinator.onPartitionsDeleted)
            self.broker.groups.on_topic_deleted(name)
        log.info("deleted topic %s", name)
        return ErrorCode.NONE, None
