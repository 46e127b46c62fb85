"""The validator against same-run baselines (``python -m bench validator``).

Two record sizes (10,000 x 100 B values and 10,000 x 1 KB values), five cases:

(a) v2 uncompressed, in place       vs crc32c + one compiled record walk (<= 1.5x)
                                    and aiokafka's C reader (>= 6x faster)
(b) v2 lz4 / zstd / gzip, in place  vs decompress alone (<= 1.25x)
(c) v1 gzip -> v2 (topic gzip)      vs decompress + compress alone (<= 1.15x)
(d) v0 snappy -> v2 (topic snappy)  vs the same (<= 1.15x)
(e) v2 none -> topic zstd           vs compress alone (<= 1.15x)
(c)-(e) also vs converting with aiokafka at its defaults (>= 2x faster)

Also printed: records/s and MB/s of every validator case, kafka-python's
reader. Values are the codecs benchmark's JSON-ish payload; v2 inputs are
built with aiokafka's builder at its defaults (as a producer would), legacy
inputs with ours. Each ratio's two sides run alternately, best of several
rounds, after warming the allocator (bench_codecs explains why).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from crc32c import crc32c

from bench.bench_codecs import record_payload, warm_allocator
from bench.common import Report, best_of, note_rounds, rounds_of
from broker.config import TopicConfig
from broker.records import codecs, scan
from broker.records.batch import RECORDS_OFFSET, read_header
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from broker.validator import NullRecorder, validate_records

#: what this bench imports beyond the broker's dependencies (checked by bench/__main__.py)
REQUIRES = ("aiokafka", "kafka")

N = 10_000
NOW = 1_700_000_000_000
LONG_MAX = 2**63 - 1
CONFIG_BIG = {"max_message_bytes": 1 << 30}


def _values(size: int) -> list[bytes]:
    """The codecs benchmark's record-like JSON payload (``record_payload``),
    cut into ``N`` values of ``size`` bytes: realistic compression ratios."""
    payload = record_payload(N, size)
    return [payload[i * size : (i + 1) * size] for i in range(N)]


def _records(size: int) -> list[SimpleRecord]:
    return [SimpleRecord(NOW + i % 50, b"key-%05d" % i, v) for i, v in enumerate(_values(size))]


def _validate(buf: bytearray, config: TopicConfig, version: int) -> Callable[[], Any]:
    view = memoryview(buf)

    def run() -> Any:
        return validate_records(
            view, topic="bench", partition=0, config=config, next_offset=0,
            partition_leader_epoch=0, now_ms=NOW, produce_version=version,
            recorder=NullRecorder(),
        )  # fmt: skip

    return run


def _paired(*fns: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds per call of each function, the minimum over ``repeat`` rounds in
    which the functions run one after the other: on a shared machine a load
    burst then slows every contender of the round, not only one of them."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            times[i].extend(rounds_of(fn, repeat=1))
    for rounds in times:
        note_rounds(rounds)
    return [min(rounds) for rounds in times]


def _goal(
    report: Report, name: str, measured: float, baseline: float, goal: str, limit: float
) -> float:
    """measured/baseline held to ``goal``: at most ``limit`` (limit > 0) or, for
    a speed-up (limit < 0), at least ``-limit``."""
    r = measured / baseline
    ok = r <= limit if limit > 0 else r >= -limit
    return report.ratio(name, measured, baseline, goal=goal, ok=ok)


def _rate(report: Report, name: str, seconds: float, nbytes: int) -> None:
    report.value(f"{name}: records/s", N / seconds, "rec/s")
    report.value(f"{name}: MB/s", nbytes / seconds / 1e6, "MB/s")


def _aiokafka_reader(data: bytes) -> Callable[[], int]:
    from aiokafka.record.memory_records import MemoryRecords

    def run() -> int:
        n = 0
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            batch.validate_crc()
            for r in batch:
                n += 1
                _ = r.value
        return n

    return run


def _kafka_python_reader(data: bytes) -> Callable[[], int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecords

    def run() -> int:
        n = 0
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            for r in batch:
                n += 1
                _ = r.value
        return n

    return run


def _aiokafka_convert(data: bytes, target_codec: int) -> Callable[[], int]:
    """Read every record with aiokafka and write one v2 batch with its builder."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.memory_records import MemoryRecords

    def run() -> int:
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=target_codec, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
        )  # fmt: skip
        records = MemoryRecords(data)
        i = 0
        while records.has_next():
            for r in records.next_batch():
                builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
                i += 1
        return len(builder.build())

    return run


def _aiokafka_v2(records: list[SimpleRecord], codec: int) -> bytearray:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for i, r in enumerate(records):
        builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
    return bytearray(builder.build())


def main(report: Report) -> None:
    # glibc then reuses multi-MB buffers instead of page-faulting fresh
    # mappings on every call (see bench_codecs): without it either side of a
    # ratio may pay thousands of page faults per call, by chance of ordering
    warm_allocator()
    for size in (100, 1024):
        _one_size(report, size)


