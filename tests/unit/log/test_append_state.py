"""The append state classes (``broker.log.appender``): both twins declare the
same fields, the storage classes build on the chosen ones, and the compiled
layout keeps the reference's behaviour as seen from Python."""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import pytest

from broker.config import TopicConfig
from broker.log import _append_py, appender
from broker.log.file_records import FileRecords
from broker.log.index import AbstractIndex, LazyIndex
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.local_log import LocalLog
from broker.log.log_segments import LogSegments
from broker.log.producer_state import ProducerStateManager
from broker.log.segment import LogSegment
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch

# imported directly (as the other twin tests do): the suite always builds the
# extension, and BROKER_NO_EXTENSIONS only stops the storage classes using it
_append_c = importlib.import_module("broker.log._append_c")

SLOT_CLASSES = [
    "FileRecordsSlots",
    "IndexSlots",
    "LazyIndexSlots",
    "SegmentSlots",
    "SegmentListSlots",
    "LocalLogSlots",
    "UnifiedLogSlots",
    "ProducerStateSlots",
    "LeaderEpochSlots",
]

OWNERS = {
    "FileRecordsSlots": FileRecords,
    "IndexSlots": AbstractIndex,
    "LazyIndexSlots": LazyIndex,
    "SegmentSlots": LogSegment,
    "SegmentListSlots": LogSegments,
    "LocalLogSlots": LocalLog,
    "UnifiedLogSlots": UnifiedLog,
    "ProducerStateSlots": ProducerStateManager,
    "LeaderEpochSlots": LeaderEpochCache,
}


def _fields(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if isinstance(value, types.GetSetDescriptorType | types.MemberDescriptorType)
    }


@pytest.mark.parametrize("name", SLOT_CLASSES)
def test_twins_declare_the_same_fields(name: str) -> None:
    compiled = _append_c
    reference = getattr(_append_py, name)
    assert set(reference.__slots__) == _fields(reference)
    assert _fields(getattr(compiled, name)) == set(reference.__slots__)


@pytest.mark.parametrize("name", SLOT_CLASSES)
def test_storage_classes_build_on_the_chosen_state(name: str) -> None:
    chosen = getattr(appender.impl, name)
    assert getattr(appender, name) is chosen
    assert issubclass(OWNERS[name], chosen)
    # no owner re-declares a state field: a second slot would hide the one the hot path reads
    for cls in OWNERS[name].__mro__:
        if cls is not chosen and "__slots__" in vars(cls):
            assert not set(cls.__slots__) & set(_append_py.__dict__[name].__slots__), cls


def test_compiled_int_fields_reject_what_is_not_an_int() -> None:
    compiled = _append_c
    state = compiled.FileRecordsSlots()
    state._size = 2**63 - 1
    assert state._size == 2**63 - 1
    with pytest.raises(TypeError):
        state._size = None
    with pytest.raises(OverflowError):
        state._size = 2**63
    segment = compiled.SegmentSlots()
    assert segment._rolling_based_timestamp is None  # an object field: may be None
    with pytest.raises(TypeError):
        segment.log = object()  # typed: only the file-records state (or None)


def test_compiled_fast_append_declines_a_half_built_log() -> None:
    """Extension-type fields start as None/0: the compiled function checks each
    reference it follows instead of crashing on a log that is not wired up."""
    compiled = _append_c
    log = compiled.UnifiedLogSlots()
    data = v2_batch(0, [b"x"])
    assert compiled.fast_append(log, data) is None
    log._local = compiled.LocalLogSlots()
    assert compiled.fast_append(log, data) is None
    log._local.segments = compiled.SegmentListSlots()
    log._local.segments._segments = [compiled.SegmentSlots()]
    assert compiled.fast_append(log, data) is None
    with pytest.raises(TypeError):
        compiled.fast_append(object(), data)


def test_fast_path_state_reads_back_through_the_storage_classes(tmp_path: Path) -> None:
    """After fast appends, the owning classes' own API sees the new state."""
    log = UnifiedLog.open(
        tmp_path / "t-0", TopicConfig(index_interval_bytes=1), had_clean_shutdown=True
    )
    first = log.append(v2_batch(0, [b"a"], base_timestamp=10))  # general path: loads the indexes
    results = [
        log.append(v2_batch(first.last_offset + 1 + i, [b"b"], base_timestamp=20 + i))
        for i in range(5)
    ]
    assert [r.first_offset for r in results] == [1, 2, 3, 4, 5]
    segment = log.active_segment
    assert log.log_end_offset == 6
    assert segment.size == (tmp_path / "t-0" / "00000000000000000000.log").stat().st_size > 0
    assert segment.offset_index.entries == 5
    assert segment.time_index.last_entry().timestamp == 24
    fetched = log.read(3, 1 << 20)
    assert fetched.records.size == segment.size - segment.offset_index.lookup(3).position
    assert log.producer_state.map_end_offset == 6
    log.close()
