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

A second test damages the files after the SIGKILL (a torn last batch in one
partition, a batch failing its CRC in the first of several segments of the
other) and checks that the restart says what it cut, in its log and in the
``kafka_log_recovery_*`` counters on /metrics.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from pathlib import Path

import pytest

from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.integration.harness import BrokerProcess
from tests.integration.load import (
    Acked,
    ConfluentLoad,
    RawLoad,
    acknowledged,
    check_acknowledged,
    check_indexes,
)
from tests.integration.wire import (
    RawClient,
    create_topics_on_disk,
    fetch_records,
    metric_value,
    only_partition,
    produce_request,
    stored_records,
)

pytestmark = pytest.mark.integration

TOPIC = "crash"
PARTITIONS = 2
ROUNDS = 3


@pytest.mark.parametrize("sync_method", ["fsync", "syncfs"])
def test_sigkill_under_acks_all_load_loses_nothing_acknowledged(
    tmp_path: Path, sync_method: str
) -> None:
    """Also with acks.all.sync.method=syncfs: its rounds answer the same clients
    (what a power cut does to it, SIGKILL cannot show: see powerloss/)."""
    data = tmp_path / "data"
    create_topics_on_disk(
        data,
        {TOPIC: (PARTITIONS, {"segment.bytes": str(256 * 1024), "index.interval.bytes": "4096"})},
    )
    rng = random.Random(20241125)
    acked_all = []
    with contextlib.ExitStack() as cleanup:  # nothing outlives a failed assertion
        for round_no in range(ROUNDS):
            run_round(data, rng, round_no, acked_all, cleanup, sync_method)
    assert len(acked_all) > 1000


def run_round(
    data: Path,
    rng: random.Random,
    round_no: int,
    acked_all: list[Acked],
    cleanup: contextlib.ExitStack,
    sync_method: str = "fsync",
) -> None:
    """Load, SIGKILL, restart, check (see the module docstring)."""
    broker = BrokerProcess(data, **{"acks.all.sync.method": sync_method}).start()
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


def batch_starts(data: bytes) -> list[int]:
    """Where each batch of a segment's bytes starts."""
    starts = []
    pos = 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    return starts


def test_restart_after_sigkill_reports_what_recovery_cut(tmp_path: Path) -> None:
    data = tmp_path / "data"
    topic = "damaged"
    create_topics_on_disk(data, {topic: (2, {"segment.bytes": "4096"})})
    # no recovery-point checkpoint during the run: recovery scans from offset 0
    overrides = {"log.flush.offset.checkpoint.interval.ms": 3_600_000}
    broker = BrokerProcess(data, **overrides).start()
    try:
        with RawClient(broker.port) as client:
            for i in range(40):
                for p in range(2):
                    records = [SimpleRecord(1_700_000_000_000 + i, None, b"v%d-" % i * 50)]
                    batch = bytes(build_v2_batch(records).buffer)
                    resp = client.call(produce_request({(topic, p): batch}, acks=-1), 9)
                    assert only_partition(resp).error_code == 0
    finally:
        broker.kill()

    # partition 0: the last batch of the active segment loses its last 7 bytes
    part0 = sorted((data / f"{topic}-0").glob("*.log"))
    torn = part0[-1]
    size = torn.stat().st_size
    last_batch = batch_starts(torn.read_bytes())[-1]
    os.truncate(torn, size - 7)
    torn_dropped = size - 7 - last_batch  # the rest of the torn batch goes
    # partition 1: a record byte of the second batch of the first segment flips
    part1 = sorted((data / f"{topic}-1").glob("*.log"))
    assert len(part1) >= 3
    first = part1[0].read_bytes()
    first_batch, third_batch = batch_starts(first)[1:3]  # the second batch spans them
    damaged = bytearray(first)
    damaged[third_batch - 2] ^= 0xFF
    part1[0].write_bytes(damaged)
    cut = len(first) - first_batch
    later = sum(p.stat().st_size for p in part1[1:])

    restarted = BrokerProcess(data, **overrides).start()
    try:
        log = restarted.log()
        ident0 = f"[LogLoader partition={topic}-0, dir={data}] "
        ident1 = f"[LogLoader partition={topic}-1, dir={data}] "
        assert f"WARNING broker.log.recovery_report: {ident0}Corruption found in segment " in log
        assert (
            f"({torn.name}), truncating to offset 39: {torn_dropped} bytes dropped from byte "
            f"offset {last_batch} (the last batch is incomplete)"
        ) in log, log
        assert (
            f"{ident1}Corruption found in segment 0 ({part1[0].name}), truncating to offset 1: "
            f"{cut} bytes dropped from byte offset {first_batch} (CRC-32C mismatch"
        ) in log, log
        assert (
            f"{ident1}Deleting {len(part1) - 1} segments after the corruption as part of log "
            f"recovery: {', '.join(p.name for p in part1[1:])} "
            f"(from offset {int(part1[1].stem)} on, {later} bytes dropped)"
        ) in log, log
        exposition = restarted.metrics()
        assert metric_value(exposition, "kafka_log_recovery_truncations_total") == 2
        assert metric_value(exposition, "kafka_log_recovery_deleted_segments_total") == (
            len(part1) - 1
        )
        assert metric_value(exposition, "kafka_log_recovery_dropped_bytes_total") == (
            torn_dropped + cut + later
        )
        with RawClient(restarted.port) as client:
            assert len(fetch_records(client, topic, 0, 0)) == 39
            assert len(fetch_records(client, topic, 1, 0)) == 1
    finally:
        assert restarted.stop() == 0
    assert "Traceback" not in restarted.log()
