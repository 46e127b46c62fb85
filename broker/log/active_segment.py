"""The one place that chooses the implementation of the append owner.

:class:`ActiveSegment` -- the object a log holds for its active segment (its
``.log`` descriptor and size, both index cursors, the segment's append
counters, the log end offset and the roll limits) and the one implementation
of the roll check, the segment append with its index entries and the log end
offset's advance. ``_active_segment_py`` is the readable reference (its
docstring lists the fields and the bytes written), ``_active_segment_c`` its
compiled twin (a ``cdef class`` with the same fields as C fields and the same
methods), picked by ``broker.records.twins`` (the twin when it was built and
``BROKER_NO_EXTENSIONS`` is not set). ``IMPLEMENTATION`` says which one runs.

The storage classes (``FileRecords``, ``OffsetIndex``, ``TimeIndex``,
``LogSegment``, ``LocalLog``) hold one by composition: ``LocalLog`` owns its
log's; the others point to it (``_active``) while they belong to the active
segment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.log import _active_segment_py
from broker.records import twins

impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(
    _active_segment_py, "broker.log._active_segment_c"
)

if TYPE_CHECKING:  # the checker sees the reference (same fields, same methods)
    from broker.log._active_segment_py import ActiveSegment
else:
    ActiveSegment = impl.ActiveSegment

__all__ = ["FALLBACK_REASON", "IMPLEMENTATION", "ActiveSegment"]
