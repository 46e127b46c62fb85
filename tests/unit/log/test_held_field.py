"""``HeldField`` (``broker.log.held_field``): a field read and written in its
object's own slot while sealed and in the append owner's field while
attached, and a hand-over between the two keeps every value."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from broker.log import _active_segment_py
from broker.log.file_records import FileRecords
from broker.log.held_field import HeldField
from broker.log.offset_index import OffsetIndex
from broker.log.producer_state import ProducerStateManager
from broker.log.segment import LogSegment
from broker.log.time_index import TimeIndex
from tests.unit.log.helpers import MockTime, create_segment, v1_records

_active_segment_c = importlib.import_module("broker.log._active_segment_c")
TWINS = {"python": _active_segment_py, "compiled": _active_segment_c}
HOLDERS = (FileRecords, OffsetIndex, TimeIndex, LogSegment, ProducerStateManager)


class Owner:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = -1


class Holder:
    __slots__ = ("_active", "_own_count")
    count = HeldField[int]("_own_count", "count")

    def __init__(self) -> None:
        self._active: Owner | None = None
        self._own_count = 0


def test_sealed_reads_and_writes_the_own_slot() -> None:
    holder = Holder()
    holder.count = 5
    holder.count += 1
    assert holder.count == 6
    assert holder._own_count == 6


def test_attached_reads_and_writes_the_owners_field() -> None:
    holder, owner = Holder(), Owner()
    holder._own_count = 3
    holder._active = owner
    assert holder.count == -1
    holder.count = 7
    assert owner.count == 7
    assert holder._own_count == 3  # the own slot is left alone meanwhile


def test_a_hand_over_keeps_the_value() -> None:
    """What ``ActiveSegment.attach`` / ``detach`` do: copy, then switch."""
    holder, owner = Holder(), Owner()
    holder.count = 4
    owner.count = holder.count
    holder._active = owner
    holder.count += 1
    assert holder.count == 5
    holder._active = None
    holder.count = owner.count
    assert holder.count == 5
    assert holder._own_count == 5


def test_the_class_sees_a_property_named_after_both_fields() -> None:
    field = Holder.__dict__["count"]
    assert Holder.count is field
    assert isinstance(field, property)
    assert repr(field) == "HeldField('_own_count', 'count')"
    assert field.fget is not None
    assert field.fget.__qualname__ == "Holder.count.get"
    with pytest.raises(AttributeError):
        del Holder().count


@pytest.mark.parametrize("name", ["not a name", "class", "__mangled", "a.b", ""])
def test_names_must_be_plain_attributes(name: str) -> None:
    with pytest.raises(ValueError, match="not a plain attribute name"):
        HeldField[int](name, "count")
    with pytest.raises(ValueError, match="not a plain attribute name"):
        HeldField[int]("_own_count", name)


def _held_fields(cls: type) -> dict[str, HeldField[object]]:
    return {
        name: value
        for klass in cls.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, HeldField)
    }


@pytest.mark.parametrize("cls", HOLDERS, ids=lambda c: c.__name__)
def test_every_held_field_names_an_own_slot_and_an_owner_field(cls: type) -> None:
    fields = _held_fields(cls)
    assert fields
    slots = {s for klass in cls.__mro__ for s in vars(klass).get("__slots__", ())}
    assert "_active" in slots
    for name, field in fields.items():
        assert field.own_name in slots, name
        assert field.held_name in _active_segment_py.ActiveSegment.__slots__, name
    owner = _active_segment_c.ActiveSegment()
    for field in fields.values():
        assert hasattr(owner, field.held_name)


def _state(segment: LogSegment) -> dict[str, object]:
    offset_index, time_index = segment.offset_index, segment.time_index
    return {
        "size": segment.log.size,
        "created": segment.created,
        "since": segment._bytes_since_last_index_entry,
        "rolling": segment._rolling_based_timestamp,
        "max": segment._max_timestamp_and_offset,
        "oi": (offset_index._mm, offset_index._entries, offset_index._max_entries),
        "oi_last": offset_index._last_offset,
        "ti": (time_index._mm, time_index._entries, time_index._max_entries),
        "ti_last": time_index._last,
    }


@pytest.mark.parametrize("twin", TWINS)
def test_the_owner_takes_over_and_hands_back_a_segments_fields(tmp_path: Path, twin: str) -> None:
    segment = create_segment(tmp_path, 40, index_interval_bytes=1, time_ms=MockTime(1234))
    for i in range(3):
        segment.append(41 + i, 400 + i, 41 + i, v1_records(41 + i, f"v{i}"))
    before = _state(segment)
    owner = TWINS[twin].ActiveSegment()
    owner.attach(segment)
    assert segment._active is owner
    assert segment.log._active is owner
    assert segment.offset_index._active is owner
    assert _state(segment) == before  # the owner's fields, the same values
    assert owner.size == before["size"]
    assert owner.oi_entries == segment.offset_index.entries

    segment.append(44, 500, 44, v1_records(44, "v3"))
    segment.log.size = segment.log.size  # a write goes to the owner too
    attached = _state(segment)
    assert owner.size == attached["size"]
    assert owner.max_timestamp_and_offset == attached["max"]
    assert attached != before

    owner.detach()
    assert segment._active is None
    assert segment.log._active is None
    assert segment.offset_index._active is None
    assert segment.time_index._active is None
    assert _state(segment) == attached
    assert segment.log._own_size == attached["size"]
    segment.close()
