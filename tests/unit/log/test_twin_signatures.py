"""The log's compiled twins take their references' parameters: the same names
in the same order, the same ones positional and keyword-only, the same ones
with a default (callers pass most of them by keyword, so a renamed parameter
would break a caller of one twin only). The pattern of
``tests/unit/records/test_twin_signatures.py`` for the cleaner's loops, the
recovery scan and the active segment's append owner."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest

from broker.log import _active_segment_py, _clean_py, _recover_py

_clean_c = pytest.importorskip("broker.log._clean_c")
_recover_c = pytest.importorskip("broker.log._recover_c")
_active_segment_c = pytest.importorskip("broker.log._active_segment_c")

CLEAN_FUNCTIONS = (
    "md5", "error", "map_chunk", "map_records", "filter_chunk", "filter_records", "keep_record",
    "write_v2_header", "write_empty_batch", "rebuilt_attributes",
)  # fmt: skip
CLEAN_METHODS = (
    ("OffsetMap", "put"), ("OffsetMap", "put_hash"), ("OffsetMap", "get"),
    ("OffsetMap", "get_hash"), ("OffsetMap", "clear"), ("OffsetMap", "update_latest_offset"),
    ("OffsetMap", "track_superseded"), ("OffsetMap", "superseded"),
    ("ActiveProducers", "is_last_batch"),
)  # fmt: skip
ACTIVE_SEGMENT_METHODS = (
    "configure", "bind", "attach", "detach", "should_roll", "append_to_segment", "append",
    "flush_due", "append_batch",
)  # fmt: skip


def _parameters(fn: Any) -> list[tuple[str, inspect._ParameterKind, bool]]:
    return [
        (p.name, p.kind, p.default is inspect.Parameter.empty)
        for p in inspect.signature(fn).parameters.values()
    ]


def _same(reference: ModuleType | type, twin: ModuleType | type, name: str) -> None:
    assert _parameters(getattr(twin, name)) == _parameters(getattr(reference, name))


@pytest.mark.parametrize("name", CLEAN_FUNCTIONS)
def test_the_cleaner_loops_take_the_same_parameters(name: str) -> None:
    _same(_clean_py, _clean_c, name)


@pytest.mark.parametrize(("cls", "name"), CLEAN_METHODS)
def test_the_cleaner_classes_take_the_same_parameters(cls: str, name: str) -> None:
    _same(getattr(_clean_py, cls), getattr(_clean_c, cls), name)


def test_the_recovery_scan_takes_the_same_parameters() -> None:
    _same(_recover_py, _recover_c, "scan_segment")


@pytest.mark.parametrize("name", ACTIVE_SEGMENT_METHODS)
def test_the_active_segment_takes_the_same_parameters(name: str) -> None:
    _same(_active_segment_py.ActiveSegment, _active_segment_c.ActiveSegment, name)


def test_every_public_active_segment_method_is_listed() -> None:
    public = {
        name
        for name, value in vars(_active_segment_py.ActiveSegment).items()
        if not name.startswith("_") and callable(value)
    }
    assert public == set(ACTIVE_SEGMENT_METHODS)
