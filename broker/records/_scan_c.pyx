# cython: language_level=3
"""Compiled twin of ``_scan_py.py``: same functions, same signatures, same
results (values, exception types and messages). Read ``_scan_py.py`` for what
each function does; this file only says how it is made fast:

* buffers are typed memoryviews (``const unsigned char[::1]``), so bytes,
  bytearray, memoryview and mmap are all read without a copy;
* varints are decoded by ``cdef inline`` helpers that report failure through
  a status code, and the caller raises the same exception the reference
  raises, so no Python object is made per record;
* Java ``long`` wraparound is done in unsigned 64-bit arithmetic (signed
  overflow is undefined in C);
* CRC-32 folds 16 bytes at a time by carry-less multiplication (PCLMULQDQ,
  tail included) where the CPU has it, else a slicing-by-8 table made at
  import; CRC-32C is the ``crc32c`` package (hardware instruction), called
  once per v2 batch.
"""

from crc32c import crc32c as _crc32c

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records._scan_py import BatchRejected

from libc.stdint cimport INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.bytearray cimport PyByteArray_FromStringAndSize

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BROKER_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 0)
    #else
    #define BROKER_PREFETCH(p) ((void)(p))
    #endif
    """
    void BROKER_PREFETCH(const void* p) noexcept nogil

DEF ERR_MAGIC = 1
DEF ERR_NO_KEY = 2
DEF ERR_TS_RANGE = 3
DEF ERR_TS_TYPE = 4
DEF ERR_CORRUPT = 5
DEF ERROR_KINDS = 6

DEF FAIL_NONE = 0
DEF FAIL_SIZE = 1
DEF FAIL_MAGIC = 2
DEF FAIL_BASE_OFFSET = 3
DEF FAIL_TOO_LARGE = 4
DEF FAIL_CRC = 5
DEF FAIL_CODEC = 6

DEF CHECK_NONE = 0
DEF CHECK_OFFSET_RANGE = 1
DEF CHECK_COUNT = 2
DEF CHECK_COUNT_MISMATCH = 3
DEF CHECK_CONTROL = 4
DEF CHECK_SEQUENCE = 5

# varint status codes
DEF V_OK = 0
DEF V_EOF = 1
DEF V_LONG = 2

cdef uint32_t _CRC_TABLE[8][256]


cdef void _init_crc_table():
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = <uint32_t>n
        for k in range(8):
            if c & 1:
                c = 0xEDB88320U ^ (c >> 1)
            else:
                c = c >> 1
        _CRC_TABLE[0][n] = c
    for n in range(256):
        c = _CRC_TABLE[0][n]
        for k in range(1, 8):
            c = _CRC_TABLE[0][c & 0xFF] ^ (c >> 8)
            _CRC_TABLE[k][n] = c


_init_crc_table()


# CRC-32 folding with carry-less multiplication (PCLMULQDQ), after Intel's
# "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction"
# (Gopal et al., 2009): four 128-bit lanes fold 64 bytes per step, then one
# lane, then a Barrett reduction to 32 bits. Constants are x^(k) mod P for the
# bit-reflected CRC-32 polynomial 0xEDB88320. Used for 64 bytes and more on
# x86-64 CPUs that have the instruction (checked at run time); the table
# loop below does the rest. ``broker_crc32_fold`` takes and returns the
# running (inverted) CRC state, like the table loop.
cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #define BROKER_HAVE_CLMUL 1
    /* pshufb masks for the last 1..15 bytes (see broker_crc32_fold): 16
       bytes read at offset r of BROKER_SHIFT_UP move byte j of a register
       to j + 16 - r (zeros below), those of BROKER_SHIFT_DOWN move byte j
       to j - r (zeros above). */
    static const uint8_t BROKER_SHIFT_UP[32] = {
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const uint8_t BROKER_SHIFT_DOWN[32] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    /* CRC-32 (reflected, zlib's) of len >= 16 bytes by carry-less
       multiplication: four 16-byte lanes folded by 64 bytes while at least
       64 remain (one lane below 64 bytes), the lanes folded into one, then
       16 bytes at a time. A tail of r = 1..15 bytes is folded in as well,
       without a byte loop (the records of v0/v1 message sets are short, so
       the tail is a large share of each CRC): the state's first r bytes are
       the block that precedes a new 16-byte block made of its other 16 - r
       bytes and the r tail bytes (taken from the last 16 bytes of the
       input). Then Barrett reduction to 32 bits. */
    __attribute__((target("pclmul,sse4.1")))
    static uint32_t broker_crc32_fold(const uint8_t *buf, size_t len, uint32_t crc) {
        const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
        const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
        const __m128i k5k0 = _mm_set_epi64x(0x0000000000LL, 0x0163cd6124LL);
        const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
        const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
        const uint8_t *end = buf + len;
        __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8, y5, y6, y7, y8;
        if (len >= 64) {
            x1 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
            x2 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
            x3 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
            x4 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
            x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
            x0 = k1k2;
            buf += 64;
            len -= 64;
            while (len >= 64) {
                x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
                x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
                x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
                x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
                x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
                x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
                x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
                x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
                y5 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
                y6 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
                y7 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
                y8 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
                x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), y5);
                x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), y6);
                x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), y7);
                x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), y8);
                buf += 64;
                len -= 64;
            }
            x0 = k3k4;
            x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
            x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
            x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
            x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
            x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
            x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
        } else {
            x1 = _mm_loadu_si128((const __m128i *)buf);
            x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
            buf += 16;
            len -= 16;
        }
        x0 = k3k4;
        while (len >= 16) {
            x2 = _mm_loadu_si128((const __m128i *)buf);
            x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
            x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
            buf += 16;
            len -= 16;
        }
        if (len) {
            /* a = the state's first len bytes at the top of an otherwise
               zero block; b = its other bytes moved down, then the tail
               (the top len bytes of the input's last 16) */
            const __m128i up = _mm_loadu_si128((const __m128i *)(BROKER_SHIFT_UP + len));
            const __m128i down = _mm_loadu_si128((const __m128i *)(BROKER_SHIFT_DOWN + len));
            const __m128i last = _mm_loadu_si128((const __m128i *)(end - 16));
            __m128i a = _mm_shuffle_epi8(x1, up);
            __m128i b = _mm_blendv_epi8(last, _mm_shuffle_epi8(x1, down), up);
            x5 = _mm_clmulepi64_si128(a, x0, 0x00);
            a = _mm_clmulepi64_si128(a, x0, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(a, b), x5);
        }
        x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
        x1 = _mm_srli_si128(x1, 8);
        x1 = _mm_xor_si128(x1, x2);
        x0 = k5k0;
        x2 = _mm_srli_si128(x1, 4);
        x1 = _mm_and_si128(x1, mask32);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_xor_si128(x1, x2);
        x0 = poly;
        x2 = _mm_and_si128(x1, mask32);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
        x2 = _mm_and_si128(x2, mask32);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x1 = _mm_xor_si128(x1, x2);
        return (uint32_t)_mm_extract_epi32(x1, 1);
    }
    static int broker_have_clmul(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }
    #else
    #define BROKER_HAVE_CLMUL 0
    static uint32_t broker_crc32_fold(const uint8_t *buf, size_t len, uint32_t crc) {
        (void)buf; (void)len; return crc;
    }
    static int broker_have_clmul(void) { return 0; }
    #endif
    """
    uint32_t broker_crc32_fold(const uint8_t* buf, size_t length, uint32_t crc) noexcept nogil
    int broker_have_clmul() noexcept nogil


