"""DelayedReply: an answer known now or decided later, by a callback on the event loop's thread.

The one way anything in the broker answers later (Kafka's ``CompletableFuture``
of a response): an acks=all produce request is answered when a group-commit
round covering its batches ends (``broker/server/group_commit.py``), a
JoinGroup when the join phase ends, a SyncGroup when the leader assigns, a
commit when its record is durable. Whoever decides resolves (or fails) the
reply; the dispatcher listens, encodes and records it, and hands the
connection a reply of the encoded answer::

    round ends -> produce: reply.resolve(response)
                    -> dispatcher listener: encode, record, out.resolve(segments)
                         -> connection listener: slot done, flush at the end of
                            the loop iteration

    handler returns          the dispatcher                the connection
    Data | None              encodes now                   writes now
    DelayedReply[Data]       listens; out: DelayedReply    listens on out
    awaitable (async def)    DelayedReply.of_awaitable     (the same)

Each step calls the next one at once. With ``asyncio.Future`` in their
place, each ``set_result`` scheduled its done callbacks through the loop
(``call_soon``), so an acks=all answer took two more loop iterations and
two futures, a measurable share of the loop's time per acks=all request
(docs/performance.md). Kafka's ``DelayedProduce`` likewise calls
its ``responseCallback`` directly when it completes.

One listener, called once, on the thread that settles (the loop's); a
reply settled before anyone listens keeps its outcome for the listener.
Settling twice keeps the first outcome (``CompletableFuture.complete``
returns false). :meth:`then` makes a reply of a function of the value, for
a handler or coordinator that shapes the answer once it comes. No event
loop is needed until something awaits a reply (``await reply`` makes a
future), so the coordinator's tests drive replies with a manual clock.

Nothing is cancelled by default: a connection that goes away ignores the
answer when it comes. A reply of work worth stopping (the task of an
awaitable, :meth:`of_awaitable`) carries its ``cancel``, which the
connection calls when it goes away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")

#: what a listener is called with: (value, None) or (None, error)
Listener = Callable[[T | None, BaseException | None], None]

_PENDING, _RESOLVED, _FAILED = 0, 1, 2


class DelayedReply(Generic[T]):
    __slots__ = ("_cancel", "_listener", "_outcome", "_state")

    def __init__(self, cancel: Callable[[], object] | None = None) -> None:
        self._state = _PENDING
        self._outcome: Any = None
        self._listener: Listener[T] | None = None
        #: stops the work that would settle this reply (None: nothing to stop)
        self._cancel = cancel

    @classmethod
    def of(cls, value: T) -> DelayedReply[T]:
        """A reply known now."""
        reply: DelayedReply[T] = cls()
        reply._state = _RESOLVED
        reply._outcome = value
        return reply

    @classmethod
    def of_awaitable(cls, awaitable: Awaitable[T]) -> DelayedReply[T]:
        """The outcome of an awaitable: a future as it is, a coroutine in a task,
        which :meth:`cancel` cancels (a bare future is just left unanswered)."""
        fut: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        reply: DelayedReply[T] = cls(None if fut is awaitable else fut.cancel)
        fut.add_done_callback(reply._settle_from)
        return reply

    def done(self) -> bool:
        return self._state != _PENDING

    @property
    def value(self) -> T:
        """The value of a settled reply; its error raised if it failed."""
        if self._state == _RESOLVED:
            return self._outcome  # type: ignore[no-any-return]
        if self._state == _FAILED:
            raise self._outcome
        raise RuntimeError("a delayed reply not answered yet")

    def resolve(self, value: T) -> bool:
        """Answer ``value``; False (and nothing changes) if answered already."""
        return self._settle(_RESOLVED, value)

    def fail(self, error: BaseException) -> bool:
        """Answer ``error``; False (and nothing changes) if answered already."""
        return self._settle(_FAILED, error)

    def listen(self, listener: Listener[T]) -> None:
        """Call ``listener`` once with the outcome: now if there is one already."""
        if self._listener is not None:
            raise RuntimeError("a delayed reply has one listener")
        self._listener = listener
        if self._state != _PENDING:
            self._call()

    def relay(self) -> DelayedReply[Any]:
        """A new reply for what this one's answer becomes further on (its
        listener settles it): it stops the same work."""
        return DelayedReply(self._cancel)

    def then(self, shape: Callable[[T], U]) -> DelayedReply[U]:
        """A reply of ``shape(value)`` once this one resolves (this one's
        listener); this one's error, or ``shape``'s, fails it."""
        out: DelayedReply[U] = self.relay()

        def shaped(value: T | None, error: BaseException | None) -> None:
            if error is not None:
                out.fail(error)
                return
            try:
                shaped_value = shape(value)  # type: ignore[arg-type]
            except Exception as exc:
                out.fail(exc)
                return
            out.resolve(shaped_value)

        self.listen(shaped)
        return out

    @property
    def cancellable(self) -> bool:
        return self._cancel is not None

    def cancel(self) -> None:
        """Whoever asked went away: stop the work behind the reply, if it has
        any and is not done (a cancelled task fails it with CancelledError)."""
        if self._cancel is not None and self._state == _PENDING:
            self._cancel()

    def _settle(self, state: int, outcome: Any) -> bool:
        if self._state != _PENDING:
            return False
        self._state = state
        self._outcome = outcome
        if self._listener is not None:
            self._call()
        return True

    def _settle_from(self, fut: asyncio.Future[T]) -> None:
        """:meth:`of_awaitable`'s future once done (its error retrieved even
        when nobody listens any more)."""
        if fut.cancelled():
            self._settle(_FAILED, asyncio.CancelledError())
            return
        error = fut.exception()
        if error is not None:
            self._settle(_FAILED, error)
        else:
            self._settle(_RESOLVED, fut.result())

    def _call(self) -> None:
        assert self._listener is not None
        if self._state == _RESOLVED:
            self._listener(self._outcome, None)
        else:
            self._listener(None, self._outcome)

    def __await__(self) -> Generator[Any, None, T]:
        if self._state != _PENDING:
            return self.value
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.listen(lambda value, error: _into(fut, value, error))
        return (yield from fut.__await__())


def _into(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if fut.done():
        return  # its awaiter was cancelled
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)
