"""DescribeConfigs (key 32), versions 0-4.

Behaviour (``ConfigHelper.describeConfigs``; entries are built by
``broker/handlers/config_entries.py``):
- Authorization (with an authorizer, ``ConfigHelper.handleDescribeConfigsRequest``):
  a TOPIC resource needs DESCRIBE_CONFIGS on the topic (else
  TOPIC_AUTHORIZATION_FAILED "Topic authorization failed."), BROKER,
  BROKER_LOGGER and CLIENT_METRICS resources DESCRIBE_CONFIGS on the cluster
  (else CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed."),
  checked before anything else about the resource.
- TOPIC resources: every topic key of ``broker/config.py`` with the topic's
  effective value, source (TOPIC_CONFIG, STATIC_BROKER_CONFIG or
  DEFAULT_CONFIG) and synonyms; not read-only. An illegal name ->
  INVALID_TOPIC_EXCEPTION, an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
- BROKER resources named with this broker's node id: every broker key
  (broker-only keys and the broker synonyms of topic keys), read-only
  (there is no dynamic broker configuration). The empty name (the
  cluster-wide dynamic defaults) has no entries. Another id or a name that
  is not a number -> INVALID_REQUEST.
- configuration_keys, when given and not empty, keeps only those names
  (unknown names are left out silently, as Kafka does).
- Other resource types (BROKER_LOGGER, CLIENT_METRICS, unknown) ->
  INVALID_REQUEST for that resource with a message (Kafka fails the whole
  request for an unknown type and answers BROKER_LOGGER with log4j levels;
  docs/deviations.md).

Version notes:
- v0: is_default (true when the value is the built-in default; Kafka 3.9
  always sends false, docs/deviations.md). v1+: config_source, synonyms
  when include_synonyms is set. v3+: config_type, documentation when
  include_documentation is set. v4+: flexible.
"""

from __future__ import annotations

import logging

from broker.config import ConfigSource
from broker.errors import (
    ClusterAuthorizationError,
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    TopicAuthorizationError,
    UnknownTopicOrPartitionError,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.config_changes import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    TOPIC,
    check_resource_type,
)
from broker.handlers.config_entries import ConfigEntry, broker_entries, topic_entries
from broker.handlers.context import RequestContext
from broker.partition.replica_manager import validate_topic_name
from broker.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

_Result = DescribeConfigsResponse.DescribeConfigsResult


class DescribeConfigsHandler(RequestHandler[DescribeConfigsRequest]):
    API_KEY = 32
    MIN_VERSION = 0
    MAX_VERSION = 4

    def handle(self, ctx: RequestContext, request: DescribeConfigsRequest) -> Reply:
        version = ctx.header.api_version
        synonyms = version >= 1 and request.include_synonyms
        documentation = version >= 3 and request.include_documentation
        results = []
        for resource in request.resources:
            try:
                self._check_authorized(ctx, resource.resource_type, resource.resource_name)
                entries = self._entries(resource.resource_type, resource.resource_name)
            except KafkaError as exc:
                ctx.count_error(exc.code)
                results.append(
                    _Result(
                        error_code=exc.code,
                        error_message=str(exc),
                        resource_type=resource.resource_type,
                        resource_name=resource.resource_name,
                        configs=[],
                    )
                )
                continue
            keys = resource.configuration_keys
            if keys:
                wanted = set(keys)
                entries = [e for e in entries if e.name in wanted]
            ctx.count_error(ErrorCode.NONE)
            results.append(
                _Result(
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[_config(e, synonyms, documentation) for e in entries],
                )
            )
        return DescribeConfigsResponse(results=results)

    def _check_authorized(self, ctx: RequestContext, resource_type: int, name: str) -> None:
        op = AclOperation.DESCRIBE_CONFIGS
        if resource_type == TOPIC:
            if not self.authorize(ctx, op, ResourceType.TOPIC, name):
                raise TopicAuthorizationError("Topic authorization failed.")
        elif resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS) and not (
            self.authorize_cluster(ctx, op)
        ):
            raise ClusterAuthorizationError("Cluster authorization failed.")

    def _entries(self, resource_type: int, name: str) -> list[ConfigEntry]:
        check_resource_type(resource_type)
        broker = self.broker
        if resource_type == TOPIC:
            validate_topic_name(name)
            if broker.replica_manager.partition_count(name) is None:
                raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
            store = broker.log_manager.config_store
            return topic_entries(broker.config, store.config(name), store.overrides(name))
        assert resource_type == BROKER
        if not name:
            return []  # the cluster-wide dynamic defaults: none here
        try:
            node = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        if node != broker.node_id:
            raise InvalidRequestError(
                f"Unexpected broker id, expected {broker.node_id} or empty string, but received "
                f"{name}"
            )
        return broker_entries(broker.config)


def _config(
    entry: ConfigEntry, synonyms: bool, documentation: bool
) -> DescribeConfigsResponse.DescribeConfigsResourceResult:
    return DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        is_default=entry.source == ConfigSource.DEFAULT_CONFIG,
        config_source=int(entry.source),
        is_sensitive=entry.is_sensitive,
        synonyms=[
            DescribeConfigsResponse.DescribeConfigsSynonym(
                name=s.name, value=s.value, source=int(s.source)
            )
            for s in entry.synonyms
        ]
        if synonyms
        else [],
        config_type=entry.config_type,
        documentation=entry.documentation if documentation else None,
    )
