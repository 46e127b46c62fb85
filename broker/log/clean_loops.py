"""The one place that chooses the implementation of the log cleaner's loops.

``_clean_py`` is the readable reference, ``_clean_c`` its compiled twin (the
same names, the same results), picked by ``broker.records.twins`` (the twin
when it was built and ``BROKER_NO_EXTENSIONS`` is not set).
``IMPLEMENTATION`` says which one runs.

The twins' names (what each does is documented in ``_clean_py.py``)::

    OffsetMap(memory, superseded_memory=0)
                                         SkimpyOffsetMap: put/get/put_hash/get_hash,
                                         clear, slots, size, latest_offset,
                                         update_latest_offset, utilization; and the
                                         superseded bitmap: track_superseded(start, end),
                                         superseded(offset) -> 1 | 0 | -1
    ActiveProducers({pid: (last data offset | -1, epoch)})
        .is_last_batch(pid, last_offset, is_control, epoch)
    md5(key) -> 16 bytes
    map_chunk(map, buf, start, end, *, start_offset, max_entries)
        -> (pos, DONE | MAP_FULL | NEEDS_CODEC, records read)
    map_records(map, buf, pos, end, *, count, base_offset, start_offset, max_entries)
        -> (full, records read)
    filter_chunk(map, producers, buf, start, end, *, out, out_pos, latest_offset, now,
                 new_horizon, retain_legacy_deletes)
        -> (pos, out_end, DONE | NEEDS_CODEC | OUT_FULL, read, kept, bytes read, invalid)
    filter_records(map, buf, pos, end, *, count, base_offset, base_timestamp,
                   log_append_time, horizon, now, new_horizon, latest_offset, out, out_pos)
        -> (KEEP_ALL | KEEP_NONE | REBUILT, out_end, kept, invalid, base_timestamp,
            max_timestamp, horizon)
    keep_record(map, key | None, *, has_value, offset, latest_offset, retain_deletes)
        -> 1 | 0 | -1
    write_v2_header(out, pos, size, *, source, source_pos, attributes, base_timestamp,
                    max_timestamp, count)
    write_empty_batch(out, pos, source, source_pos) -> end
    rebuilt_attributes(source_attributes, codec, has_horizon) -> attributes
    error(code, a, b, c) -> the exception of an error code

The compiled walks release the GIL while they run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.log import _clean_py
from broker.log._clean_py import (
    DONE,
    KEEP_ALL,
    KEEP_NONE,
    MAP_FULL,
    NEEDS_CODEC,
    OUT_FULL,
    REBUILT,
)
from broker.records import twins

impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(_clean_py, "broker.log._clean_c")

if TYPE_CHECKING:  # the checker sees the reference's declarations (same names)
    from broker.log._clean_py import ActiveProducers, OffsetMap
else:
    OffsetMap = impl.OffsetMap
    ActiveProducers = impl.ActiveProducers

md5 = impl.md5
map_chunk = impl.map_chunk
map_records = impl.map_records
filter_chunk = impl.filter_chunk
filter_records = impl.filter_records
keep_record = impl.keep_record
write_v2_header = impl.write_v2_header
write_empty_batch = impl.write_empty_batch
rebuilt_attributes = impl.rebuilt_attributes

__all__ = [
    "DONE",
    "FALLBACK_REASON",
    "IMPLEMENTATION",
    "KEEP_ALL",
    "KEEP_NONE",
    "MAP_FULL",
    "NEEDS_CODEC",
    "OUT_FULL",
    "REBUILT",
    "ActiveProducers",
    "OffsetMap",
    "filter_chunk",
    "filter_records",
    "keep_record",
    "map_chunk",
    "map_records",
    "md5",
    "rebuilt_attributes",
    "write_empty_batch",
    "write_v2_header",
]
