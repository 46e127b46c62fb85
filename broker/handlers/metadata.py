"""Metadata (key 3), versions 0-12.

Behaviour:
- One broker: it is every partition's leader, its only replica and ISR, and
  the controller. Leader epoch 0 for every partition. Its address is the
  advertised endpoint of the listener the request came in on (Kafka's rule,
  ``MetadataCache.getAliveBrokerNodes(listenerName)``).
- Topics requested by name that do not exist are created when
  ``auto.create.topics.enable`` is true and the request allows it (v4+
  ``allow_auto_topic_creation``; always before v4), with ``num.partitions``
  partitions and the broker's topic defaults; otherwise
  UNKNOWN_TOPIC_OR_PARTITION. Creation is synchronous, so the new topic is
  answered in full at once (Kafka answers LEADER_NOT_AVAILABLE and lets the
  client retry while its controller creates it; see docs/deviations.md).
- An illegal topic name gets INVALID_TOPIC_EXCEPTION for that topic.
- ``__consumer_offsets`` and ``__transaction_state`` are listed like any
  topic with is_internal true (v1+), as Kafka's ``MetadataCache`` lists them;
  asked for by name before they exist, they are created as their
  coordinator creates them (offsets.topic.* / transaction.state.log.* and a
  compacted log), never with num.partitions.
- v10+ topic ids: a topic requested by id only (v12) is looked up by id;
  an unknown id gets UNKNOWN_TOPIC_ID.
- Authorization (with an authorizer, ``KafkaApis.handleTopicMetadataRequest``):
  a request for every topic lists only the topics the principal may
  DESCRIBE, silently; a topic asked for by name without DESCRIBE gets
  TOPIC_AUTHORIZATION_FAILED (topic id zero, whether it exists or not), one
  asked for by id gets it with the id and no name (ids are not secret). A
  missing topic is auto-created only with CREATE on the cluster or on the
  topic, else TOPIC_AUTHORIZATION_FAILED.
- Authorized operations (KIP-430, v8+), when asked for: each answered
  topic's bit field of the topic operations the principal may do, and
  (v8-v10) the cluster's, 0 without DESCRIBE on the cluster; without an
  authorizer every operation the resource supports, as Kafka. Not asked
  for (and for topics answered with an error): -2147483648.

Version notes:
- v0: an empty topic list means every topic; v1+: null means every topic,
  empty means none. v1+: controller_id, rack, is_internal. v2+: cluster_id.
  v3+: throttle_time_ms. v4+: allow_auto_topic_creation. v5+:
  offline_replicas. v7+: leader_epoch. v8-10: cluster authorized operations.
  v9+: flexible. v10+: topic ids. v12: topic name nullable.
"""

from __future__ import annotations

import uuid

from broker.errors import ErrorCode, KafkaError
from broker.handlers.authorization import OPERATIONS_NOT_REQUESTED, authorized_operations
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.partition.internal_topics import (
    GROUP_METADATA_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    is_internal_topic,
)
from broker.partition.partition import LEADER_EPOCH
from broker.protocol.messages import MetadataRequest, MetadataResponse
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType

ZERO_UUID = uuid.UUID(int=0)


