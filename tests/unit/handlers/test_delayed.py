"""DelayedReply: one listener, called once, at once."""

from __future__ import annotations

import asyncio

import pytest

from broker.handlers.delayed import DelayedReply
from tests.aio import run


def test_a_listener_is_called_when_the_reply_is_resolved():
    reply: DelayedReply[str] = DelayedReply()
    got = []
    reply.listen(lambda value, error: got.append((value, error)))
    assert got == [] and not reply.done()
    reply.resolve("answer")
    assert got == [("answer", None)] and reply.done()


def test_a_listener_of_a_resolved_reply_is_called_at_once():
    reply: DelayedReply[str] = DelayedReply()
    error = RuntimeError("round failed")
    reply.fail(error)
    got = []
    reply.listen(lambda value, err: got.append((value, err)))
    assert got == [(None, error)]


def test_a_reply_is_answered_once_and_has_one_listener():
    reply: DelayedReply[int] = DelayedReply()
    reply.listen(lambda value, error: None)
    with pytest.raises(RuntimeError):
        reply.listen(lambda value, error: None)
    reply.resolve(1)
    with pytest.raises(RuntimeError):
        reply.resolve(2)
    with pytest.raises(RuntimeError):
        reply.fail(RuntimeError("late"))


def test_a_reply_can_be_awaited():
    async def scenario():
        loop = asyncio.get_running_loop()
        ok: DelayedReply[str] = DelayedReply()
        loop.call_soon(ok.resolve, "done")
        bad: DelayedReply[str] = DelayedReply()
        loop.call_soon(bad.fail, ValueError("no"))
        assert await ok == "done"
        with pytest.raises(ValueError, match="no"):
            await bad

    run(scenario())


def test_an_awaiter_that_gave_up_leaves_the_answer_unread_quietly():
    async def scenario():
        loop = asyncio.get_running_loop()
        unhandled = []
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
        reply: DelayedReply[str] = DelayedReply()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reply, 0.01)
        reply.fail(RuntimeError("after the timeout"))
        await asyncio.sleep(0)
        assert unhandled == []

    run(scenario())
