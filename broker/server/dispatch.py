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
      -> handler.handle(ctx, request)    response | awaitable of it | None (acks=0)
      -> encode_response                 whole frame, records passed through as segments

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

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable

from broker.errors import ErrorCode
from broker.handlers.base import AnyHandler
from broker.handlers.context import RequestContext
from broker.handlers.delayed import DelayedReply
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
from broker.server.sasl_gate import AUTHENTICATE_V0, SaslSession

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18
_ERROR_NAMES = {int(c): c.name for c in ErrorCode}


def _give_up(pending: asyncio.Future[Data | None], out: asyncio.Future[Segments | None]) -> None:
    if out.cancelled():
        pending.cancel()


def _no_serve(header: RequestHeader) -> Outcome:
    raise ProtocolViolation("a request where a SASL token was expected")


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
        if type(reply) is DelayedReply:
            # acks=all: encoded and recorded in the callback that answers it
            # (broker/handlers/delayed.py), handed on to the connection at once
            delayed: DelayedReply[Segments | None] = DelayedReply()
            reply.listen(
                functools.partial(
                    self._answer_later,
                    header,
                    handler,
                    ctx,
                    len(frame),
                    local_ns,
                    start,
                    time.perf_counter_ns(),
                    delayed.resolve,
                    delayed.fail,
                )
            )
            return delayed
        if inspect.isawaitable(reply):
            # a future as it is, a coroutine in a task; the connection gets a
            # future of the answer
            pending: asyncio.Future[Data | None] = asyncio.ensure_future(reply)
            out: asyncio.Future[Segments | None] = pending.get_loop().create_future()
            if pending is not reply:
                # a task runs work worth stopping when the connection goes away
                # (it cancels ``out``); a bare future is just left unanswered
                out.add_done_callback(functools.partial(_give_up, pending))
            pending.add_done_callback(
                functools.partial(
                    self._deferred_done,
                    header,
                    handler,
                    ctx,
                    out,
                    len(frame),
                    local_ns,
                    start,
                    time.perf_counter_ns(),
                )
            )
            return out
        raise TypeError(f"{type(handler).__name__} returned {type(reply).__name__}")

    def _deferred_done(  # noqa: PLR0917
        self,
        header: RequestHeader,
        handler: AnyHandler,
        ctx: RequestContext,
        out: asyncio.Future[Segments | None],
        size: int,
        local_ns: int,
        start: int,
        waited_from: int,
        reply: asyncio.Future[Data | None],
    ) -> None:
        """An awaitable reply once done: encode and record it, the answer into ``out``."""
        if reply.cancelled():
            if not out.done():
                out.cancel()
            return
        error = reply.exception()  # retrieved even when nobody waits any more
        if out.done():
            return  # the connection gave the request up
        self._answer_later(
            header,
            handler,
            ctx,
            size,
            local_ns,
            start,
            waited_from,
            out.set_result,
            out.set_exception,
            None if error is not None else reply.result(),
            error,
        )

    def _answer_later(  # noqa: PLR0917
        self,
        header: RequestHeader,
        handler: AnyHandler,
        ctx: RequestContext,
        size: int,
        local_ns: int,
        start: int,
        waited_from: int,
        resolve: Callable[[Segments | None], object],
        fail: Callable[[BaseException], object],
        response: Data | None,
        error: BaseException | None,
    ) -> None:
        """A later answer (a ``DelayedReply``'s listener, or an awaitable's once
        done): encoded and its request recorded with the time it waited (remote
        time, Kafka's purgatory) since ``waited_from``, then handed to
        ``resolve``; the reply's error, or an encoding's, to ``fail``."""
        if error is not None:
            fail(error)
            return
        remote_ns = time.perf_counter_ns() - waited_from
        try:
            segments = self._encode(header, handler, response, None)
        except Exception as exc:
            fail(exc)
            return
        self._record(handler, ctx, size=size, local_ns=local_ns, remote_ns=remote_ns, start=start)
        resolve(segments)

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
