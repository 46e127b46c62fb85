"""Record the record-batch bytes that kafka-python's and aiokafka's builders
write, as golden vectors under ``tests/golden/records/`` (run by hand, never
by the suite; provenance in ``tests/golden/VECTORS.md``).

Run with the ``clients`` extra installed (``make test-deps``)::

    .venv/bin/python tests/golden/records/generate/make_record_vectors.py

Every vector is written with the same three records (fixed timestamps, keys,
values; headers for v2) at base offset 0, and described in
``tests/golden/records/manifest.json`` (library, version, call, inputs, the
records a reader must find). Re-running overwrites the files; commit the
result only when a library version changes (the VECTORS.md section names the
versions used).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aiokafka
import kafka
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from kafka.record.memory_records import MemoryRecordsBuilder

OUT = Path(__file__).resolve().parent.parent
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
RECORDS = [
    (1_700_000_000_000, b"key-0", b"value-0", [("h0", b"x")]),
    (1_700_000_000_005, None, b"value-1" * 20, []),
    (1_700_000_000_002, b"key-2", None, [("h2", None), ("h2b", b"")]),
]


def _expected(magic: int) -> list[dict[str, object]]:
    out = []
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        out.append(
            {
                "offset": i,
                "timestamp": ts if magic > 0 else -1,
                "key": None if key is None else key.hex(),
                "value": None if value is None else value.hex(),
                "headers": (
                    [[k, None if v is None else v.hex()] for k, v in headers] if magic >= 2 else []
                ),
            }
        )
    return out


def kafka_python(magic: int, codec: int) -> bytes:
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 20, offset=0)
    for ts, key, value, headers in RECORDS:
        assert builder.append(ts, key, value, headers if magic >= 2 else None) is not None
    builder.close()
    return bytes(builder.records()._buffer)  # MemoryRecords keeps the bytes it was given


def aiokafka_default(codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers) is not None
    return bytes(builder.build())


def aiokafka_legacy(magic: int, codec: int) -> bytes:
    builder = AioLegacyBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i, (ts, key, value, _headers) in enumerate(RECORDS):
        assert builder.append(i, timestamp=ts, key=key, value=value) is not None
    return bytes(builder.build())


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, object]] = {}

    skipped: list[str] = []

    def put(name: str, make: object, **facts: object) -> None:
        try:
            data = make()  # type: ignore[operator]
        except RuntimeError as exc:  # kafka-python's v0 lz4 needs the optional xxhash
            skipped.append(f"{name}: {exc}")
            return
        (OUT / name).write_bytes(data)
        manifest[name] = facts

    kp = f"kafka-python {kafka.__version__}"
    ak = f"aiokafka {aiokafka.__version__}"
    for magic in (0, 1, 2):
        for codec, codec_name in CODEC_NAMES.items():
            if codec == 4 and magic < 2:
                continue
            name = f"v{magic}-{codec_name}.kafka-python.bin"
            put(
                name,
                lambda magic=magic, codec=codec: kafka_python(magic, codec),
                library=kp,
                call=f"kafka.record.memory_records.MemoryRecordsBuilder({magic}, {codec}, "
                "batch_size=1<<20, offset=0).append(ts, key, value, headers) x3; close()",
                magic=magic,
                codec=codec,
                records=_expected(magic),
            )
    for codec, codec_name in CODEC_NAMES.items():
        name = f"v2-{codec_name}.aiokafka-default.bin"
        put(
            name,
            lambda codec=codec: aiokafka_default(codec),
            library=ak,
            call=f"aiokafka.record.default_records.DefaultRecordBatchBuilder(magic=2, "
            f"compression_type={codec}, ...).append(i, timestamp, key, value, headers) x3; build()",
            magic=2,
            codec=codec,
            records=_expected(2),
        )
    for magic in (0, 1):
        for codec in (0, 1, 2, 3):
            name = f"v{magic}-{CODEC_NAMES[codec]}.aiokafka-legacy.bin"
            put(
                name,
                lambda magic=magic, codec=codec: aiokafka_legacy(magic, codec),
                library=ak,
                call=f"aiokafka.record.legacy_records.LegacyRecordBatchBuilder(magic={magic}, "
                f"compression_type={codec}).append(i, timestamp, key, value) x3; build()",
                magic=magic,
                codec=codec,
                records=_expected(magic),
            )
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(manifest)} vectors to {OUT}")
    for line in skipped:
        print(f"not recorded: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
