"""Leader-epoch cache of a partition (``LeaderEpochFileCache.java``).

A list of (epoch, start offset) pairs, both strictly increasing, persisted
in ``leader-epoch-checkpoint`` (``0\\n<n>\\n<epoch> <start offset>\\n``...).
The log assigns an entry on the first v2 batch of a new leader epoch
(``UnifiedLog.append``, after validation: epoch := the batch's partitionLeaderEpoch,
start := its base offset) and writes the checkpoint synchronously; a v0/v1
append clears the cache. Truncations of the log truncate the cache (Kafka
flushes those asynchronously; we write them at once, which is simpler and
never less durable).

Threading: owned by the partition's log thread.
"""

from __future__ import annotations

from pathlib import Path

from broker.log.checkpoints import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Leader epoch -> start offset of one partition (``LeaderEpochFileCache.java``)."""

    __slots__ = ("_checkpoint", "_epochs")
    _epochs: list[EpochEntry]

    def __init__(self, partition_dir: Path) -> None:
        self._checkpoint = LeaderEpochCheckpointFile(partition_dir)
        # like Kafka's CheckpointFile constructor: the file exists (maybe empty)
        # from the moment the cache does
        self._checkpoint.path.touch(exist_ok=True)
        self._epochs: list[EpochEntry] = []
        for entry in self._checkpoint.read():
            self._assign(entry)

    @property
    def path(self) -> Path:
        return self._checkpoint.path

    def update_parent_dir(self, partition_dir: Path) -> None:
        self._checkpoint = LeaderEpochCheckpointFile(partition_dir)

    def entries(self) -> list[EpochEntry]:
        return list(self._epochs)

    def _update_needed(self, entry: EpochEntry) -> bool:
        if not self._epochs:
            return True
        latest = self._epochs[-1]
        return entry.epoch != latest.epoch or entry.start_offset < latest.start_offset

    def _assign(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry {entry}")
        if not self._update_needed(entry):
            return False
        # drop entries that are not monotonic with the new one
        # (``maybeTruncateNonMonotonicEntries``)
        while self._epochs and (
            self._epochs[-1].epoch >= entry.epoch
            or self._epochs[-1].start_offset >= entry.start_offset
        ):
            self._epochs.pop()
        self._epochs.append(entry)
        return True

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Add (epoch, start offset) if new; writes the checkpoint when it changed."""
        epochs = self._epochs
        if epochs and epochs[-1].epoch == epoch and start_offset >= epochs[-1].start_offset:
            return False  # the common case of the append path (once per batch): nothing new
        if self._assign(EpochEntry(epoch, start_offset)):
            self._write()
            return True
        return False

    def maybe_assign_from_batch(self, partition_leader_epoch: int, base_offset: int) -> bool:
        """``UnifiedLog.maybeAssignEpochStartOffset`` for an appended v2 batch and
        ``LogSegment.recover``'s rule: only a non-negative epoch greater than
        the latest one starts an entry."""
        if partition_leader_epoch < 0:
            return False
        if self._epochs and partition_leader_epoch <= self._epochs[-1].epoch:
            return False
        return self.assign(partition_leader_epoch, base_offset)

    def _write(self) -> None:
        self._checkpoint.write(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1].epoch if self._epochs else None

    def latest_entry(self) -> EpochEntry | None:
        return self._epochs[-1] if self._epochs else None

    def earliest_entry(self) -> EpochEntry | None:
        return self._epochs[0] if self._epochs else None

    @property
    def non_empty(self) -> bool:
        return bool(self._epochs)

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds ``offset``."""
        found = None
        for entry in self._epochs:
            if entry.start_offset <= offset:
                found = entry.epoch
            else:
                break
        return found

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: (epoch, end offset) for OffsetsForLeaderEpoch."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._epochs if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e in self._epochs:
            if e.epoch <= requested_epoch:
                floor = e
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset``."""
        if end_offset >= 0 and self._epochs and self._epochs[-1].start_offset >= end_offset:
            while self._epochs and self._epochs[-1].start_offset >= end_offset:
                self._epochs.pop()
            self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before ``start_offset``; the last of them is kept
        with its start moved to ``start_offset``."""
        removed: list[EpochEntry] = []
        while self._epochs and self._epochs[0].start_offset <= start_offset:
            removed.append(self._epochs.pop(0))
        if removed:
            self._epochs.insert(0, EpochEntry(removed[-1].epoch, start_offset))
            self._write()

    def clear_and_flush(self) -> None:
        self._epochs.clear()
        self._write()
