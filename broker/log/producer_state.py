"""Producer state of idempotent and transactional producers and its snapshot
files (``ProducerStateManager.java``).

Per producer id the log keeps the epoch and the metadata of the producer's
last 5 batches (``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``): enough for the
partition layer to answer a retried batch with its original offsets and to
check sequence numbers (``ProducerStateEntry.java``; the sequence and data
epoch checks of ``ProducerAppendInfo.java`` live in the partition layer; the
transaction rules -- INVALID_TXN_STATE, the marker's epoch and coordinator
epoch checks -- are here, where the transactions are kept).

Snapshot file ``NNNNNNNNNNNNNNNNNNNN.snapshot`` (offset = the producer-state
end offset, exclusive), big-endian, as ``ProducerStateManager.java`` writes it
(``ProducerSnapshot.json``)::

    Version       => Int16    1
    Crc           => UInt32   CRC-32C of every byte after this field
    ProducerCount => Int32
    Producers     => [Entry]  46 bytes each:
      ProducerId            Int64
      ProducerEpoch         Int16
      LastSequence          Int32
      LastOffset            Int64
      OffsetDelta           Int32   last offset - first offset of the last batch
      Timestamp             Int64   max timestamp of the last batch (or marker)
      CoordinatorEpoch      Int32
      CurrentTxnFirstOffset Int64   -1 when no transaction is open

Transactions (``ProducerStateManager.ongoingTxns``, ``TxnMetadata``,
``CompletedTxn`` -- the one type, from ``transaction_index.py``): a
transactional data batch of a producer with no open transaction begins
one at its first offset; an end-transaction marker (COMMIT/ABORT control
batch) ends it and yields a :class:`CompletedTxn`,
which the caller turns into a last stable offset and then completes
(:meth:`ProducerStateManager.complete_txn`). The first unstable offset is the
smallest first offset of the ongoing transactions. Kafka also counts
completed transactions whose marker lies above the high watermark
(``unreplicatedTxns``); on one broker the high watermark is the log end
offset, so a marker is replicated once appended and that map would always
be empty: it is left out.

Only the last batch of each producer is persisted; the 5-batch cache is
refilled by replaying the log from the snapshot offset and, unlike Kafka,
by reading the batches just before it back (``producer_tail.py``). An empty
snapshot is ``00 01 48 67 4B C7 00 00 00 00``.

Threading: owned by the partition's log thread (the flusher only fsyncs
snapshot files by path).
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from broker.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from broker.log.errors import CorruptSnapshotError
from broker.log.files import (
    PRODUCER_SNAPSHOT_FILE_SUFFIX,
    offset_from_file_name,
    producer_snapshot_file,
)
from broker.log.held_field import HeldField
from broker.log.segment import LogOffsetMetadata
from broker.log.transaction_index import CompletedTxn
from broker.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    decrement_sequence,
)
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.origin import AppendOrigin

if TYPE_CHECKING:
    from broker.log.active_segment import ActiveSegment

NUM_BATCHES_TO_RETAIN = 5
#: ``ProducerStateManager.LATE_TRANSACTION_BUFFER_MS``: slack beyond
#: ``transaction.max.timeout.ms`` before an open transaction counts as late
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000
#: ``transaction.max.timeout.ms``'s default (``TransactionStateManagerConfigs``)
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000
PRODUCER_SNAPSHOT_VERSION = 1

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
assert _ENTRY.size == 46
_CRC_START = 6


class BatchMetadata(NamedTuple):
    """``BatchMetadata``: one cached batch of a producer."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class TxnMetadata(NamedTuple):
    """``TxnMetadata``: an ongoing transaction of one producer. ``first_offset``
    carries the batch position when the appender knew it (a leader append),
    else the offset only (replay, snapshot load)."""

    producer_id: int
    first_offset: LogOffsetMetadata


