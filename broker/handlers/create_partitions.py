"""CreatePartitions (key 37), versions 0-3.

Behaviour (KRaft: ``ControllerApis.createPartitions``,
``ReplicationControlManager.createPartitions``; each topic on its own, in
request order):
- A topic named twice -> INVALID_REQUEST "Duplicate topic name." (one result).
- Authorization (with an authorizer): ALTER on the topic, else
  TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not.
- Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
- count equal to the current number of partitions -> INVALID_PARTITIONS
  "Topic already has N partition(s)."; below it -> INVALID_PARTITIONS
  "... would not be an increase.".
- assignments: null lets the broker place the new partitions (here: on
  itself); otherwise one assignment per new partition
  (INVALID_REPLICA_ASSIGNMENT when the count differs), each exactly this
  broker (INVALID_REPLICA_ASSIGNMENT naming an unknown broker, an empty list
  or a broker given twice).
- At most 10000 new partitions per request (POLICY_VIOLATION past that; see
  CreateTopics).
- validate_only: every check, nothing created. Otherwise the new partition
  logs are created at once (``ReplicaManager.create_partitions``) with the
  topic's configs.

Version notes:
- v1: same as v0. v2+: flexible. v3: same as v2 (quota errors, never here).
"""

from __future__ import annotations

import logging
from collections import Counter

from broker.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    KafkaError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.create_topics import MAX_PARTITIONS_PER_REQUEST, check_assignment
from broker.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


class CreatePartitionsHandler(RequestHandler[CreatePartitionsRequest]):
    API_KEY = 37
    MIN_VERSION = 0
    MAX_VERSION = 3

    def handle(self, ctx: RequestContext, request: CreatePartitionsRequest) -> Reply:
        counts = Counter(t.name for t in request.topics)
        budget = MAX_PARTITIONS_PER_REQUEST
        answered: set[str] = set()
        results = []
        for topic in request.topics:
            name = topic.name
            if name in answered:
                continue
            answered.add(name)
            code, message = ErrorCode.NONE, None
            try:
                if counts[name] > 1:
                    raise InvalidRequestError("Duplicate topic name.")
                if not self.authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, name):
                    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                else:
                    budget -= self._grow(topic, request.validate_only, budget)
            except KafkaError as exc:
                log.debug("CreatePartitions %s refused: %s: %s", name, exc.code.name, exc)
                code, message = exc.code, str(exc)
            except Exception as exc:
                log.exception("unexpected error adding partitions to %s", name)
                code, message = ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)
            ctx.count_error(code)
            results.append(_Result(name=name, error_code=code, error_message=message))
        return CreatePartitionsResponse(results=results)

    def _grow(
        self, topic: CreatePartitionsRequest.CreatePartitionsTopic, validate_only: bool, budget: int
    ) -> int:
        """Check (and unless ``validate_only`` create) the new partitions; how many."""
        rm = self.broker.replica_manager
        name = topic.name
        current = rm.partition_count(name)
        if current is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        if topic.count == current:
            raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
        if topic.count < current:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {current} partition(s); {topic.count} would "
                "not be an increase."
            )
        additional = int(topic.count) - current
        if topic.assignments is not None:
            if len(topic.assignments) != additional:
                raise InvalidReplicaAssignmentError(
                    f"Attempted to add {additional} additional partition(s), but only "
                    f"{len(topic.assignments)} assignment(s) were specified."
                )
            for assignment in topic.assignments:
                check_assignment(self.broker.node_id, list(assignment.broker_ids))
        if additional > budget:
            raise PolicyViolationError(
                "Unable to perform excessively large batch operation: at most "
                f"{MAX_PARTITIONS_PER_REQUEST} partitions can be created by one request."
            )
        if not validate_only:
            rm.create_partitions(name, topic.count)
            log.info("topic %s grown from %d to %d partitions", name, current, topic.count)
        return additional
