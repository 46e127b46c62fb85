"""Consumer throughput through the broker, and what down-conversion costs.

Data: ``BENCH_CONSUME_RECORDS`` (default 1,000,000) records with 100-byte
values, produced once with the raw protocol (Produce v9, uncompressed v2
batches of 1,000 records) into one partition of a broker started as a
subprocess on 127.0.0.1 (the harness of the integration tests).

* Floor: this process reads the partition's segment files and materialises
  every record with ``broker.records.iterate`` -- records/s and MB/s of log
  bytes -- against confluent-kafka (librdkafka) consuming all of them
  through the broker (assign, offset 0), with librdkafka's defaults and with
  ``fetch.queue.backoff.ms=10`` (see ``CONFLUENT_CONFIGS``).
* Down-conversion: kafka-python with its default (Fetch v12: the stored v2
  batches as they are) against kafka-python ``api_version=(0, 10, 0)``
  (Fetch v2: the broker rewrites them to magic 1), reading the same first
  ``BENCH_CONSUME_OLD_RECORDS`` (default 300,000) records: records/s and the
  ratio.
* Where the time goes: the broker's CPU time over each read (utime + stime
  of its process from /proc) gives its share of the wall time -- near 100%
  of one core means the broker is the bottleneck -- and its CPU cost per
  record; the client's own CPU share (this process, librdkafka's threads
  included) says whether the client is. A raw-protocol reader (one connection, responses framed but not
  parsed record by record) shows the broker's serving rate without a
  client's per-record work, with Fetch v11 and with Fetch v2.
* ``BENCH_CONSUME_PROFILE=1`` also samples the broker with py-spy during the
  raw Fetch v2 read and prints the top lines by own time.
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import Report
from broker.records.batch import read_header
from broker.records.builder import build_v2_batch
from broker.records.iterate import iter_batches
from broker.records.record import SimpleRecord
from tests.integration.harness import BrokerProcess
from tests.integration.wire import (
    RawClient,
    ensure_topic,
    fetch_request,
    only_partition,
    produce_request,
)

#: what this bench imports beyond the broker's dependencies (checked by bench/__main__.py)
REQUIRES = ("confluent_kafka", "kafka")

TOPIC = "bench-consume"
#: librdkafka's defaults stop fetching for fetch.queue.backoff.ms (1 s) whenever
#: queued.min.messages (100,000) wait in its queue: about 1 s idle per 100,000
#: records whatever the broker does; the second run fetches again after 10 ms
CONFLUENT_CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "fetch.queue.backoff.ms=10": {"fetch.queue.backoff.ms": 10},
}
VALUE_SIZE = 100
PER_BATCH = 1000
_ENTRY = struct.Struct(">qi")  # a legacy entry's offset and size


def setting(name: str, default: int) -> int:
    return int(os.environ.get(name, "") or default)


def broker_cpu(pid: int) -> float:
    """CPU seconds (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """CPU seconds this process (the client, all its threads) has used."""
    t = os.times()
    return t.user + t.system


class Measured:
    def __init__(self, records: int, seconds: float, cpu: float, client_cpu: float) -> None:
        self.records = records
        self.seconds = seconds
        self.cpu = cpu
        self.client_cpu = client_cpu

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def share(self) -> float:
        """The broker's CPU time as a share of the wall time (100% = one core)."""
        return self.cpu / self.seconds * 100

    @property
    def client_share(self) -> float:
        """The client's (this process's) CPU time as a share of the wall time."""
        return self.client_cpu / self.seconds * 100

    @property
    def ns(self) -> float:
        """Broker CPU per record (clock-tick resolution: 10 ms over the run)."""
        return self.cpu / self.records * 1e9


def measure(pid: int, read: Callable[[], int]) -> Measured:
    cpu = broker_cpu(pid)
    client = own_cpu()
    start = time.perf_counter()
    records = read()
    seconds = time.perf_counter() - start
    return Measured(records, seconds, broker_cpu(pid) - cpu, own_cpu() - client)


def produce(broker: BrokerProcess, total: int) -> None:
    ts = int(time.time() * 1000)
    filler = b"v" * (VALUE_SIZE - 10)
    with RawClient(broker.port, client_id="bench-producer") as client:
        ensure_topic(client, TOPIC)
        pending = 0
        for base in range(0, total, PER_BATCH):
            n = min(PER_BATCH, total - base)
            records = [SimpleRecord(ts, None, b"%010d" % (base + i) + filler) for i in range(n)]
            client.send(produce_request({(TOPIC, 0): build_v2_batch(records).buffer}), 9)
            pending += 1
            if pending == 16:  # a bounded window of requests in flight
                check_produced(client.recv())
                pending -= 1
        for _ in range(pending):
            check_produced(client.recv())


def check_produced(response: Any) -> None:
    (t,) = response.responses
    (p,) = t.partition_responses
    assert p.error_code == 0, p


def read_floor(data_dir: Path) -> tuple[int, int]:
    """(records, log bytes) of the partition, read with broker.records.iterate."""
    records = size = 0
    for path in sorted((data_dir / f"{TOPIC}-0").glob("*.log")):
        data = path.read_bytes()
        size += len(data)
        for batch in iter_batches(data, file=True):
            records += len(batch.records())
    return records, size


def read_confluent(bootstrap: str, total: int, config: dict[str, Any]) -> int:
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False, **config}
    )
    n = 0
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + 300
        while n < total and time.monotonic() < deadline:
            for m in consumer.consume(10_000, 1.0):
                assert m.error() is None, m.error()
                n += 1
    finally:
        consumer.close()
    assert n == total, (n, total)
    return n