def _one_size(report: Report, size: int) -> None:
    label = f"{size}B"
    records = _records(size)
    repeat = 15 if size == 100 else 9

    # (a) v2 uncompressed in place -------------------------------------------
    plain = _aiokafka_v2(records, 0)
    nbytes = len(plain)
    h = read_header(plain)
    view = memoryview(plain)

    def crc_and_walk() -> None:
        crc32c(view[21:])
        scan.walk_v2(plain, RECORDS_OFFSET, len(plain), count=h.records_count, base_offset=0,
                     base_timestamp=h.base_timestamp, lat_batch=False, batch_max_timestamp=-1,
                     now=NOW, before_max=LONG_MAX, after_max=LONG_MAX, create_time=True,
                     compacted=False, want_canonical=False, error_limit=0)  # fmt: skip

    t_ours, t_base = _paired(
        _validate(bytearray(plain), TopicConfig(**CONFIG_BIG), 9), crc_and_walk, repeat=repeat
    )
    t_aio = best_of(_aiokafka_reader(bytes(plain)), repeat=3)
    t_kp = best_of(_kafka_python_reader(bytes(plain)), repeat=1)
    _rate(report, f"(a) {label} v2 none in place", t_ours, nbytes)
    _goal(report, f"(a) {label} validator / (crc32c + compiled walk)", t_ours, t_base,
          "<= 1.5x", 1.5)  # fmt: skip
    _goal(report, f"(a) {label} aiokafka C reader / validator (speed-up)", t_aio, t_ours,
          ">= 6x", -6)  # fmt: skip
    report.ratio(f"(a) {label} kafka-python reader / validator (speed-up)", t_kp, t_ours)

    # (b) v2 compressed in place ---------------------------------------------
    for codec, name in ((3, "lz4"), (4, "zstd"), (1, "gzip")):
        batch = _aiokafka_v2(records, codec)
        payload = bytes(batch[RECORDS_OFFSET:])
        cfg = TopicConfig(compression_type="producer", **CONFIG_BIG)
        t_ours, t_dec = _paired(
            _validate(batch, cfg, 9),
            lambda c=codec, p=payload: codecs.decompress(c, p, max_size=1 << 30),
            repeat=repeat,
        )
        _rate(report, f"(b) {label} v2 {name} in place", t_ours, nbytes)
        _goal(report, f"(b) {label} {name}: validator / decompress", t_ours, t_dec,
              "<= 1.25x", 1.25)  # fmt: skip

    # (c) v1 gzip -> v2 gzip, (d) v0 snappy -> v2 snappy -----------------------
    for magic, codec, name, topic in (
        (1, 1, "v1 gzip -> v2", "gzip"),
        (0, 2, "v0 snappy -> v2", "snappy"),
    ):
        legacy = build_legacy(records, magic=magic, compression_type=codec).buffer
        cfg = TopicConfig(compression_type=topic, **CONFIG_BIG)
        version = 2 if magic else 0

        # a rebuild never writes into the request's bytes: one buffer serves every round
        fresh = _validate(bytearray(legacy), cfg, version)

        # the codec's own work: inflate the wrapper, deflate the v2 records at the topic level
        inner_value = bytes(legacy[12 + (22 if magic else 14) :])
        result = fresh()
        v2_records = bytes(_records_section(result.validated_records, codec))
        t_ours, t_codec = _paired(
            fresh,
            lambda c=codec, iv=inner_value, v=v2_records, m=magic: (
                codecs.decompress(c, iv, max_size=1 << 30, magic=m),
                codecs.compress(c, v),
            ),
            repeat=repeat,
        )
        t_aio = best_of(_aiokafka_convert(bytes(legacy), codec), repeat=3)
        _rate(report, f"({'c' if magic else 'd'}) {label} {name}", t_ours, nbytes)
        case = "c" if magic else "d"
        _goal(report, f"({case}) {label} {name}: validator / codec", t_ours, t_codec,
              "<= 1.15x", 1.15)  # fmt: skip
        _goal(report, f"({case}) {label} {name}: aiokafka convert / validator", t_aio, t_ours,
              ">= 2x", -2)  # fmt: skip

    # (e) v2 none -> topic zstd ------------------------------------------------
    cfg = TopicConfig(compression_type="zstd", **CONFIG_BIG)

    fresh_e = _validate(bytearray(plain), cfg, 9)  # a rebuild: the input is not patched
    records_section = bytes(plain[RECORDS_OFFSET:])
    t_ours, t_codec = _paired(
        fresh_e, lambda: codecs.compress(4, records_section, level=3), repeat=repeat
    )
    t_aio = best_of(_aiokafka_convert(bytes(plain), 4), repeat=3)
    _rate(report, f"(e) {label} v2 none -> zstd", t_ours, nbytes)
    _goal(report, f"(e) {label} none -> zstd: validator / compress", t_ours, t_codec,
          "<= 1.15x", 1.15)  # fmt: skip
    _goal(report, f"(e) {label} none -> zstd: aiokafka convert / validator", t_aio, t_ours,
          ">= 2x", -2)  # fmt: skip


def _records_section(batch: Any, codec: int) -> bytes:
    data = bytes(batch[RECORDS_OFFSET:])
    return codecs.decompress(codec, data, max_size=1 << 30)
