"""ListOffsets (key 2), versions 0-9.

Behaviour (``KafkaApis.handleListOffsetRequest``, ``Partition.fetchOffsetForTimestamp``,
``UnifiedLog.fetchOffsetByTimestamp`` / ``legacyFetchOffsetsBefore``):
- Authorization (with an authorizer): DESCRIBE on each topic, else its
  partitions get TOPIC_AUTHORIZATION_FAILED (timestamp and offset -1), before
  any other check (Kafka lists them after the authorized topics; here the
  request's order is kept).
- Per partition, in request order: a partition named twice in one request
  (v1+) -> INVALID_REQUEST for every copy; a negative timestamp the version
  does not know -> UNSUPPORTED_VERSION; unknown partition ->
  UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v4+, -1 = not given)
  below the partition's epoch (0) -> FENCED_LEADER_EPOCH, above it ->
  UNKNOWN_LEADER_EPOCH.
- Special timestamps: -2 earliest (log start offset), -4 earliest local
  (the same here: no tiered storage), -1 latest, -3 max timestamp (the
  offset of the record with the largest timestamp), -5 latest tiered
  (offset -1, epoch -1: no tiered storage). A timestamp >= 0 finds the
  first offset whose record timestamp is >= it, through the time index; no
  such record -> NONE with timestamp -1 and offset -1.
- Latest answers the last fetchable offset: the last stable offset for
  read_committed consumers, the high watermark for read_uncommitted ones,
  the log end offset for other replica ids. With one replica and no
  transactions all three are the log end offset. Its leader epoch is the
  partition's (0), as Kafka's leader answers it.
- Leader epochs of other answers come from the leader-epoch cache (earliest)
  or the batch that holds the offset (timestamp and max-timestamp lookups).
- v0 (``legacyFetchOffsetsBefore``): up to max_num_offsets offsets, newest
  first, taken from the segments' base offsets (and the log end offset when
  the active segment is not empty), selected by segment modification time;
  only -1 and -2 of the special timestamps.
- An isolation level other than 0 or 1 is INVALID_REQUEST for every
  partition of the request, and a negative max_num_offsets (v0) for its
  partition (Kafka answers both with UNKNOWN_SERVER_ERROR; docs/deviations.md).

Version notes:
- v0: old_style_offsets, max_num_offsets. v1+: one timestamp and offset per
  partition. v2+: isolation_level, throttle_time_ms. v4+:
  current_leader_epoch and leader_epoch. v5+: OFFSET_NOT_AVAILABLE instead
  of LEADER_NOT_AVAILABLE (never needed by a single replica). v6+:
  flexible. v7+: max timestamp (-3). v8+: earliest local (-4). v9+: latest
  tiered (-5).
"""

from __future__ import annotations

import logging
import time

from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.log.unified_log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    UnifiedLog,
)
from broker.partition.partition import LEADER_EPOCH, Partition
from broker.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

#: the first version that knows each special timestamp (``timestampMinSupportedVersion``)
TIMESTAMP_MIN_VERSION = {
    EARLIEST_TIMESTAMP: 1,
    LATEST_TIMESTAMP: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
}
CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
NO_EPOCH = -1

_Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def check_current_leader_epoch(current_leader_epoch: int) -> ErrorCode:
    """``Partition.checkCurrentLeaderEpoch`` against this broker's epoch (-1: not given)."""
    if current_leader_epoch == NO_EPOCH:
        return ErrorCode.NONE
    if current_leader_epoch < LEADER_EPOCH:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > LEADER_EPOCH:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def last_fetchable_offset(log_: UnifiedLog, isolation_level: int | None) -> int:
    """LSO for read_committed, HW for read_uncommitted, LEO for replicas
    (``Partition.fetchOffsetForTimestamp``'s ``lastFetchableOffset``; one
    replica: HW = LEO)."""
    if isolation_level is None:
        return log_.log_end_offset
    if isolation_level == READ_COMMITTED:
        return log_.last_stable_offset
    return log_.high_watermark


