"""Checking and computing configuration changes (CreateTopics, AlterConfigs,
IncrementalAlterConfigs).

Topic configs (``ControllerConfigurationValidator``, ``LogConfig.validate``,
``ConfigurationControlManager``): overrides are checked as a whole before
anything is stored, with Kafka's messages (INVALID_CONFIG)::

    null value            "Null value not supported for topic configs: a,b"
    unknown key           "Unknown topic config name: foo"
    unparsable / range    "Invalid value x for configuration retention.ms: ..."  (broker/config.py)
    min > max compaction  "conflict topic config setting min.compaction.lag.ms (9) >
                           max.compaction.lag.ms (1)"

IncrementalAlterConfigs operations (``AlterConfigOp.OpType``): SET (0)
replaces a key's override, DELETE (1) removes it, APPEND (2) / SUBTRACT (3)
add or remove comma-separated items of a LIST key (cleanup.policy); items
are compared as strings, an item already present is not appended twice.
Without an override, APPEND and SUBTRACT start from the topic's effective
value (Kafka starts from the built-in default, ignoring a broker-level
``log.cleanup.policy``; docs/deviations.md).

Resources (``ConfigResource.Type``): TOPIC (2) is supported; BROKER (4)
resources are checked like Kafka's ``ConfigAdminManager`` (node id) and then
refused, because this broker has no dynamic broker configuration;
BROKER_LOGGER (8) and CLIENT_METRICS (16) are refused; other types are
unknown. Every refusal is INVALID_REQUEST with a message.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from broker.config import TOPIC_KEYS, BrokerConfig, TopicConfig, broker_key
from broker.config_key import ConfigType
from broker.errors import (
    ClusterAuthorizationError,
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    TopicAuthorizationError,
    UnknownTopicOrPartitionError,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import BrokerContext, RequestContext
from broker.partition.replica_manager import validate_topic_name
from broker.protocol.data import Data
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
RESOURCE_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER"}
RESOURCE_TYPE_NAMES[CLIENT_METRICS] = "CLIENT_METRICS"

SET = 0
DELETE = 1
APPEND = 2
SUBTRACT = 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def check_topic_overrides(broker: BrokerConfig, overrides: Mapping[str, str | None]) -> TopicConfig:
    """The effective config the overrides give, or InvalidConfigError (``LogConfig.validate``)."""
    nulls = [name for name, value in overrides.items() if value is None]
    if nulls:
        raise InvalidConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in overrides:
        if name not in TOPIC_KEYS:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
    config = broker.topic_config(overrides)
    # LogConfig.validateValues
    if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        raise InvalidConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({config.min_compaction_lag_ms})"
            f" > max.compaction.lag.ms ({config.max_compaction_lag_ms})"
        )
    return config


def check_unique_names(names: Iterable[str]) -> None:
    """``ConfigAdminManager.preprocess``: a key may appear once per resource."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidRequestError("Error due to duplicate config keys")
        seen.add(name)


def _items(value: str) -> list[str]:
    return [item for item in value.split(",") if item]


def apply_incremental(
    current: Mapping[str, str],
    effective: TopicConfig,
    changes: Iterable[tuple[str, int, str | None]],
) -> dict[str, str]:
    """The topic's overrides after ``changes`` (name, operation, value).

    Raises InvalidConfigError for APPEND/SUBTRACT on a key that is not a
    LIST or unknown, InvalidRequestError for an unknown operation.
    """
    overrides = dict(current)
    for name, op, value in changes:
        if op == SET:
            assert value is not None  # null values are refused before (check_null_values)
            overrides[name] = value
        elif op == DELETE:
            overrides.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            key = TOPIC_KEYS.get(name)
            if key is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            if key.type is not ConfigType.LIST:
                raise InvalidConfigError(
                    f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST."
                )
            assert value is not None
            if name in overrides:
                items = _items(overrides[name])
            else:
                items = list(effective.value_of(name))
            for item in _items(value):
                if op == APPEND and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            overrides[name] = ",".join(items)
        else:
            raise InvalidRequestError(
                f"Unknown operation type {op} for config {name} "
                "(0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)"
            )
    return overrides


def check_null_values(changes: Iterable[tuple[str, int, str | None]]) -> None:
    """``ConfigAdminManager.preprocess``: only DELETE may carry a null value."""
    nulls = [name for name, op, value in changes if value is None and op != DELETE]
    if nulls:
        raise InvalidRequestError("Null value not supported for : " + ", ".join(nulls))


def check_broker_resource(node_id: int, name: str, keys: list[str]) -> None:
    """A BROKER resource of AlterConfigs / IncrementalAlterConfigs: Kafka's
    node-id checks (``validateResourceNameIsCurrentNodeId``), then a refusal
    of any change: every broker config here is static."""
    if name:
        try:
            node = int(name)
        except ValueError:
            raise InvalidRequestError(f"Node id must be an integer, but it is: {name}") from None
        if node != node_id:
            raise InvalidRequestError(
                f"Unexpected broker id, expected {node_id}, but received {name}"
            )
    if not keys:
        return
    unknown = sorted(k for k in keys if broker_key(k) is None)
    if unknown:
        raise InvalidRequestError(f"Unknown broker configs: {', '.join(unknown)}")
    raise InvalidRequestError(
        f"Cannot update these configs dynamically: {', '.join(sorted(keys))}. This broker has"
        " no dynamic broker configs: set them in server.properties (or with --override)"
        " and restart it."
    )


