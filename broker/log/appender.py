"""The one place that chooses the implementation of the produce hot path.

``_append_py`` is the readable reference, ``_append_c`` its compiled twin
(same function, same effects), picked by ``broker.records.twins`` (the
twin when it was built and ``BROKER_NO_EXTENSIONS`` is not set).
``IMPLEMENTATION`` says which one runs.
"""

from __future__ import annotations

from broker.log import _append_py
from broker.records import twins

impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(_append_py, "broker.log._append_c")

fast_append = impl.fast_append
