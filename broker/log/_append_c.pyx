# cython: language_level=3
"""Compiled twin of ``_append_py.py``: the same state classes and the same function.

The state classes are extension types here: their fields are C struct
members (``int64_t`` where the reference documents an ``int``), exposed to
Python code as attributes of the same names, so the storage classes that
inherit them work unchanged while :func:`fast_append` reads and writes them
directly. The batch header is decoded from the buffer in C, the bytes are
written with ``pwrite(2)`` without the GIL, and the index entries are stored
into the index mappings directly.

Assigning a non-int (or None) to an ``int64_t`` field raises TypeError here
where the reference would accept it; the whole suite runs against both.
"""

from broker.log.results import LogAppendResult, TimestampOffset

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport errno
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "unistd.h" nogil:
    ssize_t pwrite(int fd, const void *buf, size_t count, long offset)


# ---- the append state (fields documented in _append_py.py) --------------------------------------


cdef class FileRecordsSlots:
    cdef public int fd
    cdef public int64_t _size


cdef class IndexSlots:
    cdef public object _mm
    cdef public int64_t _entries
    cdef public int64_t _max_entries
    cdef public int64_t _last_offset
    cdef public object _last


cdef class LazyIndexSlots:
    cdef public IndexSlots _index


cdef class SegmentSlots:
    cdef public FileRecordsSlots log
    cdef public LazyIndexSlots _offset_index
    cdef public LazyIndexSlots _time_index
    cdef public int64_t base_offset
    cdef public int64_t index_interval_bytes
    cdef public int64_t roll_jitter_ms
    cdef public int64_t created
    cdef public int64_t _bytes_since_last_index_entry
    cdef public object _rolling_based_timestamp
    cdef public object _max_timestamp_and_offset


cdef class SegmentListSlots:
    cdef public list _segments


cdef class LocalLogSlots:
    cdef public bint _closed
    cdef public int64_t _leo_offset
    cdef public int64_t _recovery_point
    cdef public object config
    cdef public SegmentListSlots segments


cdef class ProducerStateSlots:
    cdef public int64_t _last_map_offset


cdef class LeaderEpochSlots:
    cdef public list _epochs


cdef class UnifiedLogSlots:
    cdef public LocalLogSlots _local
    cdef public int64_t log_start_offset
    cdef public object _roll_config
    cdef public int64_t _max_segment_ms
    cdef public int64_t _roll_segment_bytes
    cdef public int64_t _roll_flush_messages
    cdef public object _time_ms
    cdef public ProducerStateSlots producer_state
    cdef public LeaderEpochSlots leader_epoch_cache


# ---- the hot path -------------------------------------------------------------------------------


cdef int64_t INT_MAX = 2147483647
# ``tuple.__new__(cls, values)`` builds a NamedTuple without running its
# Python-level ``__new__`` (a frame per call; about half the cost).
cdef object _tuple_new = tuple.__new__
cdef object _LogAppendResult = LogAppendResult
cdef object _TimestampOffset = TimestampOffset


