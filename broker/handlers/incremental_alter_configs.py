"""IncrementalAlterConfigs (key 44), versions 0-1.

Behaviour (``ConfigAdminManager.preprocess``,
``ConfigurationControlManager.incrementalAlterConfigs``):
- Operations on a TOPIC resource's overrides: SET (0) a key, DELETE (1) an
  override (the key goes back to its broker-level default), APPEND (2) and
  SUBTRACT (3) items of a LIST key (cleanup.policy); other keys keep their
  overrides. An unknown operation -> INVALID_REQUEST (Kafka:
  UNKNOWN_SERVER_ERROR; docs/deviations.md); APPEND/SUBTRACT on a key that is
  not a list -> INVALID_CONFIG.
- The result is checked as a whole, so one bad key fails the resource and
  changes nothing: per resource, in request order: named twice in the
  request -> INVALID_REQUEST for each copy; with an authorizer,
  ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or the cluster
  (BROKER: CLUSTER_AUTHORIZATION_FAILED); a config key twice ->
  INVALID_REQUEST; a null value for anything but DELETE -> INVALID_REQUEST;
  a resource type other than TOPIC and BROKER -> INVALID_REQUEST; an empty
  topic name -> INVALID_REQUEST, an illegal one -> INVALID_TOPIC_EXCEPTION;
  bad configs -> INVALID_CONFIG with Kafka's messages; an unknown topic ->
  UNKNOWN_TOPIC_OR_PARTITION.
- The new overrides are persisted in the log dirs (they survive restarts)
  and take effect on each partition's next append.
- BROKER resources: no dynamic broker configuration here, so any change is
  INVALID_REQUEST naming the keys, after Kafka's node-id checks.
- validate_only: every check, nothing changed.

Version notes:
- v1: flexible.
"""

from __future__ import annotations

from broker.handlers.config_changes import (
    BROKER,
    AlterResourceConfigsHandler,
    ResourceResult,
    apply_incremental,
    change_topic_config,
    check_broker_resource,
    check_null_values,
    check_resource_type,
    check_topic_resource,
    check_unique_names,
)
from broker.protocol.messages import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

_Resource = IncrementalAlterConfigsRequest.AlterConfigsResource


class IncrementalAlterConfigsHandler(AlterResourceConfigsHandler[_Resource]):
    API_KEY = 44
    MIN_VERSION = 0
    MAX_VERSION = 1

    def alter(self, resource: _Resource, validate_only: bool) -> None:
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        names = [name for name, _, _ in changes]
        check_unique_names(names)
        check_null_values(changes)
        check_resource_type(resource.resource_type)
        name = resource.resource_name
        if resource.resource_type == BROKER:
            check_broker_resource(self.broker.node_id, name, names)
            return
        check_topic_resource(name)
        store = self.broker.log_manager.config_store
        overrides = apply_incremental(store.overrides(name), store.config(name), changes)
        change_topic_config(self.broker, name, overrides, validate_only)

    def response(self, results: list[ResourceResult]) -> IncrementalAlterConfigsResponse:
        return IncrementalAlterConfigsResponse(
            responses=[
                IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                    error_code=code,
                    error_message=message,
                    resource_type=resource_type,
                    resource_name=resource_name,
                )
                for code, message, resource_type, resource_name in results
            ]
        )