class MetadataHandler(RequestHandler[MetadataRequest]):
    API_KEY = 3
    MIN_VERSION = 0
    MAX_VERSION = 12

    def handle(self, ctx: RequestContext, request: MetadataRequest) -> Reply:
        broker = self.broker
        version = ctx.header.api_version
        rm = broker.replica_manager
        requested = request.topics
        if requested is None or (version == 0 and not requested):
            names = sorted(rm.topics())
            if broker.authorizer is not None:
                # not listed, not reported: the client did not name them (logIfDenied=false)
                names = [
                    t
                    for t in names
                    if self.authorize(
                        ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t, report_denial=False
                    )
                ]
            wanted: list[tuple[str | None, uuid.UUID]] = [(t, ZERO_UUID) for t in names]
        else:
            wanted = [(t.name, t.topic_id or ZERO_UUID) for t in requested]
        allow_auto = bool(broker.config.get("auto.create.topics.enable")) and (
            version < 4 or request.allow_auto_topic_creation
        )
        with_operations = version >= 8 and request.include_topic_authorized_operations
        topics = [
            self._topic(ctx, name, topic_id, allow_auto, with_operations)
            for name, topic_id in wanted
        ]
        cluster_operations = OPERATIONS_NOT_REQUESTED
        if 8 <= version <= 10 and request.include_cluster_authorized_operations:
            cluster_operations = (
                authorized_operations(broker, ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                if self.authorize_cluster(ctx, AclOperation.DESCRIBE)
                else 0
            )
        layout = rm.layout
        if layout is None:
            endpoint = broker.endpoint_for(ctx.connection.listener_name)
            brokers = [
                MetadataResponse.MetadataResponseBroker(
                    node_id=broker.node_id, host=endpoint.host, port=endpoint.port, rack=None
                )
            ]
            controller = broker.node_id
        else:  # the machine's nodes (prototype, broker/partition/cluster_layout.py)
            brokers = [
                MetadataResponse.MetadataResponseBroker(
                    node_id=n.node_id, host=n.host, port=n.port, rack=None
                )
                for n in layout.nodes
            ]
            controller = layout.coordinator.node_id
        return MetadataResponse(
            brokers=brokers,
            cluster_id=broker.cluster_id,
            controller_id=controller,
            topics=topics,
            cluster_authorized_operations=cluster_operations,
        )

    def _topic(
        self,
        ctx: RequestContext,
        name: str | None,
        topic_id: uuid.UUID,
        allow_auto: bool,
        with_operations: bool,
    ) -> MetadataResponse.MetadataResponseTopic:
        broker = self.broker
        rm = broker.replica_manager
        by_id = name is None
        if name is None:  # v12: by id only
            found = broker.log_manager.topic_for_id(topic_id.bytes)
            if found is None:
                ctx.count_error(ErrorCode.UNKNOWN_TOPIC_ID)
                return MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id
                )
            name = found
        if not self.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            # the topic's existence is not disclosed: no id for a name, no name for an id
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            ctx.count_error(code)
            return MetadataResponse.MetadataResponseTopic(
                error_code=code,
                name=None if by_id else name,
                topic_id=topic_id if by_id else ZERO_UUID,
                partitions=[],
            )
        internal = is_internal_topic(name)
        if rm.partition_count(name) is None:
            if not allow_auto:
                return self._error_topic(ctx, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if not (
                self.authorize_cluster(ctx, AclOperation.CREATE, report_denial=False)
                or self.authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)
            ):
                return self._error_topic(ctx, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            try:
                if name == GROUP_METADATA_TOPIC_NAME and broker.groups is not None:
                    # created as the coordinator creates it (partitions, compaction)
                    broker.groups.ensure_topic()
                elif name == TRANSACTION_STATE_TOPIC_NAME and broker.transactions is not None:
                    broker.transactions.txn_manager.ensure_topic()
                else:
                    rm.create_topic(name, int(broker.config.get("num.partitions")))
            except KafkaError as exc:
                return self._error_topic(ctx, name, exc.code)
        layout = rm.layout
        partitions = []
        for p in rm.partitions_of(name):
            node = broker.node_id if layout is None else layout.leader_of(name, p.partition).node_id
            partitions.append(
                MetadataResponse.MetadataResponsePartition(
                    error_code=ErrorCode.NONE,
                    partition_index=p.partition,
                    leader_id=node,
                    leader_epoch=LEADER_EPOCH,
                    replica_nodes=[node],
                    isr_nodes=[node],
                    offline_replicas=[],
                )
            )
        ctx.count_error(ErrorCode.NONE)
        tid = broker.log_manager.topic_id(name)
        return MetadataResponse.MetadataResponseTopic(
            error_code=ErrorCode.NONE,
            name=name,
            topic_id=uuid.UUID(bytes=tid) if tid else ZERO_UUID,
            is_internal=internal,
            partitions=partitions,
            topic_authorized_operations=authorized_operations(broker, ctx, ResourceType.TOPIC, name)
            if with_operations
            else OPERATIONS_NOT_REQUESTED,
        )

    @staticmethod
    def _error_topic(
        ctx: RequestContext, name: str, code: ErrorCode
    ) -> MetadataResponse.MetadataResponseTopic:
        ctx.count_error(code)
        return MetadataResponse.MetadataResponseTopic(error_code=code, name=name, partitions=[])
