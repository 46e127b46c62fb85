"""Reads a ``__consumer_offsets`` partition back into its shard (``CoordinatorLoaderImpl``).

From the log start offset to the log end offset, ``offsets.load.buffer.size``
bytes at a time, every record of every data batch is replayed in offset
order (control batches are skipped): last record wins, a null value is a
tombstone. The log need not be compacted; a compacted one loads the same.
Between slices the event loop serves other work, so loading 100 MB does
not stall the broker; the shard answers COORDINATOR_LOAD_IN_PROGRESS until
it is done. A record of a type we do not know is logged and skipped, as
Kafka does; one that does not decode stops the load with its error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from broker.group_records.schema import UnknownRecordTypeError
from broker.log.unified_log import UnifiedLog
from broker.records.batch import MAGIC_V2
from broker.records.iterate import iter_batches

log = logging.getLogger(__name__)

Replay = Callable[[int, bytes | None, bytes | None], None]


async def load_partition(log_: UnifiedLog, replay: Replay, buffer_size: int) -> int:
    """Replay every record of ``log_``; returns how many records were read."""
    offset = log_.log_start_offset
    count = 0
    while offset < log_.log_end_offset:
        info = log_.read(offset, buffer_size, min_one_message=True)
        data = info.records.read() if info.records is not None else b""
        next_offset = offset
        for batch in iter_batches(data, 0, len(data), file=True):
            if batch.magic >= MAGIC_V2:
                header = batch.header()
                next_offset = header.last_offset + 1
                if header.is_control_batch:
                    continue
            records = batch.records()
            for record in records:
                if record.offset < offset:
                    continue  # a legacy wrapper starting before the slice
                try:
                    replay(record.offset, record.key, record.value)
                except UnknownRecordTypeError as exc:
                    log.warning(
                        "Unknown record type %d at offset %d of %s; ignoring it.",
                        exc.record_type,
                        record.offset,
                        log_.topic_partition,
                    )
                count += 1
                next_offset = max(next_offset, record.offset + 1)
        if next_offset <= offset:
            break  # nothing complete past ``offset`` (a torn tail is recovery's to cut)
        offset = next_offset
        await asyncio.sleep(0)
    return count
