"""From a request frame to a response frame: header, registry, version, decode, handle, encode.

::

    frame (memoryview into the receive buffer)
      -> SASL connections before authentication (and for re-authentication):
         server/sasl_gate.py, which serves ApiVersions through the path below
      -> parse_request_header            unreadable header: close the connection
      -> registry.get(api_key)           an API we do not serve: close (as Kafka for unknown keys)
      -> version check                   ApiVersions above its range: a v0 answer with
                                         UNSUPPORTED_VERSION; any other API: close
                                         (Kafka's RequestContext.parseRequest)
      -> decode_request                  malformed body: close (InvalidRequestException)
      -> handler.handle(ctx, request)    response | None (acks=0) | later: a DelayedReply
                                         of it, or an awaitable (made one here)
      -> encode_response                 whole frame, records passed through as segments;
                                         a later answer that failed: the API's error
                                         response (server/error_response.py), or, for
                                         an API without one, the connection closed

Request metrics (``RequestMetrics``; Kafka's
``RequestChannel.Request.updateRequestMetrics``) are recorded once per
request when its response is handed to the socket: requests by API and
version, request size, queue/local/remote/send/total time, the per-request
conversion time and temporary memory (Produce and Fetch, every request
sampled, as Kafka does) and the error counts of the response.
Queue time is the time from the frame's last byte to dispatch: requests are
dispatched as soon as they are cut out of the receive buffer, so it stays
near zero unless the event loop is busy.
"""

from __future__ import annotations

import inspect
import logging
import time

from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import AnyHandler
from broker.handlers.context import RequestContext
from broker.handlers.registry import HandlerRegistry
from broker.metrics import BrokerMetrics, ErrorCounter, NullMetrics, RequestRecorder
from broker.protocol import (
    API_KEYS,
    DecodeError,
    decode_request,
    encode_response,
    parse_request_header,
)
from broker.protocol.data import Data
from broker.protocol.header import RequestHeader
from broker.protocol.messages import ApiVersionsRequest
from broker.server.connection import Connection, Outcome, ProtocolViolation, Segments
from broker.server.error_response import error_response
from broker.server.sasl_gate import AUTHENTICATE_V0, SaslSession

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18
_ERROR_NAMES = {int(c): c.name for c in ErrorCode}


def _no_serve(header: RequestHeader) -> Outcome:
    raise ProtocolViolation("a request where a SASL token was expected")


class _Later:
    """A request answered later: what its answer is encoded and recorded with."""

    __slots__ = ("ctx", "dispatcher", "handler", "local_ns", "out", "size", "start", "waited_from")

    dispatcher: Dispatcher
    handler: AnyHandler
    ctx: RequestContext
    #: the request's frame bytes
    size: int
    #: the handler's own time; when the request began (perf_counter ns)
    local_ns: int
    start: int
    #: the connection's reply of the encoded answer
    out: DelayedReply[Segments | None]
    #: since when it waits (remote time, Kafka's purgatory)
    waited_from: int

    @classmethod
    def waiting(
        cls,
        *,
        dispatcher: Dispatcher,
        handler: AnyHandler,
        ctx: RequestContext,
        size: int,
        local_ns: int,
        start: int,
        out: DelayedReply[Segments | None],
    ) -> _Later:
        # not __init__: CPython 3.11 calls a class with keywords at a cost a
        # method call does not have, once per acks=all request (docs/performance.md)
        later = cls.__new__(cls)
        later.dispatcher = dispatcher
        later.handler = handler
        later.ctx = ctx
        later.size = size
        later.local_ns = local_ns
        later.start = start
        later.out = out
        later.waited_from = time.perf_counter_ns()
        return later

    def answered(self, response: Data | None, error: BaseException | None) -> None:
        """The handler's reply's listener: the answer encoded and its request
        recorded with the time it waited, then handed to the connection. A
        failed one is answered with the API's error response for the error
        (Kafka's ``KafkaApis.handleError``, ``sendErrorOrCloseConnection``); an
        API without one, or a failed encoding, fails the connection's reply,
        which closes it."""
        out = self.out
        ctx = self.ctx
        if error is not None:
            response = _error_response(ctx, error)
            if response is None:
                out.fail(error)
                return
        remote_ns = time.perf_counter_ns() - self.waited_from
        try:
            segments = Dispatcher._encode(ctx.header, self.handler, response, None)
        except Exception as exc:
            out.fail(exc)
            return
        self.dispatcher._record(
            self.handler, ctx, size=self.size, local_ns=self.local_ns, remote_ns=remote_ns,
            start=self.start,
        )  # fmt: skip
        out.resolve(segments)


def _error_response(ctx: RequestContext, error: BaseException) -> Data | None:
    """The request's error response for ``error``; None where Kafka's has the
    request's topics or partitions, or nobody waits (cancelled)."""
    if not isinstance(error, Exception):
        return None  # CancelledError: the connection went away
    header = ctx.header
    api = API_KEYS[header.api_key]
    if isinstance(error, KafkaError):
        code, message = error.code, str(error) or None
    else:
        # Errors.forException: anything not a Kafka error is UNKNOWN_SERVER_ERROR,
        # its text kept out of the answer (ApiError.fromThrowable)
        code, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
    log.error(
        "%s v%d from %s failed: answering %s",
        api.name,
        header.api_version,
        ctx.connection.peer,
        code.name,
        exc_info=error,
    )
    response = error_response(api, header.api_version, code, message)
    if response is not None:
        ctx.count_error(code)
    return response