cdef bint _HAVE_CLMUL = broker_have_clmul() != 0


cdef inline uint32_t _crc32(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFU
    cdef uint32_t lo, hi
    if _HAVE_CLMUL and n >= 16:
        return broker_crc32_fold(p, <size_t>n, c) ^ 0xFFFFFFFFU
    while n >= 8:
        lo = (<uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)) ^ c
        hi = <uint32_t>p[4] | (<uint32_t>p[5] << 8) | (<uint32_t>p[6] << 16) | (<uint32_t>p[7] << 24)
        c = (_CRC_TABLE[7][lo & 0xFF] ^ _CRC_TABLE[6][(lo >> 8) & 0xFF]
             ^ _CRC_TABLE[5][(lo >> 16) & 0xFF] ^ _CRC_TABLE[4][lo >> 24]
             ^ _CRC_TABLE[3][hi & 0xFF] ^ _CRC_TABLE[2][(hi >> 8) & 0xFF]
             ^ _CRC_TABLE[1][(hi >> 16) & 0xFF] ^ _CRC_TABLE[0][hi >> 24])
        p += 8
        n -= 8
    while n > 0:
        c = _CRC_TABLE[0][(c ^ p[0]) & 0xFF] ^ (c >> 8)
        p += 1
        n -= 1
    return c ^ 0xFFFFFFFFU


cdef inline int64_t _j64_add(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline int64_t _j64_sub(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a - <uint64_t>b)


cdef inline int32_t _i32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline int64_t _i64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<uint64_t>_u32(p) << 32) | <uint64_t>_u32(p + 4))


