# cython: language_level=3
"""Compiled twin of ``_recover_py.py``: same function, same results.

Header fields are decoded from the mapped bytes in C. CRC-32C runs in C
too: the SSE4.2 ``crc32`` instruction has a latency of 3 cycles but a
throughput of 1 per cycle, so three interleaved streams run ~3x faster
than one (the ``crc32c`` package is a single stream, which alone would
take most of the recovery budget of 2x a sequential read; docs/performance.md).
Each block of 3 x L bytes is cut in three parts A, B, C, computed side by
side (B and C from a zero register) and combined as
``Z_L(Z_L(A) ^ B) ^ C`` where ``Z_L`` is the linear operator "append L zero
bytes", applied with four 256-entry tables built at import (Mark Adler's
crc32c.c scheme, L = 4096 and 256). Without SSE4.2 at run time the
``crc32c`` package is used. Legacy CRC-32 stays with ``zlib.crc32``.
"""

import zlib

from crc32c import crc32c

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from broker.records import batch as _batch
from broker.records import legacy as _legacy

# The entry layout of broker.records.batch (v2 header) and broker.records.legacy
# (v0/v1 entry, offsets from the entry start), as C constants under the same names;
# checked against those modules at import, below.
cdef enum:
    LOG_OVERHEAD = 12
    LENGTH_OFFSET = 8
    PARTITION_LEADER_EPOCH_OFFSET = 12
    MAGIC_OFFSET = 16
    HEADER_SIZE_UP_TO_MAGIC = 17
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    BASE_SEQUENCE_OFFSET = 53
    RECORD_BATCH_OVERHEAD = 61
    MAGIC_V0 = 0
    MAGIC_V1 = 1
    MAGIC_V2 = 2
    MIN_RECORD_SIZE = 14
    RECORD_OVERHEAD_V0 = 14
    RECORD_OVERHEAD_V1 = 22
    RECORD_CRC_OFFSET = 12
    RECORD_MAGIC_OFFSET = 16
    RECORD_ATTRIBUTES_OFFSET = 17
    RECORD_TIMESTAMP_OFFSET = 18

