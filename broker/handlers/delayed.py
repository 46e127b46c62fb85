"""An answer decided later by a callback on the event loop's thread.

An acks=all produce request is answered when a group-commit round covering
its batches ends (``broker/server/group_commit.py``). The round's callback
decides the answer; the dispatcher encodes it and the connection writes it::

    round ends -> produce: reply.resolve(response)
                    -> dispatcher listener: encode, record, out.resolve(segments)
                         -> connection listener: slot done, flush at the end of
                            the loop iteration

Each step calls the next one at once. With ``asyncio.Future`` in their
place, each ``set_result`` scheduled its done callbacks through the loop
(``call_soon``), so an acks=all answer took two more loop iterations and
two futures, a measurable share of the loop's time per acks=all request
(docs/performance.md). Kafka's ``DelayedProduce`` likewise calls
its ``responseCallback`` directly when it completes.

One listener, called once, on the thread that resolves (the loop's). A
reply resolved before anyone listens keeps its outcome for the listener.
Nothing is cancelled: a connection that goes away ignores the answer when
it comes. ``await reply`` works too (it makes a future), for callers and
tests that want an awaitable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: what a listener is called with: (value, None) or (None, error)
Listener = Callable[[T | None, BaseException | None], None]

_PENDING, _RESOLVED, _FAILED = 0, 1, 2


class DelayedReply(Generic[T]):
    __slots__ = ("_listener", "_outcome", "_state")

    def __init__(self) -> None:
        self._state = _PENDING
        self._outcome: Any = None
        self._listener: Listener[T] | None = None

    def done(self) -> bool:
        return self._state != _PENDING

    def resolve(self, value: T) -> None:
        self._settle(_RESOLVED, value)

    def fail(self, error: BaseException) -> None:
        self._settle(_FAILED, error)

    def listen(self, listener: Listener[T]) -> None:
        """Call ``listener`` once with the outcome: now if there is one already."""
        if self._listener is not None:
            raise RuntimeError("a delayed reply has one listener")
        self._listener = listener
        if self._state != _PENDING:
            self._call()

    def _settle(self, state: int, outcome: Any) -> None:
        if self._state != _PENDING:
            raise RuntimeError("a delayed reply is answered once")
        self._state = state
        self._outcome = outcome
        if self._listener is not None:
            self._call()

    def _call(self) -> None:
        assert self._listener is not None
        if self._state == _RESOLVED:
            self._listener(self._outcome, None)
        else:
            self._listener(None, self._outcome)

    def __await__(self) -> Generator[Any, None, T]:
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.listen(lambda value, error: _into(fut, value, error))
        return fut.__await__()


def _into(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if fut.done():
        return  # its awaiter was cancelled
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)
