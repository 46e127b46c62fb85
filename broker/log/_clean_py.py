"""Pure-Python reference of the log cleaner's per-record loops (twin of ``_clean_c.pyx``).

Every name here has a compiled twin with the same signature and the same
results (return values, exception types and messages); ``broker.log.clean_loops``
picks one, ``tests/property/test_clean_twins.py`` holds them to each other.

:class:`OffsetMap` is Kafka's ``SkimpyOffsetMap``: a fixed table of
``memory // 24`` slots, each the MD5 of a key (16 bytes) and the key's
latest offset (8 bytes); open addressing, the i-th probe of a key takes the
big-endian int at byte ``min(i, 12)`` of its hash plus ``max(0, i - 12)``,
``abs`` (Kafka's: ``Integer.MIN_VALUE`` -> 0) modulo the slots. A slot of 24
zero bytes is empty. No deletes; ``clear`` zeroes the table.

The superseded bitmap (ours, not Kafka's; ``OffsetMap(memory,
superseded_memory)``): while a cleaning builds its map from its first dirty
offset (``track_superseded(start, end)`` on an empty map), each put that
finds its key already there sets the bit of the offset it replaces, for
offsets in ``[start, min(end, start + 8 x superseded_memory))``. The filter then asks
``superseded(offset)`` (1 or 0; -1 outside the bitmap or when it is off)
before it hashes a record's key: a dirty record's fate needs no second MD5
and no probe. It gives the map's answer exactly as long as the puts come in
increasing offsets (then an offset is replaced iff it is below its key's
latest offset, which is Kafka's ``redundant``); a put at or below the
previous one turns the bitmap off for the rest of the cleaning.

The walks cut a chunk of segment bytes into entries with the file rules
(``FileLogInputStream``: fewer than 17 bytes left or an entry that does not
fit ends the walk, a size field below 14 is corrupt) and handle in one call
every entry they can:

* ``map_chunk`` (``Cleaner.buildOffsetMapForSegment``): every keyed record
  at or after ``start_offset`` of an uncompressed v2 data batch or of an
  uncompressed v0/v1 entry goes into the map until it holds ``max_entries``
  keys; the map's latest offset follows every batch's last offset.
* ``filter_chunk`` (``Cleaner.cleanInto`` + ``MemoryRecords.filterTo``):
  each entry is copied as it is, rebuilt with the records to keep, reduced
  to an empty v2 batch, or dropped; see :func:`filter_records` for a
  record's fate.

Both stop at a compressed entry (``NEEDS_CODEC``: the caller decompresses
it and uses :func:`map_records` / :func:`filter_records` on its records,
which are the same loops) and ``filter_chunk`` stops when the output buffer
cannot take the next entry's worst case (``OUT_FULL``: its size plus 13
bytes per record, a re-encoded record growing by at most a longer timestamp
delta and length; a batch's record count counted at most its size).

Transactions (Kafka's ``CleanedTransactionMetadata``): this broker has no
transaction coordinator, so it cannot know whether a transaction committed.
Until it has one, every control batch and every transactional data batch is
copied whole and none of their records enters the map (``KEEP_TXN``
paths below): aborted data is never dropped, markers never expire. This is
the place where aborted batches (``DELETE``), markers past their horizon and
the transaction index of the cleaned segment will be decided.

Byte layouts (``batch.py``, ``legacy.py``): a v2 record is
``Length varint | Attributes int8 | TimestampDelta varlong | OffsetDelta
varint | KeyLength varint | Key | ValueLength varint | Value | HeaderCount
varint | [HeaderKeyLength varint | HeaderKey | HeaderValueLength varint |
HeaderValue]``; a rebuilt record is written as Kafka's ``DefaultRecord.writeTo``
writes it (attributes 0, every varint in its shortest form).
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from typing import Any

from crc32c import crc32c

from broker.errors import CorruptRecordError, InvalidRecordError
from broker.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    FIELD_INDEX,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RECORDS_OFFSET,
)
from broker.records.legacy import (
    MIN_RECORD_SIZE,
    RECORD_ATTRIBUTES_OFFSET,
    RECORD_HEADER_SIZE_V0,
    RECORD_HEADER_SIZE_V1,
    RECORD_MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)

HASH_SIZE = 16
BYTES_PER_ENTRY = HASH_SIZE + 8
#: Kafka's map is an int-sized buffer (LogCleaner caps each thread's share)
MAX_MEMORY = 2**31 - 1

#: walk results: why a walk returned
DONE = 0  # no further complete entry in the chunk
MAP_FULL = 1  # the map holds max_entries keys
NEEDS_CODEC = 2  # the entry at pos is compressed: the caller decompresses it
OUT_FULL = 3  # the output buffer cannot take the entry at pos

#: what filter_records decided about a batch's records
KEEP_ALL = 0  # every record stays and the header needs no change: copy the batch
KEEP_NONE = 1  # no record stays
REBUILT = 2  # the kept records were written re-encoded

_INT_MIN = -(2**31)
_M32 = 0xFFFFFFFF
#: the smallest legacy entries and where their key length is (log overhead included)
_ENTRY_V0 = LOG_OVERHEAD + RECORD_OVERHEAD_V0
_ENTRY_V1 = LOG_OVERHEAD + RECORD_OVERHEAD_V1
_KEY_V0 = LOG_OVERHEAD + RECORD_HEADER_SIZE_V0
_KEY_V1 = LOG_OVERHEAD + RECORD_HEADER_SIZE_V1
# the fields of a HEADER_STRUCT tuple
_BASE_OFFSET = FIELD_INDEX["base_offset"]
_LEADER_EPOCH = FIELD_INDEX["partition_leader_epoch"]
_CRC = FIELD_INDEX["crc"]
_ATTRIBUTES = FIELD_INDEX["attributes"]
_LAST_DELTA = FIELD_INDEX["last_offset_delta"]
_BASE_TIMESTAMP = FIELD_INDEX["base_timestamp"]
_MAX_TIMESTAMP = FIELD_INDEX["max_timestamp"]
_PRODUCER_ID = FIELD_INDEX["producer_id"]
_PRODUCER_EPOCH = FIELD_INDEX["producer_epoch"]
_BASE_SEQUENCE = FIELD_INDEX["base_sequence"]
_RECORDS_COUNT = FIELD_INDEX["records_count"]
_LEGACY_MIN = {MAGIC_V0: _ENTRY_V0, MAGIC_V1: _ENTRY_V1}
_OFFSET_SIZE = struct.Struct(">qi")
_LEGACY = struct.Struct(">qiIbb")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_SLOT = struct.Struct(">q")


# errors: a code and up to three numbers; both twins raise error(code, a, b, c)
E_VARINT_END = 1
E_VARINT_LONG = 2
E_RECORD_FIT = 3
E_RECORD_EMPTY = 4
E_KEY_VALUE_PAST = 5
E_HEADER_COUNT = 6
E_HEADER_KEY = 7
E_HEADER_PAST = 8
E_RECORD_SIZE = 9
E_PREMATURE_EOF = 10
E_RECORDS_REMAINING = 11
E_RECORD_COUNT = 12
E_ENTRY_SIZE = 13
E_V2_SMALL = 14
E_LEGACY_SMALL = 15
E_MAGIC = 16
E_LEGACY_KEY = 17
E_LEGACY_VALUE = 18
E_CRC32C = 19
E_CRC32 = 20
E_TIMESTAMP = 21
E_OUT_SMALL = 22

_ERRORS: dict[int, tuple[type[Exception], str]] = {
    E_VARINT_END: (InvalidRecordError, "Found invalid record structure: varint past the record"),
    E_VARINT_LONG: (InvalidRecordError, "Found invalid record structure: varint too long"),
    E_RECORD_FIT: (
        InvalidRecordError,
        "Found invalid record structure: record of {a} bytes at {b} does not fit",
    ),
    E_RECORD_EMPTY: (InvalidRecordError, "Found invalid record structure: empty record"),
    E_KEY_VALUE_PAST: (
        InvalidRecordError,
        "Found invalid record structure: key or value past the record",
    ),
    E_HEADER_COUNT: (InvalidRecordError, "Found invalid number of record headers {a}"),
    E_HEADER_KEY: (InvalidRecordError, "Invalid negative header key size {a}"),
    E_HEADER_PAST: (InvalidRecordError, "Found invalid record structure: header past the record"),
    E_RECORD_SIZE: (
        InvalidRecordError,
        "Invalid record size: expected to read {a} bytes in record payload, but instead read {b}",
    ),
    E_PREMATURE_EOF: (InvalidRecordError, "Incorrect declared batch size, premature EOF reached"),
    E_RECORDS_REMAINING: (
        InvalidRecordError,
        "Incorrect declared batch size, records still remaining in file",
    ),
    E_RECORD_COUNT: (InvalidRecordError, "Found invalid record count {a} in magic v2 batch"),
    E_ENTRY_SIZE: (
        CorruptRecordError,
        "Found record size {a} smaller than minimum record overhead (14) at position {b}",
    ),
    E_V2_SMALL: (CorruptRecordError, "Batch of {a} bytes at {b} is smaller than a v2 header"),
    E_LEGACY_SMALL: (
        CorruptRecordError,
        "Record of {a} bytes at {b} is too small for magic {c}",
    ),
    E_MAGIC: (CorruptRecordError, "Invalid magic {a} of the entry at {b}"),
    E_LEGACY_KEY: (CorruptRecordError, "Legacy record at {a} is shorter than its key"),
    E_LEGACY_VALUE: (CorruptRecordError, "Legacy record at {a} does not end with its value"),
    E_CRC32C: (CorruptRecordError, "CRC-32C mismatch of the batch at position {a}"),
    E_CRC32: (CorruptRecordError, "CRC-32 mismatch of the message at position {a}"),
    E_TIMESTAMP: (InvalidRecordError, "Invalid negative timestamp {a}"),
    E_OUT_SMALL: (ValueError, "output buffer too small for the rebuilt records"),
}


def error(code: int, a: int = 0, b: int = 0, c: int = 0) -> Exception:
    """The exception of an error code (shared by both twins, so messages match)."""
    cls, text = _ERRORS[code]
    return cls(text.format(a=a, b=b, c=c))


def _java_int(value: int) -> int:
    value &= _M32
    return value - (1 << 32) if value & 0x80000000 else value


class OffsetMap:
    """``SkimpyOffsetMap`` with MD5 (see the module docstring)."""

    def __init__(self, memory: int, superseded_memory: int = 0) -> None:
        if memory < BYTES_PER_ENTRY or memory > MAX_MEMORY:
            raise ValueError(
                f"an offset map takes {BYTES_PER_ENTRY} to {MAX_MEMORY} bytes, not {memory}"
            )
        if superseded_memory < 0 or superseded_memory > MAX_MEMORY:
            raise ValueError(f"a superseded bitmap of {superseded_memory} bytes")
        self._slots = memory // BYTES_PER_ENTRY
        self._table = bytearray(self._slots * BYTES_PER_ENTRY)
        self._entries = 0
        self._latest = -1
        self._lookups = 0
        self._probes = 0
        self._superseded = bytearray(superseded_memory)
        self._tracked_from = -1  # first offset of the bitmap; -1: off
        self._tracked_end = -1
        self._last_put = -1

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def size(self) -> int:
        """Keys put into the map."""
        return self._entries

    @property
    def latest_offset(self) -> int:
        return self._latest

    @property
    def utilization(self) -> float:
        return self._entries / self._slots

    @property
    def collision_rate(self) -> float:
        return (self._probes - self._lookups) / self._lookups if self._lookups else 0.0

    @property
    def memory(self) -> int:
        """Bytes of the table and the superseded bitmap."""
        return len(self._table) + len(self._superseded)

    def update_latest_offset(self, offset: int) -> None:
        self._latest = offset

    def clear(self) -> None:
        self._table = bytearray(len(self._table))
        self._entries = 0
        self._latest = -1
        self._lookups = 0
        self._probes = 0
        self._tracked_from = -1

    def track_superseded(self, start_offset: int, end_offset: int) -> bool:
        """Keep the superseded bitmap for ``[start_offset, end_offset)``, as far
        as its memory goes (an empty map and a bitmap of some memory only);
        returns whether it is on. Only the bytes that range needs are zeroed
        (touched)."""
        if not self._superseded or self._entries or not 0 <= start_offset < end_offset:
            self._tracked_from = -1
            return False
        used = min(len(self._superseded), (end_offset - start_offset + 7) // 8)
        self._superseded[:used] = bytes(used)
        self._tracked_from = start_offset
        self._tracked_end = start_offset + 8 * used
        self._last_put = -1
        return True

    def superseded(self, offset: int) -> int:
        """1 when a later offset of the same key went into the map, 0 when
        none did, -1 when the bitmap does not know (off, or outside it)."""
        if self._tracked_from < 0 or not self._tracked_from <= offset < self._tracked_end:
            return -1
        i = offset - self._tracked_from
        return (self._superseded[i >> 3] >> (i & 7)) & 1

    def _position(self, digest: bytes, attempt: int) -> int:
        at = min(attempt, HASH_SIZE - 4)
        probe = _java_int(int.from_bytes(digest[at : at + 4], "big") + max(0, attempt - 12))
        self._probes += 1
        slot = (0 if probe == _INT_MIN else abs(probe)) % self._slots
        return slot * BYTES_PER_ENTRY

    def _is_empty(self, pos: int) -> bool:
        return not any(self._table[pos : pos + BYTES_PER_ENTRY])

    def put(self, key: Any, offset: int) -> None:
        """Key -> offset (a key seen again gets the new offset)."""
        self.put_hash(hashlib.md5(key).digest(), offset)

    def put_hash(self, digest: bytes, offset: int) -> None:
        if self._entries >= self._slots:
            raise ValueError(
                "Attempted to add a new entry to a full offset map, "
                f"entries: {self._entries}, slots: {self._slots}"
            )
        self._lookups += 1
        if self._tracked_from >= 0:
            if offset <= self._last_put:
                self._tracked_from = -1  # out of order: the bitmap no longer says it all
            self._last_put = offset
        table = self._table
        attempt = 0
        pos = self._position(digest, attempt)
        while not self._is_empty(pos):
            if table[pos : pos + HASH_SIZE] == digest:
                if self._tracked_from >= 0:
                    replaced = _SLOT.unpack_from(table, pos + HASH_SIZE)[0] - self._tracked_from
                    if 0 <= replaced < self._tracked_end - self._tracked_from:
                        self._superseded[replaced >> 3] |= 1 << (replaced & 7)
                _SLOT.pack_into(table, pos + HASH_SIZE, offset)
                self._latest = offset
                return
            attempt += 1
            pos = self._position(digest, attempt)
        table[pos : pos + HASH_SIZE] = digest
        _SLOT.pack_into(table, pos + HASH_SIZE, offset)
        self._latest = offset
        self._entries += 1

    def get(self, key: Any) -> int:
        """The key's offset, or -1."""
        return self.get_hash(hashlib.md5(key).digest())

    def get_hash(self, digest: bytes) -> int:
        self._lookups += 1
        table = self._table
        max_attempts = self._slots + HASH_SIZE - 4
        attempt = 0
        while True:
            if attempt >= max_attempts:
                return -1
            pos = self._position(digest, attempt)
            if self._is_empty(pos):
                return -1
            attempt += 1
            if table[pos : pos + HASH_SIZE] == digest:
                value: int = _SLOT.unpack_from(table, pos + HASH_SIZE)[0]
                return value


