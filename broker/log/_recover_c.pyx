# cython: language_level=3
"""Compiled twin of ``_recover_py.py``: same function, same results.

Header fields are decoded from the mapped bytes in C; the CRCs are the same
library calls as in the reference (``crc32c.crc32c`` releases the GIL and
runs at memory speed, ``zlib.crc32`` likewise).
"""

import zlib

from crc32c import crc32c

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

cdef int64_t INT_MAX = 2147483647


cdef inline int64_t _i64(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | b[p + i]
    return <int64_t>v


cdef inline int32_t _i32(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return <int32_t>((<uint32_t>b[p] << 24) | (<uint32_t>b[p + 1] << 16)
                     | (<uint32_t>b[p + 2] << 8) | <uint32_t>b[p + 3])


cdef inline uint32_t _u32(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return ((<uint32_t>b[p] << 24) | (<uint32_t>b[p + 1] << 16)
            | (<uint32_t>b[p + 2] << 8) | <uint32_t>b[p + 3])


cdef inline int16_t _i16(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return <int16_t>((<uint32_t>b[p] << 8) | <uint32_t>b[p + 1])


cdef inline void _put32(unsigned char* p, int at, uint32_t v) noexcept nogil:
    p[at] = (v >> 24) & 0xFF
    p[at + 1] = (v >> 16) & 0xFF
    p[at + 2] = (v >> 8) & 0xFF
    p[at + 3] = v & 0xFF


cdef inline void _put64(unsigned char* p, int at, uint64_t v) noexcept nogil:
    _put32(p, at, <uint32_t>(v >> 32))
    _put32(p, at + 4, <uint32_t>(v & 0xFFFFFFFFU))


def scan_segment(buf, Py_ssize_t start, Py_ssize_t end, int64_t base_offset,
                 int64_t index_interval_bytes, int64_t prev_last_offset, int64_t latest_epoch):
    cdef const uint8_t[::1] b = buf
    view = memoryview(buf)
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t last_index_pos = start
    cdef int64_t max_ts = -1
    cdef int64_t offset_of_max_ts = base_offset
    cdef int64_t last_offset = prev_last_offset
    cdef int64_t offset, batch_base, batch_last, batch_max_ts, producer_id, relative
    cdef int32_t size, epoch, last_delta, base_sequence
    cdef int16_t attributes, producer_epoch
    cdef Py_ssize_t total
    cdef int8_t magic
    cdef uint32_t crc
    cdef int64_t last_time_entry_ts = -1
    cdef bytearray offset_entries = bytearray()
    cdef bytearray time_entries = bytearray()
    cdef unsigned char ent[12]
    cdef int64_t rel
    epoch_starts = []
    producer_batches = []
    error = None
    if end > b.shape[0]:
        end = b.shape[0]
    while True:
        if pos + 17 >= end:
            break
        offset = _i64(b, pos)
        size = _i32(b, pos + 8)
        if size < 14:
            error = f"record size {size} is smaller than the minimum record overhead (14)"
            break
        total = <Py_ssize_t>size + 12
        if pos + total > end:
            break
        magic = <int8_t>b[pos + 16]
        if magic == 2:
            if total < 61:
                error = f"batch size {total} is smaller than the v2 header"
                break
            batch_base = offset
            epoch = _i32(b, pos + 12)
            crc = _u32(b, pos + 17)
            attributes = _i16(b, pos + 21)
            last_delta = _i32(b, pos + 23)
            batch_max_ts = _i64(b, pos + 35)
            producer_id = _i64(b, pos + 43)
            producer_epoch = _i16(b, pos + 51)
            base_sequence = _i32(b, pos + 53)
            if crc32c(view[pos + 21 : pos + total]) != crc:
                error = f"CRC-32C mismatch of the batch at position {pos}"
                break
            if last_delta < 0 or batch_base <= last_offset:
                error = f"offset {batch_base} does not follow {last_offset}"
                break
            batch_last = batch_base + last_delta
        elif magic == 0 or magic == 1:
            if total < (26 if magic == 0 else 34):
                error = f"record size {size} is too small for magic {magic}"
                break
            crc = _u32(b, pos + 12)
            attributes = <int8_t>b[pos + 17]
            batch_max_ts = _i64(b, pos + 18) if magic == 1 else -1
            if zlib.crc32(view[pos + 16 : pos + total]) != crc:
                error = f"CRC-32 mismatch of the message at position {pos}"
                break
            if offset <= last_offset:
                error = f"offset {offset} does not follow {last_offset}"
                break
            batch_base = offset
            batch_last = offset
            epoch = -1
            producer_id = -1
        else:
            error = f"unknown magic {magic} at position {pos}"
            break
        relative = batch_last - base_offset
        if relative < 0 or relative > INT_MAX:
            error = f"offset {batch_last} overflows the segment with base offset {base_offset}"
            break
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
            offset_of_max_ts = batch_last
        if pos - last_index_pos > index_interval_bytes:
            _put32(ent, 0, <uint32_t>(batch_last - base_offset))
            _put32(ent, 4, <uint32_t>pos)
            offset_entries += (<char*>ent)[:8]
            if max_ts > last_time_entry_ts:
                _put64(ent, 0, <uint64_t>max_ts)
                _put32(ent, 8, <uint32_t>(offset_of_max_ts - base_offset))
                time_entries += (<char*>ent)[:12]
                last_time_entry_ts = max_ts
            last_index_pos = pos
        if magic == 2:
            if epoch >= 0 and epoch > latest_epoch:
                epoch_starts.append((epoch, batch_base))
                latest_epoch = epoch
            if producer_id != -1:
                producer_batches.append(
                    (producer_id, producer_epoch, base_sequence, last_delta, batch_base,
                     batch_max_ts, attributes, pos)
                )
        last_offset = batch_last
        pos += total
    return (pos, error, bytes(offset_entries), bytes(time_entries), max_ts, offset_of_max_ts,
            epoch_starts, producer_batches, last_offset)