def legacy_offsets_before(log_: UnifiedLog, timestamp: int, max_num_offsets: int) -> list[int]:
    """``UnifiedLog.legacyFetchOffsetsBefore`` (ListOffsets v0)."""
    segments = log_.segments
    start = log_.log_start_offset
    offset_times = [(max(s.base_offset, start), s.last_modified()) for s in segments]
    if segments[-1].size > 0:
        offset_times.append((log_.log_end_offset, time.time_ns() // 1_000_000))
    if timestamp == LATEST_TIMESTAMP:
        index = len(offset_times) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        index = 0
    else:
        index = len(offset_times) - 1
        while index >= 0 and offset_times[index][1] > timestamp:
            index -= 1
    count = min(max_num_offsets, index + 1)
    return [offset_times[index - j][0] for j in range(count)]


_PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse


class ListOffsetsHandler(RequestHandler[ListOffsetsRequest]):
    API_KEY = 2
    MIN_VERSION = 0
    MAX_VERSION = 9

    def handle(self, ctx: RequestContext, request: ListOffsetsRequest) -> Reply:
        version = ctx.header.api_version
        isolation: int | None = None
        bad_isolation = False
        if request.replica_id == CONSUMER_REPLICA_ID:
            isolation = request.isolation_level if version >= 2 else READ_UNCOMMITTED
            bad_isolation = isolation not in (READ_UNCOMMITTED, READ_COMMITTED)
        seen: set[tuple[str, int]] = set()
        duplicates: set[tuple[str, int]] = set()
        if version >= 1:
            for topic in request.topics:
                for p in topic.partitions:
                    key = (topic.name, p.partition_index)
                    if key in seen:
                        duplicates.add(key)
                    seen.add(key)
        rm = self.broker.replica_manager
        topics = []
        for topic in request.topics:
            partitions: list[_PartitionResponse] = []
            if not self.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                partitions.extend(
                    self._error(ctx, p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    for p in topic.partitions
                )
                topics.append(
                    ListOffsetsResponse.ListOffsetsTopicResponse(
                        name=topic.name, partitions=partitions
                    )
                )
                continue
            for p in topic.partitions:
                index = p.partition_index
                if bad_isolation:
                    resp = self._error(ctx, index, ErrorCode.INVALID_REQUEST)
                elif version == 0:
                    resp = self._v0(ctx, rm.get_partition(topic.name, index), p)
                elif (topic.name, index) in duplicates:
                    resp = self._error(ctx, index, ErrorCode.INVALID_REQUEST)
                else:
                    resp = self._partition(
                        ctx, version, rm.get_partition(topic.name, index), p, isolation,
                        topic=topic.name,
                    )  # fmt: skip
                partitions.append(resp)
            topics.append(
                ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
            )
        return ListOffsetsResponse(topics=topics)

    # ---- v1+ ----------------------------------------------------------------------------------

    def _partition(
        self,
        ctx: RequestContext,
        version: int,
        partition: Partition | None,
        p: ListOffsetsRequest.ListOffsetsPartition,
        isolation: int | None,
        *,
        topic: str,
    ) -> _PartitionResponse:
        index = p.partition_index
        timestamp = p.timestamp
        if timestamp < 0 and version < TIMESTAMP_MIN_VERSION.get(timestamp, version + 1):
            return self._error(ctx, index, ErrorCode.UNSUPPORTED_VERSION)
        if partition is None:
            return self._error(
                ctx, index, self.broker.replica_manager.missing_partition_error(topic, index)
            )
        code = check_current_leader_epoch(p.current_leader_epoch)
        if code != ErrorCode.NONE:
            return self._error(ctx, index, code)
        log_ = partition.log
        fetchable = last_fetchable_offset(log_, isolation)
        try:
            if timestamp == LATEST_TIMESTAMP:
                found_ts, found_offset, epoch = -1, fetchable, LEADER_EPOCH
            else:
                found = log_.fetch_offset_by_timestamp(timestamp)
                is_earliest = timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP)
                if found is None or (not is_earliest and found.offset >= fetchable):
                    ctx.count_error(ErrorCode.NONE)
                    return _Partition(partition_index=index, error_code=ErrorCode.NONE)
                found_ts, found_offset = found.timestamp, found.offset
                epoch = NO_EPOCH if found.leader_epoch is None else found.leader_epoch
        except KafkaError as exc:
            log.debug("ListOffsets on %s failed: %s", partition, exc)
            return self._error(ctx, index, exc.code)
        except Exception:
            log.exception("unexpected error listing offsets of %s", partition)
            return self._error(ctx, index, ErrorCode.UNKNOWN_SERVER_ERROR)
        ctx.count_error(ErrorCode.NONE)
        return _Partition(
            partition_index=index,
            error_code=ErrorCode.NONE,
            timestamp=found_ts,
            offset=found_offset,
            leader_epoch=epoch if version >= 4 else NO_EPOCH,
        )

    # ---- v0 -----------------------------------------------------------------------------------

    def _v0(
        self,
        ctx: RequestContext,
        partition: Partition | None,
        p: ListOffsetsRequest.ListOffsetsPartition,
    ) -> _PartitionResponse:
        index = p.partition_index
        if p.timestamp < EARLIEST_TIMESTAMP:
            return self._error(ctx, index, ErrorCode.UNSUPPORTED_VERSION)
        if partition is None:
            return self._error(ctx, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if p.max_num_offsets < 0:
            return self._error(ctx, index, ErrorCode.INVALID_REQUEST)
        offsets = legacy_offsets_before(partition.log, p.timestamp, p.max_num_offsets)
        ctx.count_error(ErrorCode.NONE)
        return _Partition(
            partition_index=index, error_code=ErrorCode.NONE, old_style_offsets=offsets
        )

    @staticmethod
    def _error(ctx: RequestContext, index: int, code: ErrorCode) -> _PartitionResponse:
        ctx.count_error(code)
        return _Partition(partition_index=index, error_code=code)
