"""Kafka's ``Throttler``: hold a process to a rate by sleeping (``Throttler.java``).

Every ``maybe_throttle(observed)`` adds to the units seen in the current
period; once the period is longer than the check interval (300 ms for the
log cleaner) and something was seen, a rate above the desired one sleeps
``observed / desired - elapsed`` and a new period starts. Thread-safe: the
log cleaner's threads share one throttler (``log.cleaner.io.max.bytes.per.second``
bounds their reads and writes together).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MS_PER_SEC = 1000
NS_PER_SEC = 1_000_000_000


class Throttler:
    def __init__(
        self,
        desired_rate_per_sec: float,
        check_interval_ms: int = 300,
        *,
        nanoseconds: Callable[[], int] = time.monotonic_ns,
        sleep_ms: Callable[[float], object] = lambda ms: time.sleep(ms / 1000),
    ) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self._check_interval_ns = check_interval_ms * 1_000_000
        self._nanoseconds = nanoseconds
        self._sleep_ms = sleep_ms
        self._lock = threading.Lock()
        self._period_start_ns = nanoseconds()
        self._observed_so_far = 0.0
        #: what was observed in all, and slept in all (ms)
        self.total_observed = 0.0
        self.total_slept_ms = 0

    def maybe_throttle(self, observed: float) -> None:
        desired = self.desired_rate_per_sec
        sleep_for = 0
        with self._lock:
            self.total_observed += observed
            self._observed_so_far += observed
            now = self._nanoseconds()
            elapsed_ns = now - self._period_start_ns
            if elapsed_ns > self._check_interval_ns and self._observed_so_far > 0:
                rate = self._observed_so_far * NS_PER_SEC / elapsed_ns
                if rate > desired:
                    desired_rate_ms = desired / MS_PER_SEC
                    elapsed_ms = elapsed_ns // 1_000_000
                    sleep_for = round(self._observed_so_far / desired_rate_ms - elapsed_ms)
                    if sleep_for > 0:
                        # Kafka sleeps holding its lock: the other threads wait too
                        self.total_slept_ms += sleep_for
                        self._sleep_ms(sleep_for)
                self._period_start_ns = self._nanoseconds()
                self._observed_so_far = 0.0
