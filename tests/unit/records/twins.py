"""Both implementations of the hot loops, for parametrised tests."""

from __future__ import annotations

import pytest

from broker.records import _scan_py, scan

TWINS = [pytest.param(_scan_py, id="python"), pytest.param(scan.impl, id=scan.IMPLEMENTATION)]
LONG_MAX = 2**63 - 1


def walk_all(twin, buf, pos, end, count, *, base_offset=0, base_timestamp=0):
    """A structure-only walk (no timestamp limits, not compacted), canonical form tracked."""
    return twin.walk_v2(
        buf, pos, end, count=count, base_offset=base_offset, base_timestamp=base_timestamp,
        lat_batch=False, batch_max_timestamp=-1, now=0, before_max=LONG_MAX,
        after_max=LONG_MAX, create_time=False, compacted=False, want_canonical=True,
        error_limit=0,
    )  # fmt: skip