def check_producer_epoch(
    producer_id: int,
    producer_epoch: int,
    current_epoch: int,
    offset: int,
    *,
    topic_partition: str,
    origin: AppendOrigin,
) -> None:
    """``ProducerAppendInfo.checkProducerEpoch``: an epoch older than the
    known one is refused with INVALID_PRODUCER_EPOCH (Kafka answers it
    instead of PRODUCER_FENCED since 2.7), except on REPLICATION, which
    takes what the leader wrote."""
    if producer_epoch < current_epoch and origin is not AppendOrigin.REPLICATION:
        raise InvalidProducerEpochError(
            f"Epoch of producer {producer_id} at offset {offset} in {topic_partition} is "
            f"{producer_epoch}, which is smaller than the last seen epoch {current_epoch}"
        )


def check_data_batch_txn_state(
    producer_id: int,
    is_transactional: bool,
    txn_open: bool,
    offset: int,
    *,
    topic_partition: str,
) -> None:
    """``ProducerAppendInfo.appendDataBatch``'s transaction rule: a
    non-transactional batch of a producer whose transaction is open is
    INVALID_TXN_STATE (every origin)."""
    if txn_open and not is_transactional:
        raise InvalidTxnStateError(
            f"Expected transactional write from producer {producer_id} at offset "
            f"{offset} in partition {topic_partition}"
        )


@dataclass
class ProducerStateEntry:
    """``ProducerStateEntry``: epoch, last batches, transaction facts of one producer."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batch_metadata: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch forgets the cached batches."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def add_batch(
        self,
        producer_epoch: int,
        last_seq: int,
        last_offset: int,
        offset_delta: int,
        timestamp: int,
    ) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate_batch(
        self, producer_epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """The cached batch with exactly this sequence range and epoch, if any
        (``ProducerStateEntry.findDuplicateBatch``)."""
        if producer_epoch != self.producer_epoch:
            return None
        for metadata in self.batch_metadata:
            if metadata.first_seq == first_seq and metadata.last_seq == last_seq:
                return metadata
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            deque(self.batch_metadata, maxlen=NUM_BATCHES_TO_RETAIN),
        )


# ---- snapshot encoding -------------------------------------------------------------


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The bytes of a snapshot file (entries in the order given)."""
    items = list(entries)
    buf = bytearray(_HEADER.size + _ENTRY.size * len(items))
    _HEADER.pack_into(buf, 0, PRODUCER_SNAPSHOT_VERSION, 0, len(items))
    pos = _HEADER.size
    for e in items:
        _ENTRY.pack_into(
            buf,
            pos,
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
        pos += _ENTRY.size
    struct.pack_into(">I", buf, 2, crc32c(memoryview(buf)[_CRC_START:]))
    return bytes(buf)


def decode_snapshot(data: bytes, source: object = "snapshot") -> list[ProducerStateEntry]:
    """Entries of a snapshot; CorruptSnapshotError on a bad version, CRC or size."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {source} is too short")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c(memoryview(data)[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    if count < 0 or len(data) < _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {count} entries do not fit {len(data)} bytes"
        )
    entries = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coord, txn_first = _ENTRY.unpack_from(
            data, _HEADER.size + i * _ENTRY.size
        )
        entry = ProducerStateEntry(pid, epoch, coord, ts, txn_first if txn_first >= 0 else None)
        if offset >= 0:
            entry.batch_metadata.append(BatchMetadata(seq, offset, delta, ts))
        entries.append(entry)
    return entries


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    return decode_snapshot(path.read_bytes(), path)


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], sync: bool) -> None:
    data = encode_snapshot(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def list_snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the ``NNNN.snapshot`` files in ``directory``, ascending."""
    offsets = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        if not name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX):
            continue
        try:
            offsets.append(offset_from_file_name(name))
        except ValueError:
            continue
    return sorted(offsets)


# ---- the manager ----------------------------------------------------------------------


