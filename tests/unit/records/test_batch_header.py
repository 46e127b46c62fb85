"""The v2 header table of ``broker.records.batch``: the struct and every
offset derived from it are the layout its docstring documents
(``DefaultRecordBatch.java``'s ``*_OFFSET`` constants)."""

from __future__ import annotations

import re
import struct

from broker.records import batch as v2

#: ``offset size field type`` rows of the module docstring
_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\w+)\s+(u?int\d+)\b", re.MULTILINE)
_CODES = {"int8": "b", "int16": "h", "int32": "i", "uint32": "I", "int64": "q"}


def _documented() -> list[tuple[int, int, str, str]]:
    assert v2.__doc__ is not None
    return [(int(o), int(n), name, kind) for o, n, name, kind in _ROW.findall(v2.__doc__)]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


def test_the_table_is_the_documented_layout() -> None:
    rows = _documented()
    assert [(_snake(name), _CODES[kind]) for _, _, name, kind in rows] == [
        ("base_offset", "q"),
        ("batch_length", "i"),
        ("partition_leader_epoch", "i"),
        ("magic", "b"),
        ("crc", "I"),
        ("attributes", "h"),
        ("last_offset_delta", "i"),
        ("base_timestamp", "q"),
        ("max_timestamp", "q"),
        ("producer_id", "q"),
        ("producer_epoch", "h"),
        ("base_sequence", "i"),
        ("records_count", "i"),
    ]
    assert [(_snake(name), _CODES[kind]) for _, _, name, kind in rows] == list(v2.HEADER_FIELDS)
    for offset, size, name, kind in rows:
        assert v2.FIELD_OFFSETS[_snake(name)] == offset, name
        assert struct.calcsize(">" + _CODES[kind]) == size, name


def test_derived_struct_and_constants() -> None:
    assert v2.HEADER_STRUCT.format == ">qiibIhiqqqhii"
    assert v2.HEADER_STRUCT.size == v2.RECORDS_OFFSET == v2.RECORD_BATCH_OVERHEAD == 61
    assert (
        v2.BASE_OFFSET_OFFSET, v2.LENGTH_OFFSET, v2.PARTITION_LEADER_EPOCH_OFFSET,
        v2.MAGIC_OFFSET, v2.CRC_OFFSET, v2.ATTRIBUTES_OFFSET, v2.LAST_OFFSET_DELTA_OFFSET,
        v2.BASE_TIMESTAMP_OFFSET, v2.MAX_TIMESTAMP_OFFSET, v2.PRODUCER_ID_OFFSET,
        v2.PRODUCER_EPOCH_OFFSET, v2.BASE_SEQUENCE_OFFSET, v2.RECORDS_COUNT_OFFSET,
    ) == (0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57)  # fmt: skip
    assert (v2.LOG_OVERHEAD, v2.HEADER_SIZE_UP_TO_MAGIC) == (12, 17)
    assert v2.RecordBatchHeader._fields == tuple(name for name, _ in v2.HEADER_FIELDS)
    assert [v2.FIELD_INDEX[name] for name in v2.RecordBatchHeader._fields] == list(range(13))


def test_each_field_is_read_at_its_offset() -> None:
    """Every field packed alone at its derived offset decodes as that field."""
    for i, (name, code) in enumerate(v2.HEADER_FIELDS):
        buf = bytearray(v2.RECORDS_OFFSET)
        struct.pack_into(">" + code, buf, v2.FIELD_OFFSETS[name], 7 + i)
        header = v2.read_header(buf)
        assert getattr(header, name) == 7 + i
        assert [f for f in header if f] == [7 + i]
