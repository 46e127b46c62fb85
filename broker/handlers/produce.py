"""Produce (key 0), versions 0-11.

Behaviour (``KafkaApis.handleProduceRequest``, ``ProduceRequest.validateRecords``,
``ReplicaManager.appendToLocalLog``):
- A partition whose first batch is transactional fails the whole request:
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED without a transactional id or
  without WRITE on it (as Kafka), INVALID_TXN_STATE with one (this broker
  has no transaction coordinator; docs/deviations.md).
- Authorization (with an authorizer): WRITE on each topic, else every
  partition of the topic gets TOPIC_AUTHORIZATION_FAILED, before the checks
  below, and nothing of it is stored (``KafkaApis.handleProduceRequest``).
  The decision is the authorizer's cached one: one ``dict.get`` per topic
  of the request, no per-record or per-partition cost.
- acks must be -1, 0 or 1, else every partition gets INVALID_REQUIRED_ACKS
  (TOPIC_AUTHORIZATION_FAILED for topics the principal may not write) and
  nothing is appended.
- Per partition, in request order: unknown partition -> UNKNOWN_TOPIC_OR_PARTITION;
  an internal topic (``__consumer_offsets``) -> INVALID_TOPIC_EXCEPTION ("Cannot
  append to internal topic", ``ReplicaManager.appendToLocalLog``);
  ``ProduceRequest.validateRecords`` (magic 2 and one batch for v3+, zstd
  only from v7) -> its code; these partitions do not touch the topic meters.
  Then TotalProduceRequests is marked and the partition appends (validate
  then append, nothing awaited in between; ``broker/partition/partition.py``).
- One request may hold the event loop for at most ``produce.inline.max.ms``:
  partitions after that, and any whose validation would exceed
  ``produce.inline.max.cost`` (a batch that inflates to megabytes, a
  recompression), are validated on a worker thread, queued on their
  partition so that appends keep the order of arrival; the response is sent
  when every partition is done (the meters and the error mapping are the
  same either way).
- Error mapping and meters of ``appendToLocalLog``: unknown partition,
  MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE and
  KAFKA_STORAGE_ERROR are answered with log_start_offset -1 and do not mark
  FailedProduceRequests; record validation errors (INVALID_TIMESTAMP,
  INVALID_RECORD with record_errors) and every other error mark it and carry
  the partition's log start offset. MESSAGE_TOO_LARGE also marks BytesRejected.
  A failure of ours (a bug) is logged and answered UNKNOWN_SERVER_ERROR.
- Success marks BytesIn (the request's bytes for the partition),
  MessagesIn (last - first + 1, duplicates included) and, when the broker
  converted or recompressed records, ProduceMessageConversions and the
  per-client conversions counter. The request's conversion time and
  temporary memory are the last partition's values, as Kafka records them.
- acks=0: no response; if any partition failed, the connection is closed
  instead, so the client notices (Kafka does the same).
- acks=1: answered after the append.
- acks=-1: one replica, so the broker makes it mean "on disk": the answer
  waits until an fsync covers every appended batch, one fsync shared by all
  requests waiting at that moment (group commit, ``broker/server/group_commit.py``);
  REQUEST_TIMED_OUT if that takes longer than the request's timeout_ms.
  ``acks.all.fsync=false`` answers after the append instead. With
  min.insync.replicas > 1 the partition gets NOT_ENOUGH_REPLICAS, as a
  Kafka partition whose ISR is too small.

Version notes:
- v0-v2 carry magic 0/1 message sets (up-converted by the validator); v3+
  carry one v2 batch and a transactional_id. v2+: log_append_time_ms.
  v5+: log_start_offset. v7+: zstd allowed. v8+: record_errors and
  error_message (also filled for errors Kafka leaves without a message;
  docs/deviations.md). v9+: flexible. v10+: current_leader (tagged, only for
  NOT_LEADER_OR_FOLLOWER, which one broker never answers). v11: same as v10.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass

from broker.coordinator.group.coordinator import is_internal_topic
from broker.delayed import DelayedReply
from broker.errors import (
    ErrorCode,
    KafkaError,
    KafkaStorageError,
    RecordTooLargeError,
    RecordValidationError,
)
from broker.handlers.authorization import authorize, report_denied
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import BrokerContext, RequestContext, TopicMeters
from broker.log.unified_log import UnifiedLog
from broker.partition.partition import AppendOutcome, Partition
from broker.protocol.data import Data
from broker.protocol.messages import ProduceRequest, ProduceResponse
from broker.records.batch import (
    ATTRIBUTES_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from broker.security.acl import AclOperation, ResourceType
from broker.validator.analysis import check_request_records

log = logging.getLogger(__name__)

#: errors answered with log_start_offset -1 and without FailedProduceRequests
#: (``ReplicaManager.appendToLocalLog``)
_PLAIN_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)
_LENGTH = struct.Struct(">i")
_WRITE = AclOperation.WRITE
_TOPIC = ResourceType.TOPIC
#: the cache key's plain ints: an IntEnum hashes through a slower path
_WRITE_CODE = int(_WRITE)
_TOPIC_CODE = int(_TOPIC)
#: record errors one produce response lists in all (each partition lists at most
#: MAX_LISTED_RECORD_ERRORS); later partitions list none and say so
#: (docs/deviations.md, "Record errors are capped")
MAX_RESPONSE_RECORD_ERRORS = 1000


_PartitionResponse = ProduceResponse.PartitionProduceResponse
#: the place of a queued partition's response in its topic's list until the
#: append is done (``_after_queued`` puts the real one in its slot)
_PENDING = _PartitionResponse()


class _ErrorListing:
    """What is left of one response's record error budget."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_RESPONSE_RECORD_ERRORS

    def take(
        self, exc: RecordValidationError
    ) -> tuple[list[ProduceResponse.BatchIndexAndErrorMessage], str]:
        """The record_errors and error_message of a partition's response."""
        listed = exc.record_errors[: self.left]
        self.left -= len(listed)
        message = str(exc)
        if len(listed) < len(exc.record_errors):
            reason = (
                "invalid timestamp"
                if exc.code == ErrorCode.INVALID_TIMESTAMP
                else f"{exc.total} record errors in total"
            )
            message = (
                f"One or more records have been rejected due to {reason} ({exc.total} record "
                f"errors, {len(listed)} listed: the response already lists "
                f"{MAX_RESPONSE_RECORD_ERRORS - self.left - len(listed)} of at most "
                f"{MAX_RESPONSE_RECORD_ERRORS})"
            )
        return [
            ProduceResponse.BatchIndexAndErrorMessage(
                batch_index=e.batch_index, batch_index_error_message=e.message
            )
            for e in listed
        ], message