class ProducerStateManager:
    """Producers of one partition, the producer-state end offset, and snapshots.

    The query/update API the partition layer uses:

    * :meth:`last_entry` -- a producer's entry (epoch, last 5 batches) or None;
      ``entry.find_duplicate_batch(epoch, first_seq, last_seq)`` finds a retry.
    * :meth:`update_data_batch` -- record an appended batch (the log calls it
      for every batch with a producer id once the batch is on disk).
    * :meth:`append_end_txn_marker` -- record an end-transaction marker; the
      caller takes :meth:`last_stable_offset` of the returned
      :class:`CompletedTxn`, then :meth:`complete_txn` it.
    * :meth:`first_unstable_offset` / :attr:`ongoing_txns` -- open transactions.
    * :meth:`take_snapshot` / :meth:`truncate_and_reload` -- persistence.
    """

    __slots__ = (
        "_active",
        "_last_snap_offset",
        "_ongoing_txns",
        "_own_last_map_offset",
        "_producers",
        "_snapshots",
        "directory",
        "max_transaction_timeout_ms",
        "producer_id_expiration_ms",
        "topic_partition",
    )

    #: the map end offset: the append owner's once bound (``ActiveSegment.bind``)
    _last_map_offset = HeldField[int]("_own_last_map_offset", "map_end_offset")

    def __init__(
        self,
        directory: Path,
        producer_id_expiration_ms: int = 86_400_000,
        max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    ) -> None:
        #: the log's append owner once the log is open (``ActiveSegment.bind``): it
        #: holds the map end offset, which every append moves
        self._active: ActiveSegment | None = None
        self.directory = directory
        #: the log directory's name is ``topic-partition`` (for error messages)
        self.topic_partition = directory.name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.max_transaction_timeout_ms = max_transaction_timeout_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        #: ``ongoingTxns`` (a TreeMap in Kafka): first offset -> txn, kept in
        #: ascending key order; transactions begin in log order, so insertion
        #: order is key order but for snapshot loads (sorted by ``_add_ongoing``)
        self._ongoing_txns: dict[int, TxnMetadata] = {}
        self._snapshots: list[int] = list_snapshot_offsets(directory)
        self._own_last_map_offset = 0
        self._last_snap_offset = 0

    # ---- queries -------------------------------------------------------------------

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return self._producers

    @property
    def producer_id_count(self) -> int:
        return len(self._producers)

    @property
    def map_end_offset(self) -> int:
        return self._last_map_offset

    @property
    def is_empty(self) -> bool:
        return not self._producers

    @property
    def ongoing_txns(self) -> dict[int, TxnMetadata]:
        """First offset -> ongoing transaction, ascending (read only)."""
        return self._ongoing_txns

    def first_undecided_offset(self) -> int | None:
        """``firstUndecidedOffset``: the first offset of the oldest ongoing txn."""
        for first_offset in self._ongoing_txns:
            return first_offset
        return None

    def first_unstable_offset(self) -> LogOffsetMetadata | None:
        """``firstUnstableOffset``: where the oldest ongoing transaction begins
        (one broker: no completed transaction is ever above the high watermark)."""
        for txn in self._ongoing_txns.values():
            return txn.first_offset
        return None

    def has_late_transaction(self, now_ms: int) -> bool:
        """``hasLateTransaction``: the oldest ongoing transaction's producer has
        been silent for longer than the max transaction timeout plus
        ``LATE_TRANSACTION_BUFFER_MS``. Kafka caches that timestamp on every
        update (``oldestTxnLastTimestamp``); it is looked up here instead, off
        the append path."""
        for txn in self._ongoing_txns.values():
            entry = self._producers.get(txn.producer_id)
            last_timestamp = -1 if entry is None else entry.last_timestamp
            return (
                last_timestamp > 0
                and now_ms - last_timestamp
                > self.max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS
            )
        return False

    def last_stable_offset(self, completed_txn: CompletedTxn) -> int:
        """``lastStableOffset``: after ``completed_txn``, the first offset of the
        oldest ongoing transaction of another producer, else the marker's
        offset + 1."""
        for txn in self._ongoing_txns.values():
            if txn.producer_id != completed_txn.producer_id:
                return txn.first_offset.message_offset
        return completed_txn.last_offset + 1

    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    @property
    def oldest_snapshot_offset(self) -> int | None:
        return self._snapshots[0] if self._snapshots else None

    def snapshot_path(self, offset: int) -> Path:
        return producer_snapshot_file(self.directory, offset)

    # ---- updates -------------------------------------------------------------------

    def update_map_end_offset(self, offset: int) -> None:
        self._last_map_offset = offset

    def _entry(self, producer_id: int) -> ProducerStateEntry:
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id)
            self._producers[producer_id] = entry
        return entry

    def update_data_batch(
        self,
        producer_id: int,
        *,
        producer_epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        is_transactional: bool = False,
        first_offset_metadata: LogOffsetMetadata | None = None,
    ) -> None:
        """``ProducerAppendInfo.appendDataBatch`` + ``update``. The epoch and
        sequence checks are the partition layer's (``producer_append.py``);
        the transaction rule is here, before any effect: a non-transactional
        batch while the producer's transaction is open is INVALID_TXN_STATE
        (every origin, as Kafka); a transactional batch with none open begins
        one at ``first_offset`` (``first_offset_metadata`` when the appender
        knows the batch's position)."""
        if producer_id == NO_PRODUCER_ID:
            raise ValueError("Invalid producer id -1 passed to update")
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id)
            self._producers[producer_id] = entry
        elif not is_transactional and entry.current_txn_first_offset is not None:
            check_data_batch_txn_state(
                producer_id, False, True, first_offset, topic_partition=str(self.topic_partition)
            )
        entry.add_batch(
            producer_epoch, last_seq, last_offset, last_offset - first_offset, max_timestamp
        )
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._add_ongoing(
                TxnMetadata(
                    producer_id,
                    first_offset_metadata
                    if first_offset_metadata is not None
                    else LogOffsetMetadata(first_offset),
                )
            )

    def append_end_txn_marker(
        self,
        producer_id: int,
        marker: EndTransactionMarker,
        producer_epoch: int,
        offset: int,
        timestamp: int,
        *,
        origin: AppendOrigin = AppendOrigin.COORDINATOR,
    ) -> CompletedTxn | None:
        """``ProducerAppendInfo.appendEndTxnMarker`` + ``update``: the marker at
        ``offset`` ends the producer's transaction. Checked first, unless
        REPLICATION (a log being replayed): an older producer epoch is
        INVALID_PRODUCER_EPOCH, an older coordinator epoch
        TRANSACTION_COORDINATOR_FENCED. Returns the completed transaction, or
        None when none was open (a marker of an empty transaction); the
        transaction stays in :attr:`ongoing_txns` until :meth:`complete_txn`."""
        self.check_end_txn_marker(producer_id, marker, producer_epoch, offset, origin=origin)
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._entry(producer_id)
        txn_first = entry.current_txn_first_offset
        completed = (
            None
            if txn_first is None
            else CompletedTxn(
                producer_id, txn_first, offset, marker.control_type is ControlRecordType.ABORT
            )
        )
        entry.maybe_update_producer_epoch(producer_epoch)
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        return completed

    def check_end_txn_marker(
        self,
        producer_id: int,
        marker: EndTransactionMarker,
        producer_epoch: int,
        offset: int,
        *,
        origin: AppendOrigin = AppendOrigin.COORDINATOR,
    ) -> None:
        """The checks of :meth:`append_end_txn_marker`, without its effects (the
        log runs them before the marker's bytes are written, as Kafka's
        ``UnifiedLog.analyzeAndValidateProducerState`` does before the append)."""
        entry = self._producers.get(producer_id)
        current_epoch = NO_PRODUCER_EPOCH if entry is None else entry.producer_epoch
        check_producer_epoch(
            producer_id,
            producer_epoch,
            current_epoch,
            offset,
            topic_partition=self.topic_partition,
            origin=origin,
        )
        current_coordinator_epoch = -1 if entry is None else entry.coordinator_epoch
        if (
            current_coordinator_epoch > marker.coordinator_epoch
            and origin is not AppendOrigin.REPLICATION
        ):
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producerId {producer_id} at offset {offset} in "
                f"partition {self.topic_partition}: {marker.coordinator_epoch} (zombie), "
                f"{current_coordinator_epoch} (current)"
            )

    def complete_txn(self, completed_txn: CompletedTxn) -> None:
        """``completeTxn``: the transaction is no longer ongoing (one broker:
        its marker is below the high watermark at once, so Kafka's
        ``unreplicatedTxns`` step is skipped)."""
        if self._ongoing_txns.pop(completed_txn.first_offset, None) is None:
            raise ValueError(
                f"Attempted to complete transaction {completed_txn} on partition "
                f"{self.topic_partition} which was not started"
            )

    def _add_ongoing(self, txn: TxnMetadata) -> None:
        ongoing = self._ongoing_txns
        first_offset = txn.first_offset.message_offset
        out_of_order = bool(ongoing) and first_offset < next(reversed(ongoing))
        ongoing[first_offset] = txn
        if out_of_order:
            ordered = sorted(ongoing.items())
            ongoing.clear()
            ongoing.update(ordered)

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    def remove_expired_producers(self, now_ms: int) -> int:
        """Drop producers idle for ``producer.id.expiration.ms``; returns how many."""
        expired = [pid for pid, e in self._producers.items() if self._is_expired(now_ms, e)]
        for pid in expired:
            del self._producers[pid]
        return len(expired)

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        """``loadProducerEntry``: an entry from a snapshot, its open transaction
        (``CurrentTxnFirstOffset``) ongoing again."""
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            offset = entry.current_txn_first_offset
            self._add_ongoing(TxnMetadata(entry.producer_id, LogOffsetMetadata(offset)))

    # ---- snapshots -------------------------------------------------------------------

    def take_snapshot(self, sync: bool = True) -> Path | None:
        """Write a snapshot at the map end offset if it advanced past the last one."""
        if self._last_map_offset <= self._last_snap_offset:
            return None
        offset = self._last_map_offset
        path = producer_snapshot_file(self.directory, offset)
        ordered = [self._producers[pid] for pid in sorted(self._producers)]
        write_snapshot(path, ordered, sync)
        if offset not in self._snapshots:
            self._snapshots.append(offset)
            self._snapshots.sort()
        self._last_snap_offset = offset
        return path

    def _remove_snapshot(self, offset: int) -> None:
        if offset in self._snapshots:
            self._snapshots.remove(offset)
        producer_snapshot_file(self.directory, offset).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        for snap in [s for s in self._snapshots if s < offset]:
            self._remove_snapshot(snap)

    def delete_snapshot(self, offset: int) -> None:
        self._remove_snapshot(offset)

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """``removeStraySnapshots``: keep snapshots at segment bases and the
        largest stray one if it lies beyond the last segment base."""
        bases = set(segment_base_offsets)
        max_base = max(bases) if bases else None
        self._snapshots = list_snapshot_offsets(self.directory)
        latest_stray: int | None = None
        for snap in list(self._snapshots):
            if snap in bases:
                continue
            if latest_stray is not None:
                self._remove_snapshot(latest_stray)
            latest_stray = snap
        if latest_stray is not None and max_base is not None and latest_stray < max_base:
            self._remove_snapshot(latest_stray)

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self._snapshots:
            offset = self._snapshots[-1]
            try:
                entries = read_snapshot(producer_snapshot_file(self.directory, offset))
            except (CorruptSnapshotError, OSError):
                self._remove_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(now_ms, entry):
                    self.load_producer_entry(entry)
            self._last_snap_offset = offset
            self._last_map_offset = offset
            return
        self._last_snap_offset = log_start_offset
        self._last_map_offset = log_start_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> bool:
        """``truncateAndReload``: drop snapshots outside (log start, log end],
        then, if the state is not at ``log_end_offset`` already, reload from
        the latest remaining snapshot (the caller replays the log after it).
        True if it reloaded (the map end offset is then the snapshot's)."""
        for snap in list(self._snapshots):
            if snap > log_end_offset or snap <= log_start_offset:
                self._remove_snapshot(snap)
        if log_end_offset != self._last_map_offset:
            self._producers.clear()
            self._ongoing_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
            return True
        self.on_log_start_offset_incremented(log_start_offset)
        return False

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._last_map_offset = max(self._last_map_offset, log_start_offset)
        latest = self.latest_snapshot_offset
        self._last_snap_offset = latest if latest is not None else log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._producers.clear()
        self._ongoing_txns.clear()
        for snap in list(self._snapshots):
            self._remove_snapshot(snap)
        self._last_snap_offset = 0
        self._last_map_offset = offset

    def iter_entries(self) -> Iterator[ProducerStateEntry]:
        return iter(self._producers.values())
