"""Control records and end-transaction markers (``ControlRecordType.java``,
``EndTransactionMarker.java``; ControlRecordTypeTest,
EndTransactionMarkerTest)."""

from __future__ import annotations

import pytest

from broker.errors import InvalidRecordError
from broker.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    control_key,
    parse_control_type,
    parse_end_txn_marker,
)


@pytest.mark.parametrize(
    "control_type", [t for t in ControlRecordType if t is not ControlRecordType.UNKNOWN]
)
def test_control_key_round_trip(control_type):
    assert parse_control_type(control_key(control_type)) is control_type


def test_unknown_type_and_higher_key_version():
    assert parse_control_type(b"\x00\x00\x00\x63") is ControlRecordType.UNKNOWN
    assert parse_control_type(b"\x00\x05\x00\x01extra") is ControlRecordType.COMMIT


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"])
def test_bad_control_keys(key):
    with pytest.raises(InvalidRecordError):
        parse_control_type(key)


def test_end_txn_marker_round_trip():
    marker = EndTransactionMarker(ControlRecordType.COMMIT, 5)
    assert marker.serialize_value() == b"\x00\x00\x00\x00\x00\x05"
    assert parse_end_txn_marker(marker.key(), marker.serialize_value()) == marker
    # a higher value version is parsed as v0
    assert parse_end_txn_marker(marker.key(), b"\x00\x03\x00\x00\x00\x07") == (
        EndTransactionMarker(ControlRecordType.COMMIT, 7)
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (control_key(ControlRecordType.ABORT), b"\x00\x00\x00"),  # value too short
        (control_key(ControlRecordType.ABORT), b"\xff\xff\x00\x00\x00\x01"),  # negative version
        (control_key(ControlRecordType.ABORT), None),
        (control_key(ControlRecordType.LEADER_CHANGE), b"\x00\x00\x00\x00\x00\x01"),  # not a marker
    ],
)
def test_bad_end_txn_markers(key, value):
    with pytest.raises(InvalidRecordError):
        parse_end_txn_marker(key, value)