def _any_transactional(request: ProduceRequest) -> bool:
    """``RequestUtils.hasTransactionalRecords``: a partition's first batch is."""
    for td in request.topic_data:
        for pd in td.partition_data:
            if pd.records is not None and _first_batch_transactional(pd.records):
                return True
    return False


def _first_batch_transactional(records: memoryview) -> bool:
    """``RequestUtils.hasTransactionalRecords`` for one partition: the first
    batch's transactional flag (v2 only; legacy batches cannot carry it).
    The first batch starts at 0 (its length at 8, magic at 16); one that is
    not whole is the validator's to report (framing errors included)."""
    if len(records) < RECORD_BATCH_OVERHEAD or records[MAGIC_OFFSET] < MAGIC_V2:
        return False
    (length,) = _LENGTH.unpack_from(records, LENGTH_OFFSET)
    if not RECORD_BATCH_OVERHEAD <= length + LOG_OVERHEAD <= len(records):
        return False
    # the attributes are a big-endian int16: the flag is in its low byte
    return bool(records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK)


@dataclass(slots=True)
class _Queued:
    """A partition whose append was queued (validated on a worker thread)."""

    responses: list[_PartitionResponse]
    slot: int
    partition: Partition
    size: int
    tmeters: TopicMeters
    job: asyncio.Future[AppendOutcome]