def md5(data: Any) -> bytes:
    """The MD5 digest the map stores for a key (the twin has its own MD5)."""
    return hashlib.md5(data).digest()


class ActiveProducers:
    """``UnifiedLog.lastRecordsOfActiveProducers``: per producer id its last
    data offset (-1: none, its last entry is a marker) and epoch."""

    def __init__(self, last_records: dict[int, tuple[int, int]]) -> None:
        self._last = dict(last_records)

    def __len__(self) -> int:
        return len(self._last)

    def is_last_batch(
        self, producer_id: int, last_offset: int, is_control: bool, producer_epoch: int
    ) -> bool:
        """The batch holds its producer's last sequence or last epoch (cleanInto's
        ``isBatchLastRecordOfProducer``)."""
        entry = self._last.get(producer_id)
        if entry is None:
            return False
        last_data_offset, epoch = entry
        if last_data_offset >= 0:
            return last_offset == last_data_offset
        return is_control and producer_epoch == epoch


# ---- varints ----------------------------------------------------------------------------


def _varint(buf: Any, pos: int, end: int, limit: int) -> tuple[int, int]:
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise error(E_VARINT_END)
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= limit:
            raise error(E_VARINT_LONG)
    raw &= 0xFFFFFFFF if limit == 35 else 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def _put_varint(out: Any, pos: int, value: int) -> int:
    raw = (value << 1) ^ (value >> 63)
    raw &= 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out[pos] = (raw & 0x7F) | 0x80
        raw >>= 7
        pos += 1
    out[pos] = raw
    return pos + 1


