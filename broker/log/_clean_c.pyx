# cython: language_level=3
"""Compiled twin of ``_clean_py.py``: the same names, the same results.

The offset map's table is anonymous memory (untouched pages cost nothing
until a key lands on them; huge pages where the kernel allows, so random
probes of a 128 MiB table do not miss the TLB), its MD5 is our own C
implementation of RFC 1321 (checked against ``hashlib`` by the twin tests),
and the walks run without the GIL: the event loop keeps serving while a
cleaner thread crunches a chunk. CRC-32C uses the SSE4.2 instruction on
three streams when the CPU has it (a table otherwise), CRC-32 of legacy
entries a table.

Where the time goes, and why the walks are shaped as they are: a batch's
records are parsed first; the keys to look up are hashed 32 at a time (one
key is a serial chain of 64 steps; 32 independent chains fill the vector
units, so 32 keys cost little more than one), and the first slot of each
key is computed and prefetched right then; the records are then judged (or
put) in order, by which time their slots are in the cache. Probing without
that wait was about half the cleaning on a large map. The table's slot of a probe is ``abs(probe) % slots`` as in
Kafka, computed without a division (Lemire's remainder by multiplication).
The filter hashes only the keys the superseded bitmap cannot answer for
(records before the first dirty offset, or past the bitmap): a dirty
record's fate is one bit, which made the filter pass markedly cheaper; the
map pass still walks, hashes and probes (docs/performance.md).

Errors are found in C and raised with the reference's ``error(code, ...)``
once the GIL is back, so both twins raise the same exceptions with the same
messages.
"""

from broker.log import _clean_py
from broker.records import batch as _batch
from broker.records import legacy as _legacy
from broker.log._clean_py import (
    DONE,
    KEEP_ALL,
    KEEP_NONE,
    MAP_FULL,
    NEEDS_CODEC,
    OUT_FULL,
    REBUILT,
    error,
    rebuilt_attributes,
)

from cpython.mem cimport PyMem_RawCalloc, PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

# C copies of the reference's codes (checked against it at import)
cdef enum:
    C_E_CRC32 = 20
    C_E_CRC32C = 19
    C_E_ENTRY_SIZE = 13
    C_E_HEADER_COUNT = 6
    C_E_HEADER_KEY = 7
    C_E_HEADER_PAST = 8
    C_E_KEY_VALUE_PAST = 5
    C_E_LEGACY_KEY = 17
    C_E_LEGACY_SMALL = 15
    C_E_LEGACY_VALUE = 18
    C_E_MAGIC = 16
    C_E_OUT_SMALL = 22
    C_E_PREMATURE_EOF = 10
    C_E_RECORD_COUNT = 12
    C_E_RECORD_EMPTY = 4
    C_E_RECORD_FIT = 3
    C_E_RECORD_SIZE = 9
    C_E_RECORDS_REMAINING = 11
    C_E_TIMESTAMP = 21
    C_E_V2_SMALL = 14
    C_E_VARINT_END = 1
    C_E_VARINT_LONG = 2
    C_DONE = 0
    C_MAP_FULL = 1
    C_NEEDS_CODEC = 2
    C_OUT_FULL = 3
    C_KEEP_ALL = 0
    C_KEEP_NONE = 1
    C_REBUILT = 2

_C_CODES = {
    "E_CRC32": C_E_CRC32,
    "E_CRC32C": C_E_CRC32C,
    "E_ENTRY_SIZE": C_E_ENTRY_SIZE,
    "E_HEADER_COUNT": C_E_HEADER_COUNT,
    "E_HEADER_KEY": C_E_HEADER_KEY,
    "E_HEADER_PAST": C_E_HEADER_PAST,
    "E_KEY_VALUE_PAST": C_E_KEY_VALUE_PAST,
    "E_LEGACY_KEY": C_E_LEGACY_KEY,
    "E_LEGACY_SMALL": C_E_LEGACY_SMALL,
    "E_LEGACY_VALUE": C_E_LEGACY_VALUE,
    "E_MAGIC": C_E_MAGIC,
    "E_OUT_SMALL": C_E_OUT_SMALL,
    "E_PREMATURE_EOF": C_E_PREMATURE_EOF,
    "E_RECORD_COUNT": C_E_RECORD_COUNT,
    "E_RECORD_EMPTY": C_E_RECORD_EMPTY,
    "E_RECORD_FIT": C_E_RECORD_FIT,
    "E_RECORD_SIZE": C_E_RECORD_SIZE,
    "E_RECORDS_REMAINING": C_E_RECORDS_REMAINING,
    "E_TIMESTAMP": C_E_TIMESTAMP,
    "E_V2_SMALL": C_E_V2_SMALL,
    "E_VARINT_END": C_E_VARINT_END,
    "E_VARINT_LONG": C_E_VARINT_LONG,
    "DONE": C_DONE,
    "MAP_FULL": C_MAP_FULL,
    "NEEDS_CODEC": C_NEEDS_CODEC,
    "OUT_FULL": C_OUT_FULL,
    "KEEP_ALL": C_KEEP_ALL,
    "KEEP_NONE": C_KEEP_NONE,
    "REBUILT": C_REBUILT,
}
for _name, _value in _C_CODES.items():
    if getattr(_clean_py, _name) != _value:
        raise ImportError(f"_clean_c: {_name} differs from the reference")

