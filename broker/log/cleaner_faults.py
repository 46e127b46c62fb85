"""Crash points of a cleaning, for the crash tests (a test-only switch).

``BROKER_CLEANER_FAULT=<point>`` makes the process kill itself with SIGKILL
when a cleaning reaches that point, so a test can restart the broker on the
files exactly as that step left them:

==========  ===========================================================
``cleaned``  the ``.cleaned`` segment (and placeholder) written and fsynced,
             nothing renamed yet
``swap``     every new segment renamed ``.cleaned`` -> ``.swap``
``delete``   mid-rename: the first old segment renamed ``.deleted``, the
             others not yet
``rename``   mid-rename: the cleaned segment renamed ``.swap`` -> final,
             the placeholder (if any) not yet
==========  ===========================================================

Unset (always, outside tests) it costs one dictionary lookup per step of a
swap.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

POINTS = ("cleaned", "swap", "delete", "rename")

logger = logging.getLogger("broker.log.cleaner")


def maybe_crash(point: str) -> None:
    """SIGKILL this process if ``BROKER_CLEANER_FAULT`` names ``point``."""
    if os.environ.get("BROKER_CLEANER_FAULT") != point:
        return
    logger.critical("BROKER_CLEANER_FAULT=%s: killing the process", point)
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
