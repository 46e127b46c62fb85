"""A well-behaved producer that keeps producing while a test abuses the broker.

One connection, one small acks=1 produce request at a time (8 records of
100 B, about 1 KB, like a client with a short linger), each timed from send
to response. Its latencies are what another client's abuse costs everyone
else; :meth:`GoodProducer.check` also proves nothing it was acknowledged got
lost (offsets contiguous from 0, every answer NONE).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.integration.wire import RawClient, produce_request

RECORDS = 8
#: answers the producer gets before a test starts abusing the broker
WARM_UP = 5


def small_batch() -> bytes:
    now = int(time.time() * 1000)
    return bytes(
        build_v2_batch(
            [SimpleRecord(now, b"key-%d" % i, b"x" * 100) for i in range(RECORDS)]
        ).buffer
    )


@dataclass
class GoodProducer:
    port: int
    topic: str = "good"
    #: never more requests than this, whatever happens (a bounded load loop)
    max_requests: int = 200_000
    latencies: list[float] = field(default_factory=list)
    base_offsets: list[int] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    #: answers received before the abuse may start (see __enter__)
    _warm: int = 0

    def __enter__(self) -> GoodProducer:
        self._thread = threading.Thread(target=self._run, name="good-producer", daemon=True)
        self._thread.start()
        # the first answers pay for a cold start (the partition's first append in
        # this broker, the client's first round trip): wait for them and leave
        # them out, so the latencies measure what the abuse costs, not the warm-up
        deadline = time.monotonic() + 30
        while len(self.latencies) < WARM_UP and time.monotonic() < deadline:
            if not self._thread.is_alive():
                break
            time.sleep(0.001)
        self._warm = len(self.latencies)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            assert not self._thread.is_alive(), "the good producer is stuck"

    def _run(self) -> None:
        payload = small_batch()
        request = produce_request({(self.topic, 0): payload})
        with RawClient(self.port, timeout=60) as client:
            while not self._stop.is_set() and len(self.latencies) < self.max_requests:
                start = time.perf_counter()
                response = client.call(request, 9)
                self.latencies.append(time.perf_counter() - start)
                (part,) = response.responses[0].partition_responses
                self.errors.append(part.error_code)
                self.base_offsets.append(part.base_offset)

    def run_for(self, seconds: float) -> None:
        """Produce alone for ``seconds`` (the baseline)."""
        with self:
            time.sleep(seconds)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.measured)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]

    @property
    def measured(self) -> list[float]:
        """The latencies after the warm-up (all of them if it never ended)."""
        return self.latencies[self._warm :] or self.latencies

    def check(self) -> None:
        assert self.latencies, "the good producer sent nothing"
        assert set(self.errors) == {0}, f"good requests failed: {set(self.errors)}"
        first = self.base_offsets[0]
        expected = list(range(first, first + RECORDS * len(self.base_offsets), RECORDS))
        assert self.base_offsets == expected, "acknowledged offsets are not contiguous"