class ProduceHandler(RequestHandler[ProduceRequest]):
    API_KEY = 0
    MIN_VERSION = 0
    MAX_VERSION = 11

    def __init__(self, broker: BrokerContext) -> None:
        super().__init__(broker)
        #: how long one request may validate on the event loop (produce.inline.max.ms)
        self._inline_ns = int(broker.config.get("produce.inline.max.ms")) * 1_000_000
        #: the authorizer (set before the handlers are built), None without one
        self._authorizer = broker.authorizer

    def handle(self, ctx: RequestContext, request: ProduceRequest) -> Reply:
        version = ctx.header.api_version
        acks = request.acks
        if _any_transactional(request):
            transactional_id = request.transactional_id
            if transactional_id is None or not authorize(
                self.broker, ctx, _WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
            ):
                return self._fail_all(
                    ctx, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, acks
                )
            return self._fail_all(
                ctx,
                request,
                ErrorCode.INVALID_TXN_STATE,
                "Transactions are not supported by this broker: it has no transaction "
                "coordinator. Produce without a transactional.id.",
                acks,
            )
        # Kafka's order: the transactional id, the topics' WRITE, then (in
        # appendRecords) acks
        denied = None if self._authorizer is None else self._denied_topics(ctx, request)
        if acks not in (-1, 0, 1):
            return self._fail_all(
                ctx, request, ErrorCode.INVALID_REQUIRED_ACKS, None, acks, denied=denied
            )

        rm = self.broker.replica_manager
        meters = self.broker.meters
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]] = []
        listing = _ErrorListing()
        queued: list[_Queued] = []
        min_isr_check = acks == -1
        any_error = False
        topics = []
        # partitions after this moment are validated on a worker thread
        inline_until = time.perf_counter_ns() + self._inline_ns
        first = True
        for td in request.topic_data:
            name = td.name
            tmeters: TopicMeters | None = None
            responses: list[_PartitionResponse] = []
            if denied and name in denied:
                message = f"Not authorized to access topics: [{name}]"
                responses.extend(
                    self._error(ctx, pd.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED, message,
                                version)
                    for pd in td.partition_data
                )  # fmt: skip
                any_error = True
                topics.append(
                    ProduceResponse.TopicProduceResponse(name=name, partition_responses=responses)
                )
                continue
            for pd in td.partition_data:
                partition = rm.get_partition(name, pd.index)
                records = pd.records
                if partition is None:
                    code = rm.missing_partition_error(name, pd.index)
                    resp = self._error(
                        ctx,
                        pd.index,
                        code,
                        f"This server does not host this topic-partition: {name}-{pd.index}"
                        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        else f"This server is not the leader for that topic-partition: "
                        f"{name}-{pd.index}",
                        version,
                    )
                elif is_internal_topic(name):
                    # ReplicaManager.appendToLocalLog with internalTopicsAllowed=false
                    resp = self._error(
                        ctx,
                        pd.index,
                        ErrorCode.INVALID_TOPIC_EXCEPTION,
                        f"Cannot append to internal topic {name}",
                        version,
                    )
                elif records is None:
                    resp = self._error(
                        ctx, pd.index, ErrorCode.INVALID_RECORD, "records must not be null", version
                    )
                else:
                    try:
                        check_request_records(records, version)
                    except KafkaError as exc:
                        log.debug("produce to %s-%d refused: %s", name, pd.index, exc)
                        resp = self._error(ctx, pd.index, exc.code, str(exc), version)
                    else:
                        if tmeters is None:
                            tmeters = meters.topic(name)
                        got = self._append(
                            ctx,
                            partition,
                            records,
                            version=version,
                            tmeters=tmeters,
                            min_isr_check=min_isr_check,
                            durable=durable,
                            listing=listing,
                            # the first partition is always tried inline (its own
                            # cost is bounded by produce.inline.max.cost)
                            inline=first or time.perf_counter_ns() < inline_until,
                        )
                        first = False
                        if isinstance(got, asyncio.Future):
                            queued.append(
                                _Queued(responses, len(responses), partition, records.nbytes,
                                        tmeters, got)
                            )  # fmt: skip
                            # replaced by its response once the append is done
                            responses.append(_PENDING)
                            continue
                        resp = got
                any_error = any_error or resp.error_code != ErrorCode.NONE
                responses.append(resp)
            topics.append(
                ProduceResponse.TopicProduceResponse(name=name, partition_responses=responses)
            )
        response = ProduceResponse(responses=topics)
        if queued:
            return self._after_queued(
                ctx,
                request,
                response,
                queued=queued,
                durable=durable,
                listing=listing,
                any_error=any_error,
            )
        return self._answer(ctx, request, response, durable, any_error)

    def _answer(
        self,
        ctx: RequestContext,
        request: ProduceRequest,
        response: ProduceResponse,
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]],
        any_error: bool,
    ) -> Data | DelayedReply[Data] | None:
        """Once every partition is appended: acks 0 / 1 / all."""
        acks = request.acks
        conn = ctx.connection
        if acks == 0:
            if any_error:
                # Kafka closes the connection so that an acks=0 client learns of failures
                conn.close()
            return None
        if acks == 1 or not durable or not self.broker.config.get("acks.all.fsync"):
            return response
        # registered now, in the handler's synchronous part (GroupCommit); answered
        # from the round's callback, without a task or a coroutine
        targets = [(log_, offset) for log_, offset, _ in durable]
        answered: DelayedReply[Data] = DelayedReply()
        if not self.broker.durability.when_flushed(
            targets,
            max(request.timeout_ms, 0) / 1000,
            functools.partial(self._flushed, ctx, response, durable, answered),
        ):
            return response  # durable already
        return answered

    def _denied_topics(self, ctx: RequestContext, request: ProduceRequest) -> set[str] | None:
        """The request's topics the principal may not WRITE (None: all allowed). Each
        topic costs one lookup in the authorizer's cached decisions; a denial is
        reported once per topic (``filterByAuthorized``)."""
        authorizer = self._authorizer
        assert authorizer is not None
        conn = ctx.connection
        known = authorizer.decisions(conn.principal, conn.peer_host, _WRITE_CODE, _TOPIC_CODE)
        denied: set[str] | None = None
        for td in request.topic_data:
            name = td.name
            if known.get(name):
                continue  # the common case: allowed, decided before
            if authorizer.decide(conn.principal, conn.peer_host, _WRITE_CODE, _TOPIC_CODE, name):
                continue
            if denied is None:
                denied = set()
            elif name in denied:
                continue
            denied.add(name)
            report_denied(self.broker, ctx, _WRITE, _TOPIC, name)
        return denied

    # ---- one partition -----------------------------------------------------------------------

    def _append(
        self,
        ctx: RequestContext,
        partition: Partition,
        records: memoryview,
        *,
        version: int,
        tmeters: TopicMeters,
        min_isr_check: bool,
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]],
        listing: _ErrorListing,
        inline: bool,
    ) -> _PartitionResponse | asyncio.Future[AppendOutcome]:
        tmeters.produce_requests.inc()
        size = records.nbytes
        log_ = partition.log
        try:
            if min_isr_check and log_.config.min_insync_replicas > 1:
                ctx.count_error(ErrorCode.NOT_ENOUGH_REPLICAS)
                tmeters.failed_produce_requests.inc()
                return ProduceResponse.PartitionProduceResponse(
                    index=partition.partition,
                    error_code=ErrorCode.NOT_ENOUGH_REPLICAS,
                    base_offset=-1,
                    log_append_time_ms=-1,
                    log_start_offset=log_.log_start_offset,
                    error_message=(
                        f"The size of the current ISR {{{self.broker.node_id}}} is insufficient "
                        f"to satisfy the min.isr requirement of {log_.config.min_insync_replicas} "
                        f"for partition {partition.topic}-{partition.partition}"
                    )
                    if version >= 8
                    else None,
                )
            got = partition.append(records, version, inline=inline)
        except Exception as exc:
            return self._failed(
                ctx, partition, size=size, version=version, tmeters=tmeters, listing=listing,
                exc=exc,
            )  # fmt: skip
        if isinstance(got, asyncio.Future):
            return got
        return self._appended(
            ctx, partition, size=size, tmeters=tmeters, durable=durable, outcome=got
        )

    def _failed(
        self,
        ctx: RequestContext,
        partition: Partition,
        *,
        size: int,
        version: int,
        tmeters: TopicMeters,
        listing: _ErrorListing,
        exc: BaseException,
    ) -> _PartitionResponse:
        """A partition's response and meters for an append that raised."""
        log_ = partition.log
        if isinstance(exc, RecordValidationError):
            log.debug("produce to %s rejected: %s", partition, exc)
            tmeters.failed_produce_requests.inc()
            ctx.count_error(exc.code)
            listed, message = listing.take(exc)
            return ProduceResponse.PartitionProduceResponse(
                index=partition.partition,
                error_code=exc.code,
                base_offset=-1,
                log_append_time_ms=-1,
                log_start_offset=log_.log_start_offset,
                record_errors=listed,
                error_message=message,
            )
        if isinstance(exc, OSError):
            # the disk failed under the append (Kafka: KafkaStorageException from
            # the log, KAFKA_STORAGE_ERROR for the partition), not a bug of ours
            log.error("I/O error appending to %s: %s", partition, exc)
            exc = KafkaStorageError(f"I/O error appending to {partition.topic}-"
                                    f"{partition.partition}: {exc.strerror or exc}")  # fmt: skip
        if isinstance(exc, KafkaError):
            code = exc.code
            log.debug("produce to %s failed: %s: %s", partition, code.name, exc)
            if isinstance(exc, RecordTooLargeError):
                tmeters.bytes_rejected.inc(size)
            if code in _PLAIN_ERRORS:
                return self._error(ctx, partition.partition, code, str(exc), version)
            tmeters.failed_produce_requests.inc()
            ctx.count_error(code)
            return ProduceResponse.PartitionProduceResponse(
                index=partition.partition,
                error_code=code,
                base_offset=-1,
                log_append_time_ms=-1,
                log_start_offset=log_.log_start_offset,
                error_message=str(exc) if version >= 8 else None,
            )
        # a bug of ours: logged with its traceback, answered UNKNOWN_SERVER_ERROR
        log.error(
            "unexpected error appending to %s-%d",
            partition.topic,
            partition.partition,
            exc_info=exc,
        )
        tmeters.failed_produce_requests.inc()
        ctx.count_error(ErrorCode.UNKNOWN_SERVER_ERROR)
        return ProduceResponse.PartitionProduceResponse(
            index=partition.partition,
            error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
            base_offset=-1,
            log_append_time_ms=-1,
            log_start_offset=log_.log_start_offset,
        )

    def _appended(
        self,
        ctx: RequestContext,
        partition: Partition,
        *,
        size: int,
        tmeters: TopicMeters,
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]],
        outcome: AppendOutcome,
    ) -> _PartitionResponse:
        """A partition's response and meters for a successful append."""
        log_ = partition.log
        ctx.count_error(ErrorCode.NONE)
        stats = outcome.stats
        if outcome.num_records > 0:
            tmeters.bytes_in.inc(size)
            tmeters.messages_in.inc(outcome.num_records)
        converted = stats.num_records_converted
        if converted > 0:
            tmeters.produce_message_conversions.inc(converted)
            conn = ctx.connection
            self.broker.meters.client_conversions(
                "Produce", conn.client_software_name, conn.client_software_version
            ).inc(converted)
            ctx.conversions_time_ns = stats.conversion_time_nanos
        ctx.temporary_memory_bytes = stats.temporary_memory_bytes
        resp = ProduceResponse.PartitionProduceResponse(
            index=partition.partition,
            error_code=ErrorCode.NONE,
            base_offset=outcome.base_offset,
            log_append_time_ms=outcome.log_append_time_ms,
            log_start_offset=outcome.log_start_offset,
        )
        if outcome.last_offset >= 0:
            durable.append((log_, outcome.last_offset + 1, resp))
        return resp

    @staticmethod
    def _error(
        ctx: RequestContext, index: int, code: ErrorCode, message: str | None, version: int
    ) -> _PartitionResponse:
        ctx.count_error(code)
        return ProduceResponse.PartitionProduceResponse(
            index=index,
            error_code=code,
            base_offset=-1,
            log_append_time_ms=-1,
            log_start_offset=-1,
            error_message=message if version >= 8 else None,
        )

    def _fail_all(
        self,
        ctx: RequestContext,
        request: ProduceRequest,
        code: ErrorCode,
        message: str | None,
        acks: int,
        *,
        denied: set[str] | None = None,
    ) -> Reply:
        """Every partition fails with ``code`` (topics in ``denied`` with
        TOPIC_AUTHORIZATION_FAILED, which Kafka checks first)."""
        version = ctx.header.api_version
        topics = []
        for td in request.topic_data:
            failed, why = code, message
            if denied and td.name in denied:
                failed = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                why = f"Not authorized to access topics: [{td.name}]"
            topics.append(
                ProduceResponse.TopicProduceResponse(
                    name=td.name,
                    partition_responses=[
                        self._error(ctx, pd.index, failed, why, version) for pd in td.partition_data
                    ],
                )
            )
        response = ProduceResponse(responses=topics)
        if acks == 0:
            ctx.connection.close()
            return None
        return response

    # ---- appends queued on worker threads ---------------------------------------------------

    async def _after_queued(
        self,
        ctx: RequestContext,
        request: ProduceRequest,
        response: ProduceResponse,
        *,
        queued: list[_Queued],
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]],
        listing: _ErrorListing,
        any_error: bool,
    ) -> Data | None:
        """Wait for the queued partitions (in request order), fill in their
        responses, then answer as :meth:`_answer` does."""
        version = ctx.header.api_version
        for q in queued:
            # shielded: a connection that goes away does not cancel an append
            # other requests of the partition are queued behind
            try:
                outcome = await asyncio.shield(q.job)
            except Exception as exc:
                resp = self._failed(
                    ctx, q.partition, size=q.size, version=version, tmeters=q.tmeters,
                    listing=listing, exc=exc,
                )  # fmt: skip
            else:
                resp = self._appended(
                    ctx, q.partition, size=q.size, tmeters=q.tmeters, durable=durable,
                    outcome=outcome,
                )  # fmt: skip
            q.responses[q.slot] = resp
            any_error = any_error or resp.error_code != ErrorCode.NONE
        reply = self._answer(ctx, request, response, durable, any_error)
        if reply is None or isinstance(reply, Data):
            return reply
        return await reply

    # ---- acks=all --------------------------------------------------------------------------

    def _flushed(
        self,
        ctx: RequestContext,
        response: ProduceResponse,
        durable: Sequence[tuple[UnifiedLog, int, _PartitionResponse]],
        answered: DelayedReply[Data],
        outcome: bool | BaseException,
    ) -> None:
        """The group commit's answer for an acks=all request (see ``_answer``)."""
        if isinstance(outcome, OSError):
            log.error("fsync failed for an acks=all produce request", exc_info=outcome)
            self._set_errors(ctx, durable, ErrorCode.KAFKA_STORAGE_ERROR)
        elif isinstance(outcome, BaseException):
            answered.fail(outcome)
            return
        elif not outcome:
            self._set_errors(ctx, durable, ErrorCode.REQUEST_TIMED_OUT)
        answered.resolve(response)

    @staticmethod
    def _set_errors(
        ctx: RequestContext,
        durable: Sequence[tuple[UnifiedLog, int, _PartitionResponse]],
        code: ErrorCode,
    ) -> None:
        for _, _, resp in durable:
            ctx.count_error(ErrorCode.NONE, -1)
            ctx.count_error(code)
            resp.error_code = code
