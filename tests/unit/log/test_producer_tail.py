"""A producer's last five batches survive a restart (``broker/log/producer_tail.py``).

Kafka's snapshot keeps one batch per producer, so after a restart only the
last batch is a duplicate. Here the batches before it are read back from the
log: a retry of any of the last five gets its original offsets through the
partition layer's checks (``check_producer_batches``), clean restart or not;
the sixth-oldest is OUT_OF_ORDER_SEQUENCE_NUMBER as in Kafka; the snapshot
file stays Kafka's format; the read is bounded and stops at another epoch,
a sequence gap, the start of the epoch and the log start offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from broker.log import files
from broker.log.producer_state import read_snapshot
from broker.log.producer_tail import (
    FIRST_WINDOW_BYTES,
    MAX_INDEX_GAP,
    TAIL_SCAN_BYTES,
    restore_batch_metadata,
)
from broker.log.unified_log import UnifiedLog
from broker.partition.producer_append import DuplicateBatch, check_producer_batches
from broker.records.batch import set_base_offset
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

PID = 4711


class Sent:
    """One idempotent batch as appended: what a retry sends and should get back."""

    def __init__(self, data: bytes, first: int, last: int, max_ts: int) -> None:
        self.data = data
        self.first = first
        self.last = last
        self.max_ts = max_ts


def send(
    log: UnifiedLog,
    seq: int,
    clock: MockTime,
    *,
    pid: int = PID,
    epoch: int = 0,
    records: int = 2,
    value_size: int = 20,
) -> Sent:
    """Append an idempotent batch through the partition layer's checks."""
    ts = clock()
    data = v2_batch(
        log.log_end_offset,
        [b"%d" % seq * value_size] * records,
        timestamps=[ts + i for i in range(records)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    pending = log.prepare_append(data)
    assert check_producer_batches(log.producer_state, pending.batches, "t-0") is None
    result = log.commit_append(pending)
    clock.sleep(10)
    return Sent(data, result.first_offset, result.last_offset, ts + records - 1)


def filler(log: UnifiedLog, n: int, size: int = 100) -> None:
    """Batches without producer id between the producer's batches."""
    for _ in range(n):
        log.append(v2_batch(log.log_end_offset, [b"f" * size]))


def retry(log: UnifiedLog, sent: Sent) -> DuplicateBatch | None:
    """The retry as the partition layer checks it (raises on a sequence or epoch
    error), its offsets assigned from the log end offset as the validator does."""
    data = bytearray(sent.data)
    set_base_offset(data, 0, log.log_end_offset)
    pending = log.prepare_append(data)
    return check_producer_batches(log.producer_state, pending.batches, "t-0")


def restart(log: UnifiedLog, clock: MockTime, how: str, config: TopicConfig) -> UnifiedLog:
    """``clean``: close and open with the marker; ``unclean``: drop the
    descriptors and recover from the recovery point; ``unclean-0``: recover
    every segment."""
    directory = log.dir
    if how == "clean":
        log.close()
        return UnifiedLog.open(directory, config, had_clean_shutdown=True, time_ms=clock)
    recovery_point = log.recovery_point if how == "unclean" else 0
    log.close_handlers()
    return UnifiedLog.open(
        directory, config, recovery_point=recovery_point, had_clean_shutdown=False, time_ms=clock
    )


RESTARTS = ["clean", "unclean", "unclean-0"]


@pytest.mark.parametrize("how", RESTARTS)
def test_retries_of_the_last_five_get_their_offsets_after_a_restart(
    tmp_path: Path, how: str
) -> None:
    clock = MockTime()
    config = TopicConfig(segment_bytes=1200, index_interval_bytes=200)
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    sent = []
    for i in range(8):
        sent.append(send(log, 2 * i, clock))
        filler(log, i % 3)
    log.flush(sent[4].last + 1)  # unclean: the recovery point lies among the last five
    assert log.number_of_segments >= 3  # the last five span segments
    log = restart(log, clock, how, config)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and len(entry.batch_metadata) == 5
    assert log.tail_scan.batches_restored == 4  # the snapshot had the last one
    assert 0 < log.tail_scan.bytes_read < log.size
    for s in sent[-5:]:
        assert retry(log, s) == DuplicateBatch(s.first, s.last, s.max_ts)
    with pytest.raises(OutOfOrderSequenceError, match="Out of order sequence number"):
        retry(log, sent[-6])
    # the producer goes on in sequence
    nxt = send(log, 16, clock)
    assert nxt.first == sent[-1].last + 1 + (7 % 3)
    log.close()


def test_without_the_restore_only_the_last_batch_is_a_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's behaviour, which the restore fixes (and which this test would
    show again if the restore did nothing)."""
    from broker.log import recovery

    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    sent = [send(log, 2 * i, clock) for i in range(5)]
    monkeypatch.setattr(recovery, "restore_batch_metadata", lambda *a, **k: recovery.NOTHING_READ)
    log = restart(log, clock, "clean", config)
    assert retry(log, sent[-1]) == DuplicateBatch(sent[-1].first, sent[-1].last, sent[-1].max_ts)
    with pytest.raises(OutOfOrderSequenceError):
        retry(log, sent[-2])
    log.close()


def test_the_snapshot_stays_kafkas_one_batch_per_producer(tmp_path: Path) -> None:
    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    for i in range(6):
        send(log, 2 * i, clock)
    send(log, 0, clock, pid=PID + 1)
    log.close()
    snapshot = files.producer_snapshot_file(tmp_path / "t-0", log.log_end_offset)
    before = snapshot.read_bytes()
    assert len(before) == 10 + 2 * 46  # header + two 46-byte entries
    log = restart(log, clock, "clean", config)
    assert len(log.producer_state.last_entry(PID).batch_metadata) == 5  # type: ignore[union-attr]
    assert snapshot.read_bytes() == before  # loading wrote nothing
    send(log, 12, clock)
    log.close()
    after = files.producer_snapshot_file(tmp_path / "t-0", log.log_end_offset)
    assert len(after.read_bytes()) == 10 + 2 * 46
    entries = {e.producer_id: e for e in read_snapshot(after)}
    assert [len(e.batch_metadata) for e in entries.values()] == [1, 1]
    assert entries[PID].last_seq == 13


def test_a_new_epoch_ends_the_restore(tmp_path: Path) -> None:
    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    old = [send(log, 2 * i, clock) for i in range(4)]
    new = [send(log, 2 * i, clock, epoch=1) for i in range(3)]
    log = restart(log, clock, "clean", config)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 1
    assert [b.first_offset for b in entry.batch_metadata] == [s.first for s in new]
    for s in new:
        assert retry(log, s) == DuplicateBatch(s.first, s.last, s.max_ts)
    with pytest.raises(InvalidProducerEpochError):
        retry(log, old[-1])
    log.close()


def test_another_epoch_ends_the_restore_even_where_its_sequences_follow(tmp_path: Path) -> None:
    """A producer whose state was lost may come back with a bumped epoch at
    any sequence (ProducerAppendInfo accepts it): its old epoch's batches
    are not put back even though their sequences run on."""
    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    old = [send(log, 2 * i, clock) for i in range(2)]
    log.producer_state.remove_expired_producers(clock() + 10**10)
    new = [send(log, 4 + 2 * i, clock, epoch=1) for i in range(2)]
    log = restart(log, clock, "unclean-0", config)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 1
    assert [b.first_seq for b in entry.batch_metadata] == [4, 6]
    assert retry(log, new[0]) == DuplicateBatch(new[0].first, new[0].last, new[0].max_ts)
    with pytest.raises(InvalidProducerEpochError):
        retry(log, old[-1])
    log.close()


def test_a_sequence_gap_ends_the_restore(tmp_path: Path) -> None:
    """Batches before a gap (the producer's state was lost in between, e.g. it
    expired) are not put back: a live broker would not have them either."""
    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    before_gap = [send(log, 2 * i, clock) for i in range(2)]
    log.producer_state.remove_expired_producers(clock() + 10**10)  # the state is lost
    after_gap = [send(log, 40 + 2 * i, clock) for i in range(2)]
    log = restart(log, clock, "clean", config)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None
    assert [b.first_seq for b in entry.batch_metadata] == [40, 42]
    for s in after_gap:
        assert retry(log, s) == DuplicateBatch(s.first, s.last, s.max_ts)
    with pytest.raises(OutOfOrderSequenceError):
        retry(log, before_gap[-1])
    log.close()


def test_the_restore_stops_at_the_log_start_offset(tmp_path: Path) -> None:
    clock = MockTime()
    config = TopicConfig()
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    sent = [send(log, 2 * i, clock) for i in range(5)]
    log.maybe_increment_log_start_offset(sent[2].first)  # DeleteRecords
    log.close()
    log = UnifiedLog.open(
        tmp_path / "t-0",
        config,
        log_start_offset=sent[2].first,
        had_clean_shutdown=True,
        time_ms=clock,
    )
    entry = log.producer_state.last_entry(PID)
    assert entry is not None
    assert [b.first_offset for b in entry.batch_metadata] == [s.first for s in sent[2:]]
    log.close()


def test_new_producers_and_logs_without_producers_read_nothing(tmp_path: Path) -> None:
    clock = MockTime()
    config = TopicConfig()
    plain = UnifiedLog.open(tmp_path / "a-0", config, time_ms=clock)
    filler(plain, 50)
    fresh = UnifiedLog.open(tmp_path / "b-0", config, time_ms=clock)
    filler(fresh, 50)
    send(fresh, 0, clock)  # one batch, at sequence 0: the start of its epoch
    for before in (plain, fresh):
        before.close()
        log = UnifiedLog.open(before.dir, config, had_clean_shutdown=True, time_ms=clock)
        assert log.tail_scan == (0, 0)
        log.close()


def test_the_read_is_bounded_and_grows_by_windows(tmp_path: Path) -> None:
    """A producer whose batch before its last lies far back: the walk reads
    windows of 64 KiB, 256 KiB, ... and gives up at the bound; another
    producer close to the end is restored from the first window."""
    clock = MockTime()
    config = TopicConfig(segment_bytes=1 << 20, index_interval_bytes=4096)
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    far = [send(log, 2 * i, clock, pid=1) for i in range(2)]
    filler(log, 3000, size=1000)  # ~3 MB of other data, over several segments
    near = [send(log, 2 * i, clock, pid=2) for i in range(3)]
    last_far = send(log, 4, clock, pid=1)
    log.close()
    log = UnifiedLog.open(log.dir, config, had_clean_shutdown=True, time_ms=clock)
    entry_far = log.producer_state.last_entry(1)
    entry_near = log.producer_state.last_entry(2)
    assert entry_far is not None and entry_near is not None
    # with the default bound both are complete
    assert [b.first_offset for b in entry_far.batch_metadata] == [
        far[0].first,
        far[1].first,
        last_far.first,
    ]
    assert [b.first_offset for b in entry_near.batch_metadata] == [s.first for s in near]
    # a bound smaller than the distance to the far producer's batches
    for e in (entry_far, entry_near):
        while len(e.batch_metadata) > 1:
            e.batch_metadata.popleft()
    bound = 1 << 20
    scan = restore_batch_metadata(
        log.producer_state, log.local_log.segments, 0, log.log_end_offset, max_bytes=bound
    )
    assert [b.first_offset for b in entry_near.batch_metadata] == [s.first for s in near]
    assert [b.first_offset for b in entry_far.batch_metadata] == [last_far.first]
    assert scan.batches_restored == 2
    assert bound <= scan.bytes_read <= bound + 4 * (4096 + 1100)  # one index step per window
    assert FIRST_WINDOW_BYTES < bound < TAIL_SCAN_BYTES
    log.close()


def test_a_sparse_offset_index_does_not_widen_the_read(tmp_path: Path) -> None:
    """With an index entry only every 64 MiB, a window cannot start at an
    entry near its start: it hops over batch headers instead of reading from
    the segment's start."""
    clock = MockTime()
    config = TopicConfig(segment_bytes=64 << 20, index_interval_bytes=64 << 20)
    log = UnifiedLog.open(tmp_path / "t-0", config, time_ms=clock)
    send(log, 0, clock, pid=1)
    send(log, 2, clock, pid=1)
    filler(log, 3000, size=1000)
    last = send(log, 4, clock, pid=1)
    log.close()
    log = UnifiedLog.open(log.dir, config, had_clean_shutdown=True, time_ms=clock)
    assert log.active_segment.offset_index.entries == 0
    assert log.number_of_segments == 1
    entry = log.producer_state.last_entry(1)
    assert entry is not None
    while len(entry.batch_metadata) > 1:
        entry.batch_metadata.popleft()
    bound = 1 << 20
    scan = restore_batch_metadata(
        log.producer_state, log.local_log.segments, 0, log.log_end_offset, max_bytes=bound
    )
    assert [b.first_offset for b in entry.batch_metadata] == [last.first]
    assert bound <= scan.bytes_read <= bound + 5 * (MAX_INDEX_GAP + 1100)
    assert scan.bytes_read < log.size - (1 << 20)
    log.close()
