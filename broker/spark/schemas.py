"""Row layouts of the ``kafka-log`` data source, one per reading level.

Defined once as Spark ``StructType`` s; the Arrow schema of the record
batches a reader yields is derived from them with PySpark's own converter,
so the two can never disagree (Spark refuses a batch whose Arrow schema
differs from the declared one).

``records`` (the default level): one row per record; batch fields repeated::

    topic, partition, offset, timestamp (ms, -1 = none), timestamp_type
    (-1 none, 0 CreateTime, 1 LogAppendTime), key, value, headers
    (array<struct<key, value>>), base_offset, last_offset, magic, codec,
    producer_id, producer_epoch, base_sequence, partition_leader_epoch,
    is_transactional, is_control, crc_valid, segment, batch_position, error

  A batch that cannot be decoded, or bytes that cannot be framed, give one
  row with ``error`` set and the record columns null.

``batches``: one row per batch (or unreadable byte range) with counts,
sizes and timestamp ranges (``segment_scan.BatchFacts``).

``index``: one row per ``.index`` / ``.timeindex`` entry with its verdict
(``index_check.IndexFinding``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

LEVEL_RECORDS = "records"
LEVEL_BATCHES = "batches"
LEVEL_INDEX = "index"
LEVELS = (LEVEL_RECORDS, LEVEL_BATCHES, LEVEL_INDEX)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def _fields(spec: list[tuple[str, Any]]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in spec])


_LOCATION = [
    ("topic", StringType()),
    ("partition", IntegerType()),
]

RECORDS = _fields(
    [
        *_LOCATION,
        ("offset", LongType()),
        ("timestamp", LongType()),
        ("timestamp_type", IntegerType()),
        ("key", BinaryType()),
        ("value", BinaryType()),
        ("headers", ArrayType(HEADER_TYPE)),
        ("base_offset", LongType()),
        ("last_offset", LongType()),
        ("magic", IntegerType()),
        ("codec", StringType()),
        ("producer_id", LongType()),
        ("producer_epoch", IntegerType()),
        ("base_sequence", IntegerType()),
        ("partition_leader_epoch", IntegerType()),
        ("is_transactional", BooleanType()),
        ("is_control", BooleanType()),
        ("crc_valid", BooleanType()),
        ("segment", StringType()),
        ("batch_position", LongType()),
        ("error", StringType()),
    ]
)

BATCHES = _fields(
    [
        *_LOCATION,
        ("log_dir", StringType()),
        ("segment", StringType()),
        ("segment_base_offset", LongType()),
        ("position", LongType()),
        ("size", LongType()),
        ("magic", IntegerType()),
        ("codec", StringType()),
        ("timestamp_type", IntegerType()),
        ("base_offset", LongType()),
        ("last_offset", LongType()),
        ("record_count", IntegerType()),
        ("uncompressed_bytes", LongType()),
        ("min_timestamp", LongType()),
        ("max_timestamp", LongType()),
        ("no_timestamp_records", IntegerType()),
        ("header_max_timestamp", LongType()),
        ("producer_id", LongType()),
        ("producer_epoch", IntegerType()),
        ("base_sequence", IntegerType()),
        ("partition_leader_epoch", IntegerType()),
        ("is_transactional", BooleanType()),
        ("is_control", BooleanType()),
        ("crc_valid", BooleanType()),
        ("error", StringType()),
    ]
)

INDEX = _fields(
    [
        *_LOCATION,
        ("log_dir", StringType()),
        ("segment", StringType()),
        ("segment_base_offset", LongType()),
        ("index", StringType()),
        ("slot", IntegerType()),
        ("offset", LongType()),
        ("position", LongType()),
        ("timestamp", LongType()),
        ("problem", StringType()),
        ("mismatch", BooleanType()),
    ]
)

SCHEMAS = {LEVEL_RECORDS: RECORDS, LEVEL_BATCHES: BATCHES, LEVEL_INDEX: INDEX}


def arrow_schema(level: str) -> Any:
    """The ``pyarrow.Schema`` Spark expects for ``level``'s record batches."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(SCHEMAS[level], timezone="UTC")
