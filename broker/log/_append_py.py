"""Pure-Python reference of the produce hot path (twin of ``_append_c.pyx``).

:func:`fast_append` appends one v2 batch without producer id that starts at
the log end offset when no roll is due -- the common produce request --
with exactly the effects of ``UnifiedLog.prepare_append`` +
``commit_append`` (leader epoch, roll check, ``LogSegment.append`` with its
index entries, LEO, producer-state end offset, ``flush.messages``). It
returns None *before any side effect* whenever a precondition does not hold
(other magic, several batches, a producer id, a roll due, an index not open
or full, the max timestamp not loaded yet, a config not seen yet); the
caller then takes the general path.

It reads and writes the attributes of the log, segment and index objects
directly: those classes own the state, this function is their inlined hot
path, and ``tests/unit/log/test_unified_log.py`` checks that both paths
write the same bytes.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from broker.log.results import LogAppendResult
from broker.log.time_index import TimestampOffset

INT_MAX = 2**31 - 1
_V2 = struct.Struct(">qiibIhiqqqhii")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def fast_append(log: Any, records: Any) -> LogAppendResult | None:
    view = records if isinstance(records, memoryview) else memoryview(records)
    size = view.nbytes
    if size < 61 or view[16] != 2:
        return None
    local = log._local
    if local._closed:
        return None
    h = _V2.unpack_from(view, 0)
    base = h[0]
    if h[1] + 12 != size or h[9] != -1 or base != local._leo_offset:
        return None
    config = local.config
    if config is not log._roll_config:
        return None
    segment_bytes = config.segment_bytes
    if size > segment_bytes:
        return None
    last = base + h[6]
    max_ts = h[8]
    epoch = h[2]
    # LogSegment.shouldRoll
    segment = local.segments._segments[-1]
    flog = segment.log
    position = flog._size
    if position > segment_bytes - size:
        return None
    if position > 0:
        first_ts = segment._rolling_based_timestamp
        if first_ts is None:
            return None
        waited = max_ts - first_ts if first_ts >= 0 else log._time_ms() - segment.created
        if waited > log._max_segment_ms - segment.roll_jitter_ms:
            return None
    offset_index = segment._offset_index._index
    time_index = segment._time_index._index
    max_so_far = segment._max_timestamp_and_offset
    if offset_index is None or time_index is None or max_so_far is None:
        return None
    relative = last - segment.base_offset
    if (
        relative < 0
        or relative > INT_MAX
        or offset_index._entries >= offset_index._max_entries
        or time_index._entries >= time_index._max_entries - 1
    ):
        return None
    # from here on: the append (UnifiedLog.append steps 6 and 10)
    if epoch >= 0:
        epochs = log.leader_epoch_cache._epochs
        if not epochs or epochs[-1].epoch != epoch:
            log.leader_epoch_cache.assign(epoch, base)
    if position == 0:
        segment._rolling_based_timestamp = max_ts
    written = os.pwrite(flog.fd, view, position)
    if written != size:
        flog.finish_short_write(view, position, written)
    flog._size = position + size
    if max_ts > max_so_far.timestamp:
        max_so_far = TimestampOffset(max_ts, last)
        segment._max_timestamp_and_offset = max_so_far
    since = segment._bytes_since_last_index_entry
    if since > segment.index_interval_bytes:
        entries = offset_index._entries
        if entries and last > offset_index._last_offset and offset_index._mm is not None:
            _OFFSET_ENTRY.pack_into(offset_index._mm, entries * 8, relative, position)
            offset_index._entries = entries + 1
            offset_index._last_offset = last
        else:
            offset_index.append(last, position)
        time_last = time_index._last
        ts = max_so_far.timestamp
        entries = time_index._entries
        if (
            entries
            and ts > time_last.timestamp
            and max_so_far.offset >= time_last.offset
            and time_index._mm is not None
        ):
            _TIME_ENTRY.pack_into(
                time_index._mm, entries * 12, ts, max_so_far.offset - segment.base_offset
            )
            time_index._entries = entries + 1
            time_index._last = max_so_far
        elif ts > time_last.timestamp or entries == 0:
            time_index.maybe_append(ts, max_so_far.offset)
        segment._bytes_since_last_index_entry = size
    else:
        segment._bytes_since_last_index_entry = since + size
    local._leo_offset = last + 1
    log.producer_state._last_map_offset = last + 1
    if last + 1 - local._recovery_point >= config.flush_messages:
        log.flush()
    return LogAppendResult(base, last, max_ts, last, log.log_start_offset)
