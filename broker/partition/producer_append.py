"""Producer-state checks of idempotent batches (``ProducerAppendInfo.java``).

Run after validation and after the roll decision, before the bytes are
written (``UnifiedLog.analyzeAndValidateProducerState``). For each batch with
a producer id, in order:

1. duplicate: same epoch as the cached entry and one of its last 5 batches
   has exactly the same first and last sequence -> the whole append is
   answered with that batch's offsets and max timestamp, nothing is written
   (Kafka 3.x never answers DUPLICATE_SEQUENCE_NUMBER for produce);
2. epoch: older than the known epoch -> INVALID_PRODUCER_EPOCH;
3. sequence: a new epoch must start at sequence 0 unless no epoch was known;
   the same epoch must continue at last sequence + 1 (Int.MAX wraps to 0);
   a producer with no known epoch (brand new, or its state expired or was
   deleted with old segments) is accepted at any sequence.

The state itself (entries, last 5 batches, snapshots) is the log's
(``broker/log/producer_state.py``); this module only reads it. The log
updates it in ``commit_append``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from broker.errors import OutOfOrderSequenceError
from broker.log.producer_state import (
    ProducerStateManager,
    check_data_batch_txn_state,
    check_producer_epoch,
)
from broker.records.batch import NO_PRODUCER_EPOCH, NO_SEQUENCE, TRANSACTIONAL_FLAG_MASK
from broker.records.batch_info import BatchInfo
from broker.records.origin import AppendOrigin

INT_MAX = 2**31 - 1


class DuplicateBatch(NamedTuple):
    """A retried batch already in the log: answer with its original offsets."""

    first_offset: int
    last_offset: int
    max_timestamp: int


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """``ProducerAppendInfo.inSequence``."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


def check_producer_batches(
    state: ProducerStateManager, batches: Sequence[BatchInfo], topic_partition: str
) -> DuplicateBatch | None:
    """Raise on an epoch or sequence error; return the duplicate, if any.

    Mirrors Kafka's split between ``currentEntry`` (the log's state) and
    ``updatedEntry`` (that state plus the batches earlier in this append).
    """
    # per producer: (epoch, last sequence or None, transaction open) of updatedEntry
    updated: dict[int, tuple[int, int | None, bool]] = {}
    for batch in batches:
        pid = batch.producer_id
        if pid == -1 or batch.base_offset is None:
            continue
        current = state.last_entry(pid)
        epoch = batch.producer_epoch
        first_seq = batch.base_sequence
        if current is not None:
            dup = current.find_duplicate_batch(epoch, first_seq, batch.last_sequence)
            if dup is not None:
                return DuplicateBatch(dup.first_offset, dup.last_offset, dup.timestamp)
        current_epoch = NO_PRODUCER_EPOCH if current is None else current.producer_epoch
        prior = updated.get(pid)
        if prior is None:
            updated_epoch, updated_last_seq = current_epoch, None
            txn_open = current is not None and current.current_txn_first_offset is not None
        else:
            updated_epoch, updated_last_seq, txn_open = prior
        offset = batch.base_offset
        if epoch < updated_epoch:  # the rule and its error: producer_state.check_producer_epoch
            check_producer_epoch(
                pid,
                epoch,
                updated_epoch,
                offset,
                topic_partition=topic_partition,
                origin=AppendOrigin.CLIENT,
            )
        if epoch != updated_epoch:
            if first_seq != 0 and updated_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {pid}at offset {offset} "
                    f"in partition {topic_partition}: {epoch} (request epoch), {first_seq} (seq. "
                    f"number), {updated_epoch} (current producer epoch)"
                )
        else:
            if updated_last_seq is not None:
                current_last_seq = updated_last_seq
            elif current is not None and epoch == current.producer_epoch:
                current_last_seq = current.last_seq
            else:
                current_last_seq = NO_SEQUENCE
            # no known epoch (a new producer, or its state expired or was deleted
            # with old segments): any sequence is accepted (ProducerAppendInfo)
            if not (current_epoch == NO_PRODUCER_EPOCH or in_sequence(current_last_seq, first_seq)):
                raise OutOfOrderSequenceError(
                    f"Out of order sequence number for producer {pid} at offset {offset} in "
                    f"partition {topic_partition}: {first_seq} (incoming seq. number), "
                    f"{current_last_seq} (current end sequence number)"
                )
        # checked here, before the write, so the log's own check never fires after it
        is_transactional = batch.attributes & TRANSACTIONAL_FLAG_MASK != 0
        if txn_open and not is_transactional:
            check_data_batch_txn_state(
                pid, is_transactional, txn_open, offset, topic_partition=topic_partition
            )
        updated[pid] = (epoch, batch.last_sequence, txn_open or is_transactional)
    return None
