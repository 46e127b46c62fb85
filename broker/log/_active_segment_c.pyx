# cython: language_level=3
"""Compiled twin of ``_active_segment_py.py``: the same class, fields and methods.

``ActiveSegment`` is an extension type here: its fields are C struct
members (``int64_t`` where the reference documents an int), exposed to
Python under the same names, so the storage objects' held fields
(``broker.log.held_field``) read them as attributes while the append reads
and writes them directly. The batch header is decoded from the buffer in
C, the bytes are written with ``pwrite(2)`` without the GIL, and the index
entries (layout in the reference's docstring) are stored into the index
mappings directly.

Assigning a non-int (or None) to an ``int64_t`` field raises TypeError here
where the reference would accept it; the log's tests run against both.
"""

from broker.log.errors import LogSegmentOffsetOverflowError
from broker.log.results import LogAppendResult, TimestampOffset

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport errno
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "unistd.h" nogil:
    ssize_t pwrite(int fd, const void *buf, size_t count, long offset)


from broker.records import batch as _batch

# The v2 header layout of broker.records.batch as C constants under the same
# names; checked against that module at import, below.
cdef enum:
    LOG_OVERHEAD = 12
    LENGTH_OFFSET = 8
    PARTITION_LEADER_EPOCH_OFFSET = 12
    MAGIC_OFFSET = 16
    LAST_OFFSET_DELTA_OFFSET = 23
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    RECORDS_OFFSET = 61
    MAGIC_V2 = 2
    NO_PRODUCER_ID = -1

if (
    LOG_OVERHEAD, LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, MAGIC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET, PRODUCER_ID_OFFSET, RECORDS_OFFSET,
    MAGIC_V2, NO_PRODUCER_ID,
) != (
    _batch.LOG_OVERHEAD, _batch.LENGTH_OFFSET, _batch.PARTITION_LEADER_EPOCH_OFFSET,
    _batch.MAGIC_OFFSET, _batch.LAST_OFFSET_DELTA_OFFSET, _batch.MAX_TIMESTAMP_OFFSET,
    _batch.PRODUCER_ID_OFFSET, _batch.RECORDS_OFFSET, _batch.MAGIC_V2, _batch.NO_PRODUCER_ID,
):
    raise ImportError("_active_segment_c's layout constants differ from broker.records'")

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


