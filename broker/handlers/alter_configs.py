"""AlterConfigs (key 33), versions 0-2: the legacy, whole-set configuration change.

Behaviour (``ConfigAdminManager.preprocess``, ``ConfigurationControlManager.legacyAlterConfigs``):
- The configs of a TOPIC resource *replace* the topic's overrides: a key
  the request does not name goes back to its broker-level default, as in
  Kafka (use IncrementalAlterConfigs to change single keys).
- Per resource, in request order: named twice in the request ->
  INVALID_REQUEST for each copy; with an authorizer, ALTER_CONFIGS on the
  topic (TOPIC_AUTHORIZATION_FAILED) or the cluster (BROKER:
  CLUSTER_AUTHORIZATION_FAILED); a config key twice -> INVALID_REQUEST; a
  null value -> INVALID_REQUEST; a resource type other than TOPIC and BROKER
  -> INVALID_REQUEST; an empty topic name -> INVALID_REQUEST; an illegal
  one -> INVALID_TOPIC_EXCEPTION; bad configs -> INVALID_CONFIG with Kafka's
  messages; an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
- The new overrides are persisted in the log dirs (they survive restarts)
  and take effect on each partition's next append (compression.type,
  message.timestamp.type, max.message.bytes, segment.bytes, retention.* ...).
- BROKER resources: this broker has no dynamic broker configuration, so any
  change is INVALID_REQUEST naming the keys (Kafka's answer for a key that
  cannot be updated dynamically); the node id is checked first as Kafka does.
- validate_only: every check, nothing changed.

Version notes:
- v1: same as v0. v2+: flexible.
"""

from __future__ import annotations

from broker.handlers.config_changes import (
    BROKER,
    SET,
    AlterResourceConfigsHandler,
    ResourceResult,
    change_topic_config,
    check_broker_resource,
    check_null_values,
    check_resource_type,
    check_topic_resource,
    check_unique_names,
)
from broker.protocol.messages import AlterConfigsRequest, AlterConfigsResponse

_Resource = AlterConfigsRequest.AlterConfigsResource


class AlterConfigsHandler(AlterResourceConfigsHandler[_Resource]):
    API_KEY = 33
    MIN_VERSION = 0
    MAX_VERSION = 2

    def alter(self, resource: _Resource, validate_only: bool) -> None:
        names = [c.name for c in resource.configs]
        check_unique_names(names)
        check_null_values([(c.name, SET, c.value) for c in resource.configs])
        check_resource_type(resource.resource_type)
        name = resource.resource_name
        if resource.resource_type == BROKER:
            check_broker_resource(self.broker.node_id, name, names)
            return
        check_topic_resource(name)
        # check_null_values refused a null value above: the filter drops none
        overrides = {c.name: c.value for c in resource.configs if c.value is not None}
        change_topic_config(self.broker, name, overrides, validate_only)

    def response(self, results: list[ResourceResult]) -> AlterConfigsResponse:
        return AlterConfigsResponse(
            responses=[
                AlterConfigsResponse.AlterConfigsResourceResponse(
                    error_code=code,
                    error_message=message,
                    resource_type=resource_type,
                    resource_name=resource_name,
                )
                for code, message, resource_type, resource_name in results
            ]
        )
