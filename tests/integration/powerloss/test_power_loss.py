"""Cut the power under the broker: acks=all answers only what an fsync made durable.

SIGKILL (``test_broker_crash.py``) leaves the page cache to the next start,
so it cannot tell an fsync from none. Here the log dir is a ``lossyfs``
mount (``lossyfs.py``: every write not fsynced, every directory entry not
fsynced, is gone after the cut). Each test:

1. creates the topics in a seed directory and mounts lossyfs over it;
2. starts the broker on the mount and produces: a raw idempotent producer
   with acks=all, four requests in flight, as fast as the broker answers
   (``tests/integration/load.py``), on topic ``all``; in the first test also
   confluent-kafka with acks=1 on topic ``one`` (``flush.messages`` 100, so
   part of it is fsynced);
3. arms the cut: the power goes right after the next write to a ``.log`` of
   ``all``, inside that write, so an acks=all request is in flight and its
   bytes are not fsynced; then SIGKILLs the broker (it sees EIO until then);
4. writes what survived into a plain directory and restarts the broker on it.

With fsync (the default): every acknowledged acks=all record is served at
its offset after the restart, although the cut dropped appended bytes of
``all``; recovery ran (no clean-shutdown marker), the broker serves exactly
the batches in the durable bytes of ``one`` (acks=1 lost only what was never
fsynced) and the indexes pass their checks after a clean stop.

The negative control, ``acks.all.fsync=false`` and nothing else flushing
(one segment, no ``flush.*``): no byte of ``all`` is durable at the cut and
every acknowledged record is gone after the restart, which shows the layer
drops what was not fsynced, so the first test could fail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from tests.integration.powerloss.mount import LossyMount
from tests.integration.wire import (
    RawClient,
    create_topics_on_disk,
    fetch_records,
    stored_records,
    wait_for,
)

pytestmark = pytest.mark.integration

ALL = "all"  # acks=all
ONE = "one"  # acks=1
PARTITIONS = 2
FLUSH_MESSAGES = 100  # of ``one``
#: acks=all requests acknowledged before the cut is armed: 2000 records of
#: about 130 bytes in each partition, so its 128 KiB segments have rolled
ACKED_BEFORE_CUT = 200
#: index.interval.bytes of ``all``
INDEX_INTERVAL_BYTES = 4096


@contextlib.contextmanager
def broker_on_lossyfs(
    tmp_path: Path, topics: dict[str, Any], **overrides: object
) -> Iterator[tuple[LossyMount, BrokerProcess]]:
    seed = tmp_path / "seed"
    create_topics_on_disk(seed, topics)
    with contextlib.ExitStack() as stack:
        fs = stack.enter_context(LossyMount(seed, tmp_path))
        broker = BrokerProcess(fs.mountpoint, **overrides)
        stack.callback(broker.kill)  # before the unmount; a no-op once it is dead
        broker.start()
        yield fs, broker


def cut_under_load(fs: LossyMount, broker: BrokerProcess, loads: list[Any]) -> dict[str, Any]:
    """Produce until the acks=all load has ``ACKED_BEFORE_CUT`` answers (and
    every other load some), cut the power inside a write to a ``.log`` of
    ``all``, kill the broker; the cut's stats."""
    raw = loads[0]
    for load in loads:
        load.start()
    try:
        wait_for(lambda: len(raw.acked) >= ACKED_BEFORE_CUT, 30, "acks=all answers")
        for load in loads[1:]:
            wait_for(lambda load=load: len(load.acked) >= 3 * FLUSH_MESSAGES, 30, "acks=1 answers")
        assert raw.is_alive(), "the acks=all load ended before the cut"
        fs.arm(f"/{ALL}-*/*.log")
        cut = fs.wait_cut()
        broker.kill()
    finally:
        for load in loads:
            load.finish()
    return cut


def unsynced_bytes(cut: dict[str, Any], topic: str) -> int:
    return sum(
        f["size"] - f["durable_size"]
        for path, f in cut["files"].items()
        if path.startswith(f"/{topic}-") and path.endswith(".log")
    )


def restart(data: Path) -> BrokerProcess:
    """The broker on what survived; it must find no clean-shutdown marker."""
    broker = BrokerProcess(data).start()
    log = broker.log()
    if "since no clean shutdown file was found" not in log:
        broker.stop()
        raise AssertionError(f"the restart did not recover:\n{log}")
    return broker


