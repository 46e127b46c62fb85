"""Small produce requests that ask for a lot of work, while a good client produces.

Each case sends the worst request of one kind a few times (``payloads.py``
says what each is and what it cost before the broker bounded it) while
:class:`GoodProducer` keeps producing on another connection, then checks:

* the bad request gets Kafka's error code (or succeeds, when it is valid)
  and its connection stays usable;
* the good producer was answered throughout, everything it was acknowledged
  is stored, and its latency stayed bounded (generous bounds: this is a
  test, the figures are ``bench/bench_abuse.py``'s; before the bounds, one
  such request stalled every client for 20-30 s);
* the broker's peak memory (VmHWM) stayed bounded (before: +1.3-2.2 GB).

The pure-Python twin walks records at Python speed, so those runs use
smaller payloads (the same paths, 1/10 of the records) and looser bounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.errors import ErrorCode
from broker.records import scan
from broker.records.batch import CompressionType
from tests.abuse import payloads
from tests.abuse.good_producer import GoodProducer
from tests.integration.harness import BrokerProcess
from tests.integration.wire import RawClient, create_topics_on_disk, produce_request

COMPILED = scan.IMPLEMENTATION == "compiled"
SCALE = 1.0 if COMPILED else 0.1
#: sends of each bad request
REPEAT = 3
#: the good producer's latency bounds under attack (seconds)
#: (measured on the 2-core CI machine: p99 0.15-0.7 ms and max 1-18 ms
#: compiled, p99 0.2-7 ms and max 1-30 ms pure; alone p99 0.15 ms)
P99_BOUND = 0.02 if COMPILED else 0.1
MAX_BOUND = 0.5 if COMPILED else 2.0
#: the broker's peak resident memory (bytes; measured 170-370 MB: two worker
#: threads, each holding at most a 64 MiB decompression and its v2 rewrite)
HWM_BOUND = 700 << 20


def _n(count: int) -> int:
    return max(1, int(count * SCALE))


#: name -> (build the records, produce version, topic, expected error code)
CASES: dict[str, tuple[Callable[[], bytes], int, str, int]] = {
    "legacy gzip LogAppendTime, 1.97 M inner errors": (
        lambda: payloads.legacy_gzip_lat_bomb(_n(1_970_000)), 2, "bad",
        ErrorCode.INVALID_TIMESTAMP,
    ),
    "zstd, 4 M keyless records on a compacted topic": (
        lambda: payloads.keyless_zstd_bomb(_n(4_000_000)), 9, "compact",
        ErrorCode.INVALID_RECORD,
    ),
    "zstd declaring 4 M records, one missing": (
        lambda: payloads.short_count_bomb(_n(4_000_000)), 9, "bad", ErrorCode.INVALID_RECORD,
    ),
    "gzip past the decompression bound": (
        lambda: payloads.codec_bomb(CompressionType.GZIP), 9, "bad", ErrorCode.INVALID_RECORD,
    ),
    "snappy past the decompression bound": (
        lambda: payloads.codec_bomb(CompressionType.SNAPPY), 9, "bad", ErrorCode.INVALID_RECORD,
    ),
    "lz4 past the decompression bound": (
        lambda: payloads.codec_bomb(CompressionType.LZ4), 9, "bad", ErrorCode.INVALID_RECORD,
    ),
    "zstd past the decompression bound": (
        lambda: payloads.codec_bomb(CompressionType.ZSTD), 9, "bad", ErrorCode.INVALID_RECORD,
    ),
    "valid zstd, 24 MB recompressed to gzip": (
        lambda: payloads.recompress_bomb(_n(24 << 20)), 9, "gzipped", ErrorCode.NONE,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data: Path = tmp_path_factory.mktemp("abuse") / "data"
    create_topics_on_disk(
        data,
        {
            "good": (1, {}),
            # 4 MB batches: a snappy frame of 70 MB of zeros is 3.4 MB (snappy
            # compresses 21:1 at most); the decompression bound stays 64 MiB
            "bad": (1, {"max.message.bytes": str(4 << 20)}),
            "compact": (1, {"cleanup.policy": "compact"}),
            "gzipped": (1, {"compression.type": "gzip", "max.message.bytes": str(64 << 20)}),
        },
    )
    process = BrokerProcess(data, auto_create_topics_enable="false").start()
    yield process
    assert process.stop() == 0, process.log()


def _status(process: BrokerProcess, field: str) -> int:
    """A memory figure of the broker process (VmHWM, VmRSS) in bytes."""
    assert process.proc is not None
    with open(f"/proc/{process.proc.pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field}")


def _hwm(process: BrokerProcess) -> int:
    return _status(process, "VmHWM")


def _rss(process: BrokerProcess) -> int:
    return _status(process, "VmRSS")


@pytest.mark.parametrize("name", list(CASES))
def test_costly_request_does_not_stall_other_clients(broker, name):
    build, version, topic, expected = CASES[name]
    records = build()
    request = produce_request({(topic, 0): records})
    with GoodProducer(broker.port) as good, RawClient(broker.port, timeout=120) as bad:
        time.sleep(0.2)
        for _ in range(REPEAT):
            (part,) = bad.call(request, version).responses[0].partition_responses
            assert part.error_code == expected, part.error_message
            if expected != ErrorCode.NONE and version >= 8:
                # bounded, however many records failed
                assert len(part.record_errors) <= 20
                assert len(part.error_message) < 2000
        # the bad client's connection still works
        (part,) = (
            bad.call(produce_request({("bad", 0): payloads_small()}), 9)
            .responses[0]
            .partition_responses
        )
        assert part.error_code == ErrorCode.NONE
        time.sleep(0.2)
    good.check()
    print(f"\n{name}: good p50 {good.percentile(0.5) * 1e3:.2f} ms p99 "
          f"{good.percentile(0.99) * 1e3:.2f} ms max {max(good.measured) * 1e3:.1f} ms "
          f"n {len(good.latencies)} hwm {_hwm(broker) >> 20} MB")  # fmt: skip
    assert good.percentile(0.99) < P99_BOUND, good.percentile(0.99)
    assert max(good.measured) < MAX_BOUND, max(good.measured)
    assert _hwm(broker) < HWM_BOUND, _hwm(broker)


def payloads_small() -> bytes:
    from tests.abuse.good_producer import small_batch

    return small_batch()


def test_bombs_in_a_row_do_not_pile_up_memory(broker):
    """Each bomb's 64 MiB decompression is freed when its answer is sent: an
    error crossing from the worker thread with its traceback kept those
    buffers in a reference cycle until the cyclic GC ran (60 lz4 bombs in a
    row: 1.1 GB resident)."""
    request = produce_request({("bad", 0): payloads.codec_bomb(CompressionType.LZ4)})
    with RawClient(broker.port, timeout=120) as client:
        client.call(request, 9)
        before = _rss(broker)
        for _ in range(20):
            (part,) = client.call(request, 9).responses[0].partition_responses
            assert part.error_code == ErrorCode.INVALID_RECORD
        after = _rss(broker)
    assert after - before < 64 << 20, (before >> 20, after >> 20)
