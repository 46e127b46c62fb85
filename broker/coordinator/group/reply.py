"""Reply: a response that is known now or later (Kafka's ``CompletableFuture`` of a response).

A JoinGroup waits for the join phase to end, a SyncGroup for the leader's
assignment, a commit for its record to be durable. The coordinator
completes a Reply from wherever that happens (a request, a timer, a flush);
the handler returns it to the server, which awaits it. Completing it twice
keeps the first value (``CompletableFuture.complete``). It needs no event
loop until something awaits it, so the coordinator's tests drive it with a
manual clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Reply(Generic[T]):
    __slots__ = ("_callbacks", "_value", "_waiter", "done")

    def __init__(self) -> None:
        self.done = False
        self._value: T | None = None
        self._waiter: asyncio.Future[T] | None = None
        self._callbacks: list[Callable[[T], None]] = []

    @classmethod
    def of(cls, value: T) -> Reply[T]:
        reply: Reply[T] = cls()
        reply.complete(value)
        return reply

    def complete(self, value: T) -> bool:
        if self.done:
            return False
        self.done = True
        self._value = value
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(value)
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(value)
        return True

    @property
    def value(self) -> T:
        if not self.done:
            raise RuntimeError("reply not complete")
        return self._value  # type: ignore[return-value]

    def then(self, callback: Callable[[T], None]) -> None:
        """Run ``callback`` with the value once it is known (now if it is)."""
        if self.done:
            callback(self._value)  # type: ignore[arg-type]
        else:
            self._callbacks.append(callback)

    def __await__(self) -> Generator[Any, None, T]:
        if not self.done:
            if self._waiter is None:
                self._waiter = asyncio.get_running_loop().create_future()
            return (yield from self._waiter.__await__())
        return self._value  # type: ignore[return-value]