def _size_of_varint(value: int) -> int:
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while raw >= 0x80:
        raw >>= 7
        n += 1
    return n


class _Rec:
    """One parsed v2 record (positions into the buffer)."""

    __slots__ = (
        "end",
        "headers",
        "key",
        "key_len",
        "offset_delta",
        "timestamp_delta",
        "value",
        "value_len",
    )

    def __init__(self) -> None:
        self.end = 0
        self.timestamp_delta = 0
        self.offset_delta = 0
        self.key = 0
        self.key_len = -1
        self.value = 0
        self.value_len = -1
        self.headers: list[tuple[int, int, int, int]] = []


def _read_record(buf: Any, pos: int, end: int) -> _Rec:
    """``DefaultRecord.readFrom`` of the record at ``pos`` (which must end by ``end``)."""
    size, p = _varint(buf, pos, end, 35)
    if size < 0 or p + size > end:
        raise error(E_RECORD_FIT, size, pos)
    stop = p + size
    r = _Rec()
    if p >= stop:
        raise error(E_RECORD_EMPTY)
    p += 1  # attributes (unused)
    r.timestamp_delta, p = _varint(buf, p, stop, 70)
    r.offset_delta, p = _varint(buf, p, stop, 35)
    r.key_len, p = _varint(buf, p, stop, 35)
    if r.key_len >= 0:
        r.key = p
        p += r.key_len
        if p > stop:
            raise error(E_KEY_VALUE_PAST)
    r.value_len, p = _varint(buf, p, stop, 35)
    if r.value_len >= 0:
        r.value = p
        p += r.value_len
    if p > stop:
        raise error(E_KEY_VALUE_PAST)
    count, p = _varint(buf, p, stop, 35)
    if count < 0:
        raise error(E_HEADER_COUNT, count)
    for _ in range(count):
        klen, p = _varint(buf, p, stop, 35)
        if klen < 0:
            raise error(E_HEADER_KEY, klen)
        kpos = p
        p += klen
        if p > stop:
            raise error(E_HEADER_PAST)
        vlen, p = _varint(buf, p, stop, 35)
        vpos = p
        if vlen >= 0:
            p += vlen
        if p > stop:
            raise error(E_HEADER_PAST)
        r.headers.append((kpos, klen, vpos, vlen))
    if p != stop:
        raise error(E_RECORD_SIZE, size, size - (stop - p))
    r.end = stop
    return r


