"""A Hypothesis state machine over the transactions of one partition's
producer state (``ProducerStateManager``), checked against a model.

The model keeps, per producer, its epoch, coordinator epoch and the first
offset of its open transaction, plus the snapshots taken. Rules:
transactional and idempotent appends across four producers, COMMIT/ABORT
markers (with or without an epoch bump, a newer coordinator epoch), markers
with a stale epoch or coordinator epoch (refused, no effect), a
non-transactional append during a transaction (refused, no effect),
snapshots, a snapshot round trip into a new manager, and truncation back to
a snapshot. After every step: the ongoing transactions are the model's open
ones in first-offset order, and the first unstable offset is their minimum.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from broker.log.producer_state import ProducerStateManager
from broker.log.transaction_index import CompletedTxn
from broker.records.control import ControlRecordType, EndTransactionMarker

PIDS = st.sampled_from([11, 12, 13, 14])
NOW_MS = 1_700_000_000_000


@dataclass
class ModelProducer:
    epoch: int = 0
    coordinator_epoch: int = -1
    open_first: int | None = None
    seq: int = 0


class TxnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="txn-machine-"))
        self.dir = self.tmp / "t-0"
        self.dir.mkdir()
        self.state = ProducerStateManager(self.dir)
        self.offset = 0
        self.producers: dict[int, ModelProducer] = {}
        self.snapshots: dict[int, dict[int, ModelProducer]] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def producer(self, pid: int) -> ModelProducer:
        return self.producers.setdefault(pid, ModelProducer())

    def open_firsts(self) -> dict[int, int]:
        return {pid: p.open_first for pid, p in self.producers.items() if p.open_first is not None}

    def append(self, pid: int, n: int, transactional: bool) -> None:
        p = self.producer(pid)
        self.state.update_data_batch(
            pid,
            producer_epoch=p.epoch,
            first_seq=p.seq,
            last_seq=p.seq + n - 1,
            first_offset=self.offset,
            last_offset=self.offset + n - 1,
            max_timestamp=NOW_MS,
            is_transactional=transactional,
        )
        if transactional and p.open_first is None:
            p.open_first = self.offset
        p.seq += n
        self.offset += n
        self.state.update_map_end_offset(self.offset)

    @rule(pid=PIDS, n=st.integers(1, 4))
    def transactional_append(self, pid: int, n: int) -> None:
        self.append(pid, n, True)

    @rule(pid=PIDS, n=st.integers(1, 4))
    def idempotent_append(self, pid: int, n: int) -> None:
        if self.producer(pid).open_first is None:
            self.append(pid, n, False)
            return
        before = self.state.last_entry(pid).copy()  # type: ignore[union-attr]
        with pytest.raises(InvalidTxnStateError):
            self.append(pid, n, False)
        assert self.state.last_entry(pid) == before

    @rule(
        pid=PIDS,
        commit=st.booleans(),
        bump_epoch=st.booleans(),
        coordinator_bump=st.integers(0, 2),
    )
    def marker(self, pid: int, commit: bool, bump_epoch: bool, coordinator_bump: int) -> None:
        p = self.producer(pid)
        epoch = p.epoch + 1 if bump_epoch else p.epoch
        coordinator_epoch = max(p.coordinator_epoch, 0) + coordinator_bump
        control = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        offset = self.offset
        completed = self.state.append_end_txn_marker(
            pid, EndTransactionMarker(control, coordinator_epoch), epoch, offset, NOW_MS
        )
        if p.open_first is None:
            assert completed is None
        else:
            assert completed == CompletedTxn(pid, p.open_first, offset, not commit)
            others = [f for q, f in self.open_firsts().items() if q != pid]
            assert self.state.last_stable_offset(completed) == min(others, default=offset + 1)
            self.state.complete_txn(completed)
        p.open_first = None
        if epoch != p.epoch:
            p.seq = 0
        p.epoch = epoch
        p.coordinator_epoch = coordinator_epoch
        self.offset += 1
        self.state.update_map_end_offset(self.offset)

    @precondition(lambda self: any(p.epoch > 0 for p in self.producers.values()))
    @rule(data=st.data())
    def marker_with_old_epoch(self, data: st.DataObject) -> None:
        pid = data.draw(st.sampled_from(sorted(q for q, p in self.producers.items() if p.epoch)))
        p = self.producers[pid]
        before = self.state.last_entry(pid).copy()  # type: ignore[union-attr]
        with pytest.raises(InvalidProducerEpochError):
            self.state.append_end_txn_marker(
                pid,
                EndTransactionMarker(ControlRecordType.COMMIT, p.coordinator_epoch),
                p.epoch - 1,
                self.offset,
                NOW_MS,
            )
        assert self.state.last_entry(pid) == before

    @precondition(lambda self: any(p.coordinator_epoch > 0 for p in self.producers.values()))
    @rule(data=st.data())
    def marker_from_old_coordinator(self, data: st.DataObject) -> None:
        pids = sorted(q for q, p in self.producers.items() if p.coordinator_epoch > 0)
        pid = data.draw(st.sampled_from(pids))
        p = self.producers[pid]
        before = self.state.last_entry(pid).copy()  # type: ignore[union-attr]
        with pytest.raises(TransactionCoordinatorFencedError):
            self.state.append_end_txn_marker(
                pid,
                EndTransactionMarker(ControlRecordType.ABORT, p.coordinator_epoch - 1),
                p.epoch,
                self.offset,
                NOW_MS,
            )
        assert self.state.last_entry(pid) == before

    def snapshot(self) -> None:
        self.state.take_snapshot(sync=False)
        if self.state.latest_snapshot_offset == self.offset:
            self.snapshots[self.offset] = copy.deepcopy(self.producers)

    @rule()
    def take_snapshot(self) -> None:
        self.snapshot()

    @precondition(lambda self: self.offset > 0)
    @rule()
    def snapshot_round_trip(self) -> None:
        self.snapshot()
        reloaded = ProducerStateManager(self.dir)
        reloaded.truncate_and_reload(0, self.offset, NOW_MS)
        assert reloaded.map_end_offset == self.offset
        assert list(reloaded.ongoing_txns) == list(self.state.ongoing_txns)
        assert reloaded.first_unstable_offset() == self.state.first_unstable_offset()
        self.state = reloaded

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def truncate_to_snapshot(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(sorted(self.snapshots)))
        self.state.truncate_and_reload(0, target, NOW_MS)
        self.producers = copy.deepcopy(self.snapshots[target])
        self.snapshots = {o: s for o, s in self.snapshots.items() if o <= target}
        self.offset = target
        assert self.state.map_end_offset == target

    @invariant()
    def ongoing_match_the_model(self) -> None:
        opened = self.open_firsts()
        assert list(self.state.ongoing_txns) == sorted(opened.values())
        assert {t.producer_id: f for f, t in self.state.ongoing_txns.items()} == opened
        expected = min(opened.values(), default=None)
        assert self.state.first_undecided_offset() == expected
        fuo = self.state.first_unstable_offset()
        assert (None if fuo is None else fuo.message_offset) == expected
        for pid, p in self.producers.items():
            entry = self.state.last_entry(pid)
            if entry is not None:
                assert entry.current_txn_first_offset == p.open_first
                assert entry.producer_epoch == p.epoch


TxnMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestProducerTxnMachine = TxnMachine.TestCase
