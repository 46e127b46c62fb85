"""The one place that chooses the implementation of the recovery scan.

``_recover_py`` is the readable reference, ``_recover_c`` its compiled twin
(same function, same results). The twin is used when it was built and
``BROKER_NO_EXTENSIONS`` is not set to a true value (same rule as
``broker.records.scan``). ``IMPLEMENTATION`` says which one runs.
"""

from __future__ import annotations

import os
from types import ModuleType

from broker.log import _recover_py


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def _choose() -> tuple[ModuleType, str, str | None]:
    if _truthy(os.environ.get("BROKER_NO_EXTENSIONS")):
        return _recover_py, "python", "BROKER_NO_EXTENSIONS is set"
    try:
        from broker.log import _recover_c  # type: ignore[attr-defined]
    except ImportError as exc:
        return _recover_py, "python", f"compiled twin not importable: {exc}"
    return _recover_c, "compiled", None


impl, IMPLEMENTATION, FALLBACK_REASON = _choose()

scan_segment = impl.scan_segment
