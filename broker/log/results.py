"""Result of an append (``LogAppendInfo``, the parts the produce response needs)."""

from __future__ import annotations

from typing import NamedTuple


class LogAppendResult(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_start_offset: int
