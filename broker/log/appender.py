"""The one place that chooses the implementation of the produce hot path.

``_append_py`` is the readable reference, ``_append_c`` its compiled twin
(same classes, same function, same effects), picked by
``broker.records.twins`` (the twin when it was built and
``BROKER_NO_EXTENSIONS`` is not set). ``IMPLEMENTATION`` says which one runs.

Besides :func:`fast_append` the twin provides the append state: the slot
base classes of the storage classes whose fields the hot path touches
(``FileRecords``, ``AbstractIndex``, ``LazyIndex``, ``LogSegment``,
``LogSegments``, ``LocalLog``, ``UnifiedLog``, ``ProducerStateManager``,
``LeaderEpochCache``; see ``_append_py``). Both come from the same module so
that the compiled function only ever sees the compiled layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.log import _append_py
from broker.records import twins

impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(_append_py, "broker.log._append_c")

fast_append = impl.fast_append

if TYPE_CHECKING:  # the checker sees the reference's declarations (same names, same fields)
    from broker.log._append_py import (
        FileRecordsSlots,
        IndexSlots,
        LazyIndexSlots,
        LeaderEpochSlots,
        LocalLogSlots,
        ProducerStateSlots,
        SegmentListSlots,
        SegmentSlots,
        UnifiedLogSlots,
    )
else:
    FileRecordsSlots = impl.FileRecordsSlots
    IndexSlots = impl.IndexSlots
    LazyIndexSlots = impl.LazyIndexSlots
    LeaderEpochSlots = impl.LeaderEpochSlots
    LocalLogSlots = impl.LocalLogSlots
    ProducerStateSlots = impl.ProducerStateSlots
    SegmentListSlots = impl.SegmentListSlots
    SegmentSlots = impl.SegmentSlots
    UnifiedLogSlots = impl.UnifiedLogSlots

__all__ = [
    "FALLBACK_REASON",
    "IMPLEMENTATION",
    "FileRecordsSlots",
    "IndexSlots",
    "LazyIndexSlots",
    "LeaderEpochSlots",
    "LocalLogSlots",
    "ProducerStateSlots",
    "SegmentListSlots",
    "SegmentSlots",
    "UnifiedLogSlots",
    "fast_append",
]
