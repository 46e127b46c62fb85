"""Fetch (key 1), versions 0-16.

Behaviour (``KafkaApis.handleFetchRequest``, ``ReplicaManager.fetchMessages``,
``DelayedFetch``):
- Authorization (with an authorizer): a consumer needs READ on each topic,
  a follower (replica id >= 0) CLUSTER_ACTION on the cluster; otherwise the
  partitions get TOPIC_AUTHORIZATION_FAILED (an unknown topic id is
  answered UNKNOWN_TOPIC_ID first, as Kafka resolves ids before it checks).
  Decided once per request, before any read.
- Per partition, in request order: unknown topic or partition ->
  UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for an unknown id, v13+);
  a current_leader_epoch (v9+) below ours -> FENCED_LEADER_EPOCH, above ->
  UNKNOWN_LEADER_EPOCH; a fetch offset below the log start offset or past
  the log end offset -> OFFSET_OUT_OF_RANGE. Every partition error carries
  high watermark, last stable offset and log start offset -1, as Kafka's
  (``ReplicaManager.createLogReadResult(e)``, ``FetchResponse.partitionResponse``):
  consumers reset through ListOffsets.
- Fetch v0-v9 of a topic whose ``compression.type`` is ``zstd`` ->
  UNSUPPORTED_COMPRESSION_TYPE, whatever its batches hold (KIP-110: Fetch
  v10 is the first version whose clients can read zstd).
- Reads go up to the high watermark (= log end offset: one replica) and
  return whole stored batches as a file region, written to the socket from
  a memory map of the segment without copying them into Python objects
  (``broker/server/file_region.py``). Limits as Kafka: ``partition_max_bytes``
  per partition, ``max_bytes`` (v3+) for the response, and the first
  partition with data always returns at least one whole batch (v3+;
  v0-v2 keep the old hard limit).
- v0-v3 consumers cannot read v2 batches: the batches are down-converted to
  magic 0 (v0-v1) or 1 (v2-v3) with the v0/v1 builder, bounded by the
  partition's max bytes, and counted as Kafka counts them
  (FetchMessageConversions per topic and per client software, the request's
  conversion time and temporary memory). ``message.downconversion.enable=false``
  answers UNSUPPORTED_VERSION for such a partition; zstd batches cannot be
  down-converted: a read whose first batch is zstd answers
  UNSUPPORTED_COMPRESSION_TYPE, one that meets a zstd batch later returns
  the batches converted before it (``RecordsUtil.downConvert``).
- min_bytes / max_wait_ms: when fewer than min_bytes are ready (and nothing
  failed), the request parks without polling: every fetched partition wakes
  it on its next append, it re-reads, and answers once min_bytes are there
  or max_wait_ms has passed (then with what there is, possibly nothing).
- isolation_level read_committed (``FetchIsolation.TXN_COMMITTED``): the
  read stops at the last stable offset, and a read that returns records
  lists the aborted transactions ending at or after the fetch offset that
  begin in the segment read (``LocalLog.addAbortedTransactions``); the
  consumer drops their records. Every v4+ answer carries the last stable
  offset. This broker appends no transactions of its clients yet, so only
  a log written by another broker (or a marker the coordinator writes) has
  any.
- Fetch sessions (KIP-227, v7+): this broker keeps none. A full fetch is
  answered with session_id 0, which tells clients to send full fetches;
  an incremental fetch of an unknown session gets FETCH_SESSION_ID_NOT_FOUND.
- Meters: TotalFetchRequests per partition read, BytesOut per partition
  answered, FailedFetchRequests for unexpected failures (ours).

Version notes:
- v1+: throttle_time_ms. v3+: max_bytes. v4+: isolation_level,
  last_stable_offset, aborted_transactions; stored batches returned as they
  are. v5+: log_start_offset. v7+: sessions, top-level error_code. v9+:
  current_leader_epoch. v11+: rack_id, preferred_read_replica (-1). v12+:
  flexible, tagged diverging_epoch/current_leader. v13+: topic ids instead
  of names. v15+: replica_state replaces replica_id. v16: node_endpoints
  (tagged, only with NOT_LEADER_OR_FOLLOWER, which one broker never answers).
  v17 (KIP-853 directory ids) is not served: brokers-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Sized
from dataclasses import dataclass

from broker.errors import ErrorCode, KafkaError
from broker.handlers.authorization import authorize_cluster
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext, TopicMeters
from broker.handlers.file_region import FileRegion
from broker.log.segment import FetchDataInfo
from broker.partition.partition import LEADER_EPOCH, Partition
from broker.protocol.messages import FetchRequest, FetchResponse
from broker.records.batch import MAGIC_V0, MAGIC_V1
from broker.records.downconvert import down_convert
from broker.records.entries import iter_file_entries
from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

READ_COMMITTED = 1
ZERO_UUID = uuid.UUID(int=0)
#: the first Fetch version whose clients can read zstd batches (KIP-110)
ZSTD_MIN_FETCH_VERSION = 10
#: Kafka's FetchMetadata.INITIAL_EPOCH / FINAL_EPOCH
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


def down_convert_magic(version: int) -> int | None:
    """``KafkaApis``: Fetch v0-v1 read magic 0, v2-v3 magic 1, v4+ anything."""
    if version <= 1:
        return MAGIC_V0
    if version <= 3:
        return MAGIC_V1
    return None


@dataclass
class _Wanted:
    """One requested partition and where its answer goes."""

    topic: str
    topic_id: uuid.UUID
    index: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    partition: Partition | None
    error: ErrorCode | None  # decided before any read


class FetchHandler(RequestHandler[FetchRequest]):
    API_KEY = 1
    MIN_VERSION = 0
    MAX_VERSION = 16

    def handle(self, ctx: RequestContext, request: FetchRequest) -> Reply:
        version = ctx.header.api_version
        if (
            version >= 7
            and request.session_id != 0
            and request.session_epoch
            not in (
                INITIAL_EPOCH,
                FINAL_EPOCH,
            )
        ):
            ctx.count_error(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
            return FetchResponse(
                error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[]
            )
        wanted = self._resolve(request, version, self._readable(ctx, request, version))
        response, total, failed = self._read_all(ctx, request, wanted, version)
        max_wait_ms = request.max_wait_ms
        if failed or total >= request.min_bytes or max_wait_ms <= 0:
            self._account(ctx, response)
            return response
        return self._long_poll(ctx, request, wanted, version=version, timeout_s=max_wait_ms / 1000)

    # ---- resolving what is asked -------------------------------------------------------------

    def _readable(
        self, ctx: RequestContext, request: FetchRequest, version: int
    ) -> Callable[[str], bool] | None:
        """Whether the principal may read a topic (None: every topic). Followers
        need CLUSTER_ACTION on the cluster instead (``KafkaApis.handleFetchRequest``)."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return None
        if version >= 15:
            replica_id = request.replica_state.replica_id if request.replica_state else -1
        else:
            replica_id = request.replica_id
        if replica_id >= 0:
            if authorize_cluster(self.broker, ctx, AclOperation.CLUSTER_ACTION):
                return None
            return lambda topic: False
        decided: dict[str, bool] = {}

        def readable(topic: str) -> bool:
            allowed = decided.get(topic)
            if allowed is None:  # checked (and a denial reported) once per topic
                allowed = decided[topic] = self.authorize(
                    ctx, AclOperation.READ, ResourceType.TOPIC, topic
                )
            return allowed

        return readable

    def _resolve(
        self, request: FetchRequest, version: int, readable: Callable[[str], bool] | None
    ) -> list[_Wanted]:
        rm = self.broker.replica_manager
        log_manager = self.broker.log_manager
        out: list[_Wanted] = []
        for topic in request.topics:
            topic_id = ZERO_UUID
            name: str | None
            if version >= 13:
                topic_id = topic.topic_id
                name = log_manager.topic_for_id(topic_id.bytes)
            else:
                name = topic.topic
            for p in topic.partitions:
                error: ErrorCode | None = None
                partition = None
                if name is None:
                    error = ErrorCode.UNKNOWN_TOPIC_ID
                elif readable is not None and not readable(name):
                    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                else:
                    partition = rm.get_partition(name, p.partition)
                    if partition is None:
                        error = rm.missing_partition_error(name, p.partition)
                    elif (
                        version < ZSTD_MIN_FETCH_VERSION
                        and partition.log.config.compression_type == "zstd"
                    ):
                        # KafkaApis.handleFetchRequest (maybeConvertFetchedData)
                        # answers this by the topic's config, ahead of the
                        # partition's other errors; Kafka reads first (and may
                        # wait for min_bytes), we answer without reading
                        error = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
                    elif version >= 9 and p.current_leader_epoch != -1:
                        if p.current_leader_epoch < LEADER_EPOCH:
                            error = ErrorCode.FENCED_LEADER_EPOCH
                        elif p.current_leader_epoch > LEADER_EPOCH:
                            error = ErrorCode.UNKNOWN_LEADER_EPOCH
                out.append(
                    _Wanted(
                        name or "",
                        topic_id,
                        p.partition,
                        p.fetch_offset,
                        p.partition_max_bytes,
                        p.current_leader_epoch,
                        partition,
                        error,
                    )
                )
        return out

    # ---- reading -------------------------------------------------------------------------------

    def _read_all(
        self, ctx: RequestContext, request: FetchRequest, wanted: list[_Wanted], version: int
    ) -> tuple[FetchResponse, int, bool]:
        """One pass over every partition: (response, bytes of records, any error)."""
        budget = request.max_bytes if version >= 3 else 2**31 - 1
        min_one_message = version >= 3  # v0-v2: hard max bytes limit
        read_committed = version >= 4 and request.isolation_level == READ_COMMITTED
        magic = down_convert_magic(version)
        meters = self.broker.meters
        by_topic: dict[tuple[str, uuid.UUID], list[FetchResponse.PartitionData]] = {}
        total = 0
        failed = False
        ctx.conversions_time_ns = 0
        ctx.temporary_memory_bytes = 0
        topic_meters: dict[str, TopicMeters] = {}
        for w in wanted:
            tm = None
            if w.partition is not None:
                tm = topic_meters.get(w.topic)
                if tm is None:
                    tm = topic_meters[w.topic] = meters.topic(w.topic)
            part_resp = self._read_one(
                ctx,
                w,
                limit=min(w.max_bytes, budget),
                min_one_message=min_one_message,
                read_committed=read_committed,
                magic=magic,
                meters=tm,
            )
            records = part_resp.records
            size = len(records) if records is not None else 0
            if size:
                total += size
                budget = max(budget - size, 0)
                min_one_message = False
            if part_resp.error_code != ErrorCode.NONE:
                failed = True
            by_topic.setdefault((w.topic, w.topic_id), []).append(part_resp)
        responses = [
            FetchResponse.FetchableTopicResponse(topic=t, topic_id=tid, partitions=parts)
            for (t, tid), parts in by_topic.items()
        ]
        return (
            FetchResponse(error_code=ErrorCode.NONE, session_id=0, responses=responses),
            total,
            failed,
        )

    def _read_one(
        self,
        ctx: RequestContext,
        w: _Wanted,
        *,
        limit: int,
        min_one_message: bool,
        read_committed: bool,
        magic: int | None,
        meters: TopicMeters | None,
    ) -> FetchResponse.PartitionData:
        partition = w.partition
        if w.error is not None or partition is None:
            return self._error(w.index, w.error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        lg = partition.log
        hw, lso = lg.high_watermark_and_last_stable_offset()
        # a READ_COMMITTED read stops at the last stable offset (FetchIsolation.TXN_COMMITTED)
        max_offset = lso if read_committed else hw
        aborted: list[FetchResponse.AbortedTransaction] | None = [] if read_committed else None
        assert meters is not None
        meters.fetch_requests.inc()
        records: Sized = b""
        try:
            # at the end of what may be read there is nothing to read (the poll of
            # an idle partition): no lookup in the log's segments
            if w.fetch_offset != max_offset:
                info = lg.read(w.fetch_offset, max(limit, 0), min_one_message, max_offset)
                if info.records is not None and info.records.size > 0:
                    records = self._records_for(
                        ctx, w, info, magic=magic, meters=meters, limit=limit
                    )
                    if read_committed:
                        aborted = [
                            FetchResponse.AbortedTransaction(
                                producer_id=txn.producer_id, first_offset=txn.first_offset
                            )
                            for txn in lg.fetch_aborted_transactions(w.fetch_offset)
                        ]
        except KafkaError as exc:
            code = exc.code
            if code != ErrorCode.OFFSET_OUT_OF_RANGE:
                log.debug("fetch from %s failed: %s", partition, exc)
            return self._error(w.index, code)
        except Exception:
            log.exception("unexpected error fetching from %s", partition)
            meters.failed_fetch_requests.inc()
            return self._error(w.index, ErrorCode.UNKNOWN_SERVER_ERROR)
        return FetchResponse.PartitionData(
            partition_index=w.index,
            error_code=ErrorCode.NONE,
            high_watermark=hw,
            last_stable_offset=lso,
            log_start_offset=lg.log_start_offset,
            aborted_transactions=aborted,
            preferred_read_replica=-1,
            records=records,
        )

    def _records_for(
        self,
        ctx: RequestContext,
        w: _Wanted,
        info: FetchDataInfo,
        *,
        magic: int | None,
        meters: TopicMeters,
        limit: int,
    ) -> Sized:
        region = info.records
        assert region is not None
        if magic is None:
            # v4+: the stored batches as they are, written from the file
            return FileRegion(region.fd, region.position, region.size)
        data = os.pread(region.fd, region.size, region.position)
        if not any(e.magic > magic for e in iter_file_entries(data)):
            return data  # already old enough (``hasMatchingMagic``)
        partition = w.partition
        assert partition is not None
        if not partition.log.config.message_downconversion_enable:
            raise _DownConversionDisabled()
        converted = down_convert(data, magic, w.fetch_offset, max_bytes=max(limit, 1))
        stats = converted.stats
        if stats.num_records_converted > 0:
            meters.fetch_message_conversions.inc(stats.num_records_converted)
            conn = ctx.connection
            self.broker.meters.client_conversions(
                "Fetch", conn.client_software_name, conn.client_software_version
            ).inc(stats.num_records_converted)
            ctx.conversions_time_ns = stats.conversion_time_nanos
        ctx.temporary_memory_bytes = stats.temporary_memory_bytes
        return converted.records

    @staticmethod
    def _error(index: int, code: ErrorCode) -> FetchResponse.PartitionData:
        """A failed partition: no records, offsets unknown (-1), whatever the
        error, OFFSET_OUT_OF_RANGE included (``ReplicaManager.createLogReadResult(e)``
        without tiered storage; ``FetchResponse.partitionResponse``)."""
        return FetchResponse.PartitionData(
            partition_index=index,
            error_code=code,
            high_watermark=-1,
            last_stable_offset=-1,
            log_start_offset=-1,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=b"",
        )

    # ---- long poll -------------------------------------------------------------------------

    async def _long_poll(
        self,
        ctx: RequestContext,
        request: FetchRequest,
        wanted: list[_Wanted],
        *,
        version: int,
        timeout_s: float,
    ) -> FetchResponse:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        partitions = {id(w.partition): w.partition for w in wanted if w.partition is not None}
        while True:
            woken = asyncio.Event()
            wake: Callable[[], None] = woken.set
            for p in partitions.values():
                assert p is not None
                p.add_append_listener(wake)
            try:
                remaining = deadline - loop.time()
                if remaining > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(woken.wait(), remaining)
            finally:
                for p in partitions.values():
                    assert p is not None
                    p.remove_append_listener(wake)
            response, total, failed = self._read_all(ctx, request, wanted, version)
            if failed or total >= request.min_bytes or loop.time() >= deadline:
                self._account(ctx, response)
                return response

    # ---- bookkeeping -----------------------------------------------------------------------

    def _account(self, ctx: RequestContext, response: FetchResponse) -> None:
        """Error counts and BytesOut, once per answered request."""
        meters = self.broker.meters
        counts: dict[int, int] = {}
        for topic in response.responses:
            for p in topic.partitions:
                code = p.error_code
                counts[code] = counts.get(code, 0) + 1
                size = len(p.records) if p.records is not None else 0
                if size and topic.topic:
                    meters.topic(topic.topic).bytes_out.inc(size)
        for code, n in counts.items():
            ctx.count_error(code, n)


class _DownConversionDisabled(KafkaError):
    """``message.downconversion.enable=false`` and an old consumer (UNSUPPORTED_VERSION)."""

    error_code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self) -> None:
        super().__init__("Down-conversion is disabled for this topic")
