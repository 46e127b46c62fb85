"""acks=all group commit: rounds, sharing, errors, timeouts, shutdown."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from broker import startup
from broker.config import BrokerConfig, TopicConfig
from broker.errors import InvalidConfigError
from broker.log.unified_log import UnifiedLog
from broker.server import group_commit
from broker.server.group_commit import FLUSH_NICE, GroupCommit
from tests.aio import run
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


class FakeLog:
    """A log whose flush the test controls: it blocks until released, may fail,
    and records the offsets it was asked for."""

    def __init__(self) -> None:
        self.recovery_point = 0
        self.asked: list[int] = []
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()
        self.fail: OSError | None = None
        #: start_writeback calls, made on the event-loop thread
        self.writebacks: list[str] = []

    def start_writeback(self) -> bool:
        self.writebacks.append(threading.current_thread().name)
        return True

    def flush(self, offset: int) -> bool:
        self.asked.append(offset)
        self.entered.set()
        assert self.release.wait(10)
        if self.fail is not None:
            raise self.fail
        self.recovery_point = max(self.recovery_point, offset)
        return True


def as_log(fake: FakeLog) -> Any:
    return fake


def wait_flushed(
    commit: GroupCommit, targets: Sequence[tuple[UnifiedLog, int]], timeout_s: float
) -> asyncio.Future[bool]:
    """``commit.when_flushed`` as a future, asked for now: True once durable
    (also when nothing needed a round), False on timeout, the round's error
    raised."""
    fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def done(outcome: bool | BaseException) -> None:
        if fut.done():
            return  # its awaiter gave up
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)

    if not commit.when_flushed(targets, timeout_s, done):
        fut.set_result(True)
    return fut


@pytest.fixture
def commit() -> Any:
    gc = GroupCommit()
    yield gc
    gc.close()


def test_the_round_starts_when_asked_not_when_awaited(tmp_path: Path, commit: GroupCommit) -> None:
    log = UnifiedLog.open(tmp_path / "t-0", TopicConfig(), time_ms=MockTime())
    log.append(v2_batch(0, [b"a", b"b"]))

    async def scenario() -> None:
        waiting = wait_flushed(commit, [(log, 2)], 5)
        # not awaited yet: the flusher thread works on it already
        deadline = time.monotonic() + 5
        while log.recovery_point < 2 and time.monotonic() < deadline:
            time.sleep(0.001)  # block the loop: the round cannot depend on it
        assert log.recovery_point == 2
        assert await waiting is True

    run(scenario())
    assert commit.rounds == 1
    log.close()


def test_a_durable_offset_needs_no_round(commit: GroupCommit) -> None:
    fake = FakeLog()
    fake.recovery_point = 10

    async def scenario() -> bool:
        return await wait_flushed(commit, [(as_log(fake), 10)], 5)

    assert run(scenario()) is True
    assert commit.rounds == 0 and fake.asked == []


def test_each_waiting_log_starts_its_writeback_when_asked(commit: GroupCommit) -> None:
    waiting, durable = FakeLog(), FakeLog()
    waiting.release.clear()  # the round cannot have started the write-out
    durable.recovery_point = 10

    async def scenario() -> bool:
        pending = wait_flushed(commit, [(as_log(waiting), 5), (as_log(durable), 10)], 5)
        # asked for at once, on this (the loop's) thread, before the round runs
        assert waiting.writebacks == [threading.current_thread().name]
        waiting.release.set()
        return await pending

    assert run(scenario()) is True
    assert durable.writebacks == []  # nothing to wait for, nothing to start
    assert len(waiting.writebacks) == 1


def test_requests_during_a_round_share_the_next_one(commit: GroupCommit) -> None:
    a, b = FakeLog(), FakeLog()
    a.release.clear()

    async def scenario() -> list[bool]:
        first = asyncio.ensure_future(wait_flushed(commit, [(as_log(a), 1)], 5))
        await asyncio.get_running_loop().run_in_executor(None, a.entered.wait, 5)
        # round 1 is inside a's flush: these three wait for round 2, together
        later = [
            asyncio.ensure_future(wait_flushed(commit, [(as_log(a), 2)], 5)),
            asyncio.ensure_future(wait_flushed(commit, [(as_log(a), 5), (as_log(b), 3)], 5)),
            asyncio.ensure_future(wait_flushed(commit, [(as_log(b), 7)], 5)),
        ]
        await asyncio.sleep(0.05)
        a.release.set()
        return [await f for f in (first, *later)]

    assert run(scenario()) == [True] * 4
    assert commit.rounds == 2
    assert a.asked == [1, 5]  # the highest offset asked per log, once per round
    assert b.asked == [7]


def test_an_fsync_error_reaches_every_waiter_of_its_round_only(commit: GroupCommit) -> None:
    fake = FakeLog()
    fake.fail = OSError(5, "Input/output error")

    async def scenario() -> None:
        with pytest.raises(OSError, match="Input/output"):
            await wait_flushed(commit, [(as_log(fake), 1)], 5)
        fake.fail = None
        assert await wait_flushed(commit, [(as_log(fake), 1)], 5) is True

    run(scenario())
    assert commit.rounds == 2


def test_the_logs_of_one_round_are_flushed_at_the_same_time(commit: GroupCommit) -> None:
    """Three logs in one round: their flushes overlap (each waits until all
    three have started), and the round ends only when all of them have."""
    logs = [FakeLog() for _ in range(3)]
    started = threading.Barrier(3, timeout=5)
    for log in logs:
        log.release.clear()

    def overlapping(log: FakeLog) -> Any:
        real = log.flush

        def flush(offset: int) -> bool:
            started.wait()  # raises BrokenBarrierError unless all three run at once
            log.release.set()
            return real(offset)

        return flush

    for log in logs:
        log.flush = overlapping(log)  # type: ignore[method-assign]

    async def scenario() -> bool:
        return await wait_flushed(commit, [(as_log(log), 3) for log in logs], 5)

    assert run(scenario()) is True
    assert [log.recovery_point for log in logs] == [3, 3, 3]
    assert commit.rounds == 1


def test_an_error_of_one_log_in_a_round_of_several_fails_its_waiters(
    commit: GroupCommit,
) -> None:
    good, bad = FakeLog(), FakeLog()
    bad.fail = OSError(28, "No space left on device")

    async def scenario() -> None:
        with pytest.raises(OSError, match="No space"):
            await wait_flushed(commit, [(as_log(good), 2), (as_log(bad), 2)], 5)

    run(scenario())
    assert good.recovery_point == 2  # the other log's flush still ran to its end


def test_a_waiter_that_times_out_gets_false_and_the_round_still_completes(
    commit: GroupCommit,
) -> None:
    fake = FakeLog()
    fake.release.clear()

    async def scenario() -> bool:
        return await wait_flushed(commit, [(as_log(fake), 4)], 0.05)

    assert run(scenario()) is False
    fake.release.set()
    commit.close()
    assert fake.recovery_point == 4


def test_close_finishes_the_rounds_asked_for(tmp_path: Path) -> None:
    commit = GroupCommit()
    fake = FakeLog()
    fake.release.clear()

    async def scenario() -> None:
        # registered, never awaited to the end: close() still flushes it
        waiting = wait_flushed(commit, [(as_log(fake), 9)], 5)
        task = asyncio.ensure_future(waiting)
        await asyncio.sleep(0)
        task.cancel()

    run(scenario())
    threading.Timer(0.05, fake.release.set).start()
    commit.close()
    assert fake.recovery_point == 9
    with pytest.raises(RuntimeError, match="closed"):
        run(_ask(commit, fake))


async def _ask(commit: GroupCommit, fake: FakeLog) -> bool:
    return await wait_flushed(commit, [(as_log(fake), 99)], 1)


def test_the_fsyncs_run_below_the_event_loops_priority(commit: GroupCommit) -> None:
    """An fsync's kernel CPU is its thread's: the flusher and the fsync threads run at
    nice FLUSH_NICE so that, on one core, the loop keeps reading the next round's
    requests while they wait (module docstring)."""
    logs = [FakeLog() for _ in range(2)]  # two logs: the round uses the fsync threads
    seen: list[int] = []

    def nice_of_caller(log: FakeLog) -> Any:
        real = log.flush

        def flush(offset: int) -> bool:
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return real(offset)

        return flush

    for log in logs:
        log.flush = nice_of_caller(log)  # type: ignore[method-assign]
    one = FakeLog()
    one.flush = nice_of_caller(one)  # type: ignore[method-assign]

    async def scenario() -> None:
        assert await wait_flushed(commit, [(as_log(log), 1) for log in logs], 5)
        assert await wait_flushed(commit, [(as_log(one), 1)], 5)  # in the flusher itself

    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    run(scenario())
    assert seen == [max(base, FLUSH_NICE)] * 3
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base


def test_a_timed_out_waiter_is_skipped_when_its_round_fails(commit: GroupCommit) -> None:
    """The waiter answered False at its timeout; the round's later error reaches only
    the waiters still waiting, and nothing is left unretrieved."""
    slow = FakeLog()
    slow.release.clear()
    slow.fail = OSError(5, "Input/output error")

    async def scenario() -> tuple[bool, BaseException | None]:
        timed_out = await wait_flushed(commit, [(as_log(slow), 3)], 0.05)
        later = wait_flushed(commit, [(as_log(slow), 4)], 5)
        slow.release.set()
        try:
            await later
        except OSError as exc:
            return timed_out, exc
        return timed_out, None

    timed_out, error = run(scenario())
    assert timed_out is False
    assert isinstance(error, OSError)


# ---- acks.all.sync.method=syncfs ------------------------------------------------------------


def _logs(tmp_path: Path, count: int) -> list[UnifiedLog]:
    logs = [
        UnifiedLog.open(tmp_path / f"t-{p}", TopicConfig(), time_ms=MockTime())
        for p in range(count)
    ]
    for log in logs:
        log.append(v2_batch(0, [b"a", b"b"]))
    return logs


def _syncfs_round(logs: list[UnifiedLog]) -> bool:
    """One syncfs round for every log up to offset 2 (its outcome, or its error),
    then the group commit closed and the logs left open for the checks."""
    commit = GroupCommit("syncfs")

    async def scenario() -> bool:
        return await wait_flushed(commit, [(log, 2) for log in logs], 5)

    try:
        return run(scenario())
    finally:
        commit.close()


def test_a_syncfs_round_makes_one_call_for_the_logs_of_a_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = group_commit.syncfs

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(group_commit, "syncfs", counting)
    logs = _logs(tmp_path, 4)
    assert _syncfs_round(logs) is True
    assert len(calls) == 1
    assert [log.recovery_point for log in logs] == [2, 2, 2, 2]
    for log in logs:
        log.close()


def test_a_syncfs_round_syncs_each_file_system_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logs of two log dirs on different file systems (their devices faked): one
    syncfs for each, on a descriptor of that file system."""
    calls: list[str] = []
    monkeypatch.setattr(
        group_commit, "syncfs", lambda fd: calls.append(os.readlink(f"/proc/self/fd/{fd}"))
    )
    logs = _logs(tmp_path, 4)
    for log in logs[2:]:
        log.local_log.device += 1
    assert _syncfs_round(logs) is True
    assert sorted(Path(c).name for c in calls) == ["t-0", "t-2"]
    assert [log.recovery_point for log in logs] == [2, 2, 2, 2]
    for log in logs:
        log.close()