def _key(buf: Any, r: _Rec) -> bytes:
    return bytes(buf[r.key : r.key + r.key_len])


# ---- building the map -------------------------------------------------------------------


def map_records(
    offset_map: OffsetMap,
    buf: Any,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    start_offset: int,
    max_entries: int,
) -> tuple[bool, int]:
    """The ``count`` records of a v2 batch in ``buf[pos:end]`` into the map;
    returns (full, records read)."""
    view = memoryview(buf)
    read = 0
    for _ in range(count):
        if pos >= end:
            raise error(E_PREMATURE_EOF)
        r = _read_record(view, pos, end)
        offset = base_offset + r.offset_delta
        if r.key_len >= 0 and offset >= start_offset:
            if offset_map.size >= max_entries:
                return True, read
            offset_map.put(view[r.key : r.key + r.key_len], offset)
        read += 1
        pos = r.end
    if pos != end:
        raise error(E_RECORDS_REMAINING)
    return False, read


def _legacy_key_value(view: Any, pos: int, total: int, magic: int) -> tuple[int, int, int, int]:
    """(key position, key length, value position, value length) of a legacy entry."""
    p = pos + (_KEY_V1 if magic == MAGIC_V1 else _KEY_V0)
    end = pos + total
    key_len = _I32.unpack_from(view, p)[0]
    p += 4
    key = p
    if key_len >= 0:
        p += key_len
    if p + 4 > end:
        raise error(E_LEGACY_KEY, pos)
    value_len = _I32.unpack_from(view, p)[0]
    p += 4
    if (value_len >= 0 and p + value_len != end) or (value_len < 0 and p != end):
        raise error(E_LEGACY_VALUE, pos)
    return key, key_len, p, value_len