def read_kafka_python(bootstrap: str, total: int, api_version: tuple[int, ...] | None) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka

    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        group_id=None,
        enable_auto_commit=False,
        max_partition_fetch_bytes=1 << 20,
    )
    n = 0
    try:
        tp = kafka.TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 300
        while n < total and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000, max_records=100_000).values():
                n += len(records)
    finally:
        consumer.close()
    assert n >= total, (n, total)
    return total


def last_offset(records: bytes, version: int) -> int:
    """The last offset in a fetched record set (v2 batches or legacy entries)."""
    pos = last = 0
    end = len(records)
    while end - pos >= 12:
        offset, size = _ENTRY.unpack_from(records, pos)
        if end - pos - 12 < size:
            break  # a partial entry at the end (v0-v2 hard limit)
        last = offset if version < 4 else pos
        pos += 12 + size
    if version >= 4:
        h = read_header(records, last)
        return h.base_offset + h.last_offset_delta
    return last


def read_raw(port: int, total: int, version: int) -> int:
    offset = 0
    with RawClient(port, client_id="bench-raw") as client:
        while offset < total:
            request = fetch_request(TOPIC, 0, offset, max_bytes=1 << 20)
            p = only_partition(client.call(request, version))
            assert p.error_code == 0, p
            offset = last_offset(bytes(p.records), version) + 1
    return total


def start_profiler(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        print("  (no profile: py-spy is not installed; pip install py-spy)", flush=True)
        return None
    profiler = subprocess.Popen(
        [spy, "record", "-p", str(pid), "-o", str(out), "-f", "raw", "-r", "250"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)  # py-spy attaches
    return profiler


def profile_top(path: Path, top: int = 12) -> list[tuple[float, str]]:
    own: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        samples += int(count)
        own[stack.split(";")[-1]] += int(count)
    return [(c / max(samples, 1) * 100, frame) for frame, c in own.most_common(top)]


def main(report: Report) -> None:
    total = setting("BENCH_CONSUME_RECORDS", 1_000_000)
    old_total = min(setting("BENCH_CONSUME_OLD_RECORDS", 300_000), total)
    root = Path(tempfile.mkdtemp(prefix="bench-consume-"))
    data = root / "data"
    data.mkdir()
    try:
        with BrokerProcess(data) as broker:
            pid = broker.proc.pid if broker.proc else 0
            produce(broker, total)

            # floor: one Python process reading the segment files with iterate
            start = time.perf_counter()
            floor_records, log_bytes = read_floor(data)
            floor_s = time.perf_counter() - start
            assert floor_records == total
            report.value("floor: iterate the segment files, records/s", total / floor_s, "rec/s")
            report.value(
                "floor: iterate the segment files, MB/s", log_bytes / floor_s / 1e6, "MB/s"
            )

            for label, config in CONFLUENT_CONFIGS.items():
                c = measure(pid, partial(read_confluent, broker.bootstrap, total, config))
                name = f"confluent-kafka ({label})"
                report.value(f"{name}: records/s", c.rate, "rec/s")
                report.value(f"{name}: MB/s", log_bytes / c.seconds / 1e6, "MB/s")
                report.value(f"{name}: broker CPU share of the wall time", c.share, "%")
                report.value(f"{name}: client CPU share of the wall time", c.client_share, "%")
                report.ratio(f"{name} vs floor (throughput)", floor_s, c.seconds)

            old_bytes = log_bytes * old_total / total
            runs = {}
            for name, version in (("default", None), ("0.10.0", (0, 10, 0))):
                m = measure(pid, partial(read_kafka_python, broker.bootstrap, old_total, version))
                runs[name] = m
                report.value(f"kafka-python {name}: records/s", m.rate, "rec/s")
                report.value(f"kafka-python {name}: MB/s", old_bytes / m.seconds / 1e6, "MB/s")
                report.value(
                    f"kafka-python {name}: broker CPU share of the wall time", m.share, "%"
                )
                report.value(
                    f"kafka-python {name}: client CPU share of the wall time", m.client_share, "%"
                )
            report.ratio(
                "kafka-python 0.10.0 (Fetch v2, magic 1) vs default (Fetch v12, v2 as is)",
                runs["default"].seconds,
                runs["0.10.0"].seconds,
            )

            raw = {}
            for version in (11, 2):
                profiler = None
                if version == 2 and os.environ.get("BENCH_CONSUME_PROFILE"):
                    profiler = start_profiler(pid, root / "profile.txt")
                m = measure(pid, partial(read_raw, broker.port, total, version))
                raw[version] = m
                report.value(f"raw reader, Fetch v{version}: records/s", m.rate, "rec/s")
                report.value(f"raw reader, Fetch v{version}: broker CPU share", m.share, "%")
                report.value(f"raw reader, Fetch v{version}: client CPU share", m.client_share, "%")
                report.value(f"raw reader, Fetch v{version}: broker CPU per record", m.ns, "ns")
                if profiler is not None:
                    profiler.send_signal(signal.SIGINT)
                    profiler.wait(60)
                    print("  broker profile during the Fetch v2 read (own time):", flush=True)
                    for share, frame in profile_top(root / "profile.txt"):
                        print(f"    {share:5.1f}%  {frame}", flush=True)
            report.ratio(
                "raw reader, Fetch v2 vs v11 (throughput)", raw[11].seconds, raw[2].seconds
            )
            report.ratio(
                "broker CPU per record, down-converted (v2) vs as is (v11)",
                raw[2].cpu,
                max(raw[11].cpu, 0.01),
            )
            assert "Traceback" not in broker.log(), broker.log()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    r = Report()
    r.section("consume")
    main(r)
    sys.exit(0)
