"""Suite-wide guards and helpers.

* Compiled-twin guard: with ``BROKER_EXPECT_COMPILED=1`` (``make test`` sets it
  for the first run) the session fails at once if any twin (records scan,
  recovery scan, append path, cleaner loops: ``broker.records.twins.CHOICES``) fell back to
  pure Python, so a broken build can never pass as green.
* Event loop: ``BROKER_EVENT_LOOP`` = ``uvloop`` (default) or ``asyncio``
  chooses the loop of in-process async tests (:func:`tests.aio.run`) and is
  passed on to broker subprocesses; ``make test`` runs the suite once each way.
"""

from __future__ import annotations

import os

import pytest

from broker.log import active_segment, clean_loops
from broker.log import scan as recover_scan
from broker.records import scan, twins

#: every chooser module, imported so that each has made its choice
CHOOSERS = (scan, recover_scan, active_segment, clean_loops)


def pytest_configure(config: pytest.Config) -> None:
    expect = os.environ.get("BROKER_EXPECT_COMPILED", "").strip().lower()
    fallen = {
        name: choice.fallback_reason
        for name, choice in twins.CHOICES.items()
        if choice.implementation != "compiled"
    }
    if expect in ("1", "true", "yes") and fallen:
        raise pytest.UsageError(f"BROKER_EXPECT_COMPILED is set but twins did not load: {fallen}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"records implementation: {scan.IMPLEMENTATION}"
        + (f" ({scan.FALLBACK_REASON})" if scan.FALLBACK_REASON else ""),
        f"event loop: {os.environ.get('BROKER_EVENT_LOOP', 'uvloop')}",
    ]