cdef inline void _put_i32(uint8_t* p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = (u >> 24) & 0xFF
    p[1] = (u >> 16) & 0xFF
    p[2] = (u >> 8) & 0xFF
    p[3] = u & 0xFF


cdef inline void _put_i64(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    _put_i32(p, <int32_t>(u >> 32))
    _put_i32(p + 4, <int32_t>(u & <uint64_t>0xFFFFFFFFU))


# A varint read: value, next position, status, shortest form?
cdef struct VarRead:
    int64_t value
    Py_ssize_t pos
    int status
    bint minimal


cdef inline VarRead _varint(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    cdef VarRead r
    cdef uint32_t raw = 0
    cdef int shift = 0
    cdef uint8_t x
    cdef Py_ssize_t start = pos
    r.status = V_OK
    r.value = 0
    r.pos = pos
    r.minimal = True
    # one- and two-byte varints (deltas, lengths below 8 KiB) are the common case
    if pos < end and b[pos] < 0x80:
        x = b[pos]
        r.value = <int32_t>((x >> 1) ^ (<uint32_t>0 - (x & 1)))
        r.pos = pos + 1
        r.minimal = True
        return r
    if pos + 1 < end and b[pos + 1] < 0x80:
        raw = (<uint32_t>b[pos] & 0x7F) | (<uint32_t>b[pos + 1] << 7)
        r.value = <int32_t>((raw >> 1) ^ (<uint32_t>0 - (raw & 1)))
        r.pos = pos + 2
        r.minimal = b[pos + 1] != 0
        return r
    while True:
        if pos >= end:
            r.status = V_EOF
            return r
        x = b[pos]
        pos += 1
        raw |= <uint32_t>(x & 0x7F) << shift
        if not (x & 0x80):
            break
        shift += 7
        if shift > 28:
            r.status = V_LONG
            return r
    r.value = <int32_t>((raw >> 1) ^ (<uint32_t>0 - (raw & 1)))
    r.pos = pos
    r.minimal = (pos - start == 1) or b[pos - 1] != 0
    return r


cdef inline VarRead _varlong(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    cdef VarRead r
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef uint8_t x
    cdef Py_ssize_t start = pos
    r.status = V_OK
    r.value = 0
    r.pos = pos
    r.minimal = True
    if pos < end and b[pos] < 0x80:
        x = b[pos]
        r.value = <int64_t>((x >> 1) ^ (<uint64_t>0 - (x & 1)))
        r.pos = pos + 1
        r.minimal = True
        return r
    while True:
        if pos >= end:
            r.status = V_EOF
            return r
        x = b[pos]
        pos += 1
        raw |= <uint64_t>(x & 0x7F) << shift
        if not (x & 0x80):
            break
        shift += 7
        if shift > 63:
            r.status = V_LONG
            return r
    r.value = <int64_t>((raw >> 1) ^ (<uint64_t>0 - (raw & 1)))
    r.pos = pos
    r.minimal = (pos - start == 1) or b[pos - 1] != 0
    return r


cdef int _raise_var(int status, bint is_long) except -1:
    if is_long:
        if status == V_EOF:
            raise InvalidRecordError("Found invalid record structure: varlong past end")
        raise InvalidRecordError("Found invalid record structure: varlong too long")
    if status == V_EOF:
        raise InvalidRecordError("Found invalid record structure: varint past end")
    raise InvalidRecordError("Found invalid record structure: varint too long")


cdef inline int _varint_size(int64_t value) noexcept nogil:
    cdef uint32_t v = (<uint32_t>(<int32_t>value) << 1) ^ <uint32_t>((<int32_t>value) >> 31)
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int _varlong_size(int64_t value) noexcept nogil:
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t _w_varint(uint8_t* out, Py_ssize_t q, int64_t value) noexcept nogil:
    cdef uint32_t v = (<uint32_t>(<int32_t>value) << 1) ^ <uint32_t>((<int32_t>value) >> 31)
    while v >= 0x80:
        out[q] = (v & 0x7F) | 0x80
        q += 1
        v >>= 7
    out[q] = <uint8_t>v
    return q + 1


cdef inline Py_ssize_t _w_varlong(uint8_t* out, Py_ssize_t q, int64_t value) noexcept nogil:
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    while v >= 0x80:
        out[q] = (v & 0x7F) | 0x80
        q += 1
        v >>= 7
    out[q] = <uint8_t>v
    return q + 1


cdef inline int _check_ts(int64_t ts, bint lat_batch, int64_t now, int64_t before_max,
                          int64_t after_max, bint create_time) noexcept nogil:
    cdef int64_t diff
    if create_time and ts != -1:
        diff = _j64_sub(now, ts)
        if diff > before_max or _j64_sub(0, diff) > after_max:
            return ERR_TS_RANGE
        return 0
    if lat_batch:
        return ERR_TS_TYPE
    return 0


cdef inline const uint8_t* _ptr(const uint8_t[::1] view):
    if view.shape[0] == 0:
        return <const uint8_t*>b""
    return &view[0]


# ---------------------------------------------------------------------------


def read_varint(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end):
    if end > buf.shape[0]:
        end = buf.shape[0]
    cdef VarRead r = _varint(_ptr(buf), pos, end)
    if r.status != V_OK:
        _raise_var(r.status, False)
    return <int>r.value, r.pos


def read_varlong(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end):
    if end > buf.shape[0]:
        end = buf.shape[0]
    cdef VarRead r = _varlong(_ptr(buf), pos, end)
    if r.status != V_OK:
        _raise_var(r.status, True)
    return r.value, r.pos


def new_buffer(Py_ssize_t size):
    # PyByteArray_FromStringAndSize(NULL, n) allocates without zero-filling:
    # the encoders overwrite what they use, and a 10 MB memset is not free.
    return PyByteArray_FromStringAndSize(NULL, size)


# a copy this large releases the GIL (a decoder's output on a worker thread: a
# 1 MB piece into fresh pages takes ~0.5 ms, and a loop waiting for the GIL
# waits a whole switch interval, 5 ms, if the worker keeps it)
cdef Py_ssize_t _COPY_NOGIL_MIN = 65536


def copy_into(uint8_t[::1] dst, Py_ssize_t offset, const uint8_t[::1] src):
    # ``dst`` is typed, so the bytearray is exported (not resizable) while the
    # copy runs without the GIL
    cdef Py_ssize_t n = src.shape[0]
    if offset < 0 or n > dst.shape[0] - offset:
        raise ValueError(f"copy_into: {n} bytes at {offset} do not fit {dst.shape[0]}")
    if n == 0:
        return
    cdef uint8_t* d = &dst[offset]
    cdef const uint8_t* s = &src[0]
    if n >= _COPY_NOGIL_MIN:
        with nogil:
            memcpy(d, s, n)
    else:
        memcpy(d, s, n)


def crc32(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end):
    cdef const uint8_t* b = _ptr(buf)
    cdef uint32_t c
    with nogil:
        c = _crc32(b + pos, end - pos)
    return c


def scan_entries(buf, Py_ssize_t start, Py_ssize_t end, int64_t max_message_bytes,
                 bint client_origin):
    cdef const uint8_t[::1] view = buf
    cdef const uint8_t* b = _ptr(view)
    cdef Py_ssize_t pos = start, remaining, total
    cdef int32_t size
    cdef int magic, entry_codec, codec = 0, first_magic = -1, mask = 0
    cdef Py_ssize_t entries = 0
    cdef int64_t base_offset
    cdef uint32_t computed
    while True:
        remaining = end - pos
        if remaining < 12:
            break
        size = _i32(b + pos + 8)
        if size < 14:
            return entries, pos, first_magic, codec, FAIL_SIZE, pos, size, mask
        if remaining < 17:
            break
        magic = <signed char>b[pos + 16]
        if magic < 0 or magic > 2:
            return entries, pos, first_magic, codec, FAIL_MAGIC, pos, magic, mask
        total = <Py_ssize_t>size + 12
        if remaining < total:
            break
        if magic == 2:
            if client_origin:
                base_offset = _i64(b + pos)
                if base_offset != 0:
                    return entries, pos, first_magic, codec, FAIL_BASE_OFFSET, pos, base_offset, mask
            if total > max_message_bytes:
                return entries, pos, first_magic, codec, FAIL_TOO_LARGE, pos, total, mask
            if total < 61:
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            with memoryview(buf) as mv:
                computed = _crc32c(mv[pos + 21 : pos + total])
            if computed != _u32(b + pos + 17):
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            entry_codec = b[pos + 22] & 0x07
        else:
            if total > max_message_bytes:
                return entries, pos, first_magic, codec, FAIL_TOO_LARGE, pos, total, mask
            with nogil:
                computed = _crc32(b + pos + 16, total - 16)
            if computed != _u32(b + pos + 12):
                return entries, pos, first_magic, codec, FAIL_CRC, pos, 0, mask
            entry_codec = b[pos + 17] & 0x07
        if entry_codec > 4:
            return entries, pos, first_magic, codec, FAIL_CODEC, pos, entry_codec, mask
        if entry_codec != 0:
            codec = entry_codec
        if first_magic < 0:
            first_magic = magic
        mask |= 1 << magic
        entries += 1
        pos += total
    return entries, pos, first_magic, codec, FAIL_NONE, pos, 0, mask


# The walk's varint decoder (zig-zag, 32-bit): the value into ``*v``, the
# next position as result, or -1 (past ``end``) / -2 (longer than 5 bytes);
# no struct return. Written in C for two function attributes Cython cannot
# give: the one- and two-byte cases are forced inline into every walk, the
# loop for longer ones is kept out of line. (As one Cython ``cdef inline``
# function gcc kept a single out-of-line copy, and the call was a large share
# of ``walk_v2``'s time; docs/performance.md.)
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BROKER_ALWAYS_INLINE inline __attribute__((always_inline))
    #define BROKER_NOINLINE __attribute__((noinline))
    #else
    #define BROKER_ALWAYS_INLINE inline
    #define BROKER_NOINLINE
    #endif
    static BROKER_NOINLINE Py_ssize_t broker_rv_long(
            const uint8_t *b, Py_ssize_t p, Py_ssize_t end, int64_t *v) {
        uint32_t raw = 0;
        int shift = 0;
        for (;;) {
            uint8_t x;
            if (p >= end) return -1;
            x = b[p++];
            raw |= (uint32_t)(x & 0x7F) << shift;
            if (!(x & 0x80)) break;
            shift += 7;
            if (shift > 28) return -2;
        }
        *v = (int32_t)((raw >> 1) ^ (0U - (raw & 1)));
        return p;
    }
    static BROKER_ALWAYS_INLINE Py_ssize_t broker_rv(
            const uint8_t *b, Py_ssize_t p, Py_ssize_t end, int64_t *v) {
        if (p < end) {
            uint8_t x = b[p];
            if (x < 0x80) {
                *v = (int32_t)((x >> 1) ^ (0U - (x & 1)));
                return p + 1;
            }
            if (p + 1 < end && b[p + 1] < 0x80) {
                uint32_t raw = (uint32_t)(x & 0x7F) | ((uint32_t)b[p + 1] << 7);
                *v = (int32_t)((raw >> 1) ^ (0U - (raw & 1)));
                return p + 2;
            }
        }
        {
            /* through a local: were ``v`` itself passed to the out-of-line
               call, the caller's variable would escape and live on the
               stack, a store and reload on the walk's critical path */
            int64_t slow = 0;
            Py_ssize_t next = broker_rv_long(b, p, end, &slow);
            *v = slow;
            return next;
        }
    }
    /* The fast path's decoder (see _walk_fast): a zig-zag varint of one to
       three bytes, read without bounds checks (the caller guarantees three
       readable bytes at p); -1 for a longer one, left to the checked walk. */
    static BROKER_ALWAYS_INLINE Py_ssize_t broker_urv(
            const uint8_t *b, Py_ssize_t p, int64_t *v) {
        uint32_t x = b[p], y, z, raw;
        if (x < 0x80) {
            *v = (int32_t)((x >> 1) ^ (0U - (x & 1)));
            return p + 1;
        }
        y = b[p + 1];
        if (y < 0x80) {
            raw = (x & 0x7F) | (y << 7);
            *v = (int32_t)((raw >> 1) ^ (0U - (raw & 1)));
            return p + 2;
        }
        z = b[p + 2];
        if (z < 0x80) {
            raw = (x & 0x7F) | ((y & 0x7F) << 7) | (z << 14);
            *v = (int32_t)((raw >> 1) ^ (0U - (raw & 1)));
            return p + 3;
        }
        return -1;
    }
    """
    Py_ssize_t _rv "broker_rv"(const uint8_t* b, Py_ssize_t p, Py_ssize_t end, int64_t* v) noexcept nogil
    Py_ssize_t _urv "broker_urv"(const uint8_t* b, Py_ssize_t p, int64_t* v) noexcept nogil


cdef inline Py_ssize_t _rvl(const uint8_t* b, Py_ssize_t p, Py_ssize_t end, int64_t* v) noexcept nogil:
    """Zig-zag varlong, as :func:`_rv` (-2: longer than 10 bytes)."""
    cdef uint64_t raw
    cdef uint8_t x
    cdef int shift
    if p < end and b[p] < 0x80:
        x = b[p]
        v[0] = <int64_t>((x >> 1) ^ (<uint64_t>0 - (x & 1)))
        return p + 1
    raw = 0
    shift = 0
    while True:
        if p >= end:
            return -1
        x = b[p]
        p += 1
        raw |= <uint64_t>(x & 0x7F) << shift
        if not (x & 0x80):
            break
        shift += 7
        if shift > 63:
            return -2
    v[0] = <int64_t>((raw >> 1) ^ (<uint64_t>0 - (raw & 1)))
    return p


cdef inline bint _short(const uint8_t* b, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    """The varint in ``[start, stop)`` is in its shortest form."""
    return stop - start == 1 or b[stop - 1] != 0


cdef int _raise_rv(Py_ssize_t status, bint is_long) except -1:
    return _raise_var(V_EOF if status == -1 else V_LONG, is_long)


# Bytes the fast path keeps between the end of any record it takes and the
# end of the walked range. Its unchecked reads reach at most 15 bytes past the
# end of a record whose inner lengths lie (five 3-byte varints), and such a
# record is then handed to the checked walk, which raises what it must.
DEF FAST_MARGIN = 32
DEF FAST_GIVE_UP = 8

# Two copies of the fast path, made by Cython from one source: the type of its
# ``mode`` argument picks the copy, and ``if _CanonMode is ...`` is settled at
# compile time, so the copy for walks that do not track the canonical form has
# no canonical check at all (a runtime flag cost that walk ~12%).
ctypedef fused _CanonMode:
    int8_t   # tracks the canonical form
    int16_t  # does not


cdef Py_ssize_t _walk_fast(_CanonMode mode, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end,
                           int64_t count, int64_t* index_io, int64_t base_offset,
                           int64_t base_timestamp, int64_t now, int64_t before_max,
                           int64_t after_max, bint create_time, bint compacted,
                           int64_t* max_io, int64_t* min_io, bint* consecutive_io,
                           bint* canonical_io) noexcept nogil:
    """The walk's fast path: the records from ``pos`` on that need nothing but
    the common case (varints of at most three bytes, a structure that adds up,
    no record error, at least FAST_MARGIN bytes before ``end``), with the
    checked loop's results for them (the canonical flag included, while it
    is still set); returns where it stopped. The checked loop in
    :func:`walk_v2` takes the record it stopped at, so every error is raised,
    with its message, by the same code as before. Not for LogAppendTime
    batches (their records' timestamps are the batch's).

    Why: the checked loop bounds every varint against the record's end and
    branches on every failure mode; here the reads are unchecked (the margin
    keeps them inside the buffer) and the only checks are those that decide
    whether a record is ordinary: ``walk_v2`` over many small records got
    markedly faster, also when it tracks the canonical form (a rebuild;
    docs/performance.md)."""
    cdef Py_ssize_t safe_end = end - FAST_MARGIN
    cdef Py_ssize_t p, rec_end, record_pos, q
    cdef int64_t index = index_io[0]
    cdef int64_t max_ts = max_io[0]
    cdef int64_t min_ts = min_io[0]
    cdef bint consecutive = consecutive_io[0]
    cdef bint canonical = False
    if _CanonMode is int8_t:
        canonical = canonical_io[0]
    cdef int64_t body, ts_delta, offset_delta, key_len, value_len, headers, hk, hv, h, ts
    while index < count and pos < safe_end:
        record_pos = pos
        p = _urv(b, pos, &body)
        if p < 0 or body <= 0 or body > safe_end - p:
            break
        rec_end = p + body
        q = rec_end + 16 * (rec_end - record_pos)
        if q < end:
            BROKER_PREFETCH(b + q)
        # canonical: every varint in its shortest form (one byte, or a last
        # byte that is not 0), attributes 0, offset deltas 0, 1, 2 ..., no
        # length below -1, a first timestamp delta of 0 (as the checked loop)
        if _CanonMode is int8_t and canonical and (not _short(b, record_pos, p) or b[p] != 0):
            canonical = False
        q = p + 1  # past the attributes byte
        p = _urv(b, q, &ts_delta)
        if p < 0:
            break
        if _CanonMode is int8_t and canonical and (not _short(b, q, p) or (index == 0 and ts_delta != 0)):
            canonical = False
        q = p
        p = _urv(b, q, &offset_delta)
        if p < 0:
            break
        if _CanonMode is int8_t and canonical and (offset_delta != index or not _short(b, q, p)):
            canonical = False
        # key and value are read inline, each as the checked loop reads it: one
        # shared helper for the length-prefixed fields (tried, inlined by gcc)
        # made this walk slower (docs/performance.md)
        q = p
        p = _urv(b, q, &key_len)
        if p < 0:
            break
        if _CanonMode is int8_t and canonical and (key_len < -1 or not _short(b, q, p)):
            canonical = False
        if key_len > 0:
            if key_len > rec_end - p:
                break
            p += key_len
        q = p
        p = _urv(b, q, &value_len)
        if p < 0:
            break
        if _CanonMode is int8_t and canonical and (value_len < -1 or not _short(b, q, p)):
            canonical = False
        if value_len > 0:
            if value_len > rec_end - p:
                break
            p += value_len
        q = p
        p = _urv(b, q, &headers)
        if p < 0:
            break
        if _CanonMode is int8_t and canonical and not _short(b, q, p):
            canonical = False
        if headers != 0:
            if headers < 0 or headers > rec_end - p:
                break
            h = 0
            while h < headers:
                # each field needs at least its length byte inside the record
                if p >= rec_end:
                    break
                q = p
                p = _urv(b, q, &hk)
                if p < 0 or hk < 0 or hk > rec_end - p:
                    break
                if _CanonMode is int8_t and canonical and not _short(b, q, p):
                    canonical = False
                p += hk
                if p >= rec_end:
                    break
                q = p
                p = _urv(b, q, &hv)
                if p < 0:
                    break
                if _CanonMode is int8_t and canonical and (hv < -1 or not _short(b, q, p)):
                    canonical = False
                if hv > 0:
                    if hv > rec_end - p:
                        break
                    p += hv
                h += 1
            if h < headers:  # stopped at a header the checked loop must look at
                break
        if p != rec_end:
            break
        if compacted and key_len < 0:
            break
        ts = _j64_add(base_timestamp, ts_delta)
        if _check_ts(ts, False, now, before_max, after_max, create_time):
            break
        if ts > max_ts:
            max_ts = ts
        if ts < min_ts:
            min_ts = ts
        if _j64_add(base_offset, offset_delta) != index:
            consecutive = False
        index += 1
        pos = rec_end
    index_io[0] = index
    max_io[0] = max_ts
    min_io[0] = min_ts
    consecutive_io[0] = consecutive
    if _CanonMode is int8_t:
        canonical_io[0] = canonical
    return pos



# A walk of this many bytes or more releases the GIL while it runs (so the event
# loop goes on while a worker thread walks a large batch); a shorter one keeps
# it: a small request's walk takes microseconds, and giving the GIL away costs
# the event loop a wait to take it back whenever another thread wants it
# (group-commit fsync threads under acks=all: a measurable share of the loop's
# time; docs/performance.md).
DEF NOGIL_MIN_BYTES = 65536

# int32_t: the specialisation that releases the GIL; int64_t: the one that keeps it
ctypedef fused _Release:
    int32_t
    int64_t


cdef tuple _counts_tuple(const int64_t* counts):
    return tuple([counts[i] for i in range(ERROR_KINDS)])


def walk_v2(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, *, int64_t count,
            int64_t base_offset, int64_t base_timestamp, bint lat_batch,
            int64_t batch_max_timestamp, int64_t now, int64_t before_max, int64_t after_max,
            bint create_time, bint compacted, bint want_canonical, Py_ssize_t error_limit):
    if end - pos >= NOGIL_MIN_BYTES:
        return _walk_v2(<int32_t>0, buf, pos, end, count, base_offset, base_timestamp, lat_batch,
                        batch_max_timestamp, now, before_max, after_max, create_time, compacted,
                        want_canonical, error_limit)
    return _walk_v2(<int64_t>0, buf, pos, end, count, base_offset, base_timestamp, lat_batch,
                    batch_max_timestamp, now, before_max, after_max, create_time, compacted,
                    want_canonical, error_limit)


cdef object _walk_v2(_Release mode, const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end,
                     int64_t count, int64_t base_offset, int64_t base_timestamp, bint lat_batch,
                     int64_t batch_max_timestamp, int64_t now, int64_t before_max,
                     int64_t after_max, bint create_time, bint compacted, bint want_canonical,
                     Py_ssize_t error_limit):
    cdef const uint8_t* b = _ptr(buf)
    cdef int64_t max_ts = -1
    cdef int64_t min_ts = INT64_MAX
    cdef bint consecutive = True
    # the canonical-form tracking is a sizeable share of the walk: only when asked
    cdef bint canonical = want_canonical and not lat_batch
    cdef list errors = None
    # every record error is counted by its code; only the first error_limit are listed
    cdef int64_t counts[ERROR_KINDS]
    cdef Py_ssize_t listed = 0
    cdef bint any_error = False
    cdef int64_t index, h, headers, body, key_len, value_len, hk, hv, ts, ts_delta, offset_delta
    cdef int64_t offset
    cdef Py_ssize_t p, q, rec_end, body_start, record_pos
    cdef int code
    memset(counts, 0, sizeof(counts))
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    if count == 0:
        return max_ts, min_ts, consecutive, canonical, errors, None
    if end > buf.shape[0]:
        end = buf.shape[0]
    # the fast path gives up after a few calls that took nothing (a batch whose
    # records all need the checked loop pays for no more than that)
    cdef int fast_misses = FAST_GIVE_UP if lat_batch else 0
    cdef int64_t before_fast
    # the loop holds no Python object: other threads (the event loop) run meanwhile
    with nogil(_Release is int32_t):
        index = 0
        while index < count:
            if fast_misses < FAST_GIVE_UP:
                before_fast = index
                if canonical:
                    pos = _walk_fast(<int8_t>0, b, pos, end, count, &index, base_offset,
                                     base_timestamp, now, before_max, after_max, create_time,
                                     compacted, &max_ts, &min_ts, &consecutive, &canonical)
                else:
                    pos = _walk_fast(<int16_t>0, b, pos, end, count, &index, base_offset,
                                     base_timestamp, now, before_max, after_max, create_time,
                                     compacted, &max_ts, &min_ts, &consecutive, &canonical)
                if index >= count:
                    break
                if index == before_fast:
                    fast_misses += 1
            if pos >= end:
                with gil(_Release is int32_t):
                    raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
            record_pos = pos
            p = _rv(b, pos, end, &body)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, False)
            if canonical and not _short(b, pos, p):
                canonical = False
            if body < 0 or body > end - p:
                with gil(_Release is int32_t):
                    raise InvalidRecordError(
                        f"Invalid record size: expected {body} bytes in record payload, but instead "
                        f"the buffer has only {end - p} remaining bytes."
                    )
            body_start = p
            rec_end = p + body
            # Records of a batch have similar sizes: fetch the one sixteen records
            # ahead now, so a freshly decompressed (cold) buffer does not stall
            # the walk on every record's first cache line.
            q = rec_end + 16 * (rec_end - record_pos)
            if q < end:
                BROKER_PREFETCH(b + q)
            if p >= rec_end:
                with gil(_Release is int32_t):
                    raise InvalidRecordError("Found invalid record structure")
            if b[p] != 0:
                canonical = False
            q = p + 1
            p = _rvl(b, q, rec_end, &ts_delta)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, True)
            if canonical and not _short(b, q, p):
                canonical = False
            q = p
            p = _rv(b, q, rec_end, &offset_delta)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, False)
            if canonical and (offset_delta != index or not _short(b, q, p)):
                canonical = False
            q = p
            p = _rv(b, q, rec_end, &key_len)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, False)
            if canonical and (key_len < -1 or not _short(b, q, p)):
                canonical = False
            if key_len > 0:
                if key_len > rec_end - p:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError("Found invalid record structure")
                p += key_len
            q = p
            p = _rv(b, q, rec_end, &value_len)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, False)
            if canonical and (value_len < -1 or not _short(b, q, p)):
                canonical = False
            if value_len > 0:
                if value_len > rec_end - p:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError("Found invalid record structure")
                p += value_len
            q = p
            p = _rv(b, q, rec_end, &headers)
            if p < 0:
                with gil(_Release is int32_t):
                    _raise_rv(p, False)
            if canonical and not _short(b, q, p):
                canonical = False
            if headers < 0:
                with gil(_Release is int32_t):
                    raise InvalidRecordError(f"Found invalid number of record headers {headers}")
            if headers > rec_end - p:
                with gil(_Release is int32_t):
                    raise InvalidRecordError(
                        f"Found invalid number of record headers. {headers} is larger than the "
                        "remaining size of the buffer"
                    )
            h = 0
            while h < headers:
                q = p
                p = _rv(b, q, rec_end, &hk)
                if p < 0:
                    with gil(_Release is int32_t):
                        _raise_rv(p, False)
                if canonical and not _short(b, q, p):
                    canonical = False
                if hk < 0:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError(f"Invalid negative header key size {hk}")
                if hk > rec_end - p:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError("Found invalid record structure")
                p += hk
                q = p
                p = _rv(b, q, rec_end, &hv)
                if p < 0:
                    with gil(_Release is int32_t):
                        _raise_rv(p, False)
                if canonical and (hv < -1 or not _short(b, q, p)):
                    canonical = False
                if hv > 0:
                    if hv > rec_end - p:
                        with gil(_Release is int32_t):
                            raise InvalidRecordError("Found invalid record structure")
                    p += hv
                h += 1
            if p != rec_end:
                with gil(_Release is int32_t):
                    raise InvalidRecordError(
                        f"Invalid record size: expected to read {body} bytes in record payload, "
                        f"but instead read {p - body_start}"
                    )
            pos = rec_end

            if lat_batch:
                ts = batch_max_timestamp
            else:
                ts = _j64_add(base_timestamp, ts_delta)
            if index == 0 and ts_delta != 0:
                canonical = False
            if compacted and key_len < 0:
                code = ERR_NO_KEY
            else:
                code = _check_ts(ts, lat_batch, now, before_max, after_max, create_time)
            offset = _j64_add(base_offset, offset_delta)
            if code:
                any_error = True
                counts[code] += 1
                if listed < error_limit:
                    listed += 1
                    with gil(_Release is int32_t):
                        if errors is None:
                            errors = []
                        errors.append((index, code, offset, ts, record_pos))
                index += 1
                continue
            if ts > max_ts:
                max_ts = ts
            if ts < min_ts:
                min_ts = ts
            if offset != index:
                consecutive = False
            index += 1
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    if not any_error:
        return max_ts, min_ts, consecutive, canonical, errors, None
    if errors is None:
        errors = []
    return max_ts, min_ts, consecutive, canonical, errors, _counts_tuple(counts)

cdef inline int _check_client_batch(int64_t base_offset, int32_t last_offset_delta,
                                    int32_t records_count, int32_t attributes,
                                    int64_t producer_id, int32_t base_sequence) noexcept nogil:
    cdef int64_t count_from_offsets = _j64_add(
        _j64_sub(_j64_add(base_offset, last_offset_delta), base_offset), 1)
    if count_from_offsets <= 0:
        return CHECK_OFFSET_RANGE
    if records_count <= 0:
        return CHECK_COUNT
    if count_from_offsets != records_count:
        return CHECK_COUNT_MISMATCH
    if attributes & 0x20:
        return CHECK_CONTROL
    if producer_id != -1 and base_sequence < 0:
        return CHECK_SEQUENCE
    return CHECK_NONE


def check_client_batch(*, int64_t base_offset, int32_t last_offset_delta,
                       int32_t records_count, int32_t attributes, int64_t producer_id,
                       int32_t base_sequence):
    return _check_client_batch(base_offset, last_offset_delta, records_count, attributes,
                               producer_id, base_sequence)


def assign_in_place_v2(uint8_t[::1] buf, *, int64_t next_offset,
                       int32_t partition_leader_epoch, int64_t now, int64_t before_max, int64_t after_max, bint compacted,
                       bint log_append_time, bint client_origin, Py_ssize_t error_limit):
    cdef Py_ssize_t size = buf.shape[0]
    if size < 61:
        raise ValueError("the buffer does not hold a whole v2 batch")
    cdef uint8_t* b = &buf[0]
    cdef int64_t end = <int64_t>_i32(b + 8) + 12
    if end < 61 or end > size:
        raise ValueError("the buffer does not hold a whole v2 batch")
    cdef int64_t base_offset = _i64(b)
    cdef int32_t attributes = <int16_t>((<uint32_t>b[21] << 8) | b[22])
    cdef int32_t last_offset_delta = _i32(b + 23)
    cdef int64_t base_timestamp = _i64(b + 27)
    cdef int64_t batch_max_timestamp = _i64(b + 35)
    cdef int64_t producer_id = _i64(b + 43)
    cdef int32_t producer_epoch = <int16_t>((<uint32_t>b[51] << 8) | b[52])
    cdef int32_t base_sequence = _i32(b + 53)
    cdef int32_t count = _i32(b + 57)
    cdef int failed
    if client_origin:
        failed = _check_client_batch(base_offset, last_offset_delta, count, attributes,
                                     producer_id, base_sequence)
        if failed:
            raise BatchRejected(failed, None, None)
    cdef bint lat_batch = (attributes & 0x08) != 0
    cdef tuple walked
    if end - 61 >= NOGIL_MIN_BYTES:
        walked = _walk_v2(<int32_t>0, buf, 61, end, count, base_offset, base_timestamp,
                          lat_batch, batch_max_timestamp, now, before_max, after_max,
                          not log_append_time, compacted, False, error_limit)
    else:
        walked = _walk_v2(<int64_t>0, buf, 61, end, count, base_offset, base_timestamp,
                          lat_batch, batch_max_timestamp, now, before_max, after_max,
                          not log_append_time, compacted, False, error_limit)
    if walked[5] is not None:
        raise BatchRejected(CHECK_NONE, walked[4], walked[5])
    cdef int64_t max_ts = walked[0]
    cdef int64_t last_offset = next_offset + count - 1
    _put_i64(b, last_offset - last_offset_delta)
    _put_i32(b + 12, partition_leader_epoch)
    cdef int64_t new_max = now if log_append_time else max_ts
    cdef int32_t new_attributes = (attributes & (0x07 | 0x10 | 0x20 | 0x40)) | (
        0x08 if log_append_time else 0)
    cdef uint32_t crc = 0
    if lat_batch != log_append_time or batch_max_timestamp != new_max:
        # setMaxTimestamp: the attributes word rewritten, then the CRC
        b[21] = (new_attributes >> 8) & 0xFF
        b[22] = new_attributes & 0xFF
        _put_i64(b + 35, new_max)
        with memoryview(buf) as mv:
            crc = _crc32c(mv[21:end])
        _put_i32(b + 17, <int32_t>crc)
        attributes = new_attributes
        batch_max_timestamp = new_max
    cdef int64_t shallow
    cdef int64_t max_timestamp
    if log_append_time:
        max_timestamp = now
        shallow = last_offset
    else:
        max_timestamp = max_ts
        shallow = last_offset if max_ts > -1 else -1
    return (count, max_timestamp, shallow, attributes, batch_max_timestamp, producer_id,
            producer_epoch, base_sequence)


def reencode_v2(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, *, int64_t count,
                int64_t base_timestamp, bint lat_batch, int64_t batch_max_timestamp,
                uint8_t[::1] out, Py_ssize_t out_pos):
    cdef const uint8_t* b = _ptr(buf)
    cdef uint8_t* o = &out[0]
    cdef Py_ssize_t cap = out.shape[0]
    cdef bint overflow = False
    cdef int64_t index, h, headers, body, key_len, value_len, hk, hv, ts, ts_delta, new_delta
    cdef int64_t first_ts = 0, size
    cdef Py_ssize_t p, rec_end, key_start, value_start, hp, q
    cdef VarRead r
    with nogil:
        index = 0
        while index < count:
            r = _varint(b, pos, end)
            body = r.value
            p = r.pos
            rec_end = p + body
            p += 1
            r = _varlong(b, p, rec_end)
            ts_delta = r.value
            p = r.pos
            r = _varint(b, p, rec_end)
            p = r.pos
            if lat_batch:
                ts = batch_max_timestamp
            else:
                ts = _j64_add(base_timestamp, ts_delta)
            if index == 0:
                first_ts = ts
            new_delta = _j64_sub(ts, first_ts)
            r = _varint(b, p, rec_end)
            key_len = r.value
            p = r.pos
            key_start = p
            if key_len > 0:
                p += key_len
            r = _varint(b, p, rec_end)
            value_len = r.value
            p = r.pos
            value_start = p
            if value_len > 0:
                p += value_len
            r = _varint(b, p, rec_end)
            headers = r.value
            p = r.pos
            # size of the re-encoded body: header bytes are measured on a
            # second pass over the header list
            size = 1 + _varlong_size(new_delta) + _varint_size(index)
            size += 1 if key_len < 0 else _varint_size(key_len) + key_len
            size += 1 if value_len < 0 else _varint_size(value_len) + value_len
            size += _varint_size(headers)
            hp = p
            h = 0
            while h < headers:
                r = _varint(b, hp, rec_end)
                hk = r.value
                hp = r.pos + hk
                r = _varint(b, hp, rec_end)
                hv = r.value
                hp = r.pos
                if hv > 0:
                    hp += hv
                size += _varint_size(hk) + hk
                size += 1 if hv < 0 else _varint_size(hv) + hv
                h += 1
            if out_pos + _varint_size(size) + size > cap:
                overflow = True
                break
            q = _w_varint(o, out_pos, size)
            o[q] = 0
            q = _w_varlong(o, q + 1, new_delta)
            q = _w_varint(o, q, index)
            if key_len < 0:
                q = _w_varint(o, q, -1)
            else:
                q = _w_varint(o, q, key_len)
                memcpy(o + q, b + key_start, key_len)
                q += key_len
            if value_len < 0:
                q = _w_varint(o, q, -1)
            else:
                q = _w_varint(o, q, value_len)
                memcpy(o + q, b + value_start, value_len)
                q += value_len
            q = _w_varint(o, q, headers)
            h = 0
            while h < headers:
                r = _varint(b, p, rec_end)
                hk = r.value
                p = r.pos
                q = _w_varint(o, q, hk)
                memcpy(o + q, b + p, hk)
                q += hk
                p += hk
                r = _varint(b, p, rec_end)
                hv = r.value
                p = r.pos
                if hv < 0:
                    q = _w_varint(o, q, -1)
                else:
                    q = _w_varint(o, q, hv)
                    memcpy(o + q, b + p, hv)
                    q += hv
                    p += hv
                h += 1
            out_pos = q
            pos = rec_end
            index += 1
    if overflow:
        raise ValueError("output buffer too small")
    return out_pos


cdef inline int64_t _v2_size(int64_t offset_delta, int64_t ts_delta, int64_t key_len,
                             int64_t value_len) noexcept nogil:
    """Bytes of a header-less v2 record, its length varint included."""
    cdef int64_t size = 1 + _varlong_size(ts_delta) + _varint_size(offset_delta) + 1
    size += 1 if key_len < 0 else _varint_size(key_len) + key_len
    size += 1 if value_len < 0 else _varint_size(value_len) + value_len
    return _varint_size(size) + size


cdef inline Py_ssize_t _w_v2_record(uint8_t* o, Py_ssize_t q, int64_t offset_delta,
                                    int64_t ts_delta, const uint8_t* b, Py_ssize_t key_pos,
                                    int64_t key_len, Py_ssize_t value_pos,
                                    int64_t value_len) noexcept nogil:
    cdef int64_t size = 1 + _varlong_size(ts_delta) + _varint_size(offset_delta) + 1
    size += 1 if key_len < 0 else _varint_size(key_len) + key_len
    size += 1 if value_len < 0 else _varint_size(value_len) + value_len
    q = _w_varint(o, q, size)
    o[q] = 0
    q = _w_varlong(o, q + 1, ts_delta)
    q = _w_varint(o, q, offset_delta)
    if key_len < 0:
        q = _w_varint(o, q, -1)
    else:
        q = _w_varint(o, q, key_len)
        memcpy(o + q, b + key_pos, key_len)
        q += key_len
    if value_len < 0:
        q = _w_varint(o, q, -1)
    else:
        q = _w_varint(o, q, value_len)
        memcpy(o + q, b + value_pos, value_len)
        q += value_len
    o[q] = 0
    return q + 1


def walk_legacy(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, *, int wrapper_magic,
                int64_t wrapper_offset, int64_t wrapper_timestamp, bint wrapper_lat,
                int64_t now, int64_t before_max, int64_t after_max, bint create_time,
                bint compacted, out, Py_ssize_t out_pos, Py_ssize_t error_limit):
    if end - pos >= NOGIL_MIN_BYTES:
        return _walk_legacy(<int32_t>0, buf, pos, end, wrapper_magic, wrapper_offset,
                            wrapper_timestamp, wrapper_lat, now, before_max, after_max,
                            create_time, compacted, out, out_pos, error_limit)
    return _walk_legacy(<int64_t>0, buf, pos, end, wrapper_magic, wrapper_offset,
                        wrapper_timestamp, wrapper_lat, now, before_max, after_max, create_time,
                        compacted, out, out_pos, error_limit)


cdef object _walk_legacy(_Release mode, const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end,
                         int wrapper_magic, int64_t wrapper_offset, int64_t wrapper_timestamp,
                         bint wrapper_lat, int64_t now, int64_t before_max, int64_t after_max,
                         bint create_time, bint compacted, out, Py_ssize_t out_pos,
                         Py_ssize_t error_limit):
    cdef const uint8_t* b = _ptr(buf)
    cdef uint8_t[::1] out_view
    cdef uint8_t* o = NULL
    cdef Py_ssize_t out_cap = 0
    cdef bint inner = wrapper_magic >= 0
    cdef int64_t base = 0, last_inner_offset = 0, stored_offset, offset, ts
    cdef int64_t max_ts = -1, min_ts = INT64_MAX, first_ts = -1
    cdef int64_t key_len, value_len
    cdef Py_ssize_t stop = end, p, rec, rec_end, entry_pos, n = 0, index = 0
    cdef Py_ssize_t key_pos, value_pos, kp, consumed
    cdef int32_t size
    cdef int magic, attributes, code, first_magic = wrapper_magic
    cdef bint consecutive = True, lat_batch, listed_error
    cdef list errors = None
    # every record error is counted by its code; only the first error_limit are
    # listed, except the one that ends the walk (always listed)
    cdef int64_t counts[ERROR_KINDS]
    cdef Py_ssize_t listed = 0
    cdef bint any_error = False
    memset(counts, 0, sizeof(counts))
    if out is not None:
        out_view = out
        o = &out_view[0]
        out_cap = out_view.shape[0]
    # no Python object is touched but to raise or list an error: other threads
    # (the event loop) run meanwhile
    with nogil(_Release is int32_t):
        if inner:
            p = pos
            while end - p >= 12:
                size = _i32(b + p + 8)
                if size < 14:
                    with gil(_Release is int32_t):
                        raise CorruptRecordError(
                            "Record size is less than the minimum record overhead (14)"
                        )
                if end - p - 12 < size:
                    break
                last_inner_offset = _i64(b + p)
                n += 1
                p += 12 + size
            stop = p
            if n == 0:
                with gil(_Release is int32_t):
                    raise InvalidRecordError(
                        "Found invalid compressed record set with no inner records"
                    )
            if wrapper_magic == 1:
                if wrapper_offset == 0:
                    base = 0
                elif wrapper_offset < last_inner_offset:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError(
                            "Found invalid wrapper offset in compressed v1 message set, wrapper "
                            f"offset '{wrapper_offset}' is less than the last inner message offset "
                            f"'{last_inner_offset}' and it is not zero."
                        )
                else:
                    base = wrapper_offset - last_inner_offset
        consumed = stop
        p = pos
        while p < stop:
            size = _i32(b + p + 8)
            rec = p + 12
            rec_end = rec + size
            stored_offset = _i64(b + p)
            magic = <signed char>b[rec + 4]
            attributes = b[rec + 5]
            entry_pos = p
            p = rec_end
            code = 0
            if inner:
                offset = _j64_add(base, stored_offset) if wrapper_magic == 1 else stored_offset
                if attributes & 0x07:
                    with gil(_Release is int32_t):
                        raise InvalidRecordError("Inner messages must not be compressed")
                if magic != wrapper_magic:
                    code = ERR_MAGIC
                elif size < 14 or _crc32(b + rec + 4, size - 4) != _u32(b + rec):
                    # fatal at once (CorruptRecordException), always listed
                    code = ERR_CORRUPT
            else:
                offset = stored_offset
                if first_magic < 0:
                    first_magic = magic
                elif magic != first_magic:
                    # the caller's batch-level error; the walk ends here
                    code = ERR_MAGIC
            if code == 0:
                if magic == 0:
                    ts = -1
                elif inner and wrapper_lat:
                    ts = wrapper_timestamp
                else:
                    ts = _i64(b + rec + 6)
                # key and value (a length running past the record is corrupt)
                kp = rec + (6 if magic == 0 else 14)
                if kp + 4 > rec_end:
                    with gil(_Release is int32_t):
                        raise CorruptRecordError(
                            "Record is corrupt (key size past the end of the record)"
                        )
                key_len = _i32(b + kp)
                kp += 4
                key_pos = kp
                if key_len > 0:
                    kp += key_len
                if kp + 4 > rec_end:
                    with gil(_Release is int32_t):
                        raise CorruptRecordError(
                            "Record is corrupt (value size past the end of the record)"
                        )
                value_len = _i32(b + kp)
                kp += 4
                value_pos = kp
                if value_len > 0:
                    kp += value_len
                if kp > rec_end:
                    with gil(_Release is int32_t):
                        raise CorruptRecordError(
                            "Record is corrupt (value past the end of the record)"
                        )
                if inner:
                    lat_batch = wrapper_lat
                else:
                    lat_batch = magic > 0 and (attributes & 0x08) != 0
                if compacted and key_len < 0:
                    code = ERR_NO_KEY
                else:
                    code = _check_ts(ts, lat_batch, now, before_max, after_max, create_time)
            else:
                ts = -1
            if code:
                any_error = True
                counts[code] += 1
                # the error that ends the walk is listed whatever the limit
                listed_error = listed < error_limit or code == ERR_CORRUPT or not inner
                if listed_error:
                    listed += 1
                    with gil(_Release is int32_t):
                        if errors is None:
                            errors = []
                        errors.append((index if inner else 0, code, offset, ts, entry_pos))
                if code == ERR_CORRUPT:
                    break
                if not inner:
                    consumed = entry_pos
                    break
                index += 1
                continue
            if magic > 0 and ts > max_ts:
                max_ts = ts
            if ts < min_ts:
                min_ts = ts
            if offset != index:
                consecutive = False
            if index == 0:
                first_ts = ts
            if o != NULL:
                if out_pos + _v2_size(index, _j64_sub(ts, first_ts), key_len, value_len) > out_cap:
                    with gil(_Release is int32_t):
                        raise ValueError("output buffer too small")
                out_pos = _w_v2_record(o, out_pos, index, _j64_sub(ts, first_ts), b, key_pos,
                                       key_len, value_pos, value_len)
            index += 1
    if not any_error:
        return index, consumed, out_pos, max_ts, min_ts, consecutive, first_ts, None, None
    if errors is None:
        errors = []
    return (index, consumed, out_pos, max_ts, min_ts, consecutive, first_ts, errors,
            _counts_tuple(counts))


def v2_to_legacy(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end, *, int64_t count,
                 int64_t base_offset, int64_t base_timestamp, bint lat_batch,
                 int64_t batch_max_timestamp, int to_magic, int64_t renumber_from,
                 bint relative_offsets,
                 int64_t first_offset, int64_t log_append_time, bint clamp_timestamps,
                 uint8_t[::1] out, Py_ssize_t out_pos):
    cdef const uint8_t* b = _ptr(buf)
    cdef uint8_t* o = &out[0]
    cdef int64_t written = 0, first_written = -1, last_written = -1
    cdef int64_t max_ts = -1, offset_of_max = -1
    cdef bint had_headers = False
    cdef int attributes = 0x08 if (to_magic == 1 and log_append_time >= 0) else 0
    cdef int64_t index = 0, body, ts_delta, offset_delta, key_len, value_len, headers
    cdef int64_t offset, ts, entry_offset, k, v
    cdef Py_ssize_t p, rec_end, key_pos, value_pos, q, r_
    cdef VarRead r
    cdef int32_t record_size
    while index < count:
        r = _varint(b, pos, end)
        body = r.value
        p = r.pos
        rec_end = p + body
        p += 1
        r = _varlong(b, p, rec_end)
        ts_delta = r.value
        p = r.pos
        r = _varint(b, p, rec_end)
        offset_delta = r.value
        p = r.pos
        r = _varint(b, p, rec_end)
        key_len = r.value
        p = r.pos
        key_pos = p
        if key_len > 0:
            p += key_len
        r = _varint(b, p, rec_end)
        value_len = r.value
        p = r.pos
        value_pos = p
        if value_len > 0:
            p += value_len
        r = _varint(b, p, rec_end)
        headers = r.value
        if headers > 0:
            had_headers = True
        pos = rec_end
        offset = _j64_add(base_offset, offset_delta)
        if offset < first_offset:
            index += 1
            continue
        if renumber_from >= 0:
            offset = renumber_from + written
        if lat_batch:
            ts = batch_max_timestamp
        else:
            ts = _j64_add(base_timestamp, ts_delta)
        if to_magic == 1 and log_append_time >= 0:
            ts = log_append_time
        if ts < -1:
            if not clamp_timestamps:
                return -1 - index, out_pos, first_written, last_written, max_ts, offset_of_max, had_headers
            ts = -1
        if written == 0:
            first_written = offset
        entry_offset = offset - first_written if relative_offsets else offset
        k = key_len if key_len >= 0 else 0
        v = value_len if value_len >= 0 else 0
        record_size = <int32_t>((14 if to_magic == 0 else 22) + k + v)
        q = out_pos
        if q + 12 + record_size > out.shape[0]:
            raise ValueError("output buffer too small")
        _put_i64(o + q, entry_offset)
        _put_i32(o + q + 8, record_size)
        r_ = q + 16
        o[r_] = <uint8_t>to_magic
        o[r_ + 1] = <uint8_t>attributes
        r_ += 2
        if to_magic == 1:
            _put_i64(o + r_, ts)
            r_ += 8
        _put_i32(o + r_, <int32_t>(key_len if key_len >= 0 else -1))
        r_ += 4
        if key_len > 0:
            memcpy(o + r_, b + key_pos, key_len)
            r_ += key_len
        _put_i32(o + r_, <int32_t>(value_len if value_len >= 0 else -1))
        r_ += 4
        if value_len > 0:
            memcpy(o + r_, b + value_pos, value_len)
            r_ += value_len
        _put_i32(o + q + 12, <int32_t>_crc32(o + q + 16, r_ - q - 16))
        out_pos = r_
        written += 1
        last_written = offset
        if to_magic > 0 and ts > max_ts:
            max_ts = ts
            offset_of_max = offset
        index += 1
    return written, out_pos, first_written, last_written, max_ts, offset_of_max, had_headers
