"""Suite-wide guards and helpers.

* Compiled-twin guard: with ``BROKER_EXPECT_COMPILED=1`` (``make test`` sets it
  for the first run) the session fails at once if ``broker.records.scan``
  fell back to pure Python, so a broken build can never pass as green.
* Event loop: ``BROKER_EVENT_LOOP`` = ``uvloop`` (default) or ``asyncio``
  chooses the loop of in-process async tests (:func:`tests.aio.run`) and is
  passed on to broker subprocesses; ``make test`` runs the suite once each way.
"""

from __future__ import annotations

import os

import pytest

from broker.records import scan


def pytest_configure(config: pytest.Config) -> None:
    expect = os.environ.get("BROKER_EXPECT_COMPILED", "").strip().lower()
    if expect in ("1", "true", "yes") and scan.IMPLEMENTATION != "compiled":
        raise pytest.UsageError(
            "BROKER_EXPECT_COMPILED is set but the compiled twin did not load: "
            f"{scan.FALLBACK_REASON}"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"records implementation: {scan.IMPLEMENTATION}"
        + (f" ({scan.FALLBACK_REASON})" if scan.FALLBACK_REASON else ""),
        f"event loop: {os.environ.get('BROKER_EVENT_LOOP', 'uvloop')}",
    ]
