"""The one place that chooses the implementation of the recovery scan.

``_recover_py`` is the readable reference, ``_recover_c`` its compiled twin
(same function, same results), picked by ``broker.records.twins`` (the
twin when it was built and ``BROKER_NO_EXTENSIONS`` is not set).
``IMPLEMENTATION`` says which one runs.
"""

from __future__ import annotations

from broker.log import _recover_py
from broker.records import twins

impl, IMPLEMENTATION, FALLBACK_REASON = twins.choose(_recover_py, "broker.log._recover_c")

scan_segment = impl.scan_segment