class Dispatcher:
    """Implements the connection's ``FrameHandler``."""

    def __init__(self, registry: HandlerRegistry, metrics: BrokerMetrics | NullMetrics) -> None:
        self.registry = registry
        self.metrics = metrics
        #: per (API key, version): the API's name and its request meters, bound once
        self._request_meters: dict[tuple[int, int], tuple[str, RequestRecorder]] = {}
        #: per (API name, error code): its ErrorsPerSec counter, bound once
        self._error_counters: dict[tuple[str, int], ErrorCounter] = {}

    def handle_frame(self, frame: memoryview, conn: Connection) -> Outcome:
        start = time.perf_counter_ns()
        sasl: SaslSession | None = conn.sasl
        if sasl is not None and sasl.state == AUTHENTICATE_V0:
            # SaslHandshake v0: the tokens follow as bare size-prefixed frames
            return sasl.handle(frame, None, conn, _no_serve)
        try:
            header = parse_request_header(frame)
        except DecodeError as exc:
            raise ProtocolViolation(f"unreadable request header from {conn.peer}: {exc}") from exc
        if sasl is not None and (not sasl.authenticated or sasl.needs_gate(header.api_key)):
            # before authentication only ApiVersions and the SASL APIs (server/sasl_gate.py)
            return sasl.handle(frame, header, conn, lambda h: self._serve(frame, conn, h, start))
        return self._serve(frame, conn, header, start)

    def _serve(
        self, frame: memoryview, conn: Connection, header: RequestHeader, start: int
    ) -> Outcome:
        handler = self.registry.get(header.api_key)
        if handler is None:
            api = API_KEYS.get(header.api_key)
            name = api.name if api else f"unknown API key {header.api_key}"
            raise ProtocolViolation(
                f"{conn.peer} (client id {header.client_id!r}) sent {name} v{header.api_version}, "
                "which this broker does not serve; see ApiVersions"
            )
        version = header.api_version
        body_version: int | None = None
        request: Data
        if not handler.supports(version):
            if header.api_key != API_VERSIONS_KEY:
                raise ProtocolViolation(
                    f"{conn.peer} sent {handler.api().name} v{version}, outside the supported "
                    f"versions {handler.MIN_VERSION}-{handler.MAX_VERSION}"
                )
            # answered with a v0 body listing our versions (KIP-511)
            request, body_version = ApiVersionsRequest(), 0
        else:
            try:
                request = decode_request(header, frame)
            except DecodeError as exc:
                raise ProtocolViolation(
                    f"malformed {handler.api().name} v{version} request from {conn.peer}: {exc}"
                ) from exc
        ctx = RequestContext(header, conn)
        reply = handler.handle(ctx, request)
        local_ns = time.perf_counter_ns() - start
        if reply is None or isinstance(reply, Data):
            segments = self._encode(header, handler, reply, body_version)
            self._record(handler, ctx, size=len(frame), local_ns=local_ns, remote_ns=0, start=start)
            return segments
        if type(reply) is not DelayedReply:
            if not inspect.isawaitable(reply):
                raise TypeError(f"{type(handler).__name__} returned {type(reply).__name__}")
            # an async handler: its task, the one kind of later answer from here on
            reply = DelayedReply.of_awaitable(reply)
        # encoded and recorded in the listener that answers it (broker/delayed.py),
        # handed on to the connection at once
        out: DelayedReply[Segments | None] = reply.relay()
        later = _Later.waiting(
            dispatcher=self, handler=handler, ctx=ctx, size=len(frame), local_ns=local_ns,
            start=start, out=out,
        )  # fmt: skip
        reply.listen(later.answered)
        return out

    @staticmethod
    def _encode(
        header: RequestHeader,
        handler: AnyHandler,
        response: Data | None,
        body_version: int | None,
    ) -> Segments | None:
        if response is None:
            return None
        return encode_response(header, response, version=body_version).segments

    def _record(
        self,
        handler: AnyHandler,
        ctx: RequestContext,
        *,
        size: int,
        local_ns: int,
        remote_ns: int,
        start: int,
    ) -> None:
        header = ctx.header
        key = (header.api_key, header.api_version)
        bound = self._request_meters.get(key)
        if bound is None:
            api = handler.api().name
            bound = self._request_meters[key] = (api, self.metrics.request(api, key[1]))
        api, meters = bound
        # the send time is what the total leaves after local and remote:
        # encoding and handing the frame to the transport (which sends what
        # the socket takes at once and buffers the rest)
        meters.record(
            size,
            local_ns,
            remote_ns,
            time.perf_counter_ns() - start,
            conversions_ns=ctx.conversions_time_ns,
            temporary_bytes=ctx.temporary_memory_bytes,
        )
        errors = self._error_counters
        for code, count in ctx.error_counts.items():
            if count:
                counter = errors.get((api, code))
                if counter is None:
                    name = _ERROR_NAMES.get(code, str(code))
                    counter = errors[api, code] = self.metrics.error_counter(api, name)
                counter.inc(count)