def test_power_cut_keeps_every_acks_all_acknowledgement(tmp_path: Path) -> None:
    topics = {
        # small segments: rolls (new files, directory fsyncs) happen under load
        ALL: (
            PARTITIONS,
            {"segment.bytes": str(128 * 1024), "index.interval.bytes": str(INDEX_INTERVAL_BYTES)},
        ),
        ONE: (1, {"flush.messages": str(FLUSH_MESSAGES)}),
    }
    with broker_on_lossyfs(tmp_path, topics) as (fs, broker):
        raw = RawLoad(broker.port, ALL, PARTITIONS, "r", rate=1e9, max_records=200_000)
        one = ConfluentLoad(broker.bootstrap, ONE, 1, "c", acks=1, max_records=20_000)
        cut = cut_under_load(fs, broker, [raw, one])
        after = tmp_path / "after"
        fs.materialize(after)
    acked_all = acknowledged([], [raw])
    acked_one = one.acked
    assert len(acked_all) >= ACKED_BEFORE_CUT * raw.batch_records
    # the cut came inside an append to ``all``: that request was in flight (it
    # got an error or no answer), its bytes and maybe others' were not fsynced,
    # and the layer dropped them
    assert raw.errors, "no acks=all request was in flight at the cut"
    assert unsynced_bytes(cut, ALL) > 0, cut
    assert cut["files"][f"/{ONE}-0/{0:020d}.log"]["fsyncs"] > 0, cut  # flush.messages
    # the active segments' indexes were never fsynced (recovery rebuilds them):
    # the cut took them back to empty files
    lost_indexes = 0
    for p in range(PARTITIONS):
        active = max(f for f in cut["files"] if f.startswith(f"/{ALL}-{p}/") and f.endswith(".log"))
        assert not active.endswith(f"/{0:020d}.log"), "no roll before the cut"
        for suffix in (".index", ".timeindex"):
            index = cut["files"].get(active.removesuffix(".log") + suffix)
            if index is None:
                # rolled just before the cut: an index file is made when its first
                # entry is (lazy indexes, after index.interval.bytes), so there
                # was nothing of it to lose
                assert cut["files"][active]["size"] <= 2 * INDEX_INTERVAL_BYTES, (active, cut)
                continue
            assert index["durable_size"] == 0 < index["size"], (active, index)
            lost_indexes += 1
    assert lost_indexes > 0, cut

    # what survived, read from the files: the complete batches of the durable bytes
    durable_all = {p: stored_records(after, ALL, p) for p in range(PARTITIONS)}
    durable_one = stored_records(after, ONE, 0)
    assert len(durable_one) >= FLUSH_MESSAGES
    restarted = restart(after)
    try:
        with RawClient(restarted.port) as client:
            served_one = fetch_records(client, ONE, 0, 0)
            served_all = {p: fetch_records(client, ALL, p, 0) for p in range(PARTITIONS)}
    finally:
        assert restarted.stop() == 0
    assert "Traceback" not in restarted.log(), restarted.log()

    # recovery kept every complete batch of the durable bytes, and nothing else
    def pairs(records: list[Any]) -> list[tuple[int, bytes | None]]:
        return [(r.offset, r.value) for r in records]

    for p in range(PARTITIONS):
        assert pairs(served_all[p]) == pairs(durable_all[p]), p
    assert pairs(served_one) == pairs(durable_one)
    # acks=all: every acknowledged record at its offset, offsets without gaps
    check_acknowledged(after, ALL, PARTITIONS, acked_all)
    served = {(p, r.offset): r.value for p, records in served_all.items() for r in records}
    lost = [a for a in acked_all if served.get((a.partition, a.offset)) != a.value]
    assert not lost, f"{len(lost)} acknowledged acks=all records not served, e.g. {lost[:3]}"
    # acks=1: the acknowledged records past the fsynced ones are the unflushed
    # tail the cut took; the ones before it are served as acknowledged
    by_offset = {a.offset: a.value for a in acked_one}
    changed = [r.offset for r in served_one if by_offset.get(r.offset, r.value) != r.value]
    assert not changed, changed
    assert check_indexes(after) > PARTITIONS  # segments rolled under load


def test_power_cut_loses_acks_all_answered_without_fsync(tmp_path: Path) -> None:
    """The negative control: the same cut with acks.all.fsync=false loses every
    acknowledged record (nothing fsyncs a ``.log`` of ``all``)."""
    topics = {ALL: (PARTITIONS, {})}  # one segment each, no flush.* settings
    with broker_on_lossyfs(tmp_path, topics, acks_all_fsync="false") as (fs, broker):
        raw = RawLoad(broker.port, ALL, PARTITIONS, "r", rate=1e9, max_records=200_000)
        cut = cut_under_load(fs, broker, [raw])
        after = tmp_path / "after"
        fs.materialize(after)
    acked: list[Acked] = acknowledged([], [raw])
    assert len(acked) >= ACKED_BEFORE_CUT * raw.batch_records
    logs = {
        p: f for p, f in cut["files"].items() if p.startswith(f"/{ALL}-") and p.endswith(".log")
    }
    assert len(logs) == PARTITIONS, cut
    # no fsync ever reached them: all their appended bytes went with the power
    assert all(f["fsyncs"] == 0 and f["durable_size"] == 0 < f["size"] for f in logs.values()), logs

    restarted = restart(after)
    try:
        with RawClient(restarted.port) as client:
            served = {p: fetch_records(client, ALL, p, 0) for p in range(PARTITIONS)}
    finally:
        assert restarted.stop() == 0
    assert served == {p: [] for p in range(PARTITIONS)}, "acknowledged records survived"
    assert all(stored_records(after, ALL, p) == [] for p in range(PARTITIONS))