def _entry(view: Any, pos: int, end: int) -> tuple[int, int, int] | None:
    """(offset, total size, magic) of the entry at pos, None when it does not fit."""
    if pos + HEADER_SIZE_UP_TO_MAGIC >= end:
        return None
    offset, size = _OFFSET_SIZE.unpack_from(view, pos)
    if size < MIN_RECORD_SIZE:
        raise error(E_ENTRY_SIZE, size, pos)
    total = size + LOG_OVERHEAD
    if pos + total > end:
        return None
    magic = view[pos + MAGIC_OFFSET]
    if magic > 127:  # a signed byte, as Kafka reads it
        magic -= 256
    if magic == MAGIC_V2:
        if total < RECORD_BATCH_OVERHEAD:
            raise error(E_V2_SMALL, total, pos)
    elif magic in (MAGIC_V0, MAGIC_V1):
        if total < _LEGACY_MIN[magic]:
            raise error(E_LEGACY_SMALL, total, pos, magic)
    else:
        raise error(E_MAGIC, magic, pos)
    return offset, total, magic


def map_chunk(
    offset_map: OffsetMap,
    buf: Any,
    start: int,
    end: int,
    *,
    start_offset: int,
    max_entries: int,
) -> tuple[int, int, int]:
    """Entries of ``buf[start:end]`` into the map (module docstring); returns
    (position, DONE | MAP_FULL | NEEDS_CODEC, records read)."""
    view = memoryview(buf)
    pos = start
    read = 0
    while True:
        found = _entry(view, pos, end)
        if found is None:
            return pos, DONE, read
        offset, total, magic = found
        if magic == MAGIC_V2:
            h = HEADER_STRUCT.unpack_from(view, pos)
            attributes, last_delta, count = h[_ATTRIBUTES], h[_LAST_DELTA], h[_RECORDS_COUNT]
            last_offset = h[_BASE_OFFSET] + last_delta
            if attributes & 0x30:  # KEEP_TXN: control or transactional, nothing enters the map
                read += 1 if attributes & 0x20 else max(count, 0)
            else:
                if attributes & 0x07:
                    return pos, NEEDS_CODEC, read
                if count < 0:
                    raise error(E_RECORD_COUNT, count)
                full, n = map_records(
                    offset_map,
                    view,
                    pos + RECORDS_OFFSET,
                    pos + total,
                    count=count,
                    base_offset=h[_BASE_OFFSET],
                    start_offset=start_offset,
                    max_entries=max_entries,
                )
                read += n
                if full:
                    return pos, MAP_FULL, read
        else:
            attributes = view[pos + RECORD_ATTRIBUTES_OFFSET]
            if attributes & 0x07:
                return pos, NEEDS_CODEC, read
            last_offset = offset
            key, key_len, _value, _value_len = _legacy_key_value(view, pos, total, magic)
            if key_len >= 0 and offset >= start_offset:
                if offset_map.size >= max_entries:
                    return pos, MAP_FULL, read
                offset_map.put(view[key : key + key_len], offset)
            read += 1
        if last_offset >= start_offset:
            offset_map.update_latest_offset(last_offset)
        pos += total