def check_resource_type(resource_type: int) -> None:
    """Refuse resource types other than TOPIC and BROKER (INVALID_REQUEST)."""
    if resource_type in (TOPIC, BROKER):
        return
    name = RESOURCE_TYPE_NAMES.get(resource_type)
    if name is None:
        raise InvalidRequestError(f"Unknown resource type {resource_type}")
    raise InvalidRequestError(f"Resource type {name} is not supported by this broker")


def check_topic_resource(name: str) -> None:
    """``ControllerConfigurationValidator.validateTopicName``."""
    if not name:
        raise InvalidRequestError("Default topic resources are not allowed.")
    validate_topic_name(name)


def change_topic_config(
    broker: BrokerContext, topic: str, overrides: Mapping[str, str], validate_only: bool
) -> None:
    """Make ``overrides`` the topic's whole override set: checked, then (unless
    ``validate_only``) persisted in the log dirs and handed to every partition
    log, where it applies from the next append (``LogManager.alter_topic_config``)."""
    check_topic_overrides(broker.config, overrides)
    if broker.replica_manager.partition_count(topic) is None:
        raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
    if validate_only:
        return
    lm = broker.log_manager
    current = lm.config_store.overrides(topic)
    lm.alter_topic_config(topic, dict(overrides), [k for k in current if k not in overrides])
    log.info("topic %s configs are now %s", topic, dict(overrides))


def duplicate_resources(resources: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    """Resources named more than once in a request: each copy is refused with
    INVALID_REQUEST "Each resource must appear at most once." (``ConfigAdminManager``)."""
    seen: set[tuple[int, str]] = set()
    twice: set[tuple[int, str]] = set()
    for resource in resources:
        if resource in seen:
            twice.add(resource)
        seen.add(resource)
    return twice


class _Resource(Protocol):
    """One resource of an AlterConfigs or IncrementalAlterConfigs request."""

    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...


ResourceT = TypeVar("ResourceT", bound=_Resource)
_ResourceT_co = TypeVar("_ResourceT_co", bound=_Resource, covariant=True)


class AlterRequest(Protocol[_ResourceT_co]):
    """What AlterConfigsRequest and IncrementalAlterConfigsRequest share."""

    @property
    def resources(self) -> Sequence[_ResourceT_co]: ...

    @property
    def validate_only(self) -> bool: ...


#: one resource's answer: error code, error message, resource type, resource name
ResourceResult = tuple[ErrorCode, str | None, int, str]


class AlterResourceConfigsHandler(RequestHandler[AlterRequest[ResourceT]]):
    """What AlterConfigs and IncrementalAlterConfigs share: one answer per
    resource, in request order; a resource named twice is refused (each
    copy); then, with an authorizer, ALTER_CONFIGS on the topic (TOPIC) or
    on the cluster (BROKER, CLIENT_METRICS) is needed, else
    TOPIC_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED
    (``ControllerApis.authorizeAlterResource``); a KafkaError becomes its code
    and message, anything else UNKNOWN_SERVER_ERROR for that resource only.
    Subclasses say how one resource is changed (:meth:`alter`) and build
    their response (:meth:`response`)."""

    def handle(self, ctx: RequestContext, request: AlterRequest[ResourceT]) -> Reply:
        twice = duplicate_resources((r.resource_type, r.resource_name) for r in request.resources)
        results: list[ResourceResult] = []
        for resource in request.resources:
            code, message = ErrorCode.NONE, None
            try:
                if (resource.resource_type, resource.resource_name) in twice:
                    raise InvalidRequestError("Each resource must appear at most once.")
                self._check_authorized(ctx, resource.resource_type, resource.resource_name)
                self.alter(resource, request.validate_only)
            except KafkaError as exc:
                code, message = exc.code, str(exc)
            except Exception as exc:
                log.exception("unexpected error altering configs of %s", resource.resource_name)
                code, message = ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)
            ctx.count_error(code)
            results.append((code, message, resource.resource_type, resource.resource_name))
        return self.response(results)

    def _check_authorized(self, ctx: RequestContext, resource_type: int, name: str) -> None:
        op = AclOperation.ALTER_CONFIGS
        if resource_type == TOPIC:
            if not self.authorize(ctx, op, ResourceType.TOPIC, name):
                raise TopicAuthorizationError("Topic authorization failed.")
        elif resource_type in (BROKER, CLIENT_METRICS) and not self.authorize_cluster(ctx, op):
            raise ClusterAuthorizationError("Cluster authorization failed.")

    @abc.abstractmethod
    def alter(self, resource: ResourceT, validate_only: bool) -> None:
        """Check (and unless ``validate_only``, apply) one resource's change."""

    @abc.abstractmethod
    def response(self, results: list[ResourceResult]) -> Data:
        """The response carrying ``results``, one per resource in request order."""
