"""A segment's ``.txnindex`` travels with its segment: written by
``LogSegment.update_txn_index``, searched by ``collect_aborted_txns``, renamed,
moved, truncated, flushed, closed and deleted with the segment, kept by a
clean load and rebuilt from the markers by a segment's recovery
(``LogSegment.java``, ``LogLoader.scala``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import files
from broker.log.errors import InvalidOffsetError
from broker.log.segment import LogSegment
from broker.log.transaction_index import (
    ENTRY_SIZE,
    AbortedTxn,
    CompletedTxn,
    TransactionIndex,
    TxnIndexSearchResult,
)
from broker.log.unified_log import UnifiedLog
from broker.records.batch import TRANSACTIONAL_FLAG_MASK
from broker.records.control import ControlRecordType, EndTransactionMarker
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime, create_segment, v1_records


def _fds_to(path: Path) -> int:
    """How many descriptors of this process point at ``path``."""
    target = str(path.resolve())
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:
            continue
    return count


def _segment_with_records(directory: Path, base: int = 0, n: int = 10) -> LogSegment:
    seg = create_segment(directory, base)
    for i in range(base, base + n):
        seg.append(i, i * 10, i, v1_records(i, str(i)))
    return seg


def _aborted(pid: int, first: int, last: int) -> CompletedTxn:
    return CompletedTxn(pid, first, last, True)


def _open_log(
    directory: Path, clock: MockTime, *, clean: bool = True, segment_bytes: int = 1024 * 1024
) -> UnifiedLog:
    return UnifiedLog.open(
        directory,
        TopicConfig(segment_bytes=segment_bytes),
        log_start_offset=0,
        recovery_point=0,
        had_clean_shutdown=clean,
        time_ms=clock,
    )


def _append(log: UnifiedLog, n: int) -> None:
    for _ in range(n):
        log.append(v2_batch(log.log_end_offset, [b"value"], base_timestamp=MockTime().now))


def _aborted_txn(log: UnifiedLog, pid: int) -> AbortedTxn:
    """A one-record transaction of ``pid`` and its ABORT marker; the entry it makes."""
    first = log.log_end_offset
    log.append(
        v2_batch(
            first,
            [b"t"],
            base_timestamp=MockTime().now,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            attributes=TRANSACTIONAL_FLAG_MASK,
        )
    )
    lso = log.first_unstable_offset
    assert lso is not None
    marker = EndTransactionMarker(ControlRecordType.ABORT, 0)
    last = log.append_end_txn_marker(pid, 0, marker, leader_epoch=0).last_offset
    return AbortedTxn(pid, first, last, lso if lso != first else last + 1)


# ---- the segment API ----------------------------------------------------------------------


def test_no_file_for_a_segment_without_aborted_txns(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path)
    seg.update_txn_index(CompletedTxn(1, 0, 4, False), 0)  # a commit leaves no trace
    seg.flush()
    seg.truncate_to(5)
    assert not seg.txn_index_path.exists()
    assert seg.txn_index_path == files.txn_index_file(tmp_path, 0)
    assert seg.txn_index_path not in seg.flush_paths()
    assert seg.collect_aborted_txns(0, 100) == TxnIndexSearchResult([], False)
    seg.change_file_suffixes("", files.DELETED_FILE_SUFFIX)
    assert not seg.txn_index_path.exists()
    assert seg.has_suffix(files.DELETED_FILE_SUFFIX)
    seg.close()


def test_update_txn_index_and_collect_aborted_txns(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path)
    seg.update_txn_index(_aborted(7, 0, 3), 0)
    seg.update_txn_index(CompletedTxn(8, 1, 5, False), 0)
    seg.update_txn_index(_aborted(9, 4, 8), 4)
    assert seg.txn_index.all_aborted_txns() == [AbortedTxn(7, 0, 3, 0), AbortedTxn(9, 4, 8, 4)]
    assert seg.txn_index_path.stat().st_size == 2 * ENTRY_SIZE
    assert seg.collect_aborted_txns(4, 10) == TxnIndexSearchResult([AbortedTxn(9, 4, 8, 4)], False)
    assert seg.collect_aborted_txns(0, 4) == TxnIndexSearchResult([AbortedTxn(7, 0, 3, 0)], True)
    with pytest.raises(InvalidOffsetError):
        seg.update_txn_index(_aborted(10, 2, 8), 4)
    seg.close()


def test_change_file_suffixes_renames_the_txn_index(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path, 40)
    seg.update_txn_index(_aborted(1, 40, 42), 40)
    txn_file = seg.txn_index_path
    seg.change_file_suffixes("", files.DELETED_FILE_SUFFIX)
    assert not txn_file.exists()
    assert str(seg.txn_index_path) == str(txn_file) + files.DELETED_FILE_SUFFIX
    assert seg.txn_index_path.exists()
    assert seg.has_suffix(files.DELETED_FILE_SUFFIX)
    # the open descriptor followed the file
    seg.update_txn_index(_aborted(2, 43, 45), 43)
    seg.change_file_suffixes(files.DELETED_FILE_SUFFIX, "")
    assert seg.txn_index_path == txn_file
    assert [t.producer_id for t in TransactionIndex(40, txn_file).all_aborted_txns()] == [1, 2]
    seg.close()


def test_update_parent_dir_moves_the_txn_index_path(tmp_path: Path) -> None:
    old = tmp_path / "t-0"
    old.mkdir()
    seg = _segment_with_records(old)
    seg.update_txn_index(_aborted(1, 0, 2), 0)
    new = tmp_path / "t-0.abc-delete"
    os.rename(old, new)
    seg.update_parent_dir(new)
    assert seg.txn_index_path == new / "00000000000000000000.txnindex"
    seg.update_txn_index(_aborted(2, 3, 4), 3)
    assert len(TransactionIndex(0, seg.txn_index_path).all_aborted_txns()) == 2
    seg.close()


def test_truncate_to_drops_entries_at_or_after_the_offset(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path)
    for pid, (first, last) in enumerate([(0, 2), (1, 5), (3, 6), (7, 9)]):
        seg.update_txn_index(_aborted(pid, first, last), first)
    seg.truncate_to(6)
    assert [t.last_offset for t in seg.txn_index.all_aborted_txns()] == [2, 5]
    assert seg.read_next_offset() == 6
    seg.update_txn_index(_aborted(5, 5, 6), 5)  # offset 6 may be written again
    seg.truncate_to(0)
    assert seg.txn_index.all_aborted_txns() == []
    assert seg.txn_index_path.exists()  # emptied, as Kafka's truncateTo does
    seg.close()


def test_delete_if_exists_deletes_the_txn_index(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path)
    seg.update_txn_index(_aborted(1, 0, 2), 0)
    seg.log.delete_if_exists()
    seg.offset_index.close()
    seg.offset_index_path.unlink()
    seg.time_index_path.unlink()
    assert not seg.deleted()  # the .txnindex is still there
    seg.delete_if_exists()
    assert seg.deleted()
    assert list(tmp_path.iterdir()) == []


def test_close_and_close_handlers_release_the_txn_index(tmp_path: Path) -> None:
    for close in (LogSegment.close, LogSegment.close_handlers):
        directory = tmp_path / close.__name__
        directory.mkdir()
        seg = _segment_with_records(directory)
        seg.update_txn_index(_aborted(1, 0, 2), 0)
        assert _fds_to(seg.txn_index_path) == 1
        close(seg)
        assert _fds_to(seg.txn_index_path) == 0
        assert seg.txn_index_path.stat().st_size == ENTRY_SIZE


def test_flush_paths_list_the_txn_index_only_when_it_exists(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path)
    assert seg.flush_paths() == [seg.offset_index_path, seg.time_index_path]
    seg.update_txn_index(_aborted(1, 0, 2), 0)
    assert seg.flush_paths() == [seg.offset_index_path, seg.time_index_path, seg.txn_index_path]
    seg.flush()
    seg.close()


def test_open_finds_an_existing_txn_index(tmp_path: Path) -> None:
    seg = _segment_with_records(tmp_path, 5)
    seg.update_txn_index(_aborted(1, 5, 7), 5)
    seg.close()
    reopened = LogSegment.open(tmp_path, 5, TopicConfig(), file_already_exists=True)
    assert reopened.txn_index.file_exists
    assert reopened.txn_index_path in reopened.flush_paths()
    assert reopened.collect_aborted_txns(5, 100).aborted_transactions == [AbortedTxn(1, 5, 7, 5)]
    reopened.close()
    cleaned = LogSegment.open(tmp_path, 5, TopicConfig(), file_suffix=files.CLEANED_FILE_SUFFIX)
    assert cleaned.txn_index_path == files.txn_index_file(tmp_path, 5, files.CLEANED_FILE_SUFFIX)
    assert not cleaned.txn_index.file_exists
    cleaned.close()


# ---- the log: rolls, flushes, retention, truncation, loading -------------------------------


def test_rolls_and_flushes_of_a_log_without_transactions_create_no_txn_file(
    tmp_path: Path,
) -> None:
    log = _open_log(tmp_path / "t-0", MockTime(), segment_bytes=200)
    _append(log, 20)
    assert log.number_of_segments > 2
    log.flush()
    assert not list(log.dir.glob("*" + files.TXN_INDEX_FILE_SUFFIX + "*"))
    log.close()


def test_log_flush_syncs_an_existing_txn_index(tmp_path: Path) -> None:
    log = _open_log(tmp_path / "t-0", MockTime(), segment_bytes=200)
    _append(log, 20)
    first = log.segments[0]
    first.update_txn_index(_aborted(1, 0, 1), 0)
    assert log.flush(include_empty_active=True)
    log.close()


def test_retention_deletes_the_txn_index_with_its_segment(tmp_path: Path) -> None:
    clock = MockTime()
    log = _open_log(tmp_path / "t-0", clock, segment_bytes=200)
    _append(log, 20)
    first = log.segments[0]
    first.update_txn_index(_aborted(1, 0, 1), 0)
    txn_file = first.txn_index_path
    assert log.maybe_increment_log_start_offset(log.segments[1].base_offset)
    assert log.delete_old_segments() == 1
    assert not txn_file.exists()
    deleted = txn_file.with_name(txn_file.name + files.DELETED_FILE_SUFFIX)
    assert deleted.exists()
    log.delete_expired_files(clock() + 10**9)
    assert not deleted.exists()
    log.close()


def test_log_truncation_truncates_and_deletes_txn_indexes(tmp_path: Path) -> None:
    log = _open_log(tmp_path / "t-0", MockTime(), segment_bytes=200)
    _append(log, 20)
    first, second = log.segments[0], log.segments[1]
    end_first = second.base_offset - 1
    first.update_txn_index(_aborted(1, 0, 0), 0)
    first.update_txn_index(_aborted(2, 1, end_first), 1)
    second.update_txn_index(_aborted(3, second.base_offset, second.base_offset), 2)
    second_file = second.txn_index_path
    log.truncate_to(end_first)
    assert [t.producer_id for t in first.txn_index.all_aborted_txns()] == [1]
    assert not second_file.exists()
    log.close()


def test_loading_keeps_a_valid_txn_index_after_a_clean_shutdown(tmp_path: Path) -> None:
    """A clean start trusts the ``.txnindex`` files (even entries no marker
    backs); an unclean one rebuilds them from the markers (here: none)."""
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime(), segment_bytes=200)
    _append(log, 20)
    bases = [s.base_offset for s in log.segments]
    log.segments[0].update_txn_index(_aborted(1, 0, 1), 0)
    log.segments[1].update_txn_index(_aborted(2, bases[1], bases[1] + 1), 0)
    log.close()
    log = _open_log(directory, MockTime(), clean=True, segment_bytes=200)
    assert [s.base_offset for s in log.segments] == bases
    assert log.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 1, 0)]
    assert log.segments[1].collect_aborted_txns(0, 100).aborted_transactions == [
        AbortedTxn(2, bases[1], bases[1] + 1, 0)
    ]
    log.close()
    log = _open_log(directory, MockTime(), clean=False, segment_bytes=200)
    assert [s.txn_index.all_aborted_txns() for s in log.segments[:2]] == [[], []]
    log.close()


def test_unclean_recovery_drops_entries_past_the_log_end(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime())
    _append(log, 5)
    real = _aborted_txn(log, 1)
    active = log.active_segment
    active.update_txn_index(_aborted(2, 8, 9), 8)  # its marker never reached the .log
    log.close()
    log = _open_log(directory, MockTime(), clean=False)
    assert log.log_end_offset == 7
    assert log.active_segment.txn_index.all_aborted_txns() == [real]
    log.close()


def test_loading_repairs_a_torn_txn_index(tmp_path: Path) -> None:
    """A torn last entry fails the sanity check: the segment is recovered and
    its ``.txnindex`` rebuilt from its markers."""
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime(), segment_bytes=1024)
    real = _aborted_txn(log, 1)
    log.roll()
    _append(log, 3)
    txn_file = log.segments[0].txn_index_path
    log.close()
    with open(txn_file, "ab") as f:
        f.write(AbortedTxn(2, 2, 3, 0).to_bytes()[:20])
    log = _open_log(directory, MockTime(), segment_bytes=1024)
    assert txn_file.stat().st_size == ENTRY_SIZE
    assert log.segments[0].txn_index.all_aborted_txns() == [real]
    log.close()


def test_loading_deletes_an_orphaned_txn_index(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime())
    _append(log, 2)
    log.close()
    orphan = files.txn_index_file(directory, 1000)
    orphan.write_bytes(AbortedTxn(1, 1000, 1001, 0).to_bytes())
    log = _open_log(directory, MockTime())
    assert not orphan.exists()
    log.close()


def test_loading_finishes_a_swap_with_its_txn_index(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime())
    _append(log, 3)
    log.active_segment.update_txn_index(_aborted(1, 0, 2), 0)
    log.close()
    for path in directory.iterdir():
        if path.name.startswith("0000"):
            os.rename(path, path.with_name(path.name + files.SWAP_FILE_SUFFIX))
    log = _open_log(directory, MockTime())
    assert log.log_end_offset == 3
    assert files.txn_index_file(directory, 0).exists()
    assert log.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 2, 0)]
    log.close()


def test_loading_rebuilds_an_insane_txn_index_from_the_markers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry ending before the segment's base offset fails the sanity check
    (``TransactionIndex.sanityCheck``): the segment is recovered with the
    producer state at its base (``LogLoader.recoverSegment``), which rebuilds
    the ``.txnindex`` from its markers (the second segment has one ABORT)."""
    directory = tmp_path / "t-0"
    log = _open_log(directory, MockTime(), segment_bytes=1024)
    _append(log, 3)
    log.roll()
    _append(log, 1)
    real = _aborted_txn(log, 7)
    log.roll()
    _append(log, 3)
    second = log.segments[1]
    assert second.txn_index.all_aborted_txns() == [real]
    txn_file = second.txn_index_path
    log.close()
    txn_file.write_bytes(AbortedTxn(1, 0, second.base_offset - 1, 0).to_bytes())
    with caplog.at_level("WARNING", logger="broker.log.recovery"):
        log = _open_log(directory, MockTime(), segment_bytes=1024)
    assert any("is less than start offset" in r.getMessage() for r in caplog.records)
    assert log.segments[1].txn_index.all_aborted_txns() == [real]
    log.close()
