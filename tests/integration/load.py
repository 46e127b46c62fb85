"""Bounded producer load that remembers what the broker acknowledged.

Two producers run in threads while a test kills or stops the broker:

* :class:`ConfluentLoad` -- confluent-kafka (librdkafka), acks=all by
  default; every delivery report without an error is an acknowledged
  ``(partition, offset, value)``.
* :class:`RawLoad` -- a raw-protocol producer (``tests/integration/wire.py``)
  pipelining a few acks=all requests of idempotent v2 batches; every
  successful partition response acknowledges its batch's records from the
  returned base offset. The bytes of each acknowledged request are kept, so
  a test can replay one.

Both send at most ``rate`` records per second (so the load is still going
when a test strikes), stop at ``max_records`` or when told to, and never
run longer than ``max_seconds``. :func:`check_acknowledged` and
:func:`check_indexes` are the crash tests' judges.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.errors import ErrorCode
from broker.log.manager import LogManager
from broker.protocol.messages import InitProducerIdRequest
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.integration.wire import (
    ConnectionClosed,
    RawClient,
    check_contiguous,
    ensure_topic,
    produce_request,
    stored_batches,
)


@dataclass(frozen=True)
class Acked:
    partition: int
    offset: int
    value: bytes


def value_of(tag: str, i: int, size: int = 120) -> bytes:
    head = f"{tag}|{i}|".encode()
    return head + b"x" * max(size - len(head), 0)


class ConfluentLoad(threading.Thread):
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        tag: str,
        *,
        acks: int = -1,
        rate: float = 2000.0,
        max_records: int = 6000,
        max_seconds: float = 20.0,
    ) -> None:
        super().__init__(daemon=True, name=f"confluent-load-{tag}")
        self.rate = rate
        import confluent_kafka

        self.producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": str(acks),
                "linger.ms": 5,
                "message.timeout.ms": 6000,
                "socket.timeout.ms": 3000,
                "reconnect.backoff.max.ms": 200,
                "queue.buffering.max.messages": 20000,
            }
        )
        self.topic = topic
        self.partitions = partitions
        self.tag = tag
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.stop_event = threading.Event()
        self.acked: list[Acked] = []
        self.failed = 0
        self.sent = 0

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append(Acked(msg.partition(), msg.offset(), msg.value()))
        else:
            self.failed += 1

    def run(self) -> None:
        start = time.monotonic()
        deadline = start + self.max_seconds
        while True:
            now = time.monotonic()  # one clock read for every decision of this step
            if self.stop_event.is_set() or self.sent >= self.max_records or now >= deadline:
                break
            ahead = self.sent / self.rate - (now - start)
            if ahead > 0:  # paced, so the load is still running when a test strikes
                self.producer.poll(min(ahead, 0.05))
                continue
            try:
                self.producer.produce(
                    self.topic,
                    value=value_of(self.tag, self.sent),
                    partition=self.sent % self.partitions,
                    on_delivery=self._delivered,
                )
                self.sent += 1
            except BufferError:
                self.producer.poll(0.05)
                continue
            if self.sent % 50 == 0:
                self.producer.poll(0.002)
        self.producer.poll(0)

    def finish(self, flush_s: float = 0.5) -> None:
        """Stop producing, take the reports of what the broker still answers
        within ``flush_s``, drop the rest (after a kill nothing else will come)."""
        self.stop_event.set()
        self.join(10)
        assert not self.is_alive(), "confluent producer did not stop"
        self.producer.flush(flush_s)
        self.producer.purge()
        self.producer.flush(5)


@dataclass
class RawAcked:
    partition: int
    base_offset: int
    values: list[bytes]
    request: bytes = field(repr=False)  # the frame's records, replayable
    producer_id: int = -1


class RawLoad(threading.Thread):
    """Idempotent acks=all batches of ``batch_records`` records, ``window`` requests in flight."""

    def __init__(
        self,
        port: int,
        topic: str,
        partitions: int,
        tag: str,
        *,
        batch_records: int = 20,
        window: int = 4,
        rate: float = 2000.0,
        max_records: int = 6000,
        max_seconds: float = 20.0,
    ) -> None:
        super().__init__(daemon=True, name=f"raw-load-{tag}")
        self.rate = rate
        self.port = port
        self.topic = topic
        self.partitions = partitions
        self.tag = tag
        self.batch_records = batch_records
        self.window = window
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.stop_event = threading.Event()
        self.acked: list[RawAcked] = []
        self.errors: list[str] = []
        self.producer_id = -1

    def run(self) -> None:
        try:
            with RawClient(self.port, client_id=f"raw-load-{self.tag}", timeout=10) as client:
                ensure_topic(client, self.topic)
                resp = client.call(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4
                )
                assert resp.error_code == ErrorCode.NONE
                self.producer_id = pid = resp.producer_id
                self._produce(client, pid)
        except (ConnectionClosed, OSError) as exc:
            self.errors.append(repr(exc))

    def _produce(self, client: RawClient, pid: int) -> None:
        start = time.monotonic()
        deadline = start + self.max_seconds
        in_flight: collections.deque[tuple[int, list[bytes], bytes]] = collections.deque()
        sequences = [0] * self.partitions
        produced = 0
        n = 0
        while True:
            # one clock read for every decision of this step: with two, the pacing check
            # and the sleep length could disagree and the sleep be negative
            now = time.monotonic()
            can_send = (
                not self.stop_event.is_set() and produced < self.max_records and now < deadline
            )
            ahead = produced / self.rate - (now - start)
            paced = ahead <= 0
            if can_send and len(in_flight) < self.window and (paced or not in_flight):
                if not paced:
                    time.sleep(min(ahead, 0.05))
                    continue
                partition = n % self.partitions
                n += 1
                values = [value_of(self.tag, produced + i) for i in range(self.batch_records)]
                ts = int(time.time() * 1000)
                records = bytes(
                    build_v2_batch(
                        [SimpleRecord(ts, None, v) for v in values],
                        producer_id=pid,
                        producer_epoch=0,
                        base_sequence=sequences[partition],
                    ).buffer
                )
                sequences[partition] += self.batch_records
                produced += self.batch_records
                client.send(produce_request({(self.topic, partition): records}, acks=-1), 9)
                in_flight.append((partition, values, records))
                continue
            if not in_flight:
                return
            partition, values, records = in_flight.popleft()
            resp = client.recv()
            (p,) = resp.responses[0].partition_responses
            if p.error_code == ErrorCode.NONE:
                self.acked.append(RawAcked(partition, p.base_offset, values, records, pid))
            else:
                self.errors.append(f"partition {partition}: error {p.error_code}")

    def finish(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        self.join(timeout)
        assert not self.is_alive(), "raw producer did not stop"


def acknowledged(confluent: list[ConfluentLoad], raw: list[RawLoad]) -> list[Acked]:
    out = [a for load in confluent for a in load.acked]
    for load in raw:
        for a in load.acked:
            out += [Acked(a.partition, a.base_offset + i, v) for i, v in enumerate(a.values)]
    return out


def check_acknowledged(data_dir: Path, topic: str, partitions: int, acked: list[Acked]) -> int:
    """Every acknowledged record is stored at its offset and offsets run without
    gaps from 0 in every partition; returns the number of stored records."""
    total = 0
    stored: dict[tuple[int, int], bytes | None] = {}
    for p in range(partitions):
        batches = stored_batches(data_dir, topic, p)
        total += check_contiguous(batches)
        for b in batches:
            for r in b.records:
                stored[(p, r.offset)] = r.value
    missing = [a for a in acked if stored.get((a.partition, a.offset)) != a.value]
    assert not missing, f"{len(missing)} acknowledged records lost or changed, e.g. {missing[:3]}"
    assert len({(a.partition, a.offset) for a in acked}) == len(acked), "an offset acked twice"
    return total


def check_indexes(data_dir: Path) -> int:
    """Open the stopped broker's log dir in process and check every index; returns
    the number of segments checked."""
    manager = LogManager([data_dir])
    manager.startup()
    segments = 0
    try:
        for log in manager.all_logs():
            expected = log.segments[0].base_offset
            for segment in log.segments:
                segments += 1
                segment.offset_index.sanity_check()
                segment.time_index.sanity_check()
                segment.offset_index.check_entries_increasing()
                segment.time_index.check_entries_increasing()
                for i in range(segment.offset_index.entries):
                    entry = segment.offset_index.entry(i)
                    found = segment.log.search_for_offset_with_size(entry.offset, entry.position)
                    assert found is not None and found.position == entry.position, (log, entry)
                assert segment.base_offset == expected
                expected = segment.read_next_offset()
            assert expected == log.log_end_offset
    finally:
        manager.shutdown()
    return segments