def test_a_failed_syncfs_fails_the_rounds_waiters_and_moves_no_recovery_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(5, "syncfs: Input/output error")

    monkeypatch.setattr(group_commit, "syncfs", failing)
    logs = _logs(tmp_path, 2)
    with pytest.raises(OSError, match="Input/output"):
        _syncfs_round(logs)
    assert [log.recovery_point for log in logs] == [0, 0]
    for log in logs:
        log.close()


def test_an_unknown_sync_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sync method"):
        GroupCommit("fdatasync")


def test_the_broker_refuses_syncfs_where_it_would_not_be_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """acks.all.sync.method=syncfs is checked at start: the kernel must report
    write-back errors, and each log dir must be on a file system whose syncfs
    is trusted; the message names the key."""
    syncfs_on = BrokerConfig.from_properties({"acks.all.sync.method": "syncfs"})
    assert startup.sync_method(BrokerConfig.from_properties({}), [Path("/proc")]) == "fsync"
    monkeypatch.setattr(startup, "syncfs_reports_errors", lambda: True)
    with pytest.raises(InvalidConfigError, match=r"acks\.all\.sync\.method.*/proc.*0x9fa0"):
        startup.sync_method(syncfs_on, [tmp_path, Path("/proc")])
    with pytest.raises(InvalidConfigError, match=r"/proc/not/made/yet"):
        startup.sync_method(syncfs_on, [Path("/proc/not/made/yet")])  # judged by /proc
    checked: list[Path] = []

    def trusted(path: Path) -> str:
        checked.append(path)
        return "ext4"

    monkeypatch.setattr(startup, "trusted_file_system", trusted)
    assert startup.sync_method(syncfs_on, [tmp_path, tmp_path / "new" / "dir"]) == "syncfs"
    assert checked == [tmp_path, tmp_path]  # a dir not made yet: its first existing parent
    monkeypatch.setattr(startup, "syncfs_reports_errors", lambda: False)
    with pytest.raises(InvalidConfigError, match=r"acks\.all\.sync\.method.*Linux 5\.8"):
        startup.sync_method(syncfs_on, [tmp_path])
    with pytest.raises(InvalidConfigError, match="String must be one of: fsync, syncfs"):
        BrokerConfig.from_properties({"acks.all.sync.method": "fdatasync"})


