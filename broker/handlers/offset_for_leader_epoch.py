"""OffsetForLeaderEpoch (key 23), versions 0-4.

Consumers use it after Metadata gave them leader epochs (KIP-320): they ask
where the epoch of their position ends and truncate if the log no longer
holds it (librdkafka validates positions this way).

Behaviour (``ReplicaManager.lastOffsetForLeaderEpoch``,
``Partition.lastOffsetForLeaderEpoch``, ``LeaderEpochFileCache.endOffsetFor``):
- Authorization (with an authorizer): CLUSTER_ACTION on the cluster (a
  follower) allows every topic; otherwise DESCRIBE on each topic, else its
  partitions get TOPIC_AUTHORIZATION_FAILED (KIP-320 let consumers use it).
- Unknown partition -> UNKNOWN_TOPIC_OR_PARTITION.
- current_leader_epoch (v2+, -1 = not given) below the partition's epoch
  (0) -> FENCED_LEADER_EPOCH, above it -> UNKNOWN_LEADER_EPOCH.
- Otherwise, from the partition's leader-epoch cache: the requested epoch
  if it is the latest one, with the log end offset; else the largest epoch
  at or below it with the start offset of the next epoch; an epoch below
  every cached one answers the requested epoch with the first cached
  start offset; an unknown or undefined (-1) epoch answers NONE with epoch
  -1 and end offset -1.
- The partition's epoch 0 is in the cache from the moment the partition
  exists (``Partition.makeLeader``), so epoch 0 ends at the log end offset.
- replica_id (v3+) is not checked: there are no followers, and any id gets
  the leader's answer.

Version notes:
- v1+: leader_epoch in the response. v2+: current_leader_epoch and
  throttle_time_ms. v3+: replica_id. v4+: flexible.
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.handlers.list_offsets import check_current_leader_epoch
from broker.log.leader_epoch import UNDEFINED_EPOCH_OFFSET
from broker.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from broker.security.acl import AclOperation, ResourceType

_EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset


class OffsetForLeaderEpochHandler(RequestHandler[OffsetForLeaderEpochRequest]):
    API_KEY = 23
    MIN_VERSION = 0
    MAX_VERSION = 4

    def handle(self, ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> Reply:
        rm = self.broker.replica_manager
        every_topic = self.broker.authorizer is None or self.authorize_cluster(
            ctx, AclOperation.CLUSTER_ACTION, report_denial=False
        )
        topics = []
        for topic in request.topics:
            partitions = []
            allowed = every_topic or self.authorize(
                ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic
            )
            for p in topic.partitions:
                index = p.partition
                partition = rm.get_partition(topic.topic, index)
                if not allowed:
                    ctx.count_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    partitions.append(
                        _EpochEndOffset(
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=index
                        )
                    )
                    continue
                if partition is None:
                    code = rm.missing_partition_error(topic.topic, index)
                else:
                    code = check_current_leader_epoch(p.current_leader_epoch)
                ctx.count_error(code)
                if partition is None or code != ErrorCode.NONE:
                    partitions.append(_EpochEndOffset(error_code=code, partition=index))
                    continue
                log_ = partition.log
                epoch, end_offset = log_.leader_epoch_cache.end_offset_for(
                    p.leader_epoch, log_.log_end_offset
                )
                if end_offset == UNDEFINED_EPOCH_OFFSET:
                    # UnifiedLog.endOffsetForEpoch: None -> the defaults (-1, -1)
                    partitions.append(_EpochEndOffset(error_code=ErrorCode.NONE, partition=index))
                else:
                    partitions.append(
                        _EpochEndOffset(
                            error_code=ErrorCode.NONE,
                            partition=index,
                            leader_epoch=epoch,
                            end_offset=end_offset,
                        )
                    )
            topics.append(
                OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
                    topic=topic.topic, partitions=partitions
                )
            )
        return OffsetForLeaderEpochResponse(topics=topics)
