"""The one place that chooses the implementation of the produce hot path.

``_append_py`` is the readable reference, ``_append_c`` its compiled twin
(same function, same effects). Same rule as ``broker.log.scan``: the twin
runs when it was built and ``BROKER_NO_EXTENSIONS`` is not set.
``IMPLEMENTATION`` says which one runs.
"""

from __future__ import annotations

import os
from types import ModuleType

from broker.log import _append_py


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def _choose() -> tuple[ModuleType, str, str | None]:
    if _truthy(os.environ.get("BROKER_NO_EXTENSIONS")):
        return _append_py, "python", "BROKER_NO_EXTENSIONS is set"
    try:
        from broker.log import _append_c  # type: ignore[attr-defined]
    except ImportError as exc:
        return _append_py, "python", f"compiled twin not importable: {exc}"
    return _append_c, "compiled", None


impl, IMPLEMENTATION, FALLBACK_REASON = _choose()

fast_append = impl.fast_append