__all__ = [
    "DONE",
    "KEEP_ALL",
    "KEEP_NONE",
    "MAP_FULL",
    "NEEDS_CODEC",
    "OUT_FULL",
    "REBUILT",
    "ActiveProducers",
    "OffsetMap",
    "error",
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

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <math.h>

    /* ---- MD5 (RFC 1321), written for short keys: one or two blocks ---------------- */
    static uint32_t broker_md5_k[64];
    static const uint8_t broker_md5_s[64] = {
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
    static const uint8_t broker_md5_g[64] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        1, 6, 11, 0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12,
        5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15, 2,
        0, 7, 14, 5, 12, 3, 10, 1, 8, 15, 6, 13, 4, 11, 2, 9};

    static void broker_md5_init(void) {
        for (int i = 0; i < 64; i++)
            broker_md5_k[i] = (uint32_t)(fabs(sin((double)(i + 1))) * 4294967296.0);
    }

    static inline uint32_t broker_rotl(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

    static void broker_md5_block(uint32_t st[4], const uint8_t *p) {
        uint32_t m[16];
        for (int i = 0; i < 16; i++)
            m[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8)
                 | ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
        #pragma GCC unroll 64
        for (int i = 0; i < 64; i++) {
            uint32_t f;
            if (i < 16) f = d ^ (b & (c ^ d));
            else if (i < 32) f = c ^ (d & (b ^ c));
            else if (i < 48) f = b ^ c ^ d;
            else f = c ^ (b | ~d);
            uint32_t t = d;
            d = c;
            c = b;
            b = b + broker_rotl(a + f + broker_md5_k[i] + m[broker_md5_g[i]], broker_md5_s[i]);
            a = t;
        }
        st[0] += a; st[1] += b; st[2] += c; st[3] += d;
    }

    static void broker_md5(const uint8_t *data, size_t n, uint8_t out[16]) {
        uint32_t st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
        size_t full = n & ~(size_t)63;
        for (size_t i = 0; i < full; i += 64) broker_md5_block(st, data + i);
        uint8_t tail[128];
        size_t rest = n - full;
        memcpy(tail, data + full, rest);
        tail[rest] = 0x80;
        size_t blocks = rest < 56 ? 1 : 2;
        memset(tail + rest + 1, 0, 64 * blocks - rest - 1);
        uint64_t bits = (uint64_t)n * 8;
        for (int i = 0; i < 8; i++) tail[64 * blocks - 8 + i] = (uint8_t)(bits >> (8 * i));
        broker_md5_block(st, tail);
        if (blocks == 2) broker_md5_block(st, tail + 64);
        for (int i = 0; i < 4; i++) {
            out[4 * i] = (uint8_t)st[i];
            out[4 * i + 1] = (uint8_t)(st[i] >> 8);
            out[4 * i + 2] = (uint8_t)(st[i] >> 16);
            out[4 * i + 3] = (uint8_t)(st[i] >> 24);
        }
    }

    /* Eight single-block keys (at most 55 bytes each) at once: the same steps on
       eight independent lanes, which the compiler turns into SIMD (SSE2 is
       enough: two 4 x 32-bit registers per variable). Eight keys together
       cost about what one costs with broker_md5 (docs/performance.md). */
    #define BROKER_LANES 32
    #define BROKER_LANE_MAX 55
    /* memcpy of at most 55 bytes without a call: two overlapping moves of the
       largest power of two <= n, both inside [src, src + n) */
    static inline void broker_small_copy(uint8_t *dst, const uint8_t *src, size_t n) {
        if (n >= 32) {
            memcpy(dst, src, 32); memcpy(dst + n - 32, src + n - 32, 32);
        } else if (n >= 16) {
            memcpy(dst, src, 16); memcpy(dst + n - 16, src + n - 16, 16);
        } else if (n >= 8) {
            memcpy(dst, src, 8); memcpy(dst + n - 8, src + n - 8, 8);
        } else if (n >= 4) {
            memcpy(dst, src, 4); memcpy(dst + n - 4, src + n - 4, 4);
        } else {
            for (size_t i = 0; i < n; i++) dst[i] = src[i];
        }
    }

    #if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
    __attribute__((target_clones("avx512f", "avx2", "default")))
    #endif
    static void broker_md5_lanes(const uint8_t *const keys[BROKER_LANES],
                                 const size_t lens[BROKER_LANES], int n,
                                 uint8_t *const digests[BROKER_LANES]) {
        uint8_t blk[BROKER_LANES][64];
        uint32_t m[16][BROKER_LANES];
        uint32_t a[BROKER_LANES], b[BROKER_LANES], c[BROKER_LANES], d[BROKER_LANES];
        memset(blk, 0, sizeof blk);
        for (int l = 0; l < n; l++) {
            broker_small_copy(blk[l], keys[l], lens[l]);
            blk[l][lens[l]] = 0x80;
            uint64_t bits = (uint64_t)lens[l] * 8;
            for (int i = 0; i < 8; i++) blk[l][56 + i] = (uint8_t)(bits >> (8 * i));
        }
        for (int w = 0; w < 16; w++)
            for (int l = 0; l < BROKER_LANES; l++) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                memcpy(&m[w][l], blk[l] + 4 * w, 4);
    #else
                const uint8_t *q = blk[l] + 4 * w;
                m[w][l] = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16)
                        | ((uint32_t)q[3] << 24);
    #endif
            }
        for (int l = 0; l < BROKER_LANES; l++) {
            a[l] = 0x67452301u; b[l] = 0xefcdab89u; c[l] = 0x98badcfeu; d[l] = 0x10325476u;
        }
        #pragma GCC unroll 64
        for (int i = 0; i < 64; i++) {
            const uint32_t k = broker_md5_k[i];
            const int s = broker_md5_s[i];
            const int g = broker_md5_g[i];
            for (int l = 0; l < BROKER_LANES; l++) {
                uint32_t f;
                if (i < 16) f = d[l] ^ (b[l] & (c[l] ^ d[l]));
                else if (i < 32) f = c[l] ^ (d[l] & (b[l] ^ c[l]));
                else if (i < 48) f = b[l] ^ c[l] ^ d[l];
                else f = c[l] ^ (b[l] | ~d[l]);
                uint32_t x = a[l] + f + k + m[g][l];
                uint32_t t = d[l];
                d[l] = c[l];
                c[l] = b[l];
                b[l] = b[l] + ((x << s) | (x >> (32 - s)));
                a[l] = t;
            }
        }
        for (int l = 0; l < n; l++) {
            uint32_t st[4] = {a[l] + 0x67452301u, b[l] + 0xefcdab89u,
                              c[l] + 0x98badcfeu, d[l] + 0x10325476u};
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(digests[l], st, 16);
    #else
            for (int i = 0; i < 4; i++) {
                digests[l][4 * i] = (uint8_t)st[i];
                digests[l][4 * i + 1] = (uint8_t)(st[i] >> 8);
                digests[l][4 * i + 2] = (uint8_t)(st[i] >> 16);
                digests[l][4 * i + 3] = (uint8_t)(st[i] >> 24);
            }
    #endif
        }
    }

    /* ---- CRC-32C (Castagnoli) and CRC-32 (zlib), tables + SSE4.2 ----------------- */
    static uint32_t broker_crc32c_table[256];
    static uint32_t broker_crc32_table[256];
    static int broker_have_sse42 = 0;

    static void broker_crc_tables(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i, z = i;
            for (int k = 0; k < 8; k++) {
                c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
                z = (z >> 1) ^ (0xEDB88320u & (0u - (z & 1u)));
            }
            broker_crc32c_table[i] = c;
            broker_crc32_table[i] = z;
        }
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        broker_have_sse42 = __builtin_cpu_supports("sse4.2");
    #endif
    }

    static void broker_crc_init(void);

    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <nmmintrin.h>
    /* Three streams side by side (the instruction's latency is 3 cycles, its
       throughput 1 a cycle): blocks of 3 x BROKER_CRC_L bytes, the parts
       combined as Z(Z(A) ^ B) ^ C where Z appends BROKER_CRC_L zero bytes,
       applied with four 256-entry tables built at import. */
    #define BROKER_CRC_L 512
    static uint32_t broker_crc_shift[4][256];

    __attribute__((target("sse4.2")))
    static void broker_crc_shift_init(void) {
        for (int k = 0; k < 4; k++)
            for (uint32_t v = 0; v < 256; v++) {
                uint64_t c = v << (8 * k);
                for (int i = 0; i < BROKER_CRC_L / 8; i++) c = _mm_crc32_u64(c, 0);
                broker_crc_shift[k][v] = (uint32_t)c;
            }
    }

    static inline uint32_t broker_crc_zeros(uint32_t c) {
        return broker_crc_shift[0][c & 0xff] ^ broker_crc_shift[1][(c >> 8) & 0xff]
             ^ broker_crc_shift[2][(c >> 16) & 0xff] ^ broker_crc_shift[3][c >> 24];
    }

    __attribute__((target("sse4.2")))
    static uint32_t broker_crc32c_hw(const uint8_t *p, size_t n) {
        uint64_t c = 0xffffffffu;
        while (n >= 3 * BROKER_CRC_L) {
            uint64_t c1 = 0, c2 = 0;
            for (int i = 0; i < BROKER_CRC_L; i += 8) {
                uint64_t a, b, d;
                memcpy(&a, p + i, 8);
                memcpy(&b, p + BROKER_CRC_L + i, 8);
                memcpy(&d, p + 2 * BROKER_CRC_L + i, 8);
                c = _mm_crc32_u64(c, a);
                c1 = _mm_crc32_u64(c1, b);
                c2 = _mm_crc32_u64(c2, d);
            }
            c = broker_crc_zeros((uint32_t)c) ^ (uint32_t)c1;
            c = broker_crc_zeros((uint32_t)c) ^ (uint32_t)c2;
            p += 3 * BROKER_CRC_L;
            n -= 3 * BROKER_CRC_L;
        }
        while (n >= 8) { uint64_t v; memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); p += 8; n -= 8; }
        uint32_t c32 = (uint32_t)c;
        while (n--) c32 = _mm_crc32_u8(c32, *p++);
        return c32 ^ 0xffffffffu;
    }
    #endif

    static void broker_crc_init(void) {
        broker_crc_tables();
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (broker_have_sse42) broker_crc_shift_init();
    #endif
    }

    static uint32_t broker_crc32c(const uint8_t *p, size_t n) {
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (broker_have_sse42) return broker_crc32c_hw(p, n);
    #endif
        uint32_t c = 0xffffffffu;
        while (n--) c = broker_crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
        return c ^ 0xffffffffu;
    }

    #if defined(__GNUC__) || defined(__clang__)
    #define BROKER_CLEAN_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
    #else
    #define BROKER_CLEAN_PREFETCH(p) ((void)(p))
    #endif

    #include <sys/mman.h>
    #ifndef MADV_HUGEPAGE
    #define MADV_HUGEPAGE 14
    #endif
    /* The table: anonymous memory, zero until written, on huge pages where the
       kernel gives them (far fewer page faults and TLB misses for random probes). */
    static void *broker_table_alloc(size_t n) {
        void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        madvise(p, n, MADV_HUGEPAGE);
        return p;
    }
    static void broker_table_free(void *p, size_t n) { if (p) munmap(p, n); }

    /* n % d for 32-bit n and d without a division (Lemire, Kaser & Kurz, "Faster
       remainder by direct computation", 2019): M = 2^64 / d + 1, computed once */
    static inline uint64_t broker_fastmod_m(uint32_t d) { return UINT64_C(0xFFFFFFFFFFFFFFFF) / d + 1; }
    static inline uint32_t broker_fastmod(uint32_t n, uint64_t m, uint32_t d) {
        uint64_t low = m * n;
        return (uint32_t)(((__uint128_t)low * d) >> 64);
    }
    /* zero again by giving the pages back (the next touch maps a zero page) */
    static void broker_table_zero(void *p, size_t n) {
        if (madvise(p, n, MADV_DONTNEED) != 0) memset(p, 0, n);
    }

    static uint32_t broker_crc32(const uint8_t *p, size_t n) {
        uint32_t c = 0xffffffffu;
        while (n--) c = broker_crc32_table[(c ^ *p++) & 0xff] ^ (c >> 8);
        return c ^ 0xffffffffu;
    }
    """
    void broker_md5_init() noexcept nogil
    void broker_md5(const uint8_t* data, size_t n, uint8_t* out) noexcept nogil
    enum: BROKER_LANES
    enum: BROKER_LANE_MAX
    void broker_md5_lanes(const uint8_t** keys, const size_t* lens, int n,
                          uint8_t** digests) noexcept nogil
    void broker_crc_init() noexcept nogil
    uint32_t broker_crc32c(const uint8_t* p, size_t n) noexcept nogil
    uint32_t broker_crc32(const uint8_t* p, size_t n) noexcept nogil
    void BROKER_CLEAN_PREFETCH(const void* p) noexcept nogil
    void* broker_table_alloc(size_t n) noexcept nogil
    void broker_table_free(void* p, size_t n) noexcept nogil
    void broker_table_zero(void* p, size_t n) noexcept nogil
    uint64_t broker_fastmod_m(uint32_t d) noexcept nogil
    uint32_t broker_fastmod(uint32_t n, uint64_t m, uint32_t d) noexcept nogil

broker_md5_init()
broker_crc_init()

# The entry layout of broker.records.batch (v2 header) and broker.records.legacy
# (v0/v1 entry, offsets from the entry start), as C constants under the same names
# (checked against those modules at import)
cdef enum:
    LOG_OVERHEAD = 12
    LENGTH_OFFSET = 8
    PARTITION_LEADER_EPOCH_OFFSET = 12
    MAGIC_OFFSET = 16
    HEADER_SIZE_UP_TO_MAGIC = 17
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    BASE_TIMESTAMP_OFFSET = 27
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    RECORDS_COUNT_OFFSET = 57
    RECORDS_OFFSET = 61
    RECORD_BATCH_OVERHEAD = 61
    MAGIC_V0 = 0
    MAGIC_V1 = 1
    MAGIC_V2 = 2
    MIN_RECORD_SIZE = 14
    RECORD_OVERHEAD_V0 = 14
    RECORD_OVERHEAD_V1 = 22
    RECORD_HEADER_SIZE_V0 = 6
    RECORD_HEADER_SIZE_V1 = 14
    RECORD_CRC_OFFSET = 12
    RECORD_MAGIC_OFFSET = 16
    RECORD_ATTRIBUTES_OFFSET = 17

_C_LAYOUT = {
    (_batch, "LOG_OVERHEAD"): LOG_OVERHEAD,
    (_batch, "LENGTH_OFFSET"): LENGTH_OFFSET,
    (_batch, "PARTITION_LEADER_EPOCH_OFFSET"): PARTITION_LEADER_EPOCH_OFFSET,
    (_batch, "MAGIC_OFFSET"): MAGIC_OFFSET,
    (_batch, "HEADER_SIZE_UP_TO_MAGIC"): HEADER_SIZE_UP_TO_MAGIC,
    (_batch, "CRC_OFFSET"): CRC_OFFSET,
    (_batch, "ATTRIBUTES_OFFSET"): ATTRIBUTES_OFFSET,
    (_batch, "LAST_OFFSET_DELTA_OFFSET"): LAST_OFFSET_DELTA_OFFSET,
    (_batch, "BASE_TIMESTAMP_OFFSET"): BASE_TIMESTAMP_OFFSET,
    (_batch, "MAX_TIMESTAMP_OFFSET"): MAX_TIMESTAMP_OFFSET,
    (_batch, "PRODUCER_ID_OFFSET"): PRODUCER_ID_OFFSET,
    (_batch, "PRODUCER_EPOCH_OFFSET"): PRODUCER_EPOCH_OFFSET,
    (_batch, "RECORDS_COUNT_OFFSET"): RECORDS_COUNT_OFFSET,
    (_batch, "RECORDS_OFFSET"): RECORDS_OFFSET,
    (_batch, "RECORD_BATCH_OVERHEAD"): RECORD_BATCH_OVERHEAD,
    (_batch, "MAGIC_V0"): MAGIC_V0,
    (_batch, "MAGIC_V1"): MAGIC_V1,
    (_batch, "MAGIC_V2"): MAGIC_V2,
    (_legacy, "MIN_RECORD_SIZE"): MIN_RECORD_SIZE,
    (_legacy, "RECORD_OVERHEAD_V0"): RECORD_OVERHEAD_V0,
    (_legacy, "RECORD_OVERHEAD_V1"): RECORD_OVERHEAD_V1,
    (_legacy, "RECORD_HEADER_SIZE_V0"): RECORD_HEADER_SIZE_V0,
    (_legacy, "RECORD_HEADER_SIZE_V1"): RECORD_HEADER_SIZE_V1,
    (_legacy, "RECORD_CRC_OFFSET"): RECORD_CRC_OFFSET,
    (_legacy, "RECORD_MAGIC_OFFSET"): RECORD_MAGIC_OFFSET,
    (_legacy, "RECORD_ATTRIBUTES_OFFSET"): RECORD_ATTRIBUTES_OFFSET,
}
for (_module, _name), _value in _C_LAYOUT.items():
    if getattr(_module, _name) != _value:
        raise ImportError(f"_clean_c: {_name} differs from {_module.__name__}")

cdef enum:
    _HASH = 16
    _ENTRY = 24

cdef const uint8_t[::1] _EMPTY = b"\0"


cdef struct Err:
    int code
    int64_t a
    int64_t b
    int64_t c


cdef inline void _fail(Err* e, int code, int64_t a, int64_t b, int64_t c) noexcept nogil:
    if e.code == 0:
        e.code = code
        e.a = a
        e.b = b
        e.c = c


cdef inline int64_t _i64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return <int64_t>v


cdef inline int32_t _i32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int16_t _i16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline void _put_i64(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    cdef int i
    for i in range(8):
        p[7 - i] = <uint8_t>(u & 0xFF)
        u >>= 8


cdef inline void _put_i32(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <uint8_t>(u >> 24)
    p[1] = <uint8_t>(u >> 16)
    p[2] = <uint8_t>(u >> 8)
    p[3] = <uint8_t>u


cdef inline void _put_i16(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <uint8_t>(u >> 8)
    p[1] = <uint8_t>u


# ---- the offset map ----------------------------------------------------------------------


cdef class OffsetMap:
    """``SkimpyOffsetMap`` with MD5 (see ``_clean_py.py``)."""

    cdef uint8_t* _table
    cdef int64_t _slots
    cdef uint64_t _mod_m
    cdef int64_t _entries
    cdef int64_t _latest
    cdef int64_t _lookups
    cdef int64_t _probes
    cdef bint _touched
    # the superseded bitmap (see _clean_py.py)
    cdef uint8_t* _sup
    cdef int64_t _sup_bytes
    cdef int64_t _sup_from
    cdef int64_t _sup_end
    cdef int64_t _last_put

    def __cinit__(self, int64_t memory, int64_t superseded_memory=0):
        if memory < _ENTRY or memory > _clean_py.MAX_MEMORY:
            raise ValueError(
                f"an offset map takes {_clean_py.BYTES_PER_ENTRY} to {_clean_py.MAX_MEMORY} bytes, "
                f"not {memory}"
            )
        if superseded_memory < 0 or superseded_memory > _clean_py.MAX_MEMORY:
            raise ValueError(f"a superseded bitmap of {superseded_memory} bytes")
        self._sup_bytes = superseded_memory
        self._sup = <uint8_t*>PyMem_RawCalloc(<size_t>(superseded_memory or 1), 1)
        if self._sup == NULL:
            raise MemoryError()
        self._sup_from = -1
        self._sup_end = -1
        self._last_put = -1
        self._slots = memory // _ENTRY
        self._mod_m = broker_fastmod_m(<uint32_t>self._slots)
        self._table = <uint8_t*>broker_table_alloc(<size_t>(self._slots * _ENTRY))
        if self._table == NULL:
            raise MemoryError()
        self._entries = 0
        self._latest = -1
        self._lookups = 0
        self._probes = 0
        self._touched = False

    def __dealloc__(self):
        if self._table != NULL:
            broker_table_free(self._table, <size_t>(self._slots * _ENTRY))
            self._table = NULL
        PyMem_RawFree(self._sup)
        self._sup = NULL

    @property
    def slots(self):
        return self._slots

    @property
    def size(self):
        return self._entries

    @property
    def latest_offset(self):
        return self._latest

    @property
    def utilization(self):
        return <double>self._entries / self._slots

    @property
    def collision_rate(self):
        return <double>(self._probes - self._lookups) / self._lookups if self._lookups else 0.0

    @property
    def memory(self):
        return self._slots * _ENTRY + self._sup_bytes

    def update_latest_offset(self, int64_t offset):
        self._latest = offset

    def clear(self):
        if self._touched:
            # the table's pages were written: zero them (a fresh table is zero already)
            broker_table_zero(self._table, <size_t>(self._slots * _ENTRY))
            self._touched = False
        self._entries = 0
        self._latest = -1
        self._lookups = 0
        self._probes = 0
        self._sup_from = -1

    def track_superseded(self, int64_t start_offset, int64_t end_offset):
        if self._sup_bytes == 0 or self._entries or not 0 <= start_offset < end_offset:
            self._sup_from = -1
            return False
        cdef int64_t used = (end_offset - start_offset + 7) // 8
        if used > self._sup_bytes:
            used = self._sup_bytes
        memset(self._sup, 0, <size_t>used)
        self._sup_from = start_offset
        self._sup_end = start_offset + 8 * used
        self._last_put = -1
        return True

    cdef inline int superseded_c(self, int64_t offset) noexcept nogil:
        if self._sup_from < 0 or offset < self._sup_from or offset >= self._sup_end:
            return -1
        cdef int64_t i = offset - self._sup_from
        return (self._sup[i >> 3] >> (i & 7)) & 1

    def superseded(self, int64_t offset):
        return self.superseded_c(offset)

    cdef inline int64_t _position(self, const uint8_t* digest, int64_t attempt) noexcept nogil:
        cdef int64_t at = attempt if attempt < _HASH - 4 else _HASH - 4
        cdef int64_t extra = attempt - _HASH + 4
        if extra < 0:
            extra = 0
        cdef uint32_t raw = (<uint32_t>digest[at] << 24) | (<uint32_t>digest[at + 1] << 16) | (
            <uint32_t>digest[at + 2] << 8) | digest[at + 3]
        cdef int32_t probe = <int32_t>(raw + <uint32_t>extra)
        cdef int64_t positive
        if probe == -2147483648:
            positive = 0
        elif probe < 0:
            positive = -<int64_t>probe
        else:
            positive = probe
        self._probes += 1
        return <int64_t>broker_fastmod(<uint32_t>positive, self._mod_m, <uint32_t>self._slots) * _ENTRY

    cdef inline bint _is_empty(self, int64_t pos) noexcept nogil:
        cdef const uint8_t* p = self._table + pos
        cdef uint64_t a, b, c
        memcpy(&a, p, 8)
        memcpy(&b, p + 8, 8)
        memcpy(&c, p + 16, 8)
        return a == 0 and b == 0 and c == 0

    cdef inline int64_t first_position_c(self, const uint8_t* digest) noexcept nogil:
        """The first slot a digest probes (what ``_position(digest, 0)`` computes)."""
        cdef uint32_t raw = (<uint32_t>digest[0] << 24) | (<uint32_t>digest[1] << 16) | (
            <uint32_t>digest[2] << 8) | digest[3]
        cdef int32_t probe = <int32_t>raw
        cdef int64_t positive = 0 if probe == -2147483648 else (-<int64_t>probe if probe < 0 else probe)
        return <int64_t>broker_fastmod(<uint32_t>positive, self._mod_m, <uint32_t>self._slots) * _ENTRY

    cdef int put_hash_c(self, const uint8_t* digest, int64_t offset) noexcept nogil:
        """0, or -1 when the map is full (the caller raises)."""
        return self.put_hash_at_c(digest, offset, self.first_position_c(digest))

    cdef int put_hash_at_c(self, const uint8_t* digest, int64_t offset, int64_t first) noexcept nogil:
        """``put_hash_c`` with the first probe's position already known."""
        if self._entries >= self._slots:
            return -1
        self._lookups += 1
        self._probes += 1
        self._touched = True
        if self._sup_from >= 0:
            if offset <= self._last_put:
                self._sup_from = -1  # out of order: the bitmap no longer says it all
            self._last_put = offset
        cdef int64_t attempt = 0
        cdef int64_t pos = first
        cdef int64_t replaced
        while not self._is_empty(pos):
            if memcmp(self._table + pos, digest, _HASH) == 0:
                if self._sup_from >= 0:
                    memcpy(&replaced, self._table + pos + _HASH, 8)
                    replaced -= self._sup_from
                    if 0 <= replaced < self._sup_end - self._sup_from:
                        self._sup[replaced >> 3] |= <uint8_t>(1 << (replaced & 7))
                memcpy(self._table + pos + _HASH, &offset, 8)
                self._latest = offset
                return 0
            attempt += 1
            pos = self._position(digest, attempt)
        memcpy(self._table + pos, digest, _HASH)
        memcpy(self._table + pos + _HASH, &offset, 8)
        self._latest = offset
        self._entries += 1
        return 0

    cdef int64_t get_hash_c(self, const uint8_t* digest) noexcept nogil:
        return self.get_hash_at_c(digest, self.first_position_c(digest))

    cdef int64_t get_hash_at_c(self, const uint8_t* digest, int64_t first) noexcept nogil:
        """``get_hash_c`` with the first probe's position already known."""
        self._lookups += 1
        cdef int64_t max_attempts = self._slots + _HASH - 4
        cdef int64_t attempt = 0
        cdef int64_t pos
        cdef int64_t value
        while True:
            if attempt >= max_attempts:
                return -1
            if attempt == 0:
                pos = first
                self._probes += 1
            else:
                pos = self._position(digest, attempt)
            if self._is_empty(pos):
                return -1
            attempt += 1
            if memcmp(self._table + pos, digest, _HASH) == 0:
                memcpy(&value, self._table + pos + _HASH, 8)
                return value

    cdef inline int put_key_c(self, const uint8_t* key, int64_t n, int64_t offset) noexcept nogil:
        cdef uint8_t digest[16]
        broker_md5(key, <size_t>n, digest)
        return self.put_hash_c(digest, offset)

    cdef inline int64_t get_key_c(self, const uint8_t* key, int64_t n) noexcept nogil:
        cdef uint8_t digest[16]
        broker_md5(key, <size_t>n, digest)
        return self.get_hash_c(digest)

    def _full_error(self):
        return ValueError(
            "Attempted to add a new entry to a full offset map, "
            f"entries: {self._entries}, slots: {self._slots}"
        )

    def put(self, key, int64_t offset):
        cdef const uint8_t[::1] k = _bytes_view(key)
        cdef const uint8_t* p = &k[0] if k.shape[0] else &_EMPTY[0]
        if self.put_key_c(p, k.shape[0], offset) < 0:
            raise self._full_error()

    def put_hash(self, digest, int64_t offset):
        cdef const uint8_t[::1] d = _bytes_view(digest)
        if d.shape[0] != _HASH:
            raise ValueError("a digest has 16 bytes")
        if self.put_hash_c(&d[0], offset) < 0:
            raise self._full_error()

    def get(self, key):
        cdef const uint8_t[::1] k = _bytes_view(key)
        cdef const uint8_t* p = &k[0] if k.shape[0] else &_EMPTY[0]
        return self.get_key_c(p, k.shape[0])

    def get_hash(self, digest):
        cdef const uint8_t[::1] d = _bytes_view(digest)
        if d.shape[0] != _HASH:
            raise ValueError("a digest has 16 bytes")
        return self.get_hash_c(&d[0])