# ---- when_flushed: the callback form the produce handler uses ------------------------------


def test_when_flushed_calls_back_once_per_outcome(commit: GroupCommit) -> None:
    durable, slow, bad = FakeLog(), FakeLog(), FakeLog()
    durable.recovery_point = 10
    bad.fail = OSError(5, "Input/output error")
    slow.release.clear()
    heard: dict[str, list[object]] = {"durable": [], "slow": [], "bad": [], "ok": []}

    async def scenario() -> None:
        # nothing to wait for: False, and no callback
        assert not commit.when_flushed([(as_log(durable), 10)], 5, heard["durable"].append)
        assert commit.when_flushed([(as_log(slow), 3)], 0.05, heard["slow"].append)
        await asyncio.sleep(0.2)  # its timer answers False; the round is still running
        assert heard["slow"] == [False]
        slow.release.set()
        assert commit.when_flushed([(as_log(bad), 1)], 5, heard["bad"].append)
        ok = FakeLog()
        assert commit.when_flushed([(as_log(ok), 1)], 5, heard["ok"].append)
        deadline = time.monotonic() + 5
        while not (heard["bad"] and heard["ok"]) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    run(scenario())
    assert heard["durable"] == []
    assert heard["slow"] == [False]  # the round's later True is not heard again
    assert len(heard["bad"]) == 1 and isinstance(heard["bad"][0], OSError)
    assert heard["ok"] in ([True], [heard["bad"][0]])  # its own round, or the failed one


def test_a_failing_callback_does_not_stop_the_others_of_its_round(
    commit: GroupCommit, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeLog()
    fake.release.clear()
    heard: list[object] = []

    def broken(outcome: object) -> None:
        raise ValueError("bug in a waiter")

    async def scenario() -> None:
        commit.when_flushed([(as_log(fake), 1)], 5, broken)
        commit.when_flushed([(as_log(fake), 1)], 5, heard.append)
        fake.release.set()
        deadline = time.monotonic() + 5
        while not heard and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    run(scenario())
    assert heard == [True]
    assert "acks=all waiter failed" in caplog.text
