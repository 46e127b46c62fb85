"""Run code with one twin of the hot loops bound into ``broker.records.scan``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

from broker.records import scan

NAMES = ("read_varint", "read_varlong", "crc32", "scan_entries", "walk_v2", "walk_legacy",
         "reencode_v2", "v2_to_legacy", "new_buffer")  # fmt: skip


@contextlib.contextmanager
def using(twin: ModuleType) -> Iterator[None]:
    saved = {name: getattr(scan, name) for name in NAMES}
    try:
        for name in NAMES:
            setattr(scan, name, getattr(twin, name))
        yield
    finally:
        for name, fn in saved.items():
            setattr(scan, name, fn)
