"""Produce (key 0), versions 0-11.

Behaviour (``KafkaApis.handleProduceRequest``, ``ProduceRequest.validateRecords``,
``ReplicaManager.appendToLocalLog``):
- A partition whose first batch is transactional fails the whole request:
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED without a transactional id or
  without WRITE on it (as Kafka), INVALID_TXN_STATE with one: the
  transaction coordinator initializes transactional producers
  (InitProducerId), but transactional batches are not appended yet (no
  AddPartitionsToTxn, no markers; docs/deviations.md).
- Authorization (with an authorizer): WRITE on each topic, else every
  partition of the topic gets TOPIC_AUTHORIZATION_FAILED, before the checks
  below, and nothing of it is stored (``KafkaApis.handleProduceRequest``).
  The decision is the authorizer's cached one: one ``dict.get`` per topic
  of the request, no per-record or per-partition cost.
- acks must be -1, 0 or 1, else every partition gets INVALID_REQUIRED_ACKS
  (TOPIC_AUTHORIZATION_FAILED for topics the principal may not write) and
  nothing is appended.
- Per partition, in request order: unknown partition -> UNKNOWN_TOPIC_OR_PARTITION
  (NOT_LEADER_OR_FOLLOWER when another node leads it, ``ReplicaManager.missing_partition``);
  then the partition's own checks (``Partition.check_produce``): an internal
  topic (``__consumer_offsets``) -> INVALID_TOPIC_EXCEPTION ("Cannot append to
  internal topic", ``ReplicaManager.appendToLocalLog``), then
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
- Error mapping and meters of ``appendToLocalLog`` (one rule, ``_PLAIN_ERRORS``,
  applied in ``ProduceHandler._failed``): unknown partition,
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

from broker.delayed import DelayedReply
from broker.errors import (
    ErrorCode,
    InvalidRequiredAcksError,
    InvalidTxnStateError,
    KafkaError,
    KafkaStorageError,
    RecordValidationError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
    UnknownServerError,
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

log = logging.getLogger(__name__)

#: ``ReplicaManager.appendToLocalLog``: an append failing with one of these is
#: answered with log_start_offset -1 and does not mark FailedProduceRequests;
#: every other error marks it and carries the partition's log start offset
#: (:meth:`ProduceHandler._failed` applies the rule)
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
_NO_TRANSACTIONS = (
    "Transactional produce is not supported by this broker yet (no AddPartitionsToTxn, "
    "no transaction markers). Produce without a transactional.id."
)

_PartitionResponse = ProduceResponse.PartitionProduceResponse
_TopicResponse = ProduceResponse.TopicProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage


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


class _Produce:
    """One request on its way through its partitions: what its answer collects."""

    #: the current topic's meters, fetched for its first partition that appends
    tmeters: TopicMeters | None
    #: the current topic's partition responses
    responses: list[_PartitionResponse]

    __slots__ = (
        "acks_all",
        "any_error",
        "ctx",
        "denied",
        "durable",
        "first",
        "inline_until",
        "queued",
        "record_errors_left",
        "responses",
        "tmeters",
        "version",
    )

    def __init__(
        self, ctx: RequestContext, acks: int, denied: set[str] | None, inline_until: int
    ) -> None:
        self.ctx = ctx
        self.version = ctx.header.api_version
        self.acks_all = acks == -1
        #: topics the principal may not WRITE (None: all allowed)
        self.denied = denied
        #: (log, offset to be durable up to, response) of each appended partition
        self.durable: list[tuple[UnifiedLog, int, _PartitionResponse]] = []
        self.queued: list[_Queued] = []
        self.any_error = False
        self.record_errors_left = MAX_RESPONSE_RECORD_ERRORS
        #: partitions after this moment (perf_counter_ns) are validated on a worker thread
        self.inline_until = inline_until
        #: the first partition is always tried inline (its own cost is bounded
        #: by produce.inline.max.cost)
        self.first = True
        # tmeters and responses are the current topic's, set by ProduceHandler._topic

    def error(
        self,
        index: int,
        code: ErrorCode,
        message: str | None,
        log_start_offset: int = -1,
        record_errors: list[_RecordError] | None = None,
    ) -> _PartitionResponse:
        """Every partition error answer (kfake's ``donep``), counted in ErrorsPerSec."""
        self.ctx.count_error(code)
        self.any_error = True
        resp = _PartitionResponse(
            index=index,
            error_code=code,
            base_offset=-1,
            log_start_offset=log_start_offset,
            error_message=message if self.version >= 8 else None,
        )
        if record_errors:
            resp.record_errors = record_errors
        return resp

    def refused(self, index: int, exc: KafkaError) -> _PartitionResponse:
        """A partition refused before it appends: log_start_offset -1, no meters."""
        return self.error(index, exc.code, str(exc) or None)

    def listed(self, exc: KafkaError) -> tuple[list[_RecordError], str | None]:
        """The record_errors and error_message of a partition's response, within
        what is left of the response's record error budget."""
        errors = exc.record_errors
        message = str(exc) or None
        if not errors:
            return [], message
        listed = errors[: self.record_errors_left]
        self.record_errors_left -= len(listed)
        if len(listed) < len(errors):
            total = exc.total if isinstance(exc, RecordValidationError) else len(errors)
            reason = (
                "invalid timestamp"
                if exc.code == ErrorCode.INVALID_TIMESTAMP
                else f"{total} record errors in total"
            )
            message = (
                f"One or more records have been rejected due to {reason} ({total} record "
                f"errors, {len(listed)} listed: the response already lists "
                f"{MAX_RESPONSE_RECORD_ERRORS - self.record_errors_left - len(listed)} of at "
                f"most {MAX_RESPONSE_RECORD_ERRORS})"
            )
        return [
            _RecordError(batch_index=e.batch_index, batch_index_error_message=e.message)
            for e in listed
        ], message


@dataclass(slots=True)
class _Queued:
    """A partition whose append was queued (validated on a worker thread)."""

    responses: list[_PartitionResponse]
    slot: int
    partition: Partition
    size: int
    tmeters: TopicMeters
    job: asyncio.Future[AppendOutcome]


def _unexpected(partition: Partition, exc: BaseException) -> KafkaError:
    """An append's exception that is not a client's error, as the one it is answered with."""
    if isinstance(exc, OSError):
        # the disk failed under the append (Kafka: KafkaStorageException from
        # the log, KAFKA_STORAGE_ERROR for the partition), not a bug of ours
        log.error("I/O error appending to %s: %s", partition, exc)
        return KafkaStorageError(
            f"I/O error appending to {partition.topic}-{partition.partition}: {exc.strerror or exc}"
        )
    # a bug of ours: logged with its traceback, answered UNKNOWN_SERVER_ERROR
    log.error(
        "unexpected error appending to %s-%d", partition.topic, partition.partition, exc_info=exc
    )
    return UnknownServerError()


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
        self._replicas = broker.replica_manager

    def handle(self, ctx: RequestContext, request: ProduceRequest) -> Reply:
        if _any_transactional(request):
            return self._fail_all(ctx, request, self._transactions_refused(ctx, request))
        # Kafka's order: the transactional id, the topics' WRITE, then (in
        # appendRecords) acks
        denied = None if self._authorizer is None else self._denied_topics(ctx, request)
        if request.acks not in (-1, 0, 1):
            return self._fail_all(ctx, request, InvalidRequiredAcksError(), denied)
        run = _Produce(ctx, request.acks, denied, time.perf_counter_ns() + self._inline_ns)
        response = ProduceResponse(responses=[self._topic(run, td) for td in request.topic_data])
        if run.queued:
            return self._after_queued(run, request, response)
        return self._answer(run, request, response)

    # ---- the request's checks ---------------------------------------------------------------

    def _transactions_refused(self, ctx: RequestContext, request: ProduceRequest) -> KafkaError:
        """What transactional records are answered with (not appended yet)."""
        transactional_id = request.transactional_id
        if transactional_id is None or not authorize(
            self.broker, ctx, _WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return TransactionalIdAuthorizationError()
        return InvalidTxnStateError(_NO_TRANSACTIONS)

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

    def _fail_all(
        self,
        ctx: RequestContext,
        request: ProduceRequest,
        error: KafkaError,
        denied: set[str] | None = None,
    ) -> Reply:
        """Every partition fails with ``error`` (topics in ``denied`` with
        TOPIC_AUTHORIZATION_FAILED, which Kafka checks first); nothing is appended."""
        run = _Produce(ctx, request.acks, denied, 0)
        topics = []
        for td in request.topic_data:
            failed = _denial(td.name) if denied and td.name in denied else error
            responses = [run.refused(pd.index, failed) for pd in td.partition_data]
            topics.append(_TopicResponse(name=td.name, partition_responses=responses))
        response = ProduceResponse(responses=topics)
        if request.acks == 0:
            ctx.connection.close()
            return None
        return response

    # ---- topics and partitions, in request order --------------------------------------------

    def _topic(self, run: _Produce, td: ProduceRequest.TopicProduceData) -> _TopicResponse:
        name = td.name
        run.tmeters = None
        responses = run.responses = []
        if run.denied and name in run.denied:
            denial = _denial(name)
            responses.extend(run.refused(pd.index, denial) for pd in td.partition_data)
        else:
            # a loop, not extend(): a queued partition notes its slot, len(run.responses)
            for pd in td.partition_data:
                responses.append(self._partition(run, name, pd))  # noqa: PERF401
        return _TopicResponse(name=name, partition_responses=responses)

    def _partition(
        self, run: _Produce, topic: str, pd: ProduceRequest.PartitionProduceData
    ) -> _PartitionResponse:
        """``KafkaApis.handleProduceRequest``'s checks, then ``appendToLocalLog``."""
        index = pd.index
        partition = self._replicas.get_partition(topic, index)
        if partition is None:
            return run.refused(index, self._replicas.missing_partition(topic, index))
        try:
            records = partition.check_produce(pd.records, run.version)
        except KafkaError as exc:
            log.debug("produce to %s refused: %s", partition, exc)
            return run.refused(index, exc)
        tmeters = run.tmeters
        if tmeters is None:
            tmeters = run.tmeters = self.broker.meters.topic(topic)
        tmeters.produce_requests.inc()
        inline = run.first or time.perf_counter_ns() < run.inline_until
        run.first = False
        try:
            if run.acks_all:
                partition.check_min_isr(self.broker.node_id)
            got = partition.append(records, run.version, inline=inline)
        except Exception as exc:
            return self._failed(run, partition, records.nbytes, tmeters, exc)
        if isinstance(got, asyncio.Future):
            return self._queue(run, partition, records.nbytes, tmeters, got)
        return self._appended(run, partition, records.nbytes, tmeters, got)

    def _appended(
        self,
        run: _Produce,
        partition: Partition,
        size: int,
        tmeters: TopicMeters,
        outcome: AppendOutcome,
    ) -> _PartitionResponse:
        """A partition's response and meters for a successful append."""
        ctx = run.ctx
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
        resp = _PartitionResponse(
            index=partition.partition,
            error_code=ErrorCode.NONE,
            base_offset=outcome.base_offset,
            log_append_time_ms=outcome.log_append_time_ms,
            log_start_offset=outcome.log_start_offset,
        )
        if outcome.last_offset >= 0:
            run.durable.append((partition.log, outcome.last_offset + 1, resp))
        return resp

    @staticmethod
    def _failed(
        run: _Produce, partition: Partition, size: int, tmeters: TopicMeters, exc: BaseException
    ) -> _PartitionResponse:
        """``ReplicaManager.appendToLocalLog``'s catch: the one place an append's
        exception becomes its partition's answer and meters (see ``_PLAIN_ERRORS``)."""
        error = exc if isinstance(exc, KafkaError) else _unexpected(partition, exc)
        code = error.code
        log.debug("produce to %s failed: %s: %s", partition, code.name, error)
        if code == ErrorCode.MESSAGE_TOO_LARGE:
            tmeters.bytes_rejected.inc(size)
        if code in _PLAIN_ERRORS:
            return run.refused(partition.partition, error)
        tmeters.failed_produce_requests.inc()
        record_errors, message = run.listed(error)
        return run.error(
            partition.partition, code, message, partition.log.log_start_offset, record_errors
        )

    # ---- appends queued on worker threads ---------------------------------------------------

    @staticmethod
    def _queue(
        run: _Produce,
        partition: Partition,
        size: int,
        tmeters: TopicMeters,
        job: asyncio.Future[AppendOutcome],
    ) -> _PartitionResponse:
        """Remember a queued append; its slot in the topic's responses holds a
        response with only its index until ``_after_queued`` puts the real one there."""
        run.queued.append(_Queued(run.responses, len(run.responses), partition, size, tmeters, job))
        return _PartitionResponse(index=partition.partition)

    async def _after_queued(
        self, run: _Produce, request: ProduceRequest, response: ProduceResponse
    ) -> Data | None:
        """Wait for the queued partitions (in request order), fill in their
        responses, then answer as :meth:`_answer` does."""
        for q in run.queued:
            # shielded: a connection that goes away does not cancel an append
            # other requests of the partition are queued behind
            try:
                outcome = await asyncio.shield(q.job)
            except Exception as exc:
                resp = self._failed(run, q.partition, q.size, q.tmeters, exc)
            else:
                resp = self._appended(run, q.partition, q.size, q.tmeters, outcome)
            q.responses[q.slot] = resp
        reply = self._answer(run, request, response)
        if reply is None or isinstance(reply, Data):
            return reply
        return await reply

    # ---- the answer: acks 0 / 1 / all -------------------------------------------------------

    def _answer(self, run: _Produce, request: ProduceRequest, response: ProduceResponse) -> Reply:
        """Once every partition is appended: acks 0 / 1 / all."""
        acks = request.acks
        if acks == 0:
            if run.any_error:
                # Kafka closes the connection so that an acks=0 client learns of failures
                run.ctx.connection.close()
            return None
        if acks == 1 or not run.durable or not self.broker.config.get("acks.all.fsync"):
            return response
        return self._when_durable(run.ctx, request, response, run.durable)

    def _when_durable(
        self,
        ctx: RequestContext,
        request: ProduceRequest,
        response: ProduceResponse,
        durable: list[tuple[UnifiedLog, int, _PartitionResponse]],
    ) -> Reply:
        """acks=all: the answer once an fsync covers every appended batch."""
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

    def _flushed(
        self,
        ctx: RequestContext,
        response: ProduceResponse,
        durable: Sequence[tuple[UnifiedLog, int, _PartitionResponse]],
        answered: DelayedReply[Data],
        outcome: bool | BaseException,
    ) -> None:
        """The group commit's answer for an acks=all request (see ``_when_durable``)."""
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


def _denial(topic: str) -> KafkaError:
    return TopicAuthorizationError(f"Not authorized to access topics: [{topic}]")
