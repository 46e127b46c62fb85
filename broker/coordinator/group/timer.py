"""Keyed timers (``CoordinatorTimer``): one pending operation per key.

Keys name a purpose and its subject (``heartbeat-<group>-<member>``,
``join-<group>``, ``sync-<group>``), so a group holds at most one timer per
member plus two of its own; scheduling a key again replaces its timer and
``cancel`` drops it. The event-loop timer uses ``call_later``; tests use a
manual one that runs what is due when they advance the clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

Operation = Callable[[], None]


class CoordinatorTimer(Protocol):
    def schedule(self, key: str, delay_ms: int, operation: Operation) -> None: ...

    def cancel(self, key: str) -> None: ...

    def is_scheduled(self, key: str) -> bool: ...


def run_operation(key: str, operation: Operation) -> None:
    """Run a timer's operation; a failure is logged, never raised into the loop."""
    try:
        operation()
    except Exception:
        log.exception("timer operation %s failed", key)


class LoopTimer:
    """Timers on the running event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def schedule(self, key: str, delay_ms: int, operation: Operation) -> None:
        self.cancel(key)
        loop = self._loop or asyncio.get_running_loop()
        self._handles[key] = loop.call_later(max(delay_ms, 0) / 1000, self._fire, key, operation)

    def _fire(self, key: str, operation: Operation) -> None:
        self._handles.pop(key, None)
        run_operation(key, operation)

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._handles

    def __len__(self) -> int:
        return len(self._handles)

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
