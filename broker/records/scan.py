"""The one place that chooses the implementation of the hot loops.

``_scan_py`` is the readable reference; ``_scan_c`` is its compiled twin
(Cython), with the same functions and the same results. The twin is used
when it was built and ``BROKER_NO_EXTENSIONS`` is not set to a true value
(the rule lives in ``broker.records.twins``).
``IMPLEMENTATION`` says which one runs ("compiled" or "python"); metrics and
the test-suite guard read it.

Callers use the names re-exported here (``scan.walk_v2`` ...) or ``scan.impl``;
the error, failure and check codes (``ERR_*``, ``FAIL_*``, ``CHECK_*``) and
``BatchRejected`` are the reference's.

The twins' functions (the same signatures in both, the parameters after
``*`` taken by keyword only; what each does is documented in ``_scan_py.py``)::

    read_varint(buf, pos, end) -> (value, next_pos)
    read_varlong(buf, pos, end) -> (value, next_pos)
    crc32(buf, pos, end) -> int
    new_buffer(size) -> bytearray
    copy_into(dst, offset, src) -> None
    scan_entries(buf, start, end, max_message_bytes, client_origin)
        -> (entries, valid_end, first_magic, source_codec, fail_code, fail_pos,
            fail_value, magic_mask)
    walk_v2(buf, pos, end, *, count, base_offset, base_timestamp, lat_batch,
            batch_max_timestamp, now, before_max, after_max, create_time,
            compacted, want_canonical, error_limit)
        -> (max_timestamp, min_timestamp, offsets_consecutive, canonical, errors,
            error_counts)
    check_client_batch(*, base_offset, last_offset_delta, records_count,
                       attributes, producer_id, base_sequence) -> CHECK_* code
    assign_in_place_v2(buf, *, next_offset, partition_leader_epoch, now,
                       before_max, after_max, compacted, log_append_time,
                       client_origin, error_limit)
        -> (records_count, max_timestamp, shallow_offset_of_max_timestamp,
            attributes, batch_max_timestamp, producer_id, producer_epoch,
            base_sequence); raises BatchRejected (nothing changed)
    walk_legacy(buf, pos, end, *, wrapper_magic, wrapper_offset,
                wrapper_timestamp, wrapper_lat, now, before_max, after_max,
                create_time, compacted, out, out_pos, error_limit)
        -> (records, consumed_end, out_end, max_timestamp, min_timestamp,
            offsets_consecutive, first_timestamp, errors, error_counts)
    reencode_v2(buf, pos, end, *, count, base_timestamp, lat_batch,
                batch_max_timestamp, out, out_pos) -> out_end
    v2_to_legacy(buf, pos, end, *, count, base_offset, base_timestamp,
                 lat_batch, batch_max_timestamp, to_magic, renumber_from,
                 relative_offsets, first_offset, log_append_time,
                 clamp_timestamps, out, out_pos)
        -> (written, out_end, first_written_offset, last_written_offset,
            max_timestamp, offset_of_max_timestamp, had_headers)

``error_counts`` is None when no record failed, else the number of failed
records by ERR_* code (a tuple of ``ERROR_KINDS``); ``errors`` then lists the
first ``error_limit`` of them as ``(batch_index, ERR_*, offset, timestamp,
record_position)`` (plus the one that ended a legacy walk), so a batch of
millions of failing records costs no Python object per record. The compiled
walks release the GIL while they run. Structural problems raise ``InvalidRecordError`` /
``CorruptRecordError``; an ``out`` buffer too small raises ``ValueError``.
"""

from __future__ import annotations

from broker.records import _scan_py, twins
from broker.records._scan_py import (
    CHECK_CONTROL,
    CHECK_COUNT,
    CHECK_COUNT_MISMATCH,
    CHECK_NONE,
    CHECK_OFFSET_RANGE,
    CHECK_SEQUENCE,
    ERR_CORRUPT,
    ERR_MAGIC,
    ERR_NO_KEY,
    ERR_TS_RANGE,
    ERR_TS_TYPE,
    ERROR_KINDS,
    FAIL_BASE_OFFSET,
    FAIL_CODEC,
    FAIL_CRC,
    FAIL_MAGIC,
    FAIL_NONE,
    FAIL_SIZE,
    FAIL_TOO_LARGE,
    BatchRejected,
)

__all__ = [
    "CHECK_CONTROL",
    "CHECK_COUNT",
    "CHECK_COUNT_MISMATCH",
    "CHECK_NONE",
    "CHECK_OFFSET_RANGE",
    "CHECK_SEQUENCE",
    "ERROR_KINDS",
    "ERR_CORRUPT",
    "ERR_MAGIC",
    "ERR_NO_KEY",
    "ERR_TS_RANGE",
    "ERR_TS_TYPE",
    "FAIL_BASE_OFFSET",
    "FAIL_CODEC",
    "FAIL_CRC",
    "FAIL_MAGIC",
    "FAIL_NONE",
    "FAIL_SIZE",
    "FAIL_TOO_LARGE",
    "FALLBACK_REASON",
    "IMPLEMENTATION",
    "BatchRejected",
    "impl",
]


impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(_scan_py, "broker.records._scan_c")

read_varint = impl.read_varint
read_varlong = impl.read_varlong
crc32 = impl.crc32
new_buffer = impl.new_buffer
copy_into = impl.copy_into
scan_entries = impl.scan_entries
walk_v2 = impl.walk_v2
check_client_batch = impl.check_client_batch
assign_in_place_v2 = impl.assign_in_place_v2
walk_legacy = impl.walk_legacy
reencode_v2 = impl.reencode_v2
v2_to_legacy = impl.v2_to_legacy
