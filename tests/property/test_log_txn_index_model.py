"""Random transactional appends and COMMIT/ABORT markers from several
producers, with rolls, against a list model of the log's transactions:
``UnifiedLog.collect_aborted_transactions`` and ``last_stable_offset`` equal
the model's after every step, after a clean close and reopen (the
``.txnindex`` files trusted) and after an unclean one with the ``.txnindex``
files and producer snapshots deleted (rebuilt from the markers,
``LogLoader.recoverSegment``).

The model: per producer the first offset of its open transaction; the
aborted transactions in marker order, each with the LSO at its marker (the
oldest other open transaction's first offset, else the marker's offset + 1,
``ProducerStateManager.lastStableOffset``). A search from ``start`` below
``upper`` goes through the entries of the segments from the one holding
``start`` (an entry belongs to the segment holding its marker), keeps those
with ``first < upper`` (all end at or after the log start offset 0) and stops
after the first whose LSO reaches ``upper`` (``TransactionIndex.collectAbortedTxns``).
"""

from __future__ import annotations

import tempfile
from bisect import bisect_right
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.log import files
from broker.log.producer_state import list_snapshot_offsets
from broker.log.transaction_index import AbortedTxn
from broker.log.unified_log import UnifiedLog
from broker.records.batch import TRANSACTIONAL_FLAG_MASK
from broker.records.control import ControlRecordType, EndTransactionMarker
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

PIDS = st.sampled_from([1, 2, 3])
OPS = st.one_of(
    st.tuples(st.just("txn"), PIDS, st.integers(1, 4)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("commit"), PIDS, st.just(0)),
    st.tuples(st.just("abort"), PIDS, st.just(0)),
    st.tuples(st.just("roll"), st.just(0), st.just(0)),
)


class Model:
    def __init__(self) -> None:
        self.end = 0
        self.open: dict[int, int] = {}
        self.aborted: list[AbortedTxn] = []

    def lso(self) -> int:
        return min(self.open.values()) if self.open else self.end

    def marker(self, pid: int, abort: bool) -> None:
        offset = self.end
        self.end += 1
        first = self.open.pop(pid, None)
        if first is None:
            return  # a marker of an empty transaction ends nothing
        others = sorted(self.open.values())
        lso = others[0] if others else offset + 1
        if abort:
            self.aborted.append(AbortedTxn(pid, first, offset, lso))

    def collect(self, bases: list[int], start: int, upper: int) -> list[AbortedTxn]:
        first_segment = max(bisect_right(bases, start) - 1, 0)
        out = []
        for txn in self.aborted:
            if bisect_right(bases, txn.last_offset) - 1 < first_segment:
                continue
            if txn.first_offset < upper:
                out.append(txn)
            if txn.last_stable_offset >= upper:
                break
        return out


def _open(directory: Path, clock: MockTime, clean: bool) -> UnifiedLog:
    return UnifiedLog.open(
        directory,
        TopicConfig(segment_bytes=600),
        had_clean_shutdown=clean,
        time_ms=clock,
    )


def _check(log: UnifiedLog, model: Model) -> None:
    assert log.log_end_offset == model.end
    assert log.last_stable_offset == model.lso()
    assert log.first_unstable_offset == (min(model.open.values()) if model.open else None)
    bases = [s.base_offset for s in log.segments]
    all_entries = [t for s in log.segments for t in s.txn_index.all_aborted_txns()]
    assert all_entries == model.aborted
    points = sorted({0, model.end, *(t.first_offset for t in model.aborted)})
    for start in points:
        for upper in (*points, model.end + 1):
            assert log.collect_aborted_transactions(start, upper) == model.collect(
                bases, start, upper
            ), (start, upper)


@settings(max_examples=100, deadline=None)
@given(st.lists(OPS, min_size=8, max_size=60))
def test_aborted_transactions_and_lso_follow_the_model(ops: list[tuple[str, int, int]]) -> None:
    clock = MockTime()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t-0"
        log = _open(directory, clock, clean=True)
        model = Model()
        sequences = {1: 0, 2: 0, 3: 0}
        for kind, pid, n in ops:
            if kind == "txn":
                log.append(
                    v2_batch(
                        model.end,
                        [b"t"] * n,
                        base_timestamp=clock(),
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=sequences[pid],
                        attributes=TRANSACTIONAL_FLAG_MASK,
                    )
                )
                sequences[pid] += n
                model.open.setdefault(pid, model.end)
                model.end += n
            elif kind == "plain":
                log.append(v2_batch(model.end, [b"p"] * n, base_timestamp=clock()))
                model.end += n
            elif kind == "roll":
                log.roll()
            else:
                abort = kind == "abort"
                control = ControlRecordType.ABORT if abort else ControlRecordType.COMMIT
                log.append_end_txn_marker(pid, 0, EndTransactionMarker(control, 0), leader_epoch=0)
                model.marker(pid, abort)
            _check(log, model)
        log.close()
        log = _open(directory, clock, clean=True)
        _check(log, model)
        for segment in log.segments:
            segment.txn_index.delete_if_exists()
        log.close_handlers()
        for offset in list_snapshot_offsets(directory):
            files.producer_snapshot_file(directory, offset).unlink()
        log = _open(directory, clock, clean=False)
        _check(log, model)
        log.close()
