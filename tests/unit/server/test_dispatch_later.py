"""The dispatcher's one path for later answers: a DelayedReply or an awaitable,
encoded when it comes; one that fails answered with the API's error response,
or, for an API without one, the connection's reply failed (which closes it)."""

from __future__ import annotations

import asyncio
import types
from typing import Any, ClassVar

import pytest

from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.handlers.base import RequestHandler
from broker.handlers.registry import HandlerRegistry
from broker.metrics import NullMetrics
from broker.protocol import decode_response, encode_request
from broker.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    MetadataRequest,
    MetadataResponse,
)
from broker.server.dispatch import Dispatcher
from tests.aio import run
from tests.unit.handlers.conftest import FakeConnection, frame_bytes


class NotCoordinator(KafkaError):
    error_code = ErrorCode.NOT_COORDINATOR


class Later:
    """What the fake handlers answer with: set by each test."""

    answer: ClassVar[Any] = None


class HeartbeatLater(RequestHandler[HeartbeatRequest]):
    API_KEY = 12
    MIN_VERSION = 0
    MAX_VERSION = 4

    def handle(self, ctx: Any, request: HeartbeatRequest) -> Any:
        return Later.answer


class MetadataLater(RequestHandler[MetadataRequest]):
    API_KEY = 3
    MIN_VERSION = 0
    MAX_VERSION = 12

    def handle(self, ctx: Any, request: MetadataRequest) -> Any:
        return Later.answer


def dispatcher() -> Dispatcher:
    registry = HandlerRegistry(types.SimpleNamespace(), (HeartbeatLater, MetadataLater))  # type: ignore[arg-type]
    return Dispatcher(registry, NullMetrics(None))  # type: ignore[arg-type]


def dispatch(request: Any, version: int) -> Any:
    raw = encode_request(version, 7, "test", request).to_bytes()
    return dispatcher().handle_frame(memoryview(raw)[4:], FakeConnection())  # type: ignore[arg-type]


def heartbeat() -> HeartbeatRequest:
    return HeartbeatRequest(group_id="g", generation_id=1, member_id="m")


def answer(outcome: DelayedReply[Any], version: int = 4) -> HeartbeatResponse:
    got, body = decode_response(12, version, frame_bytes(outcome.value)[4:])
    assert got == 7
    return body  # type: ignore[no-any-return]


def test_a_delayed_reply_is_encoded_when_it_resolves() -> None:
    Later.answer = reply = DelayedReply()
    outcome = dispatch(heartbeat(), 4)
    assert isinstance(outcome, DelayedReply) and not outcome.done()
    reply.resolve(HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
    assert answer(outcome).error_code == ErrorCode.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotCoordinator("moved"), ErrorCode.NOT_COORDINATOR),
        # Errors.forException: anything else is UNKNOWN_SERVER_ERROR
        (RuntimeError("a bug of ours"), ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_failed_later_answer_is_the_apis_error_response(
    error: Exception, code: ErrorCode, caplog: pytest.LogCaptureFixture
) -> None:
    Later.answer = reply = DelayedReply()
    outcome = dispatch(heartbeat(), 4)
    reply.fail(error)
    assert answer(outcome).error_code == code
    assert any(r.exc_info and r.exc_info[1] is error for r in caplog.records)


def test_a_failed_later_answer_of_an_api_without_a_top_level_error_closes() -> None:
    """Metadata's error response repeats the request's topics: no answer, the
    connection's reply fails (the connection closes; test_connection.py)."""
    Later.answer = reply = DelayedReply()
    outcome = dispatch(MetadataRequest(topics=[]), 12)
    error = RuntimeError("no metadata")
    reply.fail(error)
    with pytest.raises(RuntimeError, match="no metadata"):
        _ = outcome.value
    Later.answer = ok = DelayedReply()
    later = dispatch(MetadataRequest(topics=[]), 12)
    ok.resolve(MetadataResponse(brokers=[], topics=[]))
    assert later.done() and frame_bytes(later.value)


def test_an_async_handler_is_one_delayed_reply_and_its_task_stops_with_the_connection() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def answered() -> HeartbeatResponse:
            await release.wait()
            return HeartbeatResponse(error_code=ErrorCode.NONE)

        Later.answer = answered()
        outcome = dispatch(heartbeat(), 4)
        assert isinstance(outcome, DelayedReply) and outcome.cancellable
        release.set()
        assert answer(await_value(await outcome)).error_code == ErrorCode.NONE

        async def failing() -> HeartbeatResponse:
            raise NotCoordinator("moved")

        Later.answer = failing()
        assert answer(await_value(await dispatch(heartbeat(), 4))).error_code == (
            ErrorCode.NOT_COORDINATOR
        )

        started = asyncio.Event()

        async def forever() -> HeartbeatResponse:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("never answered")

        Later.answer = forever()
        gone = dispatch(heartbeat(), 4)
        await started.wait()
        gone.cancel()  # what the connection does when it goes away
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        with pytest.raises(asyncio.CancelledError):
            _ = gone.value

    run(scenario())


def await_value(segments: Any) -> DelayedReply[Any]:
    return DelayedReply.of(segments)


def test_a_handler_answering_something_else_is_a_bug() -> None:
    Later.answer = 42
    with pytest.raises(TypeError, match="returned int"):
        dispatch(heartbeat(), 4)
