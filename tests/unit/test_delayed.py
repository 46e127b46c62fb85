"""DelayedReply: one listener, called once, at once; the broker's one way to answer later."""

from __future__ import annotations

import asyncio

import pytest

from broker.delayed import DelayedReply
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
    got = []
    reply.listen(lambda value, error: got.append((value, error)))
    with pytest.raises(RuntimeError):
        reply.listen(lambda value, error: None)
    assert reply.resolve(1) is True
    # the first answer stays (CompletableFuture.complete returns false)
    assert reply.resolve(2) is False
    assert reply.fail(RuntimeError("late")) is False
    assert got == [(1, None)] and reply.value == 1


def test_a_reply_known_now_and_its_result():
    assert DelayedReply.of("now").done() and DelayedReply.of("now").value == "now"
    pending: DelayedReply[str] = DelayedReply()
    with pytest.raises(RuntimeError, match="not answered"):
        _ = pending.value
    failed: DelayedReply[str] = DelayedReply()
    failed.fail(ValueError("no"))
    with pytest.raises(ValueError, match="no"):
        _ = failed.value


def test_then_shapes_the_value_and_passes_errors_on():
    source: DelayedReply[int] = DelayedReply()
    shaped = source.then(lambda n: f"#{n}")
    got = []
    shaped.listen(lambda value, error: got.append((value, error)))
    assert got == []
    source.resolve(7)
    assert got == [("#7", None)]

    failing: DelayedReply[int] = DelayedReply()
    error = KeyError("gone")
    out = failing.then(str)
    failing.fail(error)
    with pytest.raises(KeyError):
        _ = out.value

    def broken(_: int) -> str:
        raise ValueError("shape failed")

    raising = DelayedReply.of(1).then(broken)
    with pytest.raises(ValueError, match="shape failed"):
        _ = raising.value


def test_a_reply_of_a_coroutine_runs_it_and_cancel_stops_it():
    async def scenario():
        release = asyncio.Event()

        async def work() -> str:
            await release.wait()
            return "worked"

        reply = DelayedReply.of_awaitable(work())
        got = []
        reply.listen(lambda value, error: got.append((value, error)))
        assert reply.cancellable and not reply.done()
        release.set()
        await asyncio.sleep(0.01)
        assert got == [("worked", None)]

        async def never() -> str:
            await asyncio.Event().wait()
            return "never"

        stopped = DelayedReply.of_awaitable(never()).then(str.upper)
        assert stopped.cancellable  # the shaped reply stops its source's work
        stopped.cancel()
        await asyncio.sleep(0.01)
        with pytest.raises(asyncio.CancelledError):
            _ = stopped.value

        async def fails() -> str:
            raise ValueError("bad")

        failed = DelayedReply.of_awaitable(fails())
        await asyncio.sleep(0.01)
        with pytest.raises(ValueError, match="bad"):
            _ = failed.value

        # a bare future is not this reply's work to stop
        fut = asyncio.get_running_loop().create_future()
        bare = DelayedReply.of_awaitable(fut)
        assert not bare.cancellable
        bare.cancel()
        fut.set_result(3)
        await asyncio.sleep(0)
        assert bare.value == 3

    run(scenario())


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
        assert await DelayedReply.of("now") == "now"  # settled already: no future
        assert await ok == "done"  # awaited again

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
