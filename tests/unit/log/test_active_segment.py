"""The append owner (``broker.log.active_segment``): both twins declare the
same fields, the storage classes see its state through their own API, and
the pure and compiled twins leave the same state and the same bytes for the
same appends."""

from __future__ import annotations

import importlib
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.log import _active_segment_py, local_log, segment
from broker.log.unified_log import UnifiedLog
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime

# imported directly (as the other twin tests do): the suite always builds the
# extension, and BROKER_NO_EXTENSIONS only stops the log using it
_active_segment_c = importlib.import_module("broker.log._active_segment_c")

TWINS = {"python": _active_segment_py, "compiled": _active_segment_c}
FIELDS = sorted(_active_segment_py.ActiveSegment.__slots__)


def _fields(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if isinstance(value, types.GetSetDescriptorType | types.MemberDescriptorType)
    }


def test_twins_declare_the_same_fields() -> None:
    assert _fields(_active_segment_py.ActiveSegment) == set(FIELDS)
    assert _fields(_active_segment_c.ActiveSegment) == set(FIELDS)
    public = {n for n in dir(_active_segment_py.ActiveSegment) if not n.startswith("_")}
    assert public <= set(dir(_active_segment_c.ActiveSegment))


def test_compiled_int_fields_reject_what_is_not_an_int() -> None:
    state = _active_segment_c.ActiveSegment()
    state.size = 2**63 - 1
    assert state.size == 2**63 - 1
    with pytest.raises(TypeError):
        state.size = None
    with pytest.raises(OverflowError):
        state.size = 2**63
    assert state.rolling_based_timestamp is None  # an object field: may be None


@pytest.mark.parametrize("twin", TWINS)
def test_append_batch_declines_an_owner_that_is_not_wired_up(twin: str) -> None:
    owner = TWINS[twin].ActiveSegment()
    data = v2_batch(0, [b"x"])
    assert owner.append_batch(None, data) is None  # no segment


@contextmanager
def _using(twin: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local_log, "ActiveSegment", TWINS[twin].ActiveSegment)
        mp.setattr(segment, "ActiveSegment", TWINS[twin].ActiveSegment)
        yield


@pytest.mark.parametrize("twin", TWINS)
def test_state_reads_back_through_the_storage_classes(tmp_path: Path, twin: str) -> None:
    """After appends, the owning classes' own API sees the new state, and a roll
    hands it back to the sealed segment."""
    with _using(twin):
        log = UnifiedLog.open(
            tmp_path / "t-0", TopicConfig(index_interval_bytes=1), had_clean_shutdown=True
        )
        results = [log.append(v2_batch(i, [b"b"], base_timestamp=20 + i)) for i in range(6)]
        assert [r.first_offset for r in results] == [0, 1, 2, 3, 4, 5]
        active = log.active_segment
        assert active._active is log.local_log.appender
        assert log.log_end_offset == 6
        assert active.size == (tmp_path / "t-0" / "00000000000000000000.log").stat().st_size > 0
        assert active.offset_index.entries == 5
        assert active.time_index.last_entry().timestamp == 25
        fetched = log.read(3, 1 << 20)
        assert fetched.records is not None
        assert fetched.records.size == active.size - active.offset_index.lookup(3).position
        assert log.producer_state.map_end_offset == 6
        size = active.size
        log.roll()
        assert active._active is None and active.log._active is None
        assert active.size == size  # the sealed segment owns its fields again
        assert active.offset_index.entries == 5
        assert active.max_timestamp_so_far == 25
        assert log.active_segment._active is log.local_log.appender
        log.close()


# ---- the twins against each other ------------------------------------------------------------

_step = st.tuples(
    st.sampled_from(["append", "append", "append", "producer", "two", "roll", "truncate"]),
    st.integers(0, 200),  # value size
    st.integers(1, 4),  # records
    st.integers(-5, 40),  # timestamp step (back in time too)
    st.integers(0, 2),  # epoch step
)


def _run(directory: Path, twin: str, steps: list[tuple[str, int, int, int, int]]) -> list[object]:
    """Apply ``steps`` to a fresh log; the append owner's fields after each step."""
    config = TopicConfig(
        segment_bytes=6000, index_interval_bytes=60, segment_ms=400, segment_index_bytes=96
    )
    seen: list[object] = []
    with _using(twin):
        log = UnifiedLog.open(directory, config, time_ms=MockTime())
        ts, epoch, seq = 1000, 0, 0
        for kind, size, count, ts_step, epoch_step in steps:
            ts += ts_step
            epoch += epoch_step
            leo = log.log_end_offset
            if kind == "roll":
                log.roll()
            elif kind == "truncate":
                log.truncate_to(max(0, leo - count))
            elif kind == "two":
                log.append(v2_batch(leo, [b"l" * size] * count, base_timestamp=ts))
                log.append(v2_batch(leo + count, [b"m"], base_timestamp=ts))  # two appends
            else:
                pid = 7 if kind == "producer" else -1
                result = log.append(
                    v2_batch(
                        leo,
                        [b"v" * size] * count,
                        base_timestamp=ts,
                        partition_leader_epoch=epoch,
                        producer_id=pid,
                        producer_epoch=0 if pid >= 0 else -1,
                        base_sequence=seq if pid >= 0 else -1,
                    )
                )
                seq += count
                seen.append(tuple(result))
            owner = log.local_log.appender
            seen.append(
                {
                    name: getattr(owner, name)
                    for name in FIELDS
                    if name.endswith(("entries", "offset", "size", "timestamp", "created"))
                    or name in ("bytes_since_last_index_entry", "ti_last", "recovery_point")
                }
            )
            seen.append([(s.base_offset, s.size) for s in log.segments])
        log.close()
    return seen


@settings(max_examples=40, deadline=None)
@given(st.lists(_step, min_size=1, max_size=40))
def test_pure_and_compiled_twins_leave_the_same_state_and_bytes(
    steps: list[tuple[str, int, int, int, int]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a-0", Path(tmp) / "b-0"
        assert _run(a, "python", steps) == _run(b, "compiled", steps)
        names = sorted(p.name for p in a.iterdir())
        assert names == sorted(p.name for p in b.iterdir())
        for name in names:
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
