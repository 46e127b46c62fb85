"""SIGKILL the broker process under acks=all load; nothing acknowledged may be lost.

Three rounds on one log dir (topic ``crash``: 2 partitions, 256 KiB
segments so rolls happen under load, an index entry every 4 KiB). Each
round starts the broker, runs a confluent-kafka producer (acks=all) and a
raw-protocol idempotent producer (acks=all, 4 requests in flight), both
bounded in records and time, kills the broker with SIGKILL (by PID) at a
random moment, and restarts it on the same dir. Then:

* the restart says it recovered (no clean-shutdown marker);
* the broker serves reads after recovery: Fetch from offset 0 to the high
  watermark returns exactly the records in the segment files;
* every acknowledged record is in the segment files at its offset, and
  offsets run without gaps from 0;
* after a clean stop, the log opened in process passes the index checks
  (``OffsetIndex``/``TimeIndex`` sanity checks, increasing entries, every
  offset-index entry pointing at a batch boundary).

SIGKILL leaves the page cache intact, so this proves the broker never
acknowledges what it has not written and that recovery keeps what it wrote
(fsync durability against power loss is not observable this way).
"""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path

import pytest

from tests.integration.harness import BrokerProcess
from tests.integration.load import (
    Acked,
    ConfluentLoad,
    RawLoad,
    acknowledged,
    check_acknowledged,
    check_indexes,
)
from tests.integration.wire import RawClient, create_topics_on_disk, fetch_records, stored_records

pytestmark = pytest.mark.integration

TOPIC = "crash"
PARTITIONS = 2
ROUNDS = 3


def test_sigkill_under_acks_all_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    create_topics_on_disk(
        data,
        {TOPIC: (PARTITIONS, {"segment.bytes": str(256 * 1024), "index.interval.bytes": "4096"})},
    )
    rng = random.Random(20241125)
    acked_all = []
    with contextlib.ExitStack() as cleanup:  # nothing outlives a failed assertion
        for round_no in range(ROUNDS):
            run_round(data, rng, round_no, acked_all, cleanup)
    assert len(acked_all) > 1000


def run_round(
    data: Path,
    rng: random.Random,
    round_no: int,
    acked_all: list[Acked],
    cleanup: contextlib.ExitStack,
) -> None:
    """Load, SIGKILL, restart, check (see the module docstring)."""
    broker = BrokerProcess(data).start()
    cleanup.callback(broker.kill)  # a no-op once it is dead
    confluent = ConfluentLoad(broker.bootstrap, TOPIC, PARTITIONS, f"c{round_no}")
    raw = RawLoad(broker.port, TOPIC, PARTITIONS, f"r{round_no}")
    cleanup.callback(confluent.stop_event.set)
    cleanup.callback(raw.stop_event.set)
    confluent.start()
    raw.start()
    time.sleep(rng.uniform(0.8, 2.5))
    assert confluent.is_alive() or raw.is_alive(), "load finished before the kill"
    broker.kill()
    raw.finish()
    confluent.finish()
    acked_all += acknowledged([confluent], [raw])
    assert confluent.acked and raw.acked, (round_no, confluent.failed, raw.errors)

    # restart on the same dir: recovery, then reads
    restarted = BrokerProcess(data).start()
    cleanup.callback(restarted.kill)
    try:
        log = restarted.log()
        assert "since no clean shutdown file was found" in log, log
        with RawClient(restarted.port) as client:
            for p in range(PARTITIONS):
                fetched = fetch_records(client, TOPIC, p, 0)
                on_disk = stored_records(data, TOPIC, p)
                assert [(r.offset, r.value) for r in fetched] == [
                    (r.offset, r.value) for r in on_disk
                ]
        total = check_acknowledged(data, TOPIC, PARTITIONS, acked_all)
        assert total >= len(acked_all)
    finally:
        assert restarted.stop() == 0
    assert "Traceback" not in restarted.log(), restarted.log()
    assert check_indexes(data) > PARTITIONS * (round_no + 1)  # segments rolled under load
