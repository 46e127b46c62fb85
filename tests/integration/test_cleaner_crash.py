"""The broker killed (SIGKILL) at each step of a cleaning, then restarted: the
log is the log before that cleaning or the log after it, never a mix, and
no cleaner file is left.

A cleaning swaps its groups of segments one after the other, each swap on
its own; the partition here is cleaned as one group (segment.bytes is
raised before the cleaning under test), so "that cleaning" is one swap. It
is prepared in process: a cleaning already done (so the next one merges
small cleaned segments), then dirty data superseding most keys, written by
an idempotent producer. A broker started on a copy with
``BROKER_CLEANER_FAULT=<step>`` cleans it and kills itself at that step
(``broker/log/cleaner_faults.py``); it is restarted on the same files (the
cleaner off, so nothing changes them again), stopped, and the files read
back. Another copy is cleaned without a fault to know the log after.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.log.checkpoints import cleaner_offset_checkpoint
from broker.log.cleaner_faults import POINTS
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from tests.integration.harness import BrokerProcess
from tests.unit.log.cleaner_helpers import append_record, batches, records

pytestmark = pytest.mark.integration

TP = TopicPartition("compacted", 0)
BROKER = {
    "log.cleaner.backoff.ms": "50",
    "log.cleaner.dedupe.buffer.size": str(4 << 20),
}


def prepare(data: Path) -> int:
    """The partition before the cleaning under test; returns its end offset."""
    manager = LogManager([data], BrokerConfig.from_properties(BROKER))
    manager.startup()
    manager.create_topic(
        TP.topic,
        1,
        {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"},
    )
    log = manager.get_log(TP)
    assert log is not None and manager.cleaner is not None
    for i in range(400):
        append_record(log, i % 40, i)
    log.roll()
    assert manager.cleaner.clean_once()
    for i in range(400, 700):
        append_record(log, 10 + i % 30, i, producer_id=7, producer_epoch=0, sequence=i - 400)
    log.roll()
    end = log.log_end_offset
    # the cleaning under test takes every segment in one group (one swap)
    manager.alter_topic_config(TP.topic, {"segment.bytes": str(64 << 20)})
    manager.shutdown()
    return end


def read_back(data: Path) -> tuple[list[Any], list[Any]]:
    manager = LogManager([data], BrokerConfig.from_properties({"log.cleaner.enable": "false"}))
    manager.startup()
    try:
        log = manager.get_log(TP)
        assert log is not None
        recs = [(r.offset, r.key, r.value) for _, r in records(log)]
        heads = [
            (h.base_offset, h.last_offset, h.producer_id, h.base_sequence, h.records_count)
            for h in (b.header() for b in batches(log))
        ]
        names = [p.name for p in log.dir.iterdir()]
        assert not [n for n in names if n.endswith((".cleaned", ".swap"))], names
    finally:
        manager.shutdown()
    return recs, heads


def cleaned_by_broker(data: Path, end: int) -> None:
    with BrokerProcess(data, **BROKER):
        deadline = time.monotonic() + 60
        while cleaner_offset_checkpoint(data).read().get(TP, 0) < end:
            assert time.monotonic() < deadline, "the broker did not clean the log"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Any, Any]:
    base = tmp_path_factory.mktemp("cleaner-crash")
    original = base / "original"
    end = prepare(original)
    before = read_back(original)
    after_dir = base / "after"
    shutil.copytree(original, after_dir)
    cleaned_by_broker(after_dir, end)
    after = read_back(after_dir)
    assert after[0] != before[0], "the cleaning under test must change the log"
    return original, end, before, after


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_each_step_of_a_cleaning(
    tmp_path: Path, prepared: tuple[Path, int, Any, Any], point: str
) -> None:
    original, end, before, after = prepared
    data = tmp_path / "data"
    shutil.copytree(original, data)
    broker = BrokerProcess(data, env={"BROKER_CLEANER_FAULT": point}, **BROKER)
    with contextlib.suppress(RuntimeError):  # it may kill itself before it is ready
        broker.start()
    assert broker.wait_exit(60) == -signal.SIGKILL, broker.log()
    assert f"BROKER_CLEANER_FAULT={point}" in broker.log()
    left = [p.name for p in (data / f"{TP.topic}-{TP.partition}").iterdir()]
    suffixes = {n.rsplit(".", 1)[1] for n in left if n.endswith((".cleaned", ".swap", ".deleted"))}
    assert (
        suffixes
        == {
            "cleaned": {"cleaned"},
            "swap": {"swap"},
            "delete": {"swap", "deleted"},
            "rename": {"deleted"},
        }[point]
    ), left
    # restart on what the crash left: recovery finishes or undoes the swap
    with BrokerProcess(data, **{**BROKER, "log.cleaner.enable": "false"}):
        pass
    got = read_back(data)
    assert got in (before, after)
    # nothing renamed yet: the cleaning is undone; the .swap files exist: it is finished
    assert got == (before if point == "cleaned" else after)
    # the cleaner takes up where it was: cleaning again ends in the same log
    cleaned_by_broker(data, end)
    assert read_back(data)[0] == after[0]