# ---- filtering --------------------------------------------------------------------------


def keep_record(
    offset_map: OffsetMap,
    key: Any,
    *,
    has_value: bool,
    offset: int,
    latest_offset: int,
    retain_deletes: bool,
) -> int:
    """``Cleaner.shouldRetainRecord``: 1 keep, 0 drop, -1 drop an invalid (key-less) record.
    Redundant (a later offset of the key is in the map): from the superseded
    bitmap when it knows, else from the map."""
    if offset > latest_offset:
        return 1
    if key is None:
        return -1
    redundant = offset_map.superseded(offset)
    if redundant < 0:
        redundant = int(offset < offset_map.get(key))
    return 1 if not redundant and (has_value or retain_deletes) else 0


def filter_records(
    offset_map: OffsetMap,
    buf: Any,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int,
    horizon: int,
    now: int,
    new_horizon: int,
    latest_offset: int,
    out: Any,
    out_pos: int,
) -> tuple[int, int, int, int, int, int, int]:
    """The records of one v2 data batch (``buf[pos:end]``, ``count`` of them):
    which to keep, and the kept ones re-encoded into ``out`` at ``out_pos``.

    ``log_append_time`` is the batch's max timestamp for a LogAppendTime batch
    (every record's timestamp), -1 for CreateTime; ``horizon`` the batch's
    delete horizon (-1: not set). A record stays when it is past the map
    (``latest_offset``) or has the map's offset for its key, unless it is a
    tombstone whose batch's horizon has passed; a key-less record goes.
    When a kept tombstone meets a batch without a horizon, the horizon becomes
    ``new_horizon`` (KIP-534: now + delete.retention.ms) and the batch's base
    timestamp carries it.

    Returns ``(decision, out_end, kept, invalid, base_timestamp, max_timestamp,
    horizon)``: KEEP_ALL writes nothing (copy the batch), KEEP_NONE writes
    nothing, REBUILT wrote the kept records from ``out_pos`` to ``out_end``
    for a header with that base timestamp, max timestamp and horizon (-1: none).
    """
    view = memoryview(buf)
    retain_deletes = horizon < 0 or now < horizon
    kept: list[tuple[_Rec, int]] = []
    invalid = 0
    tombstone = False
    max_ts = -1
    p = pos
    for _ in range(count):
        if p >= end:
            raise error(E_PREMATURE_EOF)
        r = _read_record(view, p, end)
        offset = base_offset + r.offset_delta
        timestamp = log_append_time if log_append_time >= 0 else base_timestamp + r.timestamp_delta
        key = view[r.key : r.key + r.key_len] if r.key_len >= 0 else None
        verdict = keep_record(
            offset_map,
            key,
            has_value=r.value_len >= 0,
            offset=offset,
            latest_offset=latest_offset,
            retain_deletes=retain_deletes,
        )
        if verdict > 0:
            kept.append((r, timestamp))
            if r.value_len < 0:
                tombstone = True
            max_ts = max(max_ts, timestamp)
        elif verdict < 0:
            invalid += 1
        p = r.end
    if p != end:
        raise error(E_RECORDS_REMAINING)
    if not kept:
        return KEEP_NONE, out_pos, 0, invalid, -1, -1, horizon
    new_base = horizon
    if horizon < 0 and tombstone:
        new_base = new_horizon
    if len(kept) == count and new_base == horizon:
        return KEEP_ALL, out_pos, count, invalid, base_timestamp, max_ts, horizon
    out_horizon = new_base
    if new_base < 0:
        new_base = kept[0][1]
    if log_append_time >= 0:
        max_ts = log_append_time
    o = out_pos
    for r, timestamp in kept:
        if timestamp < -1:  # MemoryRecordsBuilder.appendWithOffset
            raise error(E_TIMESTAMP, timestamp)
        o = _write_record(view, r, timestamp - new_base, out, o)
    return REBUILT, o, len(kept), invalid, new_base, max_ts, out_horizon