cdef const uint8_t[::1] _bytes_view(object data):
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def md5(data):
    """The MD5 digest the map stores for a key."""
    cdef const uint8_t[::1] k = _bytes_view(data)
    cdef uint8_t digest[16]
    with nogil:
        broker_md5(&k[0] if k.shape[0] else &_EMPTY[0], <size_t>k.shape[0], digest)
    return (<char*>digest)[:16]


# ---- active producers ---------------------------------------------------------------------


cdef class ActiveProducers:
    """Per producer id its last data offset (-1: none) and epoch, sorted by id."""

    cdef int64_t* _ids
    cdef int64_t* _offsets
    cdef int64_t* _epochs
    cdef Py_ssize_t _n

    def __cinit__(self, last_records):
        items = sorted(dict(last_records).items())
        self._n = len(items)
        cdef Py_ssize_t n = max(self._n, 1)
        self._ids = <int64_t*>PyMem_RawMalloc(n * sizeof(int64_t))
        self._offsets = <int64_t*>PyMem_RawMalloc(n * sizeof(int64_t))
        self._epochs = <int64_t*>PyMem_RawMalloc(n * sizeof(int64_t))
        if self._ids == NULL or self._offsets == NULL or self._epochs == NULL:
            raise MemoryError()
        cdef Py_ssize_t i
        for i, (pid, (offset, epoch)) in enumerate(items):
            self._ids[i] = pid
            self._offsets[i] = offset
            self._epochs[i] = epoch

    def __dealloc__(self):
        PyMem_RawFree(self._ids)
        PyMem_RawFree(self._offsets)
        PyMem_RawFree(self._epochs)

    def __len__(self):
        return self._n

    cdef bint is_last_c(self, int64_t producer_id, int64_t last_offset, bint is_control,
                        int64_t producer_epoch) noexcept nogil:
        cdef Py_ssize_t lo = 0
        cdef Py_ssize_t hi = self._n
        cdef Py_ssize_t mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self._ids[mid] < producer_id:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self._n or self._ids[lo] != producer_id:
            return False
        if self._offsets[lo] >= 0:
            return last_offset == self._offsets[lo]
        return is_control and producer_epoch == self._epochs[lo]

    def is_last_batch(self, int64_t producer_id, int64_t last_offset, bint is_control,
                      int64_t producer_epoch):
        return self.is_last_c(producer_id, last_offset, is_control, producer_epoch)


