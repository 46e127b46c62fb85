"""Metadata (key 3), versions 0-12.

Behaviour:
- One broker: it is every partition's leader, its only replica and ISR, and
  the controller. Leader epoch 0 for every partition.
- Topics requested by name that do not exist are created when
  ``auto.create.topics.enable`` is true and the request allows it (v4+
  ``allow_auto_topic_creation``; always before v4), with ``num.partitions``
  partitions and the broker's topic defaults; otherwise
  UNKNOWN_TOPIC_OR_PARTITION. Creation is synchronous, so the new topic is
  answered in full at once (Kafka answers LEADER_NOT_AVAILABLE and lets the
  client retry while its controller creates it; see docs/deviations.md).
- An illegal topic name gets INVALID_TOPIC_EXCEPTION for that topic.
- ``__consumer_offsets`` is listed like any topic with is_internal true (v1+),
  as Kafka's ``MetadataCache`` lists it; asked for by name before it exists,
  it is created as the group coordinator creates it (offsets.topic.* and a
  compacted log), never with num.partitions.
- v10+ topic ids: a topic requested by id only (v12) is looked up by id;
  an unknown id gets UNKNOWN_TOPIC_ID.
- Authorized operations are not computed (no ACLs): Kafka's "not requested"
  value (-2147483648) is always returned.

Version notes:
- v0: an empty topic list means every topic; v1+: null means every topic,
  empty means none. v1+: controller_id, rack, is_internal. v2+: cluster_id.
  v3+: throttle_time_ms. v4+: allow_auto_topic_creation. v5+:
  offline_replicas. v7+: leader_epoch. v8-10: cluster authorized operations.
  v9+: flexible. v10+: topic ids. v12: topic name nullable.
"""

from __future__ import annotations

import uuid

from broker.coordinator.group.coordinator import is_internal_topic
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.partition.partition import LEADER_EPOCH
from broker.protocol.data import Data
from broker.protocol.messages import MetadataResponse

ZERO_UUID = uuid.UUID(int=0)


class MetadataHandler(RequestHandler):
    API_KEY = 3
    MIN_VERSION = 0
    MAX_VERSION = 12

    def handle(self, ctx: RequestContext, request: Data) -> Reply:
        broker = self.broker
        version = ctx.header.api_version
        rm = broker.replica_manager
        if request.topics is None or (version == 0 and not request.topics):
            wanted: list[tuple[str | None, uuid.UUID]] = [
                (t, ZERO_UUID) for t in sorted(rm.topics())
            ]
        else:
            wanted = [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
        allow_auto = bool(broker.config.get("auto.create.topics.enable")) and (
            version < 4 or request.allow_auto_topic_creation
        )
        topics = [self._topic(ctx, name, topic_id, allow_auto) for name, topic_id in wanted]
        endpoint = broker.advertised
        return MetadataResponse(
            brokers=[
                MetadataResponse.MetadataResponseBroker(
                    node_id=broker.node_id, host=endpoint.host, port=endpoint.port, rack=None
                )
            ],
            cluster_id=broker.cluster_id,
            controller_id=broker.node_id,
            topics=topics,
        )

    def _topic(
        self, ctx: RequestContext, name: str | None, topic_id: uuid.UUID, allow_auto: bool
    ) -> Data:
        broker = self.broker
        rm = broker.replica_manager
        if name is None:  # v12: by id only
            found = broker.log_manager.topic_for_id(topic_id.bytes)
            if found is None:
                ctx.count_error(ErrorCode.UNKNOWN_TOPIC_ID)
                return MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id
                )
            name = found
        internal = is_internal_topic(name)
        if rm.partition_count(name) is None:
            if not allow_auto:
                return self._error_topic(ctx, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            try:
                if internal and broker.groups is not None:
                    # created as the coordinator creates it (partitions, compaction)
                    broker.groups.ensure_topic()
                else:
                    rm.create_topic(name, int(broker.config.get("num.partitions")))
            except KafkaError as exc:
                return self._error_topic(ctx, name, exc.code)
        node = broker.node_id
        partitions = [
            MetadataResponse.MetadataResponsePartition(
                error_code=ErrorCode.NONE,
                partition_index=p.partition,
                leader_id=node,
                leader_epoch=LEADER_EPOCH,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for p in rm.partitions_of(name)
        ]
        ctx.count_error(ErrorCode.NONE)
        tid = broker.log_manager.topic_id(name)
        return MetadataResponse.MetadataResponseTopic(
            error_code=ErrorCode.NONE,
            name=name,
            topic_id=uuid.UUID(bytes=tid) if tid else ZERO_UUID,
            is_internal=internal,
            partitions=partitions,
        )

    @staticmethod
    def _error_topic(ctx: RequestContext, name: str, code: ErrorCode) -> Data:
        ctx.count_error(code)
        return MetadataResponse.MetadataResponseTopic(error_code=code, name=name, partitions=[])