def _write_record(view: Any, r: _Rec, timestamp_delta: int, out: Any, o: int) -> int:
    """``DefaultRecord.writeTo`` of a parsed record with a new timestamp delta
    (a null key, value or header value is written as length -1)."""
    key_len = max(r.key_len, -1)
    value_len = max(r.value_len, -1)
    body = 1 + _size_of_varint(timestamp_delta) + _size_of_varint(r.offset_delta)
    body += _size_of_varint(key_len) + max(key_len, 0)
    body += _size_of_varint(value_len) + max(value_len, 0)
    body += _size_of_varint(len(r.headers))
    for _kpos, klen, _vpos, vlen in r.headers:
        body += _size_of_varint(klen) + klen + _size_of_varint(max(vlen, -1)) + max(vlen, 0)
    if o + _size_of_varint(body) + body > len(out):
        raise error(E_OUT_SMALL)
    o = _put_varint(out, o, body)
    out[o] = 0
    o = _put_varint(out, o + 1, timestamp_delta)
    o = _put_varint(out, o, r.offset_delta)
    o = _put_varint(out, o, key_len)
    if key_len > 0:
        out[o : o + key_len] = view[r.key : r.key + key_len]
        o += key_len
    o = _put_varint(out, o, value_len)
    if value_len > 0:
        out[o : o + value_len] = view[r.value : r.value + value_len]
        o += value_len
    o = _put_varint(out, o, len(r.headers))
    for kpos, klen, vpos, vlen in r.headers:
        o = _put_varint(out, o, klen)
        out[o : o + klen] = view[kpos : kpos + klen]
        o += klen
        o = _put_varint(out, o, max(vlen, -1))
        if vlen > 0:
            out[o : o + vlen] = view[vpos : vpos + vlen]
            o += vlen
    return o


def write_v2_header(
    out: Any,
    pos: int,
    size: int,
    *,
    source: Any,
    source_pos: int,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    count: int,
) -> None:
    """``DefaultRecordBatch.writeHeader`` of a batch of ``size`` bytes at ``pos``
    whose records are already in place: offsets, epoch and producer fields
    from the source batch header at ``source_pos``; CRC-32C computed."""
    h = HEADER_STRUCT.unpack_from(source, source_pos)
    if base_timestamp < -1:
        raise error(E_TIMESTAMP, base_timestamp)
    HEADER_STRUCT.pack_into(
        out,
        pos,
        h[_BASE_OFFSET],
        size - LOG_OVERHEAD,
        h[_LEADER_EPOCH],
        MAGIC_V2,
        0,
        attributes,
        h[_LAST_DELTA],
        base_timestamp,
        max_timestamp,
        h[_PRODUCER_ID],
        h[_PRODUCER_EPOCH],
        h[_BASE_SEQUENCE],
        count,
    )
    struct.pack_into(
        ">I", out, pos + CRC_OFFSET, crc32c(memoryview(out)[pos + ATTRIBUTES_OFFSET : pos + size])
    )


def rebuilt_attributes(source_attributes: int, codec: int, has_horizon: bool) -> int:
    """``DefaultRecordBatch.computeAttributes``: only the defined bits survive a rebuild."""
    return (codec & 0x07) | (source_attributes & 0x38) | (0x40 if has_horizon else 0)


