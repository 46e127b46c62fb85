"""A Hypothesis state machine over one partition's log, checked against a model.

The model is a list of segments, each a list of batches (offsets, bytes,
record timestamps), plus the log start offset. Rules: append (random batch
sizes and timestamps), roll, read at random offsets (exact bytes, segment
bounded, minOneMessage), lookup by timestamp, truncate (at batch
boundaries), retention by size, flush, close + reopen, crash + reopen
(descriptors dropped without trimming, optionally a torn last batch,
garbage or preallocation zeros after the data). After every step the log
equals the model: offsets, segment bases, the bytes of every segment.

Some appends come from idempotent producers (three producer ids, in
sequence; a rule bumps a producer's epoch). After every step -- restarts,
crashes and truncations included -- each of a producer's last five batches
of its current epoch that is still in the log is a duplicate answered with
its offsets and max timestamp, and the sixth-newest is not (a live broker
keeps five; a reopened log reads them back, ``broker/log/producer_tail.py``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from broker.config import TopicConfig
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


@dataclass
class ModelBatch:
    base: int
    last: int
    data: bytes
    timestamps: list[int]


@dataclass
class ModelIdempotent:
    """An idempotent batch of the model: what its retry must be answered with."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass
class ModelSegment:
    base: int
    batches: list[ModelBatch] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(b.data) for b in self.batches)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="logsm-"))
        self.dir = self.tmp / "sm-0"
        self.clock = MockTime()
        self.log: UnifiedLog | None = None
        #: per producer id: its batches in offset order (those deleted by
        #: retention too: they still count among its last five) and its epoch
        self.idempotent: dict[int, list[ModelIdempotent]] = {}
        self.epochs: dict[int, int] = {}

    def teardown(self) -> None:
        if self.log is not None and not self.log.local_log.is_closed:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize(segment_bytes=st.integers(300, 3000), index_interval=st.integers(0, 300))
    def setup(self, segment_bytes: int, index_interval: int) -> None:
        self.config = TopicConfig(
            segment_bytes=segment_bytes,
            index_interval_bytes=index_interval,
            retention_ms=-1,
            file_delete_delay_ms=0,
        )
        self.log = UnifiedLog.open(self.dir, self.config, **self.open_args())
        self.segments = [ModelSegment(0)]
        self.log_start = 0

    def open_args(self) -> dict[str, object]:
        # producers never expire here (record timestamps are far from the clock)
        return {"time_ms": self.clock, "producer_id_expiration_ms": 2**62}

    # ---- model helpers ------------------------------------------------------------

    @property
    def leo(self) -> int:
        for segment in reversed(self.segments):
            if segment.batches:
                return segment.batches[-1].last + 1
        return self.segments[-1].base

    def all_batches(self) -> list[ModelBatch]:
        return [b for s in self.segments for b in s.batches]

    # ---- rules -------------------------------------------------------------------------

    @rule(
        count=st.integers(1, 5),
        value_size=st.integers(0, 200),
        timestamps=st.lists(st.integers(0, 100_000), min_size=5, max_size=5),
        producer=st.sampled_from([None, None, 1, 2, 3]),
    )
    def append(
        self, count: int, value_size: int, timestamps: list[int], producer: int | None
    ) -> None:
        assert self.log is not None
        base = self.leo
        ts = timestamps[:count]
        idem = None
        if producer is not None:
            history = self.idempotent.setdefault(producer, [])
            epoch = self.epochs.setdefault(producer, 0)
            last = history[-1] if history else None
            seq = last.last_seq + 1 if last is not None and last.epoch == epoch else 0
            idem = ModelIdempotent(
                producer, epoch, seq, seq + count - 1, base, base + count - 1, max(ts)
            )
        data = v2_batch(
            base,
            [bytes([base % 251]) * value_size] * count,
            timestamps=ts,
            producer_id=-1 if idem is None else idem.producer_id,
            producer_epoch=-1 if idem is None else idem.epoch,
            base_sequence=-1 if idem is None else idem.first_seq,
        )
        if len(data) > self.config.segment_bytes:
            return
        active = self.segments[-1]
        if active.size > self.config.segment_bytes - len(data):
            self.segments.append(ModelSegment(base))
        self.log.append(data)
        self.segments[-1].batches.append(ModelBatch(base, base + count - 1, data, ts))
        if idem is not None:
            self.idempotent[idem.producer_id].append(idem)

    @rule(producer=st.sampled_from([1, 2, 3]))
    def bump_epoch(self, producer: int) -> None:
        """The producer's next batch comes with the next epoch, at sequence 0."""
        self.epochs[producer] = self.epochs.get(producer, 0) + 1

    def forget_from(self, offset: int) -> None:
        """Batches at or after ``offset`` left the log (truncation, a torn tail)."""
        for pid, history in self.idempotent.items():
            self.idempotent[pid] = [b for b in history if b.last_offset < offset]

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        self.log.roll()
        if self.segments[-1].batches:
            self.segments.append(ModelSegment(self.leo))

    @rule(data=st.data(), max_bytes=st.integers(0, 2000), min_one=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, min_one: bool) -> None:
        assert self.log is not None
        offset = data.draw(st.integers(self.log_start, self.leo))
        info = self.log.read(offset, max_bytes, min_one)
        got = info.records.read() if info.records is not None else b""
        expected = b""
        for segment in self.segments:
            index = next((i for i, b in enumerate(segment.batches) if b.last >= offset), None)
            if index is None:
                continue
            rest = b"".join(b.data for b in segment.batches[index:])
            limit = max(max_bytes, len(segment.batches[index].data)) if min_one else max_bytes
            expected = rest[:limit]
            break
        assert got == expected

    @rule(wanted=st.integers(0, 100_001))
    def lookup_by_timestamp(self, wanted: int) -> None:
        assert self.log is not None
        target = wanted
        found = self.log.fetch_offset_by_timestamp(target)
        expected = None
        for batch in self.all_batches():
            for i, ts in enumerate(batch.timestamps):
                if ts >= target and batch.base + i >= self.log_start:
                    expected = (ts, batch.base + i)
                    break
            if expected is not None:
                break
        assert (None if found is None else (found.timestamp, found.offset)) == expected

    @precondition(lambda self: len([b for s in self.segments for b in s.batches]) > 0)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        assert self.log is not None
        batches = self.all_batches()
        target = data.draw(st.sampled_from([b.base for b in batches] + [self.leo]))
        self.log.truncate_to(target)
        kept = [s for s in self.segments if s.base <= target]
        kept[-1].batches = [b for b in kept[-1].batches if b.last < target]
        self.segments = kept
        self.forget_from(target)
        self.log.delete_expired_files(self.clock() + 1)

    @rule(retention=st.integers(0, 4000))
    def retention_by_size(self, retention: int) -> None:
        assert self.log is not None
        self.log.config = TopicConfig(
            segment_bytes=self.config.segment_bytes,
            index_interval_bytes=self.config.index_interval_bytes,
            retention_ms=-1,
            retention_bytes=retention,
            file_delete_delay_ms=0,
        )
        self.log.delete_old_segments()
        self.log.delete_expired_files(self.clock() + 1)
        self.log.config = self.config
        # the model: oldest segments go while the excess covers them; never an
        # empty last segment; deleting all rolls first
        size = sum(s.size for s in self.segments)
        if size < retention:
            return
        diff = size - retention
        deletable = []
        for i, segment in enumerate(self.segments):
            last_and_empty = i == len(self.segments) - 1 and segment.size == 0
            if diff - segment.size >= 0 and not last_and_empty:
                diff -= segment.size
                deletable.append(segment)
            else:
                break
        if not deletable:
            return
        if len(deletable) == len(self.segments):
            self.segments.append(ModelSegment(self.leo))
        self.segments = self.segments[len(deletable) :]
        self.log_start = max(self.log_start, self.segments[0].base)

    @rule()
    def flush(self) -> None:
        assert self.log is not None
        self.log.flush()
        assert self.log.recovery_point == self.leo

    @rule()
    def close_and_reopen(self) -> None:
        assert self.log is not None
        recovery_point = self.log.recovery_point
        self.log.close()
        self.log = UnifiedLog.open(
            self.dir,
            self.config,
            log_start_offset=self.log_start,
            recovery_point=recovery_point,
            had_clean_shutdown=True,
            **self.open_args(),
        )

    @rule(damage=st.sampled_from(["none", "torn", "garbage", "zeros"]), amount=st.integers(1, 500))
    def crash_and_reopen(self, damage: str, amount: int) -> None:
        assert self.log is not None
        recovery_point = self.log.recovery_point
        active_path = self.log.active_segment.log.path
        self.log.close_handlers()
        active = self.segments[-1]
        if damage == "torn" and active.batches and active.batches[-1].base >= recovery_point:
            last = active.batches.pop()
            cut = active_path.stat().st_size - len(last.data) + min(amount, len(last.data) - 1)
            os.truncate(active_path, cut)
            self.forget_from(last.base)
        elif damage == "garbage":
            with open(active_path, "ab") as f:
                f.write(os.urandom(amount))
        elif damage == "zeros":
            with open(active_path, "ab") as f:
                f.write(bytes(amount))
        self.log = UnifiedLog.open(
            self.dir,
            self.config,
            log_start_offset=self.log_start,
            recovery_point=recovery_point,
            had_clean_shutdown=False,
            **self.open_args(),
        )

    # ---- invariants ---------------------------------------------------------------------

    @invariant()
    def log_equals_model(self) -> None:
        if self.log is None:
            return
        log = self.log
        assert log.log_end_offset == self.leo
        assert log.log_start_offset == self.log_start
        assert [s.base_offset for s in log.segments] == [s.base for s in self.segments]
        for segment, model in zip(log.segments, self.segments, strict=True):
            assert segment.size == model.size
            assert segment.log.pread(0, segment.size) == b"".join(b.data for b in model.batches)
        assert log.recovery_point <= log.log_end_offset

    @invariant()
    def last_five_batches_are_duplicates(self) -> None:
        if self.log is None:
            return
        for pid, history in self.idempotent.items():
            if not history:
                continue
            epoch = history[-1].epoch
            current = [b for b in history if b.epoch == epoch]
            entry = self.log.producer_state.last_entry(pid)
            # batches below the log start were deleted: a reopened log does not
            # read them back (nor keep a producer that has no batch left, as Kafka)
            expected = [b for b in current[-5:] if b.first_offset >= self.log_start]
            if entry is None:
                assert not expected, (pid, expected)
                continue
            if expected:
                assert entry.producer_epoch == epoch
            for b in expected:
                dup = entry.find_duplicate_batch(epoch, b.first_seq, b.last_seq)
                assert dup is not None, (pid, b, list(entry.batch_metadata))
                assert (dup.first_offset, dup.last_offset, dup.timestamp) == (
                    b.first_offset,
                    b.last_offset,
                    b.max_timestamp,
                )
            if len(current) > 5:
                sixth = current[-6]
                assert entry.find_duplicate_batch(epoch, sixth.first_seq, sixth.last_seq) is None


LogMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogStateMachine = LogMachine.TestCase