cdef class ActiveSegment:
    # the log's
    cdef public int64_t log_end_offset
    cdef public int64_t recovery_point
    cdef public int64_t log_start_offset
    cdef public int64_t map_end_offset
    cdef public bint closed
    cdef public object config
    cdef public int64_t max_segment_ms
    cdef public int64_t segment_bytes
    cdef public int64_t flush_messages
    cdef public object producer_state
    cdef public object leader_epoch_cache
    cdef public object time_ms
    # the active segment's
    cdef public object segment
    cdef public object log_file
    cdef public int fd
    cdef public int64_t size
    cdef public object offset_index
    cdef public object oi_mm
    cdef public int64_t oi_entries
    cdef public int64_t oi_max_entries
    cdef public int64_t oi_last_offset
    cdef public object time_index
    cdef public object ti_mm
    cdef public int64_t ti_entries
    cdef public int64_t ti_max_entries
    cdef public object ti_last
    cdef public int64_t base_offset
    cdef public int64_t index_interval_bytes
    cdef public int64_t roll_jitter_ms
    cdef public int64_t created
    cdef public int64_t bytes_since_last_index_entry
    cdef public object rolling_based_timestamp
    cdef public object max_timestamp_and_offset

    def __init__(self, int64_t log_end_offset=0, int64_t recovery_point=0):
        self.log_end_offset = log_end_offset
        self.recovery_point = recovery_point
        self.log_start_offset = 0
        self.closed = False
        self.config = None
        self.max_segment_ms = 0
        self.segment_bytes = 0
        self.flush_messages = 0
        self.producer_state = None
        self.leader_epoch_cache = None
        self.map_end_offset = 0
        self.time_ms = None
        self.segment = None
        self.log_file = None
        self.fd = -1
        self.size = 0
        self.offset_index = None
        self.oi_mm = None
        self.oi_entries = 0
        self.oi_max_entries = 0
        self.oi_last_offset = 0
        self.time_index = None
        self.ti_mm = None
        self.ti_entries = 0
        self.ti_max_entries = 0
        self.ti_last = _tuple_new(_TimestampOffset, (-1, 0))
        self.base_offset = 0
        self.index_interval_bytes = 0
        self.roll_jitter_ms = 0
        self.created = 0
        self.bytes_since_last_index_entry = 0
        self.rolling_based_timestamp = None
        self.max_timestamp_and_offset = None

    # ---- configuration ------------------------------------------------------------------

    def configure(self, config):
        self.config = config
        self.max_segment_ms = config.max_segment_ms
        self.segment_bytes = config.segment_bytes
        self.flush_messages = config.flush_messages

    def bind(self, producer_state, leader_epoch_cache, time_ms):
        self.map_end_offset = producer_state._last_map_offset
        producer_state._active = self
        self.producer_state = producer_state
        self.leader_epoch_cache = leader_epoch_cache
        self.time_ms = time_ms

    # ---- which segment ----------------------------------------------------------------------

    def attach(self, segment):
        if segment is self.segment:
            return
        self.detach()
        if segment is None:
            return
        if segment._active is not None:
            segment._active.detach()
        log = segment.log
        self.size = log.size
        self.fd = log.fd
        self.base_offset = segment.base_offset
        self.index_interval_bytes = segment.index_interval_bytes
        self.roll_jitter_ms = segment.roll_jitter_ms
        self.created = segment.created
        self.bytes_since_last_index_entry = segment._bytes_since_last_index_entry
        self.rolling_based_timestamp = segment._rolling_based_timestamp
        self.max_timestamp_and_offset = segment._max_timestamp_and_offset
        self.log_file = log
        self.segment = segment
        log._active = self
        segment._active = self
        self._attach_indexes(segment)

    cdef _attach_indexes(self, segment):
        if self.offset_index is None:
            offset_index = segment._offset_index._index
            if offset_index is not None:
                self.oi_mm = offset_index._mm
                self.oi_entries = offset_index._entries
                self.oi_max_entries = offset_index._max_entries
                self.oi_last_offset = offset_index._last_offset
                self.offset_index = offset_index
                offset_index._active = self
        if self.time_index is None:
            time_index = segment._time_index._index
            if time_index is not None:
                self.ti_mm = time_index._mm
                self.ti_entries = time_index._entries
                self.ti_max_entries = time_index._max_entries
                self.ti_last = time_index._last
                self.time_index = time_index
                time_index._active = self

    cdef _open_indexes(self, segment):
        segment._offset_index.get()
        segment._time_index.get()
        self._attach_indexes(segment)

    def detach(self):
        segment = self.segment
        if segment is None:
            return
        offset_index = self.offset_index
        if offset_index is not None:
            offset_index._active = None
            offset_index._mm = self.oi_mm
            offset_index._entries = self.oi_entries
            offset_index._max_entries = self.oi_max_entries
            offset_index._last_offset = self.oi_last_offset
        time_index = self.time_index
        if time_index is not None:
            time_index._active = None
            time_index._mm = self.ti_mm
            time_index._entries = self.ti_entries
            time_index._max_entries = self.ti_max_entries
            time_index._last = self.ti_last
        log = segment.log
        log._active = None
        log.size = self.size
        segment._active = None
        segment.created = self.created
        segment._bytes_since_last_index_entry = self.bytes_since_last_index_entry
        segment._rolling_based_timestamp = self.rolling_based_timestamp
        segment._max_timestamp_and_offset = self.max_timestamp_and_offset
        self.segment = None
        self.log_file = None
        self.fd = -1
        self.offset_index = None
        self.time_index = None
        self.oi_mm = None
        self.ti_mm = None

    # ---- the rules ---------------------------------------------------------------------------

    def should_roll(
        self,
        *,
        int64_t max_segment_ms,
        int64_t max_segment_bytes,
        int64_t max_timestamp_in_messages,
        int64_t max_offset_in_messages,
        int64_t messages_size,
        time_ms,
    ):
        return self._should_roll(
            max_segment_ms,
            max_segment_bytes,
            max_timestamp_in_messages,
            max_offset_in_messages,
            messages_size,
            time_ms,
        )

    cdef bint _should_roll(
        self,
        int64_t max_segment_ms,
        int64_t max_segment_bytes,
        int64_t max_timestamp_in_messages,
        int64_t max_offset_in_messages,
        int64_t messages_size,
        object time_ms,
    ) except -1:
        cdef int64_t size, first, waited, relative
        segment = self.segment
        if segment is None:
            raise AssertionError("no active segment")
        size = self.size
        if size > max_segment_bytes - messages_size:
            return True
        if size > 0:
            found = self.rolling_based_timestamp
            if found is None:
                segment._load_first_batch_timestamp()
                found = self.rolling_based_timestamp
            if found is not None and <int64_t>found >= 0:
                first = found
                waited = max_timestamp_in_messages - first
            else:
                waited = <int64_t>time_ms() - self.created
            if waited > max_segment_ms - self.roll_jitter_ms:
                return True
        if self.offset_index is None or self.time_index is None:
            self._open_indexes(segment)
        relative = max_offset_in_messages - self.base_offset
        return (
            self.oi_entries >= self.oi_max_entries
            or self.ti_entries >= self.ti_max_entries - 1
            or relative < 0
            or relative > INT_MAX
        )

    def append_to_segment(
        self,
        int64_t largest_offset,
        int64_t largest_timestamp_ms,
        int64_t shallow_offset_of_max_timestamp,
        records,
    ):
        self._append_records(
            largest_offset, largest_timestamp_ms, shallow_offset_of_max_timestamp, records
        )

    cdef int _append_records(
        self,
        int64_t largest_offset,
        int64_t largest_timestamp_ms,
        int64_t shallow_offset_of_max_timestamp,
        records,
    ) except -1:
        """:meth:`_append_to_segment` on the bytes of ``records`` (any buffer),
        held for the call."""
        cdef Py_buffer rb
        PyObject_GetBuffer(records, &rb, PyBUF_SIMPLE)
        try:
            self._append_to_segment(
                largest_offset,
                largest_timestamp_ms,
                shallow_offset_of_max_timestamp,
                records,
                <const uint8_t*>rb.buf,
                rb.len,
            )
        finally:
            PyBuffer_Release(&rb)
        return 0

    cdef int _append_to_segment(
        self,
        int64_t largest_offset,
        int64_t largest_timestamp_ms,
        int64_t shallow_offset_of_max_timestamp,
        records,
        const uint8_t* b,
        Py_ssize_t size,
    ) except -1:
        cdef int64_t position, relative, since
        cdef ssize_t written
        if size == 0:
            return 0
        segment = self.segment
        log = self.log_file
        if segment is None or log is None:
            raise AssertionError("no active segment")
        if self.offset_index is None or self.time_index is None:
            self._open_indexes(segment)
        position = self.size
        if position == 0:
            self.rolling_based_timestamp = largest_timestamp_ms
        relative = largest_offset - self.base_offset
        if relative < 0 or relative > INT_MAX:
            raise LogSegmentOffsetOverflowError(self.base_offset, largest_offset)
        with nogil:
            written = pwrite(self.fd, b, size, position)
        if written < 0:
            raise OSError(errno, "pwrite failed", str(log.path))
        if written != size:
            log.finish_short_write(records, position, written)
        self.size = position + size
        max_so_far = self.max_timestamp_and_offset
        if max_so_far is None:
            max_so_far = segment.read_max_timestamp_and_offset_so_far()
        if not isinstance(max_so_far, tuple):  # a TimestampOffset (a NamedTuple)
            raise TypeError(f"max timestamp and offset {max_so_far!r}")
        if largest_timestamp_ms > <int64_t>(<tuple>max_so_far)[0]:
            max_so_far = _tuple_new(
                _TimestampOffset, (largest_timestamp_ms, shallow_offset_of_max_timestamp)
            )
            self.max_timestamp_and_offset = max_so_far
        since = self.bytes_since_last_index_entry
        if since > self.index_interval_bytes:
            self._index_entries(largest_offset, relative, position, max_so_far)
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry = since + size
        return 0

    cdef int _index_entries(
        self, int64_t largest_offset, int64_t relative, int64_t position, object max_so_far
    ) except -1:
        cdef int64_t entries, ts, ts_offset, last_ts, last_offset
        if self.offset_index is None or self.time_index is None:
            raise AssertionError("indexes not open")
        entries = self.oi_entries
        if (
            self.oi_mm is not None
            and entries < self.oi_max_entries
            and (entries == 0 or largest_offset > self.oi_last_offset)
        ):
            _store(self.oi_mm, entries * 8, <uint32_t>relative, <uint32_t>position, 0, 2)
            self.oi_entries = entries + 1
            self.oi_last_offset = largest_offset
        else:
            self.offset_index.append(largest_offset, position)
        last = self.ti_last
        if not isinstance(last, tuple):  # a TimestampOffset
            raise TypeError(f"last time index entry {last!r}")
        last_ts = (<tuple>last)[0]
        last_offset = (<tuple>last)[1]
        ts = (<tuple>max_so_far)[0]
        ts_offset = (<tuple>max_so_far)[1]
        entries = self.ti_entries
        if (
            self.ti_mm is not None
            and ts > last_ts
            and ts_offset >= last_offset
            and entries < self.ti_max_entries - 1
        ):
            _store(
                self.ti_mm,
                entries * 12,
                <uint32_t>(<uint64_t>ts >> 32),
                <uint32_t>(<uint64_t>ts & 0xFFFFFFFFU),
                <uint32_t>(ts_offset - self.base_offset),
                3,
            )
            self.ti_entries = entries + 1
            self.ti_last = max_so_far
        elif ts > last_ts or entries == 0:
            self.time_index.maybe_append(ts, ts_offset)
        return 0

    def append(
        self,
        int64_t largest_offset,
        int64_t largest_timestamp_ms,
        int64_t shallow_offset_of_max_timestamp,
        records,
    ):
        self._append_records(
            largest_offset, largest_timestamp_ms, shallow_offset_of_max_timestamp, records
        )
        self.log_end_offset = largest_offset + 1

    def flush_due(self):
        return self._flush_due()

    cdef inline bint _flush_due(self) noexcept:
        return self.log_end_offset - self.recovery_point >= self.flush_messages

    def append_batch(self, log, records):
        cdef Py_buffer rb
        PyObject_GetBuffer(records, &rb, PyBUF_SIMPLE)
        try:
            return self._append_batch(log, records, <const uint8_t*>rb.buf, rb.len)
        finally:
            PyBuffer_Release(&rb)

    cdef object _append_batch(self, log, records, const uint8_t* b, Py_ssize_t size):
        cdef int64_t base, last, max_ts
        cdef int32_t epoch
        if size < RECORDS_OFFSET or b[MAGIC_OFFSET] != MAGIC_V2:
            return None
        if self.closed or self.segment is None:
            return None
        base = _i64(b, 0)
        if (
            _i32(b, LENGTH_OFFSET) + LOG_OVERHEAD != size
            or _i64(b, PRODUCER_ID_OFFSET) != NO_PRODUCER_ID
            or base != self.log_end_offset
            or size > self.segment_bytes
            or self.producer_state is None
            or self.leader_epoch_cache is None
            or self.time_ms is None
        ):
            return None
        last = base + _i32(b, LAST_OFFSET_DELTA_OFFSET)
        max_ts = _i64(b, MAX_TIMESTAMP_OFFSET)
        if self._should_roll(
            self.max_segment_ms, self.segment_bytes, max_ts, last, size, self.time_ms
        ):
            return None
        epoch = _i32(b, PARTITION_LEADER_EPOCH_OFFSET)
        if epoch >= 0:  # UnifiedLog.maybeAssignEpochStartOffset
            self.leader_epoch_cache.assign(epoch, base)
        self._append_to_segment(last, max_ts, last, records, b, size)
        self.log_end_offset = last + 1
        self.map_end_offset = last + 1  # ProducerStateManager.update_map_end_offset
        if self._flush_due():
            log.flush()
        return _tuple_new(_LogAppendResult, (base, last, max_ts, last, self.log_start_offset))
