"""Cleaning any log: the latest value of each key, offsets in order, producer
batches as Kafka keeps them -- and the same after a restart.

Hypothesis writes any sequence of appends to a compacted log (keys from a
small set, values or tombstones, one to four records per batch, no producer
or one of three idempotent producers continuing its sequence, sometimes
compressed, sometimes a roll), then cleans it with a map of any size (a map
too small for the dirty section cleans it in several passes, each starting
where the last ended) and a superseded bitmap of any size or none, and
checks against a model:

* below the cleaning's end offset each key keeps exactly its latest record
  (a tombstone too, until its delete horizon), above it nothing changed;
* offsets strictly increase across the log; every batch left has the offsets,
  producer id, epoch and sequence of a batch that was appended;
* each idempotent producer's last batch is still there (empty if all its
  records went), so a restart rebuilds the same producer state;
* after reopening the log (clean shutdown or not) the records are the same
  and each producer's last sequence and epoch are the appended ones.
"""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType
from tests.unit.log.cleaner_helpers import (
    append_records,
    batches,
    clean,
    make_cleaner,
    records,
)
from tests.unit.log.helpers import MockTime

KEYS = [b"a", b"b", b"c", b"d", b"e"]

op = st.one_of(
    st.tuples(
        st.just("append"),
        st.lists(
            st.tuples(
                st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=12))
            ),
            min_size=1,
            max_size=4,
        ),
        st.sampled_from([-1, -1, 1, 2, 3]),
        st.sampled_from([CompressionType.NONE, CompressionType.NONE, CompressionType.LZ4]),
    ),
    st.tuples(st.just("roll")),
)


def run_ops(log: UnifiedLog, ops: list[Any]) -> list[dict[str, Any]]:
    """Apply the operations; the appended batches (offsets, producer fields, records)."""
    appended = []
    sequences: dict[int, int] = {}
    for o in ops:
        if o[0] == "roll":
            if log.active_segment.size:
                log.roll()
            continue
        _, items, pid, codec = o
        seq = sequences.get(pid, 0) if pid >= 0 else -1
        result = append_records(
            log,
            items,
            producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1,
            sequence=seq,
            compression=codec,
        )
        if pid >= 0:
            sequences[pid] = seq + len(items)
        appended.append(
            {
                "base": result.first_offset,
                "last": result.last_offset,
                "pid": pid,
                "seq": seq,
                "records": [(result.first_offset + i, k, v) for i, (k, v) in enumerate(items)],
            }
        )
    return appended


def expected_records(appended: list[dict[str, Any]], end: int) -> list[tuple[int, bytes, Any]]:
    everything = [r for b in appended for r in b["records"]]
    latest = {k: o for o, k, _ in everything if o < end}
    return [(o, k, v) for o, k, v in everything if o >= end or latest[k] == o]


def log_records(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for _, r in records(log)]


def check_batches(log: UnifiedLog, appended: list[dict[str, Any]]) -> None:
    by_base = {b["base"]: b for b in appended}
    last_of = {}
    for b in appended:
        if b["pid"] >= 0:
            last_of[b["pid"]] = b["base"]
    seen = set()
    for batch in batches(log):
        h = batch.header()
        original = by_base[h.base_offset]
        assert (h.last_offset, h.producer_id, h.base_sequence) == (
            original["last"],
            original["pid"],
            original["seq"],
        )
        seen.add(h.base_offset)
    for _pid, base in last_of.items():
        assert base in seen, "a producer's last batch must stay"


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(op, min_size=1, max_size=40),
    map_slots=st.sampled_from([2, 3, 5, 1000]),
    superseded=st.sampled_from([0, 1, 4, 64]),
    reopen_clean=st.booleans(),
)
def test_cleaning_keeps_the_latest_record_of_each_key(
    ops: list[Any], map_slots: int, superseded: int, reopen_clean: bool
) -> None:
    with TemporaryDirectory() as tmp:
        clock = MockTime()
        config = TopicConfig(
            cleanup_policy=("compact",), segment_bytes=300, segment_index_bytes=1024
        )
        log = UnifiedLog.open(Path(tmp) / "t-0", config, time_ms=clock)
        appended = run_ops(log, ops)
        if log.active_segment.size:
            log.roll()
        end = log.active_segment.base_offset
        cleaner = make_cleaner(map_slots, superseded_memory=superseded)
        first_dirty = 0
        for _ in range(200):  # each pass maps at least one key
            first_dirty, _stats = clean(cleaner, log, first_dirty)
            if first_dirty >= end:
                break
        assert first_dirty == end
        got = log_records(log)
        assert got == expected_records(appended, end)
        offsets = [o for o, _, _ in got]
        assert offsets == sorted(set(offsets))
        check_batches(log, appended)
        producers = {
            pid: (e.producer_epoch, e.last_seq)
            for pid, e in log.producer_state.active_producers.items()
        }
        # a restart rebuilds the same producer state from what the cleaner kept
        directory = log.dir
        if reopen_clean:
            log.close()
            log = UnifiedLog.open(directory, config, time_ms=clock, had_clean_shutdown=True)
        else:
            log.flush()
            log.close_handlers()
            log = UnifiedLog.open(directory, config, time_ms=clock, recovery_point=0)
        assert log_records(log) == got
        assert {
            pid: (e.producer_epoch, e.last_seq)
            for pid, e in log.producer_state.active_producers.items()
        } == producers
        # cleaning again changes nothing
        clean(cleaner, log, 0)
        assert log_records(log) == got
        log.close()
