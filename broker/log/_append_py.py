"""Pure-Python reference of the produce hot path (twin of ``_append_c.pyx``).

Two parts:

* The **append state**: the fields the hot path reads and writes on every
  append, declared as slot base classes of the storage classes that own
  them (``FileRecords`` <- :class:`FileRecordsSlots`, ``AbstractIndex`` <-
  :class:`IndexSlots`, ``LazyIndex``, ``LogSegment``, ``LogSegments``,
  ``LocalLog``, ``UnifiedLog``, ``ProducerStateManager``,
  ``LeaderEpochCache``). Here they are plain ``__slots__``; the compiled twin
  declares the same names as C fields of extension types, so its
  :func:`fast_append` reads them as struct members instead of attribute
  lookups (about 55 per append, a measurable share of a 16 KB append;
  docs/performance.md), while Python code keeps using them as attributes. The
  owning classes import them from ``broker.log.appender``, so one switch
  picks both parts together.
* :func:`fast_append` appends one v2 batch without producer id that starts
  at the log end offset when no roll is due -- the common produce request --
  with exactly the effects of ``UnifiedLog.prepare_append`` +
  ``commit_append`` (leader epoch, roll check, ``LogSegment.append`` with its
  index entries, LEO, producer-state end offset, ``flush.messages``). It
  returns None *before any side effect* whenever a precondition does not
  hold (other magic, several batches, a producer id, a roll due, an index
  not open or full, the max timestamp not loaded yet, a config not seen yet);
  the caller then takes the general path. ``tests/unit/log/test_unified_log.py``
  checks that both paths write the same bytes.

The fields of each state class, typed as the compiled twin stores them
(``int`` = C int64; everything else a Python object):

============================  ==================================================
class                         fields
============================  ==================================================
FileRecordsSlots              fd (C int), _size
IndexSlots                    _mm, _entries, _max_entries, _last_offset (offset
                              index), _last (time index: a TimestampOffset)
LazyIndexSlots                _index (IndexSlots or None)
SegmentSlots                  log, _offset_index, _time_index, base_offset,
                              index_interval_bytes, roll_jitter_ms, created,
                              _bytes_since_last_index_entry,
                              _rolling_based_timestamp (int or None),
                              _max_timestamp_and_offset (TimestampOffset or None)
SegmentListSlots              _segments (list)
LocalLogSlots                 _closed (bool), _leo_offset, _recovery_point,
                              config, segments
UnifiedLogSlots               _local, log_start_offset, _roll_config,
                              _max_segment_ms, _roll_segment_bytes,
                              _roll_flush_messages, _time_ms, producer_state,
                              leader_epoch_cache
ProducerStateSlots            _last_map_offset
LeaderEpochSlots              _epochs (list of EpochEntry)
============================  ==================================================
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from typing import Any

from broker.log.results import LogAppendResult, TimestampOffset

INT_MAX = 2**31 - 1
_V2 = struct.Struct(">qiibIhiqqqhii")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


# ---- the append state (see the module docstring) ------------------------------------------------


class FileRecordsSlots:
    __slots__ = ("_size", "fd")
    fd: int
    _size: int


class IndexSlots:
    __slots__ = ("_entries", "_last", "_last_offset", "_max_entries", "_mm")
    _mm: mmap.mmap | None
    _entries: int
    _max_entries: int
    #: the offset index's last offset (unused by the time index)
    _last_offset: int
    #: the time index's last entry (unused by the offset index)
    _last: TimestampOffset


class LazyIndexSlots:
    __slots__ = ("_index",)
    _index: IndexSlots | None


class SegmentSlots:
    __slots__ = (
        "_bytes_since_last_index_entry",
        "_max_timestamp_and_offset",
        "_offset_index",
        "_rolling_based_timestamp",
        "_time_index",
        "base_offset",
        "created",
        "index_interval_bytes",
        "log",
        "roll_jitter_ms",
    )
    log: FileRecordsSlots
    _offset_index: LazyIndexSlots
    _time_index: LazyIndexSlots
    base_offset: int
    index_interval_bytes: int
    roll_jitter_ms: int
    created: int
    _bytes_since_last_index_entry: int
    _rolling_based_timestamp: int | None
    _max_timestamp_and_offset: TimestampOffset | None


class SegmentListSlots:
    __slots__ = ("_segments",)
    _segments: list[Any]


class LocalLogSlots:
    __slots__ = ("_closed", "_leo_offset", "_recovery_point", "config", "segments")
    _closed: bool
    _leo_offset: int
    _recovery_point: int
    config: Any
    segments: SegmentListSlots


class ProducerStateSlots:
    __slots__ = ("_last_map_offset",)
    _last_map_offset: int


class LeaderEpochSlots:
    __slots__ = ("_epochs",)
    _epochs: list[Any]


class UnifiedLogSlots:
    __slots__ = (
        "_local",
        "_max_segment_ms",
        "_roll_config",
        "_roll_flush_messages",
        "_roll_segment_bytes",
        "_time_ms",
        "leader_epoch_cache",
        "log_start_offset",
        "producer_state",
    )
    _local: LocalLogSlots
    log_start_offset: int
    #: the config the three numbers below were taken from (``prepare_append``)
    _roll_config: Any
    _max_segment_ms: int
    _roll_segment_bytes: int
    _roll_flush_messages: int
    _time_ms: Callable[[], int]
    producer_state: ProducerStateSlots
    leader_epoch_cache: LeaderEpochSlots


# ---- the hot path -----------------------------------------------------------------------------


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
    if local.config is not log._roll_config:
        return None
    segment_bytes = log._roll_segment_bytes
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
    if last + 1 - local._recovery_point >= log._roll_flush_messages:
        log.flush()
    return LogAppendResult(base, last, max_ts, last, log.log_start_offset)
