"""CreateTopics (key 19), versions 0-7.

Behaviour (KRaft: ``ControllerApis.createTopics``,
``ReplicationControlManager.createTopics`` / ``createTopic``; each topic on
its own, in request order):
- A name given twice -> INVALID_REQUEST "Duplicate topic name." (one result
  for the name); ``__cluster_metadata`` -> INVALID_REQUEST.
- Authorization (with an authorizer, ``ControllerApis.createTopics``): CREATE
  on the cluster allows every topic, else CREATE on the topic is needed:
  TOPIC_AUTHORIZATION_FAILED "Authorization failed.". A created topic's
  configs (v5+) are answered only to a principal with DESCRIBE_CONFIGS on it;
  otherwise topic_config_error_code is TOPIC_AUTHORIZATION_FAILED and
  num_partitions, replication_factor and configs are left out.
- An illegal name or one colliding with an existing topic in '.' versus
  '_' -> INVALID_TOPIC_EXCEPTION; an existing topic -> TOPIC_ALREADY_EXISTS.
- Configs: null values, unknown keys, bad values -> INVALID_CONFIG with
  Kafka's messages (``broker/handlers/config_changes.py``).
- Without assignments: replication_factor must be 1 or -1 (the broker's
  default.replication.factor, which can only be 1): 0 or < -1 ->
  INVALID_REPLICATION_FACTOR "must be larger than 0", > 1 ->
  INVALID_REPLICATION_FACTOR naming the one registered broker;
  num_partitions must be > 0 or -1 (num.partitions) -> else INVALID_PARTITIONS.
- With assignments: replication_factor and num_partitions must both be -1
  (INVALID_REQUEST otherwise); every partition 0..n-1 once, each with
  exactly this broker (INVALID_REPLICA_ASSIGNMENT otherwise, with Kafka's
  messages: empty list, unknown broker, broker twice, gaps).
- At most 10000 new partitions per request; a topic that would pass that
  gets POLICY_VIOLATION (Kafka fails the whole request with it; see
  docs/deviations.md).
- validate_only: every check, nothing created; the answer is the one a
  real creation would give (topic id excepted: a fresh id is reported
  but not kept).
- Created: partition logs in the log dirs and the overrides persisted beside
  them (``LogManager.create_topic``), topic id assigned.

Version notes:
- v1+: validate_only, error_message. v2+: throttle_time_ms. v5+: flexible;
  num_partitions, replication_factor and the effective configs (name,
  value, read_only, config_source, is_sensitive; sorted by name) of a
  created topic, and the tagged topic_config_error_code. v7+: topic_id.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter

from broker.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    KafkaError,
    PolicyViolationError,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.config_changes import check_topic_overrides
from broker.handlers.config_entries import topic_entries
from broker.handlers.context import RequestContext
from broker.log.checkpoints import random_uuid
from broker.protocol.messages import CreateTopicsRequest, CreateTopicsResponse
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

#: ``QuorumController.MAX_RECORDS_PER_USER_OP``: partitions one request may create
MAX_PARTITIONS_PER_REQUEST = 10_000
CLUSTER_METADATA_TOPIC = "__cluster_metadata"

_Result = CreateTopicsResponse.CreatableTopicResult


def check_assignment(node_id: int, brokers: list[int]) -> None:
    """``validateManualPartitionAssignment`` with one registered broker."""
    if not brokers:
        raise InvalidReplicaAssignmentError(
            "The manual partition assignment includes an empty replica list."
        )
    seen: set[int] = set()
    for broker in sorted(brokers):
        if broker != node_id:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {broker}, but no such broker "
                "is registered."
            )
        if broker in seen:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        seen.add(broker)


def check_replication_factor(replication_factor: int) -> None:
    """One broker: only a replication factor of 1 (or -1, the default of 1) can be met."""
    if replication_factor < -1 or replication_factor == 0:
        raise InvalidReplicationFactorError(
            "Replication factor must be larger than 0, or -1 to use the default value."
        )
    if replication_factor > 1:
        raise InvalidReplicationFactorError(
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only 1 "
            "broker(s) are registered."
        )


class CreateTopicsHandler(RequestHandler[CreateTopicsRequest]):
    API_KEY = 19
    MIN_VERSION = 0
    MAX_VERSION = 7

    def handle(self, ctx: RequestContext, request: CreateTopicsRequest) -> Reply:
        version = ctx.header.api_version
        counts = Counter(t.name for t in request.topics)
        budget = MAX_PARTITIONS_PER_REQUEST
        results = []
        answered: set[str] = set()
        may_create_any = self.authorize_cluster(ctx, AclOperation.CREATE, report_denial=False)
        for topic in request.topics:
            name = topic.name
            if name in answered:
                continue
            answered.add(name)
            try:
                if counts[name] > 1:
                    raise InvalidRequestError("Duplicate topic name.")
                if (
                    name != CLUSTER_METADATA_TOPIC
                    and not may_create_any
                    and not self.authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)
                ):
                    result = _Result(
                        name=name,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        error_message="Authorization failed.",
                    )
                    ctx.count_error(result.error_code)
                    results.append(result)
                    continue
                describable = self.authorize(
                    ctx,
                    AclOperation.DESCRIBE_CONFIGS,
                    ResourceType.TOPIC,
                    name,
                    report_denial=False,
                )
                result, partitions = self._create(
                    topic, request.validate_only, budget, version, describable=describable
                )
                budget -= partitions
            except KafkaError as exc:
                log.debug("CreateTopics %s refused: %s: %s", name, exc.code.name, exc)
                result = _Result(name=name, error_code=exc.code, error_message=str(exc))
            except Exception as exc:
                log.exception("unexpected error creating topic %s", name)
                result = _Result(
                    name=name, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(exc)
                )
            ctx.count_error(result.error_code)
            results.append(result)
        return CreateTopicsResponse(topics=results)

    def _create(
        self,
        topic: CreateTopicsRequest.CreatableTopic,
        validate_only: bool,
        budget: int,
        version: int,
        *,
        describable: bool,
    ) -> tuple[_Result, int]:
        broker = self.broker
        rm = broker.replica_manager
        name = topic.name
        if name == CLUSTER_METADATA_TOPIC:
            raise InvalidRequestError(f"Creation of internal topic {name} is prohibited.")
        rm.check_new_topic(name, 1)  # legal name, not existing, no collision
        overrides = {c.name: c.value for c in topic.configs}
        config = check_topic_overrides(broker.config, overrides)
        partitions = self._partition_count(topic)
        if partitions > budget:
            raise PolicyViolationError(
                "Unable to perform excessively large batch operation: at most "
                f"{MAX_PARTITIONS_PER_REQUEST} partitions can be created by one request."
            )
        if validate_only:
            topic_id = random_uuid()
        else:
            topic_id = rm.create_topic(name, partitions, overrides)
            log.info("created topic %s with %d partitions, configs %s", name, partitions, overrides)
        result = _Result(
            name=name,
            topic_id=uuid.UUID(bytes=topic_id),
            error_code=ErrorCode.NONE,
            error_message=None,
        )
        if version >= 5 and not describable:
            result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif version >= 5:
            stored = {k: str(v) for k, v in overrides.items()}
            result.num_partitions = partitions
            result.replication_factor = 1
            result.configs = [
                CreateTopicsResponse.CreatableTopicConfigs(
                    name=e.name,
                    value=e.value,
                    read_only=e.read_only,
                    config_source=int(e.source),
                    is_sensitive=e.is_sensitive,
                )
                for e in topic_entries(broker.config, config, stored)
            ]
        return result, partitions

    def _partition_count(self, topic: CreateTopicsRequest.CreatableTopic) -> int:
        """Partitions to create, after the replication-factor and assignment checks."""
        if topic.assignments:
            if topic.replication_factor != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but replication factor was "
                    "not set to -1."
                )
            if topic.num_partitions != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but numPartitions was not "
                    "set to -1."
                )
            node_id = self.broker.node_id
            indexes: set[int] = set()
            for a in topic.assignments:
                if a.partition_index in indexes:
                    raise InvalidReplicaAssignmentError(
                        "Found multiple manual partition assignments for partition "
                        f"{a.partition_index}"
                    )
                check_assignment(node_id, list(a.broker_ids))
                indexes.add(a.partition_index)
            if indexes != set(range(len(indexes))):
                raise InvalidReplicaAssignmentError(
                    "partitions should be a consecutive 0-based integer sequence"
                )
            return len(indexes)
        check_replication_factor(topic.replication_factor)
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise InvalidPartitionsError(
                "Number of partitions was set to an invalid non-positive value."
            )
        if topic.num_partitions == -1:
            return int(self.broker.config.get("num.partitions"))
        return int(topic.num_partitions)