# ---- varints -------------------------------------------------------------------------------


cdef inline Py_ssize_t _varint(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end, int limit,
                               int64_t* value, Err* e) noexcept nogil:
    """Zig-zag varint (limit 35) or varlong (70) at pos; -1 on error."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef uint8_t x
    while True:
        if pos >= end:
            _fail(e, C_E_VARINT_END, 0, 0, 0)
            return -1
        x = b[pos]
        pos += 1
        if shift < 64:
            raw |= (<uint64_t>(x & 0x7F)) << shift
        if not (x & 0x80):
            break
        shift += 7
        if shift >= limit:
            _fail(e, C_E_VARINT_LONG, 0, 0, 0)
            return -1
    if limit == 35:
        raw &= <uint64_t>0xFFFFFFFF
    value[0] = <int64_t>(raw >> 1) ^ -(<int64_t>(raw & 1))
    return pos


cdef inline int _varint_size(int64_t value) noexcept nogil:
    cdef uint64_t raw = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef int n = 1
    while raw >= 0x80:
        raw >>= 7
        n += 1
    return n


cdef inline Py_ssize_t _put_varint(uint8_t* out, Py_ssize_t o, int64_t value) noexcept nogil:
    cdef uint64_t raw = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    while raw >= 0x80:
        out[o] = <uint8_t>((raw & 0x7F) | 0x80)
        raw >>= 7
        o += 1
    out[o] = <uint8_t>raw
    return o + 1


cdef struct Rec:
    Py_ssize_t end
    int64_t timestamp_delta
    int64_t offset_delta
    Py_ssize_t key
    int64_t key_len
    Py_ssize_t value
    int64_t value_len
    Py_ssize_t headers
    int64_t header_count


cdef Py_ssize_t _read_record(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end, Rec* r,
                             Err* e) noexcept nogil:
    """``DefaultRecord.readFrom`` (headers only checked; their position kept); -1 on error."""
    cdef int64_t size, v, klen, vlen
    cdef Py_ssize_t p = _varint(b, pos, end, 35, &size, e)
    if p < 0:
        return -1
    if size < 0 or p + size > end:
        _fail(e, C_E_RECORD_FIT, size, pos, 0)
        return -1
    cdef Py_ssize_t stop = p + size
    if p >= stop:
        _fail(e, C_E_RECORD_EMPTY, 0, 0, 0)
        return -1
    p += 1
    p = _varint(b, p, stop, 70, &r.timestamp_delta, e)
    if p < 0:
        return -1
    p = _varint(b, p, stop, 35, &r.offset_delta, e)
    if p < 0:
        return -1
    p = _varint(b, p, stop, 35, &r.key_len, e)
    if p < 0:
        return -1
    r.key = p
    if r.key_len >= 0:
        p += r.key_len
        if p > stop:
            _fail(e, C_E_KEY_VALUE_PAST, 0, 0, 0)
            return -1
    p = _varint(b, p, stop, 35, &r.value_len, e)
    if p < 0:
        return -1
    r.value = p
    if r.value_len >= 0:
        p += r.value_len
    if p > stop:
        _fail(e, C_E_KEY_VALUE_PAST, 0, 0, 0)
        return -1
    p = _varint(b, p, stop, 35, &r.header_count, e)
    if p < 0:
        return -1
    if r.header_count < 0:
        _fail(e, C_E_HEADER_COUNT, r.header_count, 0, 0)
        return -1
    r.headers = p
    cdef int64_t i
    for i in range(r.header_count):
        p = _varint(b, p, stop, 35, &klen, e)
        if p < 0:
            return -1
        if klen < 0:
            _fail(e, C_E_HEADER_KEY, klen, 0, 0)
            return -1
        p += klen
        if p > stop:
            _fail(e, C_E_HEADER_PAST, 0, 0, 0)
            return -1
        p = _varint(b, p, stop, 35, &vlen, e)
        if p < 0:
            return -1
        if vlen >= 0:
            p += vlen
        if p > stop:
            _fail(e, C_E_HEADER_PAST, 0, 0, 0)
            return -1
    if p != stop:
        _fail(e, C_E_RECORD_SIZE, size, size - (stop - p), 0)
        return -1
    r.end = stop
    return stop


# ---- building the map -----------------------------------------------------------------------


cdef struct Item:
    Py_ssize_t pos
    Py_ssize_t end
    int64_t offset
    int64_t timestamp
    Py_ssize_t key
    int64_t key_len
    int64_t value_len
    int verdict
    int64_t slot
    uint8_t digest[16]


cdef struct Items:
    Item* items
    Py_ssize_t n
    Py_ssize_t cap


cdef int _items_reserve(Items* k, Py_ssize_t n) noexcept nogil:
    cdef Item* grown
    cdef Py_ssize_t cap
    if n <= k.cap:
        return 0
    cap = k.cap * 2 if k.cap else 256
    if cap < n:
        cap = n
    grown = <Item*>PyMem_RawRealloc(k.items, cap * sizeof(Item))
    if grown == NULL:
        return -1
    k.items = grown
    k.cap = cap
    return 0


cdef Py_ssize_t _parse_batch(OffsetMap m, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end,
                             int64_t count, int64_t base_offset, int64_t base_timestamp,
                             int64_t log_append_time, int64_t hash_from, int64_t hash_to,
                             bint skip_known, Items* items, Err* e) noexcept nogil:
    """Parse a batch's records into ``items``; the keys of records with offsets in
    [hash_from, hash_to] are hashed (32 at a time), but with ``skip_known`` not
    those whose fate the superseded bitmap knows (``it.verdict`` = its answer,
    else -1). Returns how many records parsed before an error (``e`` set), -3
    out of memory."""
    cdef Rec r
    cdef int64_t i
    cdef Item* it
    cdef Lanes lanes
    lanes.n = 0
    items.n = 0
    if count > 0 and _items_reserve(items, count if count < 65536 else 65536) < 0:
        return -3
    for i in range(count):
        if pos >= end:
            _fail(e, C_E_PREMATURE_EOF, 0, 0, 0)
            _flush_lanes(m, items, &lanes)
            return i
        if _read_record(b, pos, end, &r, e) < 0:
            _flush_lanes(m, items, &lanes)
            return i
        if _items_reserve(items, i + 1) < 0:
            return -3
        it = &items.items[i]
        it.pos = pos
        it.end = r.end
        it.offset = base_offset + r.offset_delta
        it.timestamp = log_append_time if log_append_time >= 0 else base_timestamp + r.timestamp_delta
        it.key = r.key
        it.key_len = r.key_len
        it.value_len = r.value_len
        it.verdict = m.superseded_c(it.offset) if skip_known else -1
        items.n = i + 1
        if r.key_len >= 0 and hash_from <= it.offset <= hash_to and it.verdict < 0:
            if r.key_len > BROKER_LANE_MAX:
                broker_md5(b + r.key, <size_t>r.key_len, it.digest)
                it.slot = m.first_position_c(it.digest)
                BROKER_CLEAN_PREFETCH(m._table + it.slot)
                BROKER_CLEAN_PREFETCH(m._table + it.slot + _ENTRY - 1)
            else:
                lanes.index[lanes.n] = i
                lanes.keys[lanes.n] = b + r.key
                lanes.n += 1
                if lanes.n == BROKER_LANES:
                    _flush_lanes(m, items, &lanes)
        pos = r.end
    _flush_lanes(m, items, &lanes)
    if pos != end:
        _fail(e, C_E_RECORDS_REMAINING, 0, 0, 0)
    return count


cdef struct Lanes:
    int n
    Py_ssize_t index[32]
    const uint8_t* keys[32]


cdef void _flush_lanes(OffsetMap m, Items* items, Lanes* lanes) noexcept nogil:
    """Hash the pending keys together."""
    cdef size_t lens[32]
    cdef uint8_t* digests[32]
    cdef int l
    if lanes.n == 0:
        return
    for l in range(lanes.n):
        lens[l] = <size_t>items.items[lanes.index[l]].key_len
        digests[l] = items.items[lanes.index[l]].digest
    broker_md5_lanes(lanes.keys, lens, lanes.n, digests)
    cdef Item* it
    for l in range(lanes.n):
        it = &items.items[lanes.index[l]]
        it.slot = m.first_position_c(it.digest)
        BROKER_CLEAN_PREFETCH(m._table + it.slot)
        BROKER_CLEAN_PREFETCH(m._table + it.slot + _ENTRY - 1)
    lanes.n = 0


cdef int _map_records(OffsetMap m, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end,
                      int64_t count, int64_t base_offset, int64_t start_offset,
                      int64_t max_entries, int64_t* read, Items* items, Err* e) noexcept nogil:
    """1 full, 0 done, -1 error, -2 the map refused a key, -3 out of memory."""
    cdef Py_ssize_t parsed = _parse_batch(m, b, pos, end, count, base_offset, 0, 0,
                                          start_offset, 0x7FFFFFFFFFFFFFFF, False, items, e)
    if parsed == -3:
        return -3
    cdef Py_ssize_t i
    cdef Item* it
    for i in range(parsed):
        it = &items.items[i]
        if it.key_len >= 0 and it.offset >= start_offset:
            if m._entries >= max_entries:
                e.code = 0  # full before the damage: the walk stops here either way
                return 1
            if m.put_hash_at_c(it.digest, it.offset, it.slot) < 0:
                return -2
        read[0] += 1
    return -1 if e.code else 0


def map_records(OffsetMap offset_map, buf, Py_ssize_t pos, Py_ssize_t end, *, int64_t count,
                int64_t base_offset, int64_t start_offset, int64_t max_entries):
    cdef const uint8_t[::1] view = _bytes_view(buf)
    if end > view.shape[0] or pos < 0 or pos > end:
        raise ValueError("records outside the buffer")
    cdef const uint8_t* b = &view[0] if view.shape[0] else &_EMPTY[0]
    cdef Err e
    e.code = 0
    cdef int64_t read = 0
    cdef int status
    cdef Items items
    items.items = NULL
    items.n = 0
    items.cap = 0
    try:
        with nogil:
            status = _map_records(offset_map, b, pos, end, count, base_offset, start_offset,
                                  max_entries, &read, &items, &e)
    finally:
        PyMem_RawFree(items.items)
    if status == -3:
        raise MemoryError()
    if status == -2:
        raise offset_map._full_error()
    if status < 0:
        raise error(e.code, e.a, e.b, e.c)
    return status == 1, read


cdef inline Py_ssize_t _entry(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end, int64_t* offset,
                              int* magic, Err* e) noexcept nogil:
    """Total size of the entry at pos, 0 when it does not fit, -1 on error."""
    if pos + HEADER_SIZE_UP_TO_MAGIC >= end:
        return 0
    offset[0] = _i64(b + pos)
    cdef int64_t size = _i32(b + pos + LENGTH_OFFSET)
    if size < MIN_RECORD_SIZE:
        _fail(e, C_E_ENTRY_SIZE, size, pos, 0)
        return -1
    cdef int64_t total = size + LOG_OVERHEAD
    if pos + total > end:
        return 0
    magic[0] = <int8_t>b[pos + MAGIC_OFFSET]
    if magic[0] == MAGIC_V2:
        if total < RECORD_BATCH_OVERHEAD:
            _fail(e, C_E_V2_SMALL, total, pos, 0)
            return -1
    elif magic[0] == MAGIC_V0 or magic[0] == MAGIC_V1:
        if total < LOG_OVERHEAD + (
                RECORD_OVERHEAD_V0 if magic[0] == MAGIC_V0 else RECORD_OVERHEAD_V1):
            _fail(e, C_E_LEGACY_SMALL, total, pos, magic[0])
            return -1
    else:
        _fail(e, C_E_MAGIC, magic[0], pos, 0)
        return -1
    return total


cdef int _legacy_key_value(const uint8_t* b, Py_ssize_t pos, Py_ssize_t total, int magic,
                           Py_ssize_t* key, int64_t* key_len, int64_t* value_len,
                           Err* e) noexcept nogil:
    cdef Py_ssize_t p = pos + LOG_OVERHEAD + (
        RECORD_HEADER_SIZE_V1 if magic == MAGIC_V1 else RECORD_HEADER_SIZE_V0)
    cdef Py_ssize_t end = pos + total
    key_len[0] = _i32(b + p)
    p += 4
    key[0] = p
    if key_len[0] >= 0:
        p += key_len[0]
    if p + 4 > end:
        _fail(e, C_E_LEGACY_KEY, pos, 0, 0)
        return -1
    value_len[0] = _i32(b + p)
    p += 4
    if (value_len[0] >= 0 and p + value_len[0] != end) or (value_len[0] < 0 and p != end):
        _fail(e, C_E_LEGACY_VALUE, pos, 0, 0)
        return -1
    return 0


def map_chunk(OffsetMap offset_map, buf, Py_ssize_t start, Py_ssize_t end, *,
              int64_t start_offset, int64_t max_entries):
    cdef const uint8_t[::1] view = _bytes_view(buf)
    if end > view.shape[0] or start < 0 or start > end:
        raise ValueError("chunk outside the buffer")
    cdef const uint8_t* b = &view[0] if view.shape[0] else &_EMPTY[0]
    cdef Err e
    e.code = 0
    cdef int64_t read = 0
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t total, key
    cdef int64_t offset, last_offset, count, key_len, value_len
    cdef int magic, status = C_DONE, attributes, s
    cdef Items items
    items.items = NULL
    items.n = 0
    items.cap = 0
    try:
        with nogil:
            while True:
                total = _entry(b, pos, end, &offset, &magic, &e)
                if total <= 0:
                    status = -1 if total < 0 else C_DONE
                    break
                if magic == MAGIC_V2:
                    attributes = _i16(b + pos + ATTRIBUTES_OFFSET)
                    last_offset = offset + _i32(b + pos + LAST_OFFSET_DELTA_OFFSET)
                    count = _i32(b + pos + RECORDS_COUNT_OFFSET)
                    if attributes & 0x30:  # KEEP_TXN (see _clean_py.py)
                        read += 1 if attributes & 0x20 else (count if count > 0 else 0)
                    else:
                        if attributes & 0x07:
                            status = C_NEEDS_CODEC
                            break
                        if count < 0:
                            _fail(&e, C_E_RECORD_COUNT, count, 0, 0)
                            status = -1
                            break
                        s = _map_records(offset_map, b, pos + RECORDS_OFFSET, pos + total, count,
                                         offset, start_offset, max_entries, &read, &items, &e)
                        if s < 0:
                            status = s
                            break
                        if s == 1:
                            status = C_MAP_FULL
                            break
                else:
                    if b[pos + RECORD_ATTRIBUTES_OFFSET] & 0x07:
                        status = C_NEEDS_CODEC
                        break
                    last_offset = offset
                    if _legacy_key_value(b, pos, total, magic, &key, &key_len, &value_len, &e) < 0:
                        status = -1
                        break
                    if key_len >= 0 and offset >= start_offset:
                        if offset_map._entries >= max_entries:
                            status = C_MAP_FULL
                            break
                        if offset_map.put_key_c(b + key, key_len, offset) < 0:
                            status = -2
                            break
                    read += 1
                if last_offset >= start_offset:
                    offset_map._latest = last_offset
                pos += total
    finally:
        PyMem_RawFree(items.items)
    if status == -3:
        raise MemoryError()
    if status == -2:
        raise offset_map._full_error()
    if status < 0:
        raise error(e.code, e.a, e.b, e.c)
    return pos, status, read


# ---- filtering ---------------------------------------------------------------------------


cdef inline int _keep(OffsetMap m, const uint8_t* key, int64_t key_len, bint has_value,
                      int64_t offset, int64_t latest_offset, bint retain_deletes) noexcept nogil:
    if offset > latest_offset:
        return 1
    if key_len < 0:
        return -1
    cdef int redundant = m.superseded_c(offset)
    if redundant < 0:
        redundant = offset < m.get_key_c(key, key_len)
    return 1 if not redundant and (has_value or retain_deletes) else 0


def keep_record(OffsetMap offset_map, key, *, bint has_value, int64_t offset,
                int64_t latest_offset, bint retain_deletes):
    cdef const uint8_t[::1] k
    if key is None:
        return _keep(offset_map, &_EMPTY[0], -1, has_value, offset, latest_offset, retain_deletes)
    k = _bytes_view(key)
    return _keep(offset_map, &k[0] if k.shape[0] else &_EMPTY[0], k.shape[0], has_value, offset,
                 latest_offset, retain_deletes)


cdef struct FilterOut:
    int decision
    Py_ssize_t out_end
    int64_t kept
    int64_t invalid
    int64_t base_timestamp
    int64_t max_timestamp
    int64_t horizon


cdef Py_ssize_t _write_record(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end,
                              int64_t timestamp_delta, uint8_t* out, Py_ssize_t o,
                              Py_ssize_t capacity, Err* e) noexcept nogil:
    """``DefaultRecord.writeTo`` of the (valid) record at pos with a new timestamp delta."""
    cdef Rec r
    if _read_record(b, pos, end, &r, e) < 0:
        return -1
    cdef int64_t key_len = r.key_len if r.key_len >= 0 else -1
    cdef int64_t value_len = r.value_len if r.value_len >= 0 else -1
    cdef int64_t body = 1 + _varint_size(timestamp_delta) + _varint_size(r.offset_delta)
    body += _varint_size(key_len) + (key_len if key_len > 0 else 0)
    body += _varint_size(value_len) + (value_len if value_len > 0 else 0)
    body += _varint_size(r.header_count)
    cdef Py_ssize_t p = r.headers
    cdef int64_t i
    cdef int64_t klen = 0
    cdef int64_t vlen = 0
    for i in range(r.header_count):
        p = _varint(b, p, r.end, 35, &klen, e)
        p += klen
        p = _varint(b, p, r.end, 35, &vlen, e)
        if vlen >= 0:
            p += vlen
        body += _varint_size(klen) + klen + _varint_size(vlen if vlen >= 0 else -1)
        body += vlen if vlen > 0 else 0
    if o + _varint_size(body) + body > capacity:
        _fail(e, C_E_OUT_SMALL, 0, 0, 0)
        return -1
    o = _put_varint(out, o, body)
    out[o] = 0
    o = _put_varint(out, o + 1, timestamp_delta)
    o = _put_varint(out, o, r.offset_delta)
    o = _put_varint(out, o, key_len)
    if key_len > 0:
        memcpy(out + o, b + r.key, <size_t>key_len)
        o += key_len
    o = _put_varint(out, o, value_len)
    if value_len > 0:
        memcpy(out + o, b + r.value, <size_t>value_len)
        o += value_len
    o = _put_varint(out, o, r.header_count)
    p = r.headers
    for i in range(r.header_count):
        p = _varint(b, p, r.end, 35, &klen, e)
        o = _put_varint(out, o, klen)
        memcpy(out + o, b + p, <size_t>klen)
        o += klen
        p += klen
        p = _varint(b, p, r.end, 35, &vlen, e)
        o = _put_varint(out, o, vlen if vlen >= 0 else -1)
        if vlen > 0:
            memcpy(out + o, b + p, <size_t>vlen)
            o += vlen
            p += vlen
    return o


cdef int _filter_records(OffsetMap m, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end,
                         int64_t count, int64_t base_offset, int64_t base_timestamp,
                         int64_t log_append_time, int64_t horizon, int64_t now,
                         int64_t new_horizon, int64_t latest_offset, uint8_t* out,
                         Py_ssize_t out_pos, Py_ssize_t capacity, Items* items, FilterOut* res,
                         Err* e) noexcept nogil:
    """0 done (``res``), -1 error, -3 out of memory. The records are parsed and
    their keys hashed first, then judged (prefetching the slots a few records
    ahead), then the kept ones written."""
    cdef Py_ssize_t parsed = _parse_batch(m, b, pos, end, count, base_offset, base_timestamp,
                                          log_append_time, -0x7FFFFFFFFFFFFFFF,
                                          latest_offset, True, items, e)
    if parsed == -3:
        return -3
    if e.code:
        return -1
    cdef bint retain_deletes = horizon < 0 or now < horizon
    cdef bint tombstone = False
    cdef int64_t max_ts = -1
    cdef int64_t invalid = 0
    cdef int64_t kept = 0
    cdef int64_t first_ts = 0
    cdef int64_t i, new_base, out_horizon, timestamp
    cdef int verdict, redundant
    cdef Item* it
    cdef Py_ssize_t o
    for i in range(parsed):
        it = &items.items[i]
        if it.offset > latest_offset:
            verdict = 1
        elif it.key_len < 0:
            verdict = -1
        else:
            redundant = it.verdict  # the superseded bitmap's answer, -1: ask the map
            if redundant < 0:
                redundant = it.offset < m.get_hash_at_c(it.digest, it.slot)
            verdict = 1 if not redundant and (it.value_len >= 0 or retain_deletes) else 0
        it.verdict = verdict
        if verdict > 0:
            if kept == 0:
                first_ts = it.timestamp
            kept += 1
            if it.value_len < 0:
                tombstone = True
            if it.timestamp > max_ts:
                max_ts = it.timestamp
        elif verdict < 0:
            invalid += 1
    res.invalid = invalid
    res.out_end = out_pos
    res.horizon = horizon
    if kept == 0:
        res.decision = C_KEEP_NONE
        res.kept = 0
        res.base_timestamp = -1
        res.max_timestamp = -1
        return 0
    new_base = horizon
    if horizon < 0 and tombstone:
        new_base = new_horizon
    if kept == count and new_base == horizon:
        res.decision = C_KEEP_ALL
        res.kept = count
        res.base_timestamp = base_timestamp
        res.max_timestamp = max_ts
        return 0
    out_horizon = new_base
    if new_base < 0:
        new_base = first_ts
    if log_append_time >= 0:
        max_ts = log_append_time
    o = out_pos
    for i in range(parsed):
        it = &items.items[i]
        if it.verdict <= 0:
            continue
        timestamp = it.timestamp
        if timestamp < -1:
            _fail(e, C_E_TIMESTAMP, timestamp, 0, 0)
            return -1
        o = _write_record(b, it.pos, end, timestamp - new_base, out, o, capacity, e)
        if o < 0:
            return -1
    res.decision = C_REBUILT
    res.out_end = o
    res.kept = kept
    res.base_timestamp = new_base
    res.max_timestamp = max_ts
    res.horizon = out_horizon
    return 0


def filter_records(OffsetMap offset_map, buf, Py_ssize_t pos, Py_ssize_t end, *, int64_t count,
                   int64_t base_offset, int64_t base_timestamp, int64_t log_append_time,
                   int64_t horizon, int64_t now, int64_t new_horizon, int64_t latest_offset,
                   out, Py_ssize_t out_pos):
    cdef const uint8_t[::1] view = _bytes_view(buf)
    cdef uint8_t[::1] o = out
    if end > view.shape[0] or pos < 0 or pos > end:
        raise ValueError("records outside the buffer")
    cdef const uint8_t* b = &view[0] if view.shape[0] else &_EMPTY[0]
    cdef uint8_t* op = &o[0] if o.shape[0] else NULL
    cdef Items keeps
    keeps.items = NULL
    keeps.n = 0
    keeps.cap = 0
    cdef FilterOut res
    cdef Err e
    e.code = 0
    cdef int status
    try:
        with nogil:
            status = _filter_records(offset_map, b, pos, end, count, base_offset,
                                     base_timestamp, log_append_time, horizon, now, new_horizon,
                                     latest_offset, op, out_pos, o.shape[0], &keeps, &res, &e)
    finally:
        PyMem_RawFree(keeps.items)
    if status == -3:
        raise MemoryError()
    if status < 0:
        raise error(e.code, e.a, e.b, e.c)
    return (res.decision, res.out_end, res.kept, res.invalid, res.base_timestamp,
            res.max_timestamp, res.horizon)


cdef int _write_header(uint8_t* out, Py_ssize_t pos, Py_ssize_t size, const uint8_t* src,
                       int64_t attributes, int64_t base_timestamp, int64_t max_timestamp,
                       int64_t count, Err* e) noexcept nogil:
    if base_timestamp < -1:
        _fail(e, C_E_TIMESTAMP, base_timestamp, 0, 0)
        return -1
    memcpy(out + pos, src, 8)  # base offset
    _put_i32(out + pos + LENGTH_OFFSET, size - LOG_OVERHEAD)
    memcpy(out + pos + PARTITION_LEADER_EPOCH_OFFSET, src + PARTITION_LEADER_EPOCH_OFFSET, 4)
    out[pos + MAGIC_OFFSET] = MAGIC_V2
    _put_i16(out + pos + ATTRIBUTES_OFFSET, attributes)
    memcpy(out + pos + LAST_OFFSET_DELTA_OFFSET, src + LAST_OFFSET_DELTA_OFFSET, 4)
    _put_i64(out + pos + BASE_TIMESTAMP_OFFSET, base_timestamp)
    _put_i64(out + pos + MAX_TIMESTAMP_OFFSET, max_timestamp)
    memcpy(out + pos + PRODUCER_ID_OFFSET, src + PRODUCER_ID_OFFSET,
           RECORDS_COUNT_OFFSET - PRODUCER_ID_OFFSET)  # producer id, epoch, base sequence
    _put_i32(out + pos + RECORDS_COUNT_OFFSET, count)
    _put_i32(out + pos + CRC_OFFSET,
             broker_crc32c(out + pos + ATTRIBUTES_OFFSET, <size_t>(size - ATTRIBUTES_OFFSET)))
    return 0


def write_v2_header(out, Py_ssize_t pos, Py_ssize_t size, *, source, Py_ssize_t source_pos,
                    int64_t attributes, int64_t base_timestamp, int64_t max_timestamp,
                    int64_t count):
    cdef uint8_t[::1] o = out
    cdef const uint8_t[::1] s = _bytes_view(source)
    if (pos < 0 or pos + size > o.shape[0] or size < RECORD_BATCH_OVERHEAD
            or source_pos + RECORD_BATCH_OVERHEAD > s.shape[0]):
        raise ValueError("header outside the buffer")
    cdef Err e
    e.code = 0
    if _write_header(&o[0], pos, size, &s[source_pos], attributes, base_timestamp,
                     max_timestamp, count, &e) < 0:
        raise error(e.code, e.a, e.b, e.c)


cdef inline Py_ssize_t _write_empty(uint8_t* out, Py_ssize_t o, const uint8_t* src,
                                    Err* e) noexcept nogil:
    if _write_header(out, o, RECORD_BATCH_OVERHEAD, src, _i16(src + ATTRIBUTES_OFFSET) & 0x38,
                     -1, _i64(src + MAX_TIMESTAMP_OFFSET), 0, e) < 0:
        return -1
    return o + RECORD_BATCH_OVERHEAD


def write_empty_batch(out, Py_ssize_t o, source, Py_ssize_t source_pos):
    cdef uint8_t[::1] ov = out
    cdef const uint8_t[::1] s = _bytes_view(source)
    if (o < 0 or o + RECORD_BATCH_OVERHEAD > ov.shape[0]
            or source_pos + RECORD_BATCH_OVERHEAD > s.shape[0]):
        raise ValueError("header outside the buffer")
    cdef Err e
    e.code = 0
    cdef Py_ssize_t end = _write_empty(&ov[0], o, &s[source_pos], &e)
    if end < 0:
        raise error(e.code, e.a, e.b, e.c)
    return end


def filter_chunk(OffsetMap offset_map, ActiveProducers producers, buf, Py_ssize_t start,
                 Py_ssize_t end, *, out, Py_ssize_t out_pos, int64_t latest_offset, int64_t now,
                 int64_t new_horizon, bint retain_legacy_deletes):
    cdef const uint8_t[::1] view = _bytes_view(buf)
    cdef uint8_t[::1] ov = out
    if end > view.shape[0] or start < 0 or start > end:
        raise ValueError("chunk outside the buffer")
    cdef const uint8_t* b = &view[0] if view.shape[0] else &_EMPTY[0]
    cdef uint8_t* op = &ov[0] if ov.shape[0] else NULL
    cdef Py_ssize_t capacity = ov.shape[0]
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t o = out_pos
    cdef int64_t read = 0, kept = 0, bytes_read = 0, invalid = 0
    cdef int64_t offset, count, horizon, lat, key_len, value_len, n
    cdef Py_ssize_t total, key
    cdef int magic, attributes, verdict
    cdef int status = C_DONE
    cdef Items keeps
    keeps.items = NULL
    keeps.n = 0
    keeps.cap = 0
    cdef FilterOut res
    cdef Err e
    e.code = 0
    try:
        with nogil:
            while True:
                total = _entry(b, pos, end, &offset, &magic, &e)
                if total <= 0:
                    status = -1 if total < 0 else C_DONE
                    break
                if magic == MAGIC_V2:
                    attributes = _i16(b + pos + ATTRIBUTES_OFFSET)
                    count = _i32(b + pos + RECORDS_COUNT_OFFSET)
                    if (broker_crc32c(b + pos + ATTRIBUTES_OFFSET,
                                      <size_t>(total - ATTRIBUTES_OFFSET))
                            != <uint32_t>_i32(b + pos + CRC_OFFSET)):
                        _fail(&e, C_E_CRC32C, pos, 0, 0)
                        status = -1
                        break
                    if attributes & 0x30:  # KEEP_TXN: copied whole (see _clean_py.py)
                        if o + total > capacity:
                            status = C_OUT_FULL
                            break
                        memcpy(op + o, b + pos, <size_t>total)
                        o += total
                        n = 1 if attributes & 0x20 else (count if count > 0 else 0)
                        read += n
                        kept += n
                        bytes_read += total
                        pos += total
                        continue
                    if attributes & 0x07:
                        status = C_NEEDS_CODEC
                        break
                    if count < 0:
                        _fail(&e, C_E_RECORD_COUNT, count, 0, 0)
                        status = -1
                        break
                    if o + total + 13 * (count if count < total else total) > capacity:
                        status = C_OUT_FULL
                        break
                    horizon = _i64(b + pos + BASE_TIMESTAMP_OFFSET) if attributes & 0x40 else -1
                    lat = _i64(b + pos + MAX_TIMESTAMP_OFFSET) if attributes & 0x08 else -1
                    if _filter_records(offset_map, b, pos + RECORDS_OFFSET, pos + total, count,
                                       offset, _i64(b + pos + BASE_TIMESTAMP_OFFSET), lat,
                                       horizon, now, new_horizon, latest_offset, op,
                                       o + RECORDS_OFFSET, capacity, &keeps, &res,
                                       &e) < 0:
                        status = -1 if e.code else -3
                        break
                    read += count
                    invalid += res.invalid
                    bytes_read += total
                    if res.decision == C_KEEP_ALL:
                        memcpy(op + o, b + pos, <size_t>total)
                        o += total
                        kept += count
                    elif res.decision == C_REBUILT:
                        if _write_header(op, o, res.out_end - o, b + pos,
                                         (attributes & 0x38) | (0x40 if res.horizon >= 0 else 0),
                                         res.base_timestamp, res.max_timestamp, res.kept,
                                         &e) < 0:
                            status = -1
                            break
                        o = res.out_end
                        kept += res.kept
                    elif _i64(b + pos + PRODUCER_ID_OFFSET) >= 0 and producers.is_last_c(
                            _i64(b + pos + PRODUCER_ID_OFFSET),
                            offset + _i32(b + pos + LAST_OFFSET_DELTA_OFFSET), False,
                            _i16(b + pos + PRODUCER_EPOCH_OFFSET)):
                        o = _write_empty(op, o, b + pos, &e)
                        if o < 0:
                            status = -1
                            break
                else:
                    if (broker_crc32(b + pos + RECORD_MAGIC_OFFSET,
                                     <size_t>(total - RECORD_MAGIC_OFFSET))
                            != <uint32_t>_i32(b + pos + RECORD_CRC_OFFSET)):
                        _fail(&e, C_E_CRC32, pos, 0, 0)
                        status = -1
                        break
                    if b[pos + RECORD_ATTRIBUTES_OFFSET] & 0x07:
                        status = C_NEEDS_CODEC
                        break
                    if o + total > capacity:
                        status = C_OUT_FULL
                        break
                    if _legacy_key_value(b, pos, total, magic, &key, &key_len, &value_len,
                                         &e) < 0:
                        status = -1
                        break
                    verdict = _keep(offset_map, b + key, key_len, value_len >= 0, offset,
                                    latest_offset, retain_legacy_deletes)
                    read += 1
                    bytes_read += total
                    if verdict > 0:
                        memcpy(op + o, b + pos, <size_t>total)
                        o += total
                        kept += 1
                    elif verdict < 0:
                        invalid += 1
                pos += total
    finally:
        PyMem_RawFree(keeps.items)
    if status == -3:
        raise MemoryError()
    if status < 0:
        raise error(e.code, e.a, e.b, e.c)
    return pos, o, status, read, kept, bytes_read, invalid