if (
    LOG_OVERHEAD, LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, MAGIC_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC, CRC_OFFSET, ATTRIBUTES_OFFSET, LAST_OFFSET_DELTA_OFFSET,
    MAX_TIMESTAMP_OFFSET, PRODUCER_ID_OFFSET, PRODUCER_EPOCH_OFFSET, BASE_SEQUENCE_OFFSET,
    RECORD_BATCH_OVERHEAD, MAGIC_V0, MAGIC_V1, MAGIC_V2,
) != (
    _batch.LOG_OVERHEAD, _batch.LENGTH_OFFSET, _batch.PARTITION_LEADER_EPOCH_OFFSET,
    _batch.MAGIC_OFFSET, _batch.HEADER_SIZE_UP_TO_MAGIC, _batch.CRC_OFFSET,
    _batch.ATTRIBUTES_OFFSET, _batch.LAST_OFFSET_DELTA_OFFSET, _batch.MAX_TIMESTAMP_OFFSET,
    _batch.PRODUCER_ID_OFFSET, _batch.PRODUCER_EPOCH_OFFSET, _batch.BASE_SEQUENCE_OFFSET,
    _batch.RECORD_BATCH_OVERHEAD, _batch.MAGIC_V0, _batch.MAGIC_V1, _batch.MAGIC_V2,
) or (
    MIN_RECORD_SIZE, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, RECORD_CRC_OFFSET,
    RECORD_MAGIC_OFFSET, RECORD_ATTRIBUTES_OFFSET, RECORD_TIMESTAMP_OFFSET,
) != (
    _legacy.MIN_RECORD_SIZE, _legacy.RECORD_OVERHEAD_V0, _legacy.RECORD_OVERHEAD_V1,
    _legacy.RECORD_CRC_OFFSET, _legacy.RECORD_MAGIC_OFFSET, _legacy.RECORD_ATTRIBUTES_OFFSET,
    _legacy.RECORD_TIMESTAMP_OFFSET,
):
    raise ImportError("_recover_c's layout constants differ from broker.records'")

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #define BROKER_HAVE_SSE42_PATH 1
    #include <nmmintrin.h>
    static uint32_t broker_shift_long[4][256];
    static uint32_t broker_shift_short[4][256];
    #define BROKER_LONG 4096
    #define BROKER_SHORT 256

    __attribute__((target("sse4.2")))
    static uint32_t broker_zeros(uint32_t crc, size_t n) {
        uint64_t c = crc;
        for (size_t i = 0; i < n / 8; i++) c = _mm_crc32_u64(c, 0);
        return (uint32_t)c;
    }

    __attribute__((target("sse4.2")))
    static void broker_crc_init(void) {
        for (int k = 0; k < 4; k++) {
            for (uint32_t v = 0; v < 256; v++) {
                broker_shift_long[k][v] = broker_zeros(v << (8 * k), BROKER_LONG);
                broker_shift_short[k][v] = broker_zeros(v << (8 * k), BROKER_SHORT);
            }
        }
    }

    static inline uint32_t broker_shift(uint32_t t[4][256], uint32_t crc) {
        return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
    }

    __attribute__((target("sse4.2")))
    static uint32_t broker_crc32c(const unsigned char *p, size_t n) {
        uint64_t c0 = 0xffffffffu;
        while (n >= 3 * BROKER_LONG) {
            uint64_t c1 = 0, c2 = 0;
            const unsigned char *end = p + BROKER_LONG;
            do {
                uint64_t a, b, d;
                memcpy(&a, p, 8); memcpy(&b, p + BROKER_LONG, 8); memcpy(&d, p + 2 * BROKER_LONG, 8);
                c0 = _mm_crc32_u64(c0, a); c1 = _mm_crc32_u64(c1, b); c2 = _mm_crc32_u64(c2, d);
                p += 8;
            } while (p < end);
            c0 = broker_shift(broker_shift_long, (uint32_t)c0) ^ (uint32_t)c1;
            c0 = broker_shift(broker_shift_long, (uint32_t)c0) ^ (uint32_t)c2;
            p += 2 * BROKER_LONG;
            n -= 3 * BROKER_LONG;
        }
        while (n >= 3 * BROKER_SHORT) {
            uint64_t c1 = 0, c2 = 0;
            const unsigned char *end = p + BROKER_SHORT;
            do {
                uint64_t a, b, d;
                memcpy(&a, p, 8); memcpy(&b, p + BROKER_SHORT, 8); memcpy(&d, p + 2 * BROKER_SHORT, 8);
                c0 = _mm_crc32_u64(c0, a); c1 = _mm_crc32_u64(c1, b); c2 = _mm_crc32_u64(c2, d);
                p += 8;
            } while (p < end);
            c0 = broker_shift(broker_shift_short, (uint32_t)c0) ^ (uint32_t)c1;
            c0 = broker_shift(broker_shift_short, (uint32_t)c0) ^ (uint32_t)c2;
            p += 2 * BROKER_SHORT;
            n -= 3 * BROKER_SHORT;
        }
        while (n >= 8) {
            uint64_t a;
            memcpy(&a, p, 8);
            c0 = _mm_crc32_u64(c0, a);
            p += 8; n -= 8;
        }
        uint32_t c = (uint32_t)c0;
        while (n > 0) { c = _mm_crc32_u8(c, *p); p++; n--; }
        return c ^ 0xffffffffu;
    }

    static int broker_crc_available(void) {
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("sse4.2")) return 0;
        broker_crc_init();
        return 1;
    }
    #else
    static uint32_t broker_crc32c(const unsigned char *p, size_t n) { (void)p; (void)n; return 0; }
    static int broker_crc_available(void) { return 0; }
    #endif
    """
    uint32_t broker_crc32c(const unsigned char *p, size_t n) nogil
    int broker_crc_available()

cdef bint _FAST_CRC = broker_crc_available() != 0
#: which CRC-32C runs here ("sse4.2-interleaved" or "crc32c-package")
CRC32C_IMPLEMENTATION = "sse4.2-interleaved" if _FAST_CRC else "crc32c-package"


def crc32c_of(data):
    """CRC-32C of a buffer with the implementation this twin uses (for tests)."""
    cdef const uint8_t[::1] b = data
    if _FAST_CRC:
        if b.shape[0] == 0:
            return 0
        return broker_crc32c(&b[0], b.shape[0])
    return crc32c(data)

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


def scan_segment(buf, Py_ssize_t start, Py_ssize_t end, *, int64_t base_offset,
                 int64_t index_interval_bytes, int64_t prev_last_offset, int64_t latest_epoch,
                 int64_t position_base=0, int64_t last_index_position=0,
                 int64_t max_timestamp=-1, offset_of_max_timestamp=None,
                 int64_t last_time_entry_timestamp=-1):
    cdef const uint8_t[::1] b = buf
    view = memoryview(buf)
    cdef Py_ssize_t pos = start
    cdef int64_t last_index_pos = last_index_position - position_base
    cdef int64_t max_ts = max_timestamp
    cdef int64_t offset_of_max_ts = (
        base_offset if offset_of_max_timestamp is None else offset_of_max_timestamp
    )
    cdef int64_t last_offset = prev_last_offset
    cdef int64_t offset, batch_base, batch_last, batch_max_ts, producer_id, relative
    cdef int32_t size, epoch = -1, last_delta = 0, base_sequence = -1
    cdef int16_t attributes = 0, producer_epoch = -1
    cdef Py_ssize_t total
    cdef int8_t magic
    cdef uint32_t crc
    cdef bint ok
    cdef int64_t last_time_entry_ts = last_time_entry_timestamp
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
        if pos + HEADER_SIZE_UP_TO_MAGIC >= end:
            break
        offset = _i64(b, pos)
        size = _i32(b, pos + LENGTH_OFFSET)
        if size < MIN_RECORD_SIZE:
            error = (
                f"record size {size} is smaller than the minimum record overhead "
                f"({MIN_RECORD_SIZE})"
            )
            break
        total = <Py_ssize_t>size + LOG_OVERHEAD
        if pos + total > end:
            break
        magic = <int8_t>b[pos + MAGIC_OFFSET]
        if magic == MAGIC_V2:
            if total < RECORD_BATCH_OVERHEAD:
                error = f"batch size {total} is smaller than the v2 header"
                break
            batch_base = offset
            epoch = _i32(b, pos + PARTITION_LEADER_EPOCH_OFFSET)
            crc = _u32(b, pos + CRC_OFFSET)
            attributes = _i16(b, pos + ATTRIBUTES_OFFSET)
            last_delta = _i32(b, pos + LAST_OFFSET_DELTA_OFFSET)
            batch_max_ts = _i64(b, pos + MAX_TIMESTAMP_OFFSET)
            producer_id = _i64(b, pos + PRODUCER_ID_OFFSET)
            producer_epoch = _i16(b, pos + PRODUCER_EPOCH_OFFSET)
            base_sequence = _i32(b, pos + BASE_SEQUENCE_OFFSET)
            if _FAST_CRC:
                ok = broker_crc32c(&b[pos + ATTRIBUTES_OFFSET], total - ATTRIBUTES_OFFSET) == crc
            else:
                ok = crc32c(view[pos + ATTRIBUTES_OFFSET : pos + total]) == crc
            if not ok:
                error = f"CRC-32C mismatch of the batch at position {pos + position_base}"
                break
            if last_delta < 0 or batch_base <= last_offset:
                error = f"offset {batch_base} does not follow {last_offset}"
                break
            batch_last = batch_base + last_delta
        elif magic == MAGIC_V0 or magic == MAGIC_V1:
            if total < LOG_OVERHEAD + (
                RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1
            ):
                error = f"record size {size} is too small for magic {magic}"
                break
            crc = _u32(b, pos + RECORD_CRC_OFFSET)
            attributes = <int8_t>b[pos + RECORD_ATTRIBUTES_OFFSET]
            batch_max_ts = _i64(b, pos + RECORD_TIMESTAMP_OFFSET) if magic == MAGIC_V1 else -1
            if zlib.crc32(view[pos + RECORD_MAGIC_OFFSET : pos + total]) != crc:
                error = f"CRC-32 mismatch of the message at position {pos + position_base}"
                break
            if offset <= last_offset:
                error = f"offset {offset} does not follow {last_offset}"
                break
            batch_base = offset
            batch_last = offset
            epoch = -1
            producer_id = -1
        else:
            error = f"unknown magic {magic} at position {pos + position_base}"
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
            _put32(ent, 4, <uint32_t>(pos + position_base))
            offset_entries += (<char*>ent)[:8]
            if max_ts > last_time_entry_ts:
                _put64(ent, 0, <uint64_t>max_ts)
                _put32(ent, 8, <uint32_t>(offset_of_max_ts - base_offset))
                time_entries += (<char*>ent)[:12]
                last_time_entry_ts = max_ts
            last_index_pos = pos
        if magic == MAGIC_V2:
            if epoch >= 0 and epoch > latest_epoch:
                epoch_starts.append((epoch, batch_base))
                latest_epoch = epoch
            if producer_id != -1:
                producer_batches.append(
                    (producer_id, producer_epoch, base_sequence, last_delta, batch_base,
                     batch_max_ts, attributes, pos + position_base)
                )
        last_offset = batch_last
        pos += total
    return (pos + position_base, error, bytes(offset_entries), bytes(time_entries), max_ts,
            offset_of_max_ts, epoch_starts, producer_batches, last_offset,
            last_index_pos + position_base, last_time_entry_ts)
