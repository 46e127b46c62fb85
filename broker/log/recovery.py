"""Loading a partition's log from disk and recovering it (Kafka's ``LogLoader.load``,
``LogSegment.recover``).

``load_log`` per partition directory:

1. delete ``*.deleted`` and ``*.cleaned`` files; finish interrupted swaps
   (``.swap`` segments replace the segments they overlap);
2. open every ``.log`` (an index, time index or transaction index without
   its ``.log`` is deleted); a missing time index becomes an empty file; a
   missing or insane offset index, or an insane transaction index, makes
   that segment be recovered at once (with the producer state at its base,
   so its ``.txnindex`` is rebuilt too, ``LogLoader.recoverSegment``);
3. after an unclean shutdown, recover every segment from the one holding
   the recovery point to the end (:func:`recover_segment`, the producer
   state carried from segment to segment: each ``.txnindex`` is rebuilt from
   the segment's markers; after a clean shutdown the ``.txnindex`` files are
   trusted). The first
   segment that loses bytes ends the loop and **every later segment is
   deleted**, as Kafka does (their offsets would no longer follow). Each
   cut and each such deletion is a WARNING naming the partition, the files,
   the offset truncated to and the bytes dropped, and goes to the caller's
   recorder (``recovery_report.py``);
4. log end offset < checkpointed log start offset: everything is deleted
   and a fresh segment starts at the log start offset; no segment at all:
   one is created at the log start offset;
5. recovery point = LEO after a clean shutdown, else
   min(checkpointed recovery point, LEO); the active segment's indexes are
   grown back to ``segment.index.bytes``; leader epochs are cut to
   [log start, LEO); producer state is rebuilt from the latest snapshot and
   the log after it, and each producer's last five batches are read back
   from before the snapshot (``producer_tail.py``; Kafka keeps one).

:func:`recover_segment` is the fast path that must stay within 2x of
reading the files: the ``.log`` read in 2 MB pieces into one buffer, a
header-only walk of each piece while it is in the CPU caches, CRCs over
the buffer (the compiled twin chosen by ``broker.log.scan`` has its own
three-way interleaved CRC-32C), index entries produced already packed and
copied into the index mappings in one slice assignment.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.log import files
from broker.log.errors import CorruptIndexError
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.log_segments import LogSegments
from broker.log.producer_state import ProducerStateManager
from broker.log.producer_tail import NOTHING_READ, TailScan, restore_batch_metadata
from broker.log.record_times import parse_end_txn_marker
from broker.log.recovery_report import (
    NullRecoveryRecorder,
    RecoveryRecorder,
    log_identifier,
    report_deleted_segments,
    report_truncated_segment,
)
from broker.log.results import TimestampOffset
from broker.log.scan import scan_segment
from broker.log.segment import LogSegment, TimeMs, wall_clock_ms
from broker.log.transaction_index import CompletedTxn
from broker.records.batch import (
    CONTROL_FLAG_MASK,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_V2,
    TRANSACTIONAL_FLAG_MASK,
    increment_sequence,
)
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.origin import AppendOrigin

if TYPE_CHECKING:
    from broker.config import TopicConfig

logger = logging.getLogger(__name__)


class RecoverResult(NamedTuple):
    truncated_bytes: int
    next_offset: int
    error: str | None
    #: the segment's size after the cut (the byte offset of the first invalid byte)
    valid_bytes: int
    #: the transactions the segment's markers completed, each with the last stable
    #: offset right after it, in log order (what ``LogSegment.recover`` appends to
    #: the ``.txnindex`` for the aborted ones); empty without ``producer_state``
    completed_txns: tuple[tuple[CompletedTxn, int], ...] = ()


def apply_producer_batch(
    producer_state: ProducerStateManager, batch: tuple[int, ...], batch_bytes: bytes | None
) -> tuple[CompletedTxn, int] | None:
    """Replay one v2 batch with a producer id into ``producer_state``
    (``LogSegment.updateProducerState``: ``ProducerAppendInfo.append`` with
    origin REPLICATION, no epoch checks). A marker that ends a transaction
    completes it and returns it with the last stable offset after it."""
    pid, epoch, base_seq, last_delta, base_offset, max_ts, attributes, _pos = batch
    if attributes & CONTROL_FLAG_MASK:
        marker = parse_end_txn_marker(batch_bytes) if batch_bytes is not None else None
        if marker is None:
            return None  # an empty control batch: its transaction was cleaned away
        commit, coordinator_epoch, timestamp = marker
        control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        completed = producer_state.append_end_txn_marker(
            pid,
            EndTransactionMarker(control_type, coordinator_epoch),
            epoch,
            base_offset,
            timestamp,
            origin=AppendOrigin.REPLICATION,
        )
        if completed is None:
            return None
        last_stable_offset = producer_state.last_stable_offset(completed)
        producer_state.complete_txn(completed)
        return completed, last_stable_offset
    producer_state.update_data_batch(
        pid,
        producer_epoch=epoch,
        first_seq=base_seq,
        last_seq=increment_sequence(base_seq, last_delta),
        first_offset=base_offset,
        last_offset=base_offset + last_delta,
        max_timestamp=max_ts,
        is_transactional=bool(attributes & TRANSACTIONAL_FLAG_MASK),
    )
    return None


def recover_segment(
    segment: LogSegment,
    producer_state: ProducerStateManager | None = None,
    leader_epoch_cache: LeaderEpochCache | None = None,
    *,
    buffer: bytearray | None = None,
) -> RecoverResult:
    """``LogSegment.recover``: rebuild both indexes from the ``.log`` and cut it
    at the first invalid byte. With ``producer_state`` the ``.txnindex`` is
    rebuilt from the segment's markers (the state must be the one at the
    segment's base offset); without, it loses the entries at or past the new
    end. Producer batches and new leader epochs met on
    the way update ``producer_state`` / ``leader_epoch_cache``. ``buffer``: the
    caller's read buffer to scan with (the log cleaner's) instead of a new one
    of up to ``SCAN_CHUNK_BYTES``."""
    offset_index = segment.offset_index
    time_index = segment.time_index
    offset_index.reset()
    time_index.reset()
    log = segment.log
    size = log.size
    latest = -1
    if leader_epoch_cache is not None and leader_epoch_cache.latest_epoch is not None:
        latest = leader_epoch_cache.latest_epoch
    scan = _scan_file(
        log.fd,
        size,
        segment.base_offset,
        interval=segment.index_interval_bytes,
        latest_epoch=latest,
        buffer=buffer,
    )
    if leader_epoch_cache is not None:
        for epoch, start in scan.epoch_starts:
            leader_epoch_cache.assign(epoch, start)
    completed_txns: list[tuple[CompletedTxn, int]] = []
    if producer_state is not None:
        for batch in scan.producer_batches:
            batch_bytes = None
            if batch[6] & CONTROL_FLAG_MASK:
                pos = batch[7]
                length = int.from_bytes(log.pread(pos + LENGTH_OFFSET, 4), "big") + LOG_OVERHEAD
                batch_bytes = log.pread(pos, length)
            completed = apply_producer_batch(producer_state, batch, batch_bytes)
            if completed is not None:
                completed_txns.append(completed)
        if scan.valid_end > 0:
            producer_state.update_map_end_offset(scan.last_offset + 1)
    if scan.error is not None:
        logger.warning(
            "Found invalid messages in log segment %s at byte offset %d: %s",
            log.path,
            scan.valid_end,
            scan.error,
        )
    truncated = size - scan.valid_end
    if truncated > 0:
        log.truncate_to(scan.valid_end)
    offset_index.load_entries(scan.offset_entries)
    time_index.load_entries(scan.time_entries)
    segment.reset_index_counter()
    segment.set_max_timestamp_and_offset(TimestampOffset(scan.max_ts, scan.offset_of_max_ts))
    offset_index.trim_to_valid_size()
    time_index.maybe_append(scan.max_ts, scan.offset_of_max_ts, skip_full_check=True)
    time_index.trim_to_valid_size()
    next_offset = scan.last_offset + 1 if scan.valid_end > 0 else segment.base_offset
    txn_index = segment.txn_index
    if producer_state is not None:
        # LogSegment.recover: the .txnindex is reset and rebuilt from the markers
        # of the valid batches, each aborted transaction with the LSO after it
        txn_index.reset()
        for txn, last_stable_offset in completed_txns:
            segment.update_txn_index(txn, last_stable_offset)
    else:
        # without producer state (the cleaner's check of a cleaned segment) the
        # entries are kept, but none for a marker past the valid end (nor a
        # torn last entry) survives
        txn_index.truncate_to(next_offset)
    return RecoverResult(truncated, next_offset, scan.error, scan.valid_end, tuple(completed_txns))


#: recovery reads a segment in pieces of this size (large sequential reads;
#: each piece is scanned while it is still in the CPU caches)
SCAN_CHUNK_BYTES = 2 << 20


class _FileScan(NamedTuple):
    valid_end: int
    error: str | None
    offset_entries: bytes
    time_entries: bytes
    max_ts: int
    offset_of_max_ts: int
    epoch_starts: list[tuple[int, int]]
    producer_batches: list[tuple[int, ...]]
    last_offset: int


def _scan_file(
    fd: int,
    size: int,
    base: int,
    *,
    interval: int,
    latest_epoch: int,
    buffer: bytearray | None = None,
) -> _FileScan:
    """Walk a ``.log`` of ``size`` bytes with the scan twin, chunk by chunk.

    A batch cut by the end of a chunk is moved to the front of the buffer and
    completed by the next read; a batch larger than the buffer grows it (a
    new one: the caller's ``buffer`` keeps its size).
    """
    buf = buffer if buffer else bytearray(min(SCAN_CHUNK_BYTES, max(size, 1)))
    buf_start = 0  # file position of buf[0]
    filled = 0
    offset_parts: list[bytes] = []
    time_parts: list[bytes] = []
    epochs: list[tuple[int, int]] = []
    producers: list[tuple[int, ...]] = []
    last_offset = base - 1
    last_index_pos = 0
    max_ts = -1
    offset_of_max_ts = base
    last_time_ts = -1
    while True:
        view = memoryview(buf)
        want = min(len(buf), size - buf_start) - filled
        while want > 0:
            n = os.preadv(fd, [view[filled : filled + want]], buf_start + filled)
            if n <= 0:
                break
            filled += n
            want -= n
        at_eof = buf_start + filled >= size or want > 0
        result = scan_segment(
            view,
            0,
            filled,
            base_offset=base,
            index_interval_bytes=interval,
            prev_last_offset=last_offset,
            latest_epoch=latest_epoch,
            position_base=buf_start,
            last_index_position=last_index_pos,
            max_timestamp=max_ts,
            offset_of_max_timestamp=offset_of_max_ts,
            last_time_entry_timestamp=last_time_ts,
        )
        (
            valid_end,
            error,
            offset_entries,
            time_entries,
            max_ts,
            offset_of_max_ts,
            epoch_starts,
            producer_batches,
            last_offset,
            last_index_pos,
            last_time_ts,
        ) = result
        if offset_entries:
            offset_parts.append(offset_entries)
        if time_entries:
            time_parts.append(time_entries)
        epochs.extend(epoch_starts)
        producers.extend(producer_batches)
        if epoch_starts:
            latest_epoch = epoch_starts[-1][0]
        if error is not None or at_eof:
            view.release()
            return _FileScan(
                valid_end,
                error,
                b"".join(offset_parts),
                b"".join(time_parts),
                max_ts,
                offset_of_max_ts,
                epochs,
                producers,
                last_offset,
            )
        consumed = valid_end - buf_start
        tail = filled - consumed
        view.release()
        if tail:
            buf[:tail] = buf[consumed:filled]
        buf_start = valid_end
        filled = tail
        needed = len(buf)
        if tail >= LOG_OVERHEAD:
            size_field = int.from_bytes(buf[LENGTH_OFFSET:LOG_OVERHEAD], "big", signed=True)
            needed = max(needed, size_field + LOG_OVERHEAD)
        if tail == len(buf):  # not even a header fits what is left: grow
            needed = max(needed, 2 * len(buf), 64)
        # never more than the file still holds (a garbage size field must not
        # allocate gigabytes: such a batch does not fit and ends the scan)
        needed = min(needed, max(size - buf_start, len(buf)))
        if needed > len(buf):  # one batch larger than the buffer
            grown = bytearray(needed)
            grown[:tail] = buf[:tail]
            buf = grown


def replay_segment_producers(
    producer_state: ProducerStateManager, segment: LogSegment, start_offset: int, end_offset: int
) -> None:
    """Feed the producer batches of ``segment`` holding offsets in
    [start_offset, end_offset) into ``producer_state`` (header-level walk)."""
    start = segment.translate_offset(start_offset)
    if start is None:
        return
    log = segment.log
    for batch in log.iter_batches(start.position):
        summary = batch.summary
        if summary.base_offset is not None and summary.base_offset >= end_offset:
            break
        if summary.magic < MAGIC_V2 or summary.producer_id == -1:
            continue
        attributes = (TRANSACTIONAL_FLAG_MASK if summary.is_transactional else 0) | (
            CONTROL_FLAG_MASK if summary.is_control_batch else 0
        )
        assert summary.base_offset is not None
        record = (
            summary.producer_id,
            summary.producer_epoch,
            summary.base_sequence,
            summary.last_offset - summary.base_offset,
            summary.base_offset,
            summary.max_timestamp,
            attributes,
            batch.position,
        )
        data = log.read_batch_bytes(batch) if summary.is_control_batch else None
        apply_producer_batch(producer_state, record, data)


def rebuild_producer_state(
    producer_state: ProducerStateManager,
    segments: LogSegments,
    *,
    log_start_offset: int,
    last_offset: int,
    reload_from_clean_shutdown: bool,
    now_ms: int,
    restore_last_batches: bool = True,
) -> TailScan:
    """``UnifiedLog.rebuildProducerState``: from the latest snapshot <= last_offset
    and the log after it; after a clean shutdown without snapshots, empty
    snapshots at the last two segment bases and ``last_offset`` instead.

    Beyond Kafka: when the state was reloaded from a snapshot and
    ``restore_last_batches``, each producer's batches before the snapshot
    are read back up to five (``producer_tail.py``; returns what that read),
    so a retry of any of a producer's last five batches stays a duplicate
    across restarts."""
    offsets_to_snapshot: list[int] = []
    last = segments.last_segment
    if last is not None:
        previous = segments.lower_segment(last.base_offset)
        if previous is not None:
            offsets_to_snapshot.append(previous.base_offset)
        offsets_to_snapshot.append(last.base_offset)
    offsets_to_snapshot.append(last_offset)
    if producer_state.latest_snapshot_offset is None and reload_from_clean_shutdown:
        for offset in offsets_to_snapshot:
            producer_state.update_map_end_offset(offset)
            producer_state.take_snapshot()
        return NOTHING_READ
    empty_before = producer_state.is_empty and producer_state.map_end_offset >= last_offset
    reloaded = producer_state.truncate_and_reload(log_start_offset, last_offset, now_ms)
    loaded_from = producer_state.map_end_offset
    if last_offset > producer_state.map_end_offset and not empty_before:
        for segment in segments.values(producer_state.map_end_offset, last_offset):
            start = max(segment.base_offset, producer_state.map_end_offset, log_start_offset)
            producer_state.update_map_end_offset(start)
            if segment.base_offset in offsets_to_snapshot:
                producer_state.take_snapshot()
            replay_segment_producers(producer_state, segment, start, last_offset)
    producer_state.update_map_end_offset(last_offset)
    producer_state.take_snapshot()
    if not (reloaded and restore_last_batches):
        return NOTHING_READ
    return restore_batch_metadata(producer_state, segments, log_start_offset, loaded_from)


@dataclass
class LoadedLog:
    segments: LogSegments
    log_start_offset: int
    recovery_point: int
    next_offset: int
    producer_state: ProducerStateManager
    leader_epoch_cache: LeaderEpochCache
    recovered_segments: int = 0
    #: bytes recovery removed: cut tails and the segments deleted after a cut
    truncated_bytes: int = 0
    #: what restoring the producers' last batches read (producer_tail.py)
    tail_scan: TailScan = NOTHING_READ


def _remove_temp_files_and_swap(directory: Path, config: TopicConfig, time_ms: TimeMs) -> None:
    swap_files: list[Path] = []
    cleaned: list[Path] = []
    min_cleaned = None
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        name = path.name
        if name.endswith(files.DELETED_FILE_SUFFIX):
            path.unlink(missing_ok=True)
        elif name.endswith(files.CLEANED_FILE_SUFFIX):
            offset = _offset_or_none(name)
            if offset is not None:
                min_cleaned = offset if min_cleaned is None else min(min_cleaned, offset)
            cleaned.append(path)
        elif name.endswith(files.SWAP_FILE_SUFFIX):
            swap_files.append(path)
    valid_swaps = []
    for path in swap_files:
        offset = _offset_or_none(path.name)
        if min_cleaned is not None and offset is not None and offset >= min_cleaned:
            path.unlink(missing_ok=True)  # part of an interrupted split (KAFKA-6264)
        else:
            valid_swaps.append(path)
    for path in cleaned:
        path.unlink(missing_ok=True)
    min_swap: int | None = None
    max_swap: int | None = None
    for path in valid_swaps:
        if not path.name.endswith(files.LOG_FILE_SUFFIX + files.SWAP_FILE_SUFFIX):
            continue
        base = files.offset_from_file_name(path.name)
        segment = LogSegment.open(
            directory,
            base,
            config,
            time_ms=time_ms,
            file_already_exists=True,
            file_suffix=files.SWAP_FILE_SUFFIX,
        )
        try:
            next_offset = segment.read_next_offset()
        finally:
            segment.close_handlers()
        min_swap = base if min_swap is None else min(min_swap, base)
        max_swap = next_offset if max_swap is None else max(max_swap, next_offset)
    if min_swap is not None and max_swap is not None:
        for path in directory.iterdir():
            if path.is_file() and not path.name.endswith(files.SWAP_FILE_SUFFIX):
                offset = _offset_or_none(path.name)
                if offset is not None and min_swap <= offset < max_swap:
                    path.unlink(missing_ok=True)
    for path in directory.iterdir():
        if path.is_file() and path.name.endswith(files.SWAP_FILE_SUFFIX):
            os.replace(path, path.with_name(path.name[: -len(files.SWAP_FILE_SUFFIX)]))


def _offset_or_none(name: str) -> int | None:
    try:
        return files.offset_from_file_name(name)
    except ValueError:
        return None


def _delete_segments(
    segments: LogSegments, to_delete: list[LogSegment], psm: ProducerStateManager
) -> None:
    for segment in to_delete:
        segments.remove(segment.base_offset)
        segment.close_handlers()
        segment.delete_if_exists()
        psm.delete_snapshot(segment.base_offset)


def _report_cut(
    directory: Path, segment: LogSegment, result: RecoverResult, recorder: RecoveryRecorder
) -> None:
    report_truncated_segment(
        directory,
        segment,
        truncated_to=result.next_offset,
        valid_bytes=result.valid_bytes,
        bytes_dropped=result.truncated_bytes,
        error=result.error,
        recorder=recorder,
    )


def load_log(
    directory: Path,
    config: TopicConfig,
    *,
    log_start_offset_checkpoint: int,
    recovery_point_checkpoint: int,
    had_clean_shutdown: bool,
    time_ms: TimeMs = wall_clock_ms,
    producer_id_expiration_ms: int = 86_400_000,
    recovery_recorder: RecoveryRecorder | None = None,
) -> LoadedLog:
    """Open (and if needed recover) the partition log in ``directory``.

    Every cut and every segment deleted after one is logged as a WARNING and
    reported to ``recovery_recorder`` (``broker/log/recovery_report.py``).
    """
    _remove_temp_files_and_swap(directory, config, time_ms)
    epoch_cache = LeaderEpochCache(directory)
    segments = LogSegments()
    needs_rebuild: list[tuple[LogSegment, str]] = []
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        if files.is_index_file(path):
            offset = _offset_or_none(path.name)
            if offset is None or not files.log_file(directory, offset).exists():
                logger.warning(
                    "Found an orphaned index file %s, with no corresponding log file.", path
                )
                path.unlink(missing_ok=True)
        elif files.is_log_file(path):
            base = _offset_or_none(path.name)
            if base is None:
                continue
            time_index_new = not files.time_index_file(directory, base).exists()
            segment = LogSegment.open(
                directory, base, config, time_ms=time_ms, file_already_exists=True
            )
            try:
                segment.sanity_check(time_index_new)
            except (FileNotFoundError, CorruptIndexError) as exc:
                needs_rebuild.append((segment, str(exc)))
            segments.add(segment)
    # a segment the unclean-shutdown pass below will recover anyway is not
    # rebuilt twice (an untrimmed active segment always fails the checks)
    unflushed_from = segments.values(recovery_point_checkpoint, 2**63 - 1)
    first_unflushed = unflushed_from[0].base_offset if unflushed_from else 2**63 - 1
    recorder: RecoveryRecorder = recovery_recorder or NullRecoveryRecorder()
    truncated_total = 0
    for segment, reason in needs_rebuild:
        if had_clean_shutdown or segment.base_offset < first_unflushed:
            logger.warning("Rebuilding the indexes of %s: %s", segment.log.path, reason)
            # LogLoader.recoverSegment: the producer state at the segment's base
            # (snapshot + replay), so its markers rebuild the .txnindex
            segment_psm = ProducerStateManager(directory, producer_id_expiration_ms)
            rebuild_producer_state(
                segment_psm,
                segments,
                log_start_offset=log_start_offset_checkpoint,
                last_offset=segment.base_offset,
                reload_from_clean_shutdown=False,
                now_ms=time_ms(),
                restore_last_batches=False,
            )
            result = recover_segment(segment, segment_psm, epoch_cache)
            segment_psm.take_snapshot()
            if result.truncated_bytes > 0:
                # Kafka ignores what this rebuild cuts (LogLoader.loadSegmentFiles); we say it
                truncated_total += result.truncated_bytes
                _report_cut(directory, segment, result, recorder)

    recovery_psm = ProducerStateManager(directory, producer_id_expiration_ms)
    recovered = 0
    if not had_clean_shutdown:
        unflushed = segments.values(recovery_point_checkpoint, 2**63 - 1)
        if unflushed:
            rebuild_producer_state(
                recovery_psm,
                segments,
                log_start_offset=log_start_offset_checkpoint,
                last_offset=unflushed[0].base_offset,
                reload_from_clean_shutdown=False,
                now_ms=time_ms(),
                restore_last_batches=False,  # only snapshots are kept of this state
            )
        for i, segment in enumerate(unflushed):
            result = recover_segment(segment, recovery_psm, epoch_cache)
            recovered += 1
            recovery_psm.take_snapshot()
            if result.truncated_bytes > 0:
                # LogLoader.recoverLog: "we had an invalid message, delete all remaining log"
                truncated_total += result.truncated_bytes
                _report_cut(directory, segment, result, recorder)
                remaining = unflushed[i + 1 :]
                truncated_total += report_deleted_segments(directory, remaining, recorder)
                _delete_segments(segments, remaining, recovery_psm)
                break

    log_end_offset: int | None = None
    if segments:
        last = segments.active_segment
        log_end_offset = last.read_next_offset()
        if log_end_offset < log_start_offset_checkpoint:
            logger.warning(
                "Deleting all segments because logEndOffset (%d) is smaller than logStartOffset %d",
                log_end_offset,
                log_start_offset_checkpoint,
            )
            _delete_segments(segments, list(segments), recovery_psm)
            epoch_cache.clear_and_flush()
            recovery_psm.truncate_fully_and_start_at(log_start_offset_checkpoint)
            log_end_offset = None
    if not segments:
        segments.add(
            LogSegment.open(
                directory,
                log_start_offset_checkpoint,
                config,
                time_ms=time_ms,
                init_file_size=config.segment_bytes if config.preallocate else 0,
                preallocate=config.preallocate,
            )
        )
    if log_end_offset is None:
        log_end_offset = segments.active_segment.read_next_offset()
    if had_clean_shutdown:
        recovery_point = log_end_offset
    else:
        recovery_point = min(recovery_point_checkpoint, log_end_offset)
    segments.active_segment.resize_indexes(config.segment_index_bytes)
    epoch_cache.truncate_from_end(log_end_offset)
    first = segments.first_segment
    assert first is not None
    log_start_offset = max(log_start_offset_checkpoint, first.base_offset)
    epoch_cache.truncate_from_start(log_start_offset_checkpoint)

    producer_state = ProducerStateManager(directory, producer_id_expiration_ms)
    producer_state.remove_stray_snapshots(segments.base_offsets)
    tail_scan = rebuild_producer_state(
        producer_state,
        segments,
        log_start_offset=log_start_offset,
        last_offset=log_end_offset,
        reload_from_clean_shutdown=had_clean_shutdown,
        now_ms=time_ms(),
    )
    if tail_scan.batches_restored:
        logger.debug(
            "%sRestored %d producer batches from %d bytes before the producer snapshot",
            log_identifier(directory),
            tail_scan.batches_restored,
            tail_scan.bytes_read,
        )
    return LoadedLog(
        segments,
        log_start_offset,
        recovery_point,
        log_end_offset,
        producer_state,
        epoch_cache,
        recovered,
        truncated_total,
        tail_scan,
    )
