"""The one rule that picks a compiled twin or its pure-Python reference.

Each per-record loop has a readable reference (``_<name>_py.py``) and a
Cython twin (``_<name>_c.pyx``, built by setup.py) with the same functions
and the same results. The twin runs when it was built and
``BROKER_NO_EXTENSIONS`` is not set to a true value; otherwise the reference
runs and the reason is kept. The chooser modules (``broker.records.scan``,
``broker.log.scan``, ``broker.log.active_segment``) each call :func:`choose` once
at import; :data:`CHOICES` records every choice made, for the test suite's guard
(``BROKER_EXPECT_COMPILED``).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NamedTuple


class Choice(NamedTuple):
    module: ModuleType
    #: "compiled" or "python"
    implementation: str
    #: why the reference runs, None when the twin does
    fallback_reason: str | None


#: compiled module name -> what was chosen for it
CHOICES: dict[str, Choice] = {}


def _extensions_disabled() -> bool:
    # a literal name: tests/unit/app_env checks every switch the code reads is declared
    value = (os.environ.get("BROKER_NO_EXTENSIONS") or "").strip().lower()
    return value not in ("", "0", "false", "no")


def choose(reference: ModuleType, compiled: str) -> Choice:
    """The twin named ``compiled`` (a module path) or ``reference``."""
    if _extensions_disabled():
        choice = Choice(reference, "python", "BROKER_NO_EXTENSIONS is set")
    else:
        try:
            choice = Choice(importlib.import_module(compiled), "compiled", None)
        except ImportError as exc:  # not built: fall back, and say why
            choice = Choice(reference, "python", f"compiled twin not importable: {exc}")
    CHOICES[compiled] = choice
    return choice
