"""``kafka-dump-log.sh --offsets-decoder``'s text for a ``__consumer_offsets`` record.

``DumpLogSegments.OffsetsMessageParser``: the key as ``{"type":"<record
type>","data":{...}}``, the value as ``{"version":"<version>","data":{...}}``
or ``<DELETE>`` for a tombstone, with the fields as Kafka's generated JSON
converters write them (bytes in base64, uuids as Kafka's base64url
``Uuid.toString``). A record of an unknown type or that does not decode is
described in the key and has no payload, as Kafka prints it.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from broker.group_records.messages import decode_record
from broker.group_records.schema import GroupRecordError, UnknownRecordTypeError


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def format_offsets_record(
    offset: int, key: bytes | None, value: bytes | None
) -> tuple[str, str | None]:
    """(key text, payload text or None) of one record."""
    if key is None:
        return (
            f"Failed to decode message at offset {offset} using offset topic decoder "
            "(message had a missing key)",
            None,
        )
    try:
        record = decode_record(key, value)
    except UnknownRecordTypeError as exc:
        return f"Unknown record type {exc.record_type} at offset {offset}, skipping.", None
    except GroupRecordError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    key_text = _dumps({"type": str(record.record_type), "data": _jsonable(record.key)})
    if record.value is None:
        return key_text, "<DELETE>"
    return key_text, _dumps({"version": str(record.value_version), "data": _jsonable(record.value)})