def filter_chunk(
    offset_map: OffsetMap,
    producers: ActiveProducers,
    buf: Any,
    start: int,
    end: int,
    *,
    out: Any,
    out_pos: int,
    latest_offset: int,
    now: int,
    new_horizon: int,
    retain_legacy_deletes: bool,
) -> tuple[int, int, int, int, int, int, int]:
    """Entries of ``buf[start:end]`` filtered into ``out`` (module docstring);
    returns (position, output end, DONE | NEEDS_CODEC | OUT_FULL, records read,
    records kept, bytes read, invalid records).

    Every v2 batch's CRC-32C and every legacy entry's CRC-32 is checked first:
    a damaged entry is a CorruptRecordError (the partition becomes uncleanable)
    rather than being copied or rebuilt with a fresh CRC.
    """
    view = memoryview(buf)
    pos = start
    o = out_pos
    read = kept = bytes_read = invalid = 0
    capacity = len(out)
    while True:
        found = _entry(view, pos, end)
        if found is None:
            return pos, o, DONE, read, kept, bytes_read, invalid
        offset, total, magic = found
        if magic == MAGIC_V2:
            h = HEADER_STRUCT.unpack_from(view, pos)
            attributes, count = h[_ATTRIBUTES], h[_RECORDS_COUNT]
            if crc32c(view[pos + ATTRIBUTES_OFFSET : pos + total]) != h[_CRC]:
                raise error(E_CRC32C, pos)
            if attributes & 0x30:  # KEEP_TXN: control and transactional batches stay whole
                if o + total > capacity:
                    return pos, o, OUT_FULL, read, kept, bytes_read, invalid
                out[o : o + total] = view[pos : pos + total]
                o += total
                n = 1 if attributes & 0x20 else max(count, 0)
                read += n
                kept += n
                bytes_read += total
                pos += total
                continue
            if attributes & 0x07:
                return pos, o, NEEDS_CODEC, read, kept, bytes_read, invalid
            if count < 0:
                raise error(E_RECORD_COUNT, count)
            if o + total + 13 * min(count, total) > capacity:
                return pos, o, OUT_FULL, read, kept, bytes_read, invalid
            horizon = h[_BASE_TIMESTAMP] if attributes & 0x40 else -1
            lat = h[_MAX_TIMESTAMP] if attributes & 0x08 else -1
            decision, rec_end, n_kept, n_invalid, base_ts, max_ts, out_horizon = filter_records(
                offset_map,
                view,
                pos + RECORDS_OFFSET,
                pos + total,
                count=count,
                base_offset=h[_BASE_OFFSET],
                base_timestamp=h[_BASE_TIMESTAMP],
                log_append_time=lat,
                horizon=horizon,
                now=now,
                new_horizon=new_horizon,
                latest_offset=latest_offset,
                out=out,
                out_pos=o + RECORDS_OFFSET,
            )
            read += count
            invalid += n_invalid
            bytes_read += total
            if decision == KEEP_ALL:
                out[o : o + total] = view[pos : pos + total]
                o += total
                kept += count
            elif decision == REBUILT:
                size = rec_end - o
                write_v2_header(
                    out,
                    o,
                    size,
                    source=view,
                    source_pos=pos,
                    attributes=rebuilt_attributes(attributes, 0, out_horizon >= 0),
                    base_timestamp=base_ts,
                    max_timestamp=max_ts,
                    count=n_kept,
                )
                o = rec_end
                kept += n_kept
            elif h[_PRODUCER_ID] >= 0 and producers.is_last_batch(
                h[_PRODUCER_ID], h[_BASE_OFFSET] + h[_LAST_DELTA], False, h[_PRODUCER_EPOCH]
            ):
                o = write_empty_batch(out, o, view, pos)
        else:
            if (
                zlib.crc32(view[pos + RECORD_MAGIC_OFFSET : pos + total])
                != _LEGACY.unpack_from(view, pos)[2]
            ):
                raise error(E_CRC32, pos)
            attributes = view[pos + RECORD_ATTRIBUTES_OFFSET]
            if attributes & 0x07:
                return pos, o, NEEDS_CODEC, read, kept, bytes_read, invalid
            if o + total > capacity:
                return pos, o, OUT_FULL, read, kept, bytes_read, invalid
            key, key_len, _value, value_len = _legacy_key_value(view, pos, total, magic)
            verdict = keep_record(
                offset_map,
                view[key : key + key_len] if key_len >= 0 else None,
                has_value=value_len >= 0,
                offset=offset,
                latest_offset=latest_offset,
                retain_deletes=retain_legacy_deletes,
            )
            read += 1
            bytes_read += total
            if verdict > 0:
                out[o : o + total] = view[pos : pos + total]
                o += total
                kept += 1
            elif verdict < 0:
                invalid += 1
        pos += total


def write_empty_batch(out: Any, o: int, source: Any, source_pos: int) -> int:
    """``DefaultRecordBatch.writeEmptyHeader`` for the source batch (its offsets,
    sequence, producer, epoch, timestamp type and max timestamp; no records)."""
    h = HEADER_STRUCT.unpack_from(source, source_pos)
    write_v2_header(
        out,
        o,
        RECORD_BATCH_OVERHEAD,
        source=source,
        source_pos=source_pos,
        attributes=h[_ATTRIBUTES] & 0x38,
        base_timestamp=-1,
        max_timestamp=h[_MAX_TIMESTAMP],
        count=0,
    )
    return o + RECORD_BATCH_OVERHEAD
