"""Small value types of the log with no dependencies of their own.

``LogAppendResult`` is what an append returns (``LogAppendInfo``, the parts
the produce response needs); ``TimestampOffset`` is a time index entry
(``TimestampAndOffset`` in Kafka). Both live here so that the append owner
(``broker.log.active_segment``), which the storage classes import, can
import them without importing those classes.
"""

from __future__ import annotations

from typing import NamedTuple


class LogAppendResult(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_start_offset: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int
