"""Each producer's last five batches, restored from the log tail at load.

A live broker keeps the metadata of every producer's last five batches
(``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``), so a retry of any of its five
in-flight batches is answered with the original offsets. Kafka's snapshot
file keeps only the last batch of each producer (the v1 entry is a fixed
46-byte struct, ``producer_state.py``), and loading replays the log only
*after* the snapshot's offset, which after a clean shutdown or a completed
recovery is the log end offset. So after any restart Kafka knows one batch
per producer: a retry of one of the four before it is no duplicate and is
answered OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka treats as fatal.

Here the snapshot format stays exactly Kafka's. After the state is loaded,
:func:`restore_batch_metadata` reads the batch *headers* of the log before
the snapshot's offset, newest first, and puts back, for every producer that
came from the snapshot with fewer than five batches, the batches of its
current epoch that directly precede the oldest one it has: a batch counts
only if its sequence range ends right before that oldest batch's first
sequence (a gap means the producer's state was lost in between, and a live
broker would not have had it either). A producer is done at five batches,
at a batch of another epoch, at a gap, or at a batch starting at sequence 0
(the start of its epoch; a producer whose sequence wrapped past Int.MAX in
its last five batches keeps only those after the wrap).

Bound: windows ending where the newest wanted batch starts, 64 KiB first
and four times larger each time, each moved back to a batch boundary (the
offset index's entry at or before its start, or, where the index is sparser
than 64 KiB, the batch found by hopping over headers from that entry); the
walk stops when no producer wants more, at the log start offset, or once
:data:`TAIL_SCAN_BYTES` (16 MiB) of log per partition were read. A window
that starts inside a segment overshoots by at most 64 KiB or one batch, and
at most five do before the 16 MiB are reached: at most ~16.3 MiB plus five
batches. Only batch headers are parsed, no CRC and no record. A partition
without idempotent producers, or whose producers all have five batches or
start their epoch in the replayed tail, reads nothing. Retries come for
batches that were in flight when the broker stopped, that is appended just
before it: 16 MiB covers the last five 1 MB batches of three producers of
one partition even if every batch of one producer is followed by the others'.

Header of a v2 batch (the fields read)::

    BaseOffset Int64 | Length Int32 | PartitionLeaderEpoch Int32 | Magic Int8
    | Crc UInt32 | Attributes Int16 | LastOffsetDelta Int32 | BaseTimestamp Int64
    | MaxTimestamp Int64 | ProducerId Int64 | ProducerEpoch Int16 | BaseSequence Int32
    | RecordsCount Int32
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from broker.log.log_segments import LogSegments
from broker.log.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from broker.log.segment import LogSegment
from broker.records import legacy
from broker.records.batch import (
    CONTROL_FLAG_MASK,
    FIELD_INDEX,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    increment_sequence,
)

#: at most this many bytes of log are read per partition (see the module docstring)
TAIL_SCAN_BYTES = 16 << 20
#: the first window; each next one is WINDOW_GROWTH times larger
FIRST_WINDOW_BYTES = 64 << 10
WINDOW_GROWTH = 4
#: a window starts at most this far before its nominal start (or one batch)
MAX_INDEX_GAP = 64 << 10

INT_MAX = 2**31 - 1
# the fields of a HEADER_STRUCT tuple this module reads
_BASE_OFFSET = FIELD_INDEX["base_offset"]
_ATTRIBUTES = FIELD_INDEX["attributes"]
_LAST_DELTA = FIELD_INDEX["last_offset_delta"]
_MAX_TIMESTAMP = FIELD_INDEX["max_timestamp"]
_PRODUCER_ID = FIELD_INDEX["producer_id"]
_PRODUCER_EPOCH = FIELD_INDEX["producer_epoch"]
_BASE_SEQUENCE = FIELD_INDEX["base_sequence"]
_OFFSET_SIZE = struct.Struct(">qi")
#: the smallest legacy entry, offset and size included
_MIN_ENTRY = LOG_OVERHEAD + legacy.MIN_RECORD_SIZE


class TailScan(NamedTuple):
    bytes_read: int
    batches_restored: int


NOTHING_READ = TailScan(0, 0)


@dataclass(slots=True)
class _Wanted:
    entry: ProducerStateEntry
    #: first offset and first sequence of the oldest batch the entry has
    first_offset: int
    first_seq: int


def wanted_producers(producer_state: ProducerStateManager, loaded_from: int) -> dict[int, _Wanted]:
    """Producers whose batches before their oldest known one may be in the log:
    loaded from the snapshot at ``loaded_from`` (their oldest batch lies before
    it), fewer than five batches, oldest batch not the start of the epoch."""
    out = {}
    for pid, entry in producer_state.active_producers.items():
        batches = entry.batch_metadata
        if not batches or len(batches) >= NUM_BATCHES_TO_RETAIN:
            continue
        oldest = batches[0]
        if oldest.last_offset >= loaded_from or oldest.first_seq == 0:
            continue
        out[pid] = _Wanted(entry, oldest.first_offset, oldest.first_seq)
    return out


def restore_batch_metadata(
    producer_state: ProducerStateManager,
    segments: LogSegments,
    log_start_offset: int,
    loaded_from: int,
    max_bytes: int = TAIL_SCAN_BYTES,
) -> TailScan:
    """Put back the batches that precede each wanted producer's oldest batch
    (module docstring); ``loaded_from`` is the offset of the snapshot the
    state was loaded from (the log after it was replayed)."""
    wanted = wanted_producers(producer_state, loaded_from)
    if not wanted:
        return NOTHING_READ
    upper = max(w.first_offset for w in wanted.values())
    segment = segments.floor_segment(upper)
    if segment is None:
        return NOTHING_READ
    found = segment.translate_offset(upper)
    hi = segment.size if found is None else found.position
    window = FIRST_WINDOW_BYTES
    read = 0
    restored = 0
    while wanted and read < max_bytes:
        if hi == 0:
            lower = segments.lower_segment(segment.base_offset)
            if lower is None or segment.base_offset <= log_start_offset:
                break  # everything before this segment is below the log start
            segment = lower
            hi = segment.size
            continue
        lo = _batch_boundary_at_or_before(segment, max(0, hi - min(window, max_bytes - read)))
        data = segment.log.pread(lo, hi - lo)
        read += hi - lo
        batches, below_start = _producer_batches(data, wanted, log_start_offset)
        for header in reversed(batches):
            restored += _take(wanted, header)
            if not wanted:
                break
        if below_start:
            break
        hi = lo
        window *= WINDOW_GROWTH
    return TailScan(read, restored)


def _batch_boundary_at_or_before(segment: LogSegment, position: int) -> int:
    """A batch start at or before ``position``: the offset index's entry at or
    before it (entries point at the start of an append); if that lies more
    than :data:`MAX_INDEX_GAP` before it (a large ``index.interval.bytes``),
    the last batch start up to ``position``, found by hopping over batch
    headers from that entry instead of reading the bytes in between."""
    if position <= 0:
        return 0
    index = segment.offset_index
    slot = index.largest_lower_bound_slot(position, by_value=True)
    start = 0 if slot < 0 else index.entry(slot).position
    if position - start <= MAX_INDEX_GAP:
        return start
    boundary = start
    for batch in segment.log.iter_batches(start):
        if batch.position > position:
            break
        boundary = batch.position
    return boundary


def _producer_batches(
    data: bytes, wanted: dict[int, _Wanted], log_start_offset: int
) -> tuple[list[tuple[int, ...]], bool]:
    """The v2 headers (``HEADER_STRUCT`` fields) of wanted producers' batches in ``data``
    (whole batches from its start) at or above the log start offset, in file
    order, and whether a batch wholly below the log start offset was met
    (then every earlier one is below it too)."""
    out: list[tuple[int, ...]] = []
    below_start = False
    pos = 0
    end = len(data)
    unpack_v2 = HEADER_STRUCT.unpack_from
    unpack_offset_size = _OFFSET_SIZE.unpack_from
    while end - pos >= _MIN_ENTRY:
        base_offset, length = unpack_offset_size(data, pos)
        total = length + LOG_OVERHEAD
        if total < _MIN_ENTRY or pos + total > end:
            break  # cannot happen below a recovered log end; never read past it
        if data[pos + MAGIC_OFFSET] == MAGIC_V2 and total >= RECORD_BATCH_OVERHEAD:
            header = unpack_v2(data, pos)
            if base_offset + header[_LAST_DELTA] < log_start_offset:
                below_start = True
            elif header[_PRODUCER_ID] in wanted:
                out.append(header)
        elif base_offset < log_start_offset:  # a legacy entry: its offset is its last
            below_start = True
        pos += total
    return out, below_start


def _take(wanted: dict[int, _Wanted], header: tuple[int, ...]) -> int:
    """Walking backwards: restore the batch of ``header`` to its producer's
    entry if it is the one right before the oldest known; 1 if restored."""
    pid = header[_PRODUCER_ID]
    want = wanted.get(pid)
    base_offset = header[_BASE_OFFSET]
    delta = header[_LAST_DELTA]
    if want is None or base_offset + delta >= want.first_offset:
        return 0
    entry = want.entry
    if header[_PRODUCER_EPOCH] != entry.producer_epoch:
        del wanted[pid]  # an older epoch: nothing before it is a retry
        return 0
    if header[_ATTRIBUTES] & CONTROL_FLAG_MASK:
        return 0  # a transaction marker of this epoch (a log written by Kafka)
    base_seq = header[_BASE_SEQUENCE]
    last_seq = increment_sequence(base_seq, delta)
    if last_seq + 1 != want.first_seq and not (last_seq == INT_MAX and want.first_seq == 0):
        del wanted[pid]  # a gap: the state was lost in between
        return 0
    batches = entry.batch_metadata
    batches.appendleft(BatchMetadata(last_seq, base_offset + delta, delta, header[_MAX_TIMESTAMP]))
    want.first_offset = base_offset
    want.first_seq = base_seq
    if len(batches) >= NUM_BATCHES_TO_RETAIN or base_seq == 0:
        del wanted[pid]
    return 1
