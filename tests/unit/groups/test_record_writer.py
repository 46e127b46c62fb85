"""RecordWriter: a write with offsets.commit.required.acks=-1 is answered from
the group commit's callback (as an acks=all produce request), without a task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.writer import RecordWriter, group_record_writer
from broker.errors import ErrorCode
from tests.aio import run


class FakePartition:
    log = object()

    def append_built_batch(self, records: list[Any]) -> int:
        return 41


class FakeReplicas:
    def get_partition(self, topic: str, index: int) -> FakePartition:
        return FakePartition()


class FakeDurability:
    """Keeps each callback for the test to answer; ``durable`` answers none."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.waiting: list[tuple[list[tuple[Any, int]], float, Callable[[Any], None]]] = []

    def when_flushed(self, targets: Any, timeout_s: float, on_done: Any) -> bool:
        if self.durable:
            return False
        self.waiting.append((list(targets), timeout_s, on_done))
        return True


def writer(durability: FakeDurability) -> RecordWriter:
    return group_record_writer(FakeReplicas(), durability, GroupConfig(), lambda: 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (True, ErrorCode.NONE),
        (False, ErrorCode.REQUEST_TIMED_OUT),
        (OSError("fsync failed"), ErrorCode.KAFKA_STORAGE_ERROR),
        (RuntimeError("a bug"), ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)
def test_a_write_is_answered_by_its_round(outcome: Any, code: ErrorCode) -> None:
    durability = FakeDurability()
    w = writer(durability)
    got: list[ErrorCode] = []
    w.write(0, [(b"k", b"v")], got.append)
    ((targets, timeout_s, on_done),) = durability.waiting
    assert targets == [(FakePartition.log, 42)] and timeout_s == 5.0 and got == []
    on_done(outcome)
    assert got == [code]


def test_a_write_durable_already_is_answered_at_once() -> None:
    got: list[ErrorCode] = []
    writer(FakeDurability(durable=True)).write(0, [(b"k", b"v")], got.append)
    assert got == [ErrorCode.NONE]


def test_drain_waits_for_the_writes_waiting_for_their_round() -> None:
    async def scenario() -> None:
        durability = FakeDurability()
        w = writer(durability)
        got: list[ErrorCode] = []
        w.write(0, [(b"k", b"v")], got.append)
        w.write(0, [(b"k", b"w")], got.append)
        drained = asyncio.ensure_future(w.drain())
        await asyncio.sleep(0)
        durability.waiting[0][2](True)
        await asyncio.sleep(0)
        assert not drained.done()
        durability.waiting[1][2](True)
        await asyncio.wait_for(drained, 1)
        assert got == [ErrorCode.NONE, ErrorCode.NONE]
        await w.drain()  # nothing waiting: at once

    run(scenario())