cdef inline int64_t _i64(const uint8_t* b, Py_ssize_t p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | b[p + i]
    return <int64_t>v


cdef inline int32_t _i32(const uint8_t* b, Py_ssize_t p) noexcept nogil:
    return <int32_t>((<uint32_t>b[p] << 24) | (<uint32_t>b[p + 1] << 16)
                     | (<uint32_t>b[p + 2] << 8) | <uint32_t>b[p + 3])


cdef inline void _put32(uint8_t* m, Py_ssize_t at, uint32_t v) noexcept nogil:
    m[at] = (v >> 24) & 0xFF
    m[at + 1] = (v >> 16) & 0xFF
    m[at + 2] = (v >> 8) & 0xFF
    m[at + 3] = v & 0xFF


cdef int _store(object mapping, Py_ssize_t at, uint32_t a, uint32_t b_, uint32_t c, int n) except -1:
    """Write n (2 or 3) big-endian words into an index mapping (a plain
    buffer request: cheaper than a typed memoryview on this path)."""
    cdef Py_buffer mb
    PyObject_GetBuffer(mapping, &mb, PyBUF_WRITABLE)
    try:
        if at + 4 * n > mb.len:
            raise IndexError("index entry past the end of the mapping")
        _put32(<uint8_t*>mb.buf, at, a)
        _put32(<uint8_t*>mb.buf, at + 4, b_)
        if n == 3:
            _put32(<uint8_t*>mb.buf, at + 8, c)
    finally:
        PyBuffer_Release(&mb)
    return 0


def fast_append(UnifiedLogSlots log not None, records):
    cdef Py_buffer rb
    PyObject_GetBuffer(records, &rb, PyBUF_SIMPLE)
    try:
        return _fast_append(log, records, <const uint8_t*>rb.buf, rb.len)
    finally:
        PyBuffer_Release(&rb)


cdef object _fast_append(UnifiedLogSlots log, records, const uint8_t* b, Py_ssize_t size):
    cdef int64_t base, last, max_ts, position, relative, first_ts, waited, seg_bytes
    cdef int64_t since, ts, ts_offset, segment_base, last_ts
    cdef int32_t epoch
    cdef ssize_t written
    cdef Py_ssize_t entries, n
    cdef LocalLogSlots local
    cdef SegmentSlots segment
    cdef FileRecordsSlots flog
    cdef IndexSlots offset_index, time_index
    cdef list segments, epochs
    cdef object max_so_far, time_last  # TimestampOffset: indexed as <tuple>
    if size < 61 or b[16] != 2:
        return None
    local = log._local
    if local is None or local._closed:
        return None
    base = _i64(b, 0)
    if _i32(b, 8) + 12 != size or _i64(b, 43) != -1 or base != local._leo_offset:
        return None
    if local.config is not log._roll_config:
        return None
    seg_bytes = log._roll_segment_bytes
    if size > seg_bytes:
        return None
    last = base + _i32(b, 23)
    max_ts = _i64(b, 35)
    epoch = _i32(b, 12)
    if local.segments is None:
        return None
    segments = local.segments._segments
    n = len(segments)
    if n == 0:
        return None
    segment = <SegmentSlots?>segments[n - 1]
    if segment is None or log.producer_state is None or log.leader_epoch_cache is None:
        return None
    flog = segment.log
    if flog is None:
        return None
    position = flog._size
    if position > seg_bytes - size:
        return None
    if position > 0:
        first = segment._rolling_based_timestamp
        if first is None:
            return None
        first_ts = first
        if first_ts >= 0:
            waited = max_ts - first_ts
        else:
            waited = log._time_ms() - segment.created
        if waited > log._max_segment_ms - segment.roll_jitter_ms:
            return None
    if segment._offset_index is None or segment._time_index is None:
        return None
    offset_index = segment._offset_index._index
    time_index = segment._time_index._index
    found = segment._max_timestamp_and_offset
    # None until loaded; a TimestampOffset (a tuple subclass) otherwise
    if offset_index is None or time_index is None or not isinstance(found, tuple):
        return None
    max_so_far = found
    segment_base = segment.base_offset
    relative = last - segment_base
    if (
        relative < 0
        or relative > INT_MAX
        or offset_index._entries >= offset_index._max_entries
        or time_index._entries >= time_index._max_entries - 1
    ):
        return None
    # from here on: the append
    if epoch >= 0:
        cache = log.leader_epoch_cache
        epochs = cache._epochs
        latest = epochs[len(epochs) - 1] if epochs else None
        if not isinstance(latest, tuple) or (<tuple>latest)[0] != epoch:  # EpochEntry.epoch
            cache.assign(epoch, base)
    if position == 0:
        segment._rolling_based_timestamp = max_ts
    with nogil:
        written = pwrite(flog.fd, b, size, position)
    if written < 0:
        raise OSError(errno, "pwrite failed", str(flog.path))
    if written != size:
        flog.finish_short_write(records, position, written)
    flog._size = position + size
    if max_ts > <int64_t>(<tuple>max_so_far)[0]:
        max_so_far = _tuple_new(_TimestampOffset, (max_ts, last))
        segment._max_timestamp_and_offset = max_so_far
    since = segment._bytes_since_last_index_entry
    if since > segment.index_interval_bytes:
        entries = offset_index._entries
        if entries and last > offset_index._last_offset and offset_index._mm is not None:
            _store(offset_index._mm, entries * 8, <uint32_t>relative, <uint32_t>position, 0, 2)
            offset_index._entries = entries + 1
            offset_index._last_offset = last
        else:
            offset_index.append(last, position)
        ts = (<tuple>max_so_far)[0]
        ts_offset = (<tuple>max_so_far)[1]
        entries = time_index._entries
        time_last = time_index._last
        if entries and isinstance(time_last, tuple):
            last_ts = (<tuple>time_last)[0]
            if (
                ts > last_ts
                and ts_offset >= <int64_t>(<tuple>time_last)[1]
                and time_index._mm is not None
            ):
                _store(
                    time_index._mm,
                    entries * 12,
                    <uint32_t>(<uint64_t>ts >> 32),
                    <uint32_t>(<uint64_t>ts & 0xFFFFFFFFU),
                    <uint32_t>(ts_offset - segment_base),
                    3,
                )
                time_index._entries = entries + 1
                time_index._last = max_so_far
            elif ts > last_ts:
                time_index.maybe_append(ts, ts_offset)
        else:
            time_index.maybe_append(ts, ts_offset)
        segment._bytes_since_last_index_entry = size
    else:
        segment._bytes_since_last_index_entry = since + size
    local._leo_offset = last + 1
    log.producer_state._last_map_offset = last + 1
    if last + 1 - local._recovery_point >= log._roll_flush_messages:
        log.flush()
    return _tuple_new(_LogAppendResult, (base, last, max_ts, last, log.log_start_offset))
