"""The compiled twin's functions take the reference's parameters: the same
names in the same order, the same ones positional and keyword-only (callers
pass most of them by keyword, so a renamed parameter would break a caller of
one twin only)."""

from __future__ import annotations

import inspect

import pytest

from broker.records import _scan_py

_scan_c = pytest.importorskip("broker.records._scan_c")

FUNCTIONS = (
    "read_varint", "read_varlong", "crc32", "new_buffer", "copy_into", "scan_entries", "walk_v2",
    "check_client_batch", "assign_in_place_v2", "walk_legacy", "reencode_v2", "v2_to_legacy",
)  # fmt: skip


def _parameters(fn) -> list[tuple[str, inspect._ParameterKind]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_twins_take_the_same_parameters(name: str) -> None:
    assert _parameters(getattr(_scan_c, name)) == _parameters(getattr(_scan_py, name))
