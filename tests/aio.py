"""Run coroutines in tests on the loop chosen by ``BROKER_EVENT_LOOP``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    return os.environ.get("BROKER_EVENT_LOOP", "uvloop").strip().lower() or "uvloop"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run(coro: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
