"""Capture the produce requests librdkafka really sends, as golden vectors under
``tests/golden/clients/`` (run by hand, never by the suite; provenance in
``tests/golden/VECTORS.md``, section "Wire captures from librdkafka").

Run from the repository root with the ``clients`` extra and kcat installed
(``make test-deps``)::

    PYTHONPATH=. .venv/bin/python tests/golden/clients/generate/capture_client_vectors.py

A broker process runs on 127.0.0.1 with a capturing proxy in front of it
(``tests/integration/wire.py``, ``CaptureProxy``; the broker advertises the
proxy, so every connection goes through it). confluent-kafka and kcat
produce the same five records, one topic per (client, magic, codec), with
``linger.ms=200`` so they travel as one batch; the proxy keeps each Produce
request frame, and the records field of the one partition is written out
as ``v<magic>-<codec>.<client>.bin``. ``manifest.json`` holds per file the
client, its version, the settings, the Produce version and acks of the
request, magic, codec, the path the validator must take and the records a
reader must find. Re-running overwrites the files (kcat's timestamps and
gzip headers differ per run).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import confluent_kafka

from broker.protocol import decode_request, parse_request_header
from broker.records.iterate import iter_batches
from tests.integration.harness import HOST, BrokerProcess
from tests.integration.producers import MAGIC1_CAPS, librdkafka_config
from tests.integration.wire import CaptureProxy

OUT = Path(__file__).resolve().parent.parent
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
FILLER = b" the quick brown fox jumps over the lazy dog" * 6
#: (timestamp for confluent-kafka, key, value, headers for magic 2)
RECORDS: list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]] = [
    (1_700_000_000_000, b"key-0", b"value-0" + FILLER, [("h0", b"x")]),
    (1_700_000_000_005, b"key-1", b"value-1" + FILLER, []),
    (1_700_000_000_002, b"key-2", b"value-2" + FILLER, [("h2", b""), ("h2b", b"yz")]),
    (1_700_000_000_010, b"key-3", b"value-3" + FILLER, [("h0", b"x")]),
    (1_700_000_000_009, b"key-4", b"value-4" + FILLER, []),
]
#: kcat sends one header set for every record of a run
KCAT_HEADERS = [("client", b"kcat")]


def settings(magic: int, codec: str) -> dict[str, Any]:
    config = librdkafka_config(magic, codec, 1, False, **{"linger.ms": 200})
    return {k: v for k, v in config.items() if k not in ("message.timeout.ms", "socket.timeout.ms")}


def produce_confluent(bootstrap: str, topic: str, magic: int, codec: str) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **settings(magic, codec)})
    for ts, key, value, headers in RECORDS:
        kwargs: dict[str, Any] = {"partition": 0, "key": key, "value": value}
        if magic >= 1:
            kwargs["timestamp"] = ts
        if magic == 2 and headers:
            kwargs["headers"] = headers
        producer.produce(topic, **kwargs)
    assert producer.flush(30) == 0


def produce_kcat(bootstrap: str, topic: str, magic: int, codec: str) -> None:
    args = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t"]
    if magic == 2:
        for k, v in KCAT_HEADERS:
            args += ["-H", f"{k}={v.decode()}"]
    for key, value in settings(magic, codec).items():
        args += ["-X", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    stdin = b"".join(key + b"\t" + value + b"\n" for _, key, value, _ in RECORDS)
    subprocess.run(args, input=stdin, check=True, capture_output=True, timeout=60)


def kcat_version() -> str:
    """``1.7.1 (librdkafka 2.0.2)`` from ``kcat -V``."""
    out = subprocess.run(["kcat", "-V"], capture_output=True, check=True).stdout.decode()
    found = re.search(r"^Version (\S+) .*librdkafka (\S+)", out, re.MULTILINE)
    assert found is not None, out
    return f"{found[1]} (librdkafka {found[2]})"


def confluent_version() -> str:
    """``2.16.1 (librdkafka 2.16.0)``."""
    version = confluent_kafka.version()
    own = version if isinstance(version, str) else version[0]
    return f"{own} (librdkafka {confluent_kafka.libversion()[0]})"


def expected(client: str, magic: int) -> list[dict[str, Any]]:
    out = []
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        if magic == 0:
            timestamp: int | None = -1
        elif client == "kcat":
            timestamp = None  # stamped by the client when produced
        else:
            timestamp = ts
        hdrs = (KCAT_HEADERS if client == "kcat" else headers) if magic == 2 else []
        out.append(
            {
                "offset": i,
                "timestamp": timestamp,
                "key": key.hex(),
                "value": value.hex(),
                "headers": [[k, v.hex()] for k, v in hdrs],
            }
        )
    return out


def main() -> int:
    manifest: dict[str, Any] = {}
    versions = {
        "confluent-kafka": f"confluent-kafka {confluent_version()}",
        "kcat": f"kcat {kcat_version()}",
    }
    producers = {"confluent-kafka": produce_confluent, "kcat": produce_kcat}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data")
        proxy = CaptureProxy(broker.port, caps=MAGIC1_CAPS)
        broker.overrides["advertised.listeners"] = f"PLAINTEXT://{HOST}:{proxy.port}"
        try:
            with broker:
                for client, produce in producers.items():
                    for magic in (0, 1, 2):
                        for codec in CODECS:
                            if codec == "zstd" and magic < 2:
                                continue
                            topic = f"golden-{client}-v{magic}-{codec}"
                            started = int(time.time() * 1000)
                            produce(f"{HOST}:{proxy.port}", topic, magic, codec)
                            name = f"v{magic}-{codec}.{client}.bin"
                            manifest[name] = capture(proxy, topic, name, client, magic, codec)
                            manifest[name]["library"] = versions[client]
                            manifest[name]["captured_at_ms"] = started
        finally:
            proxy.close()
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(manifest)} vectors to {OUT}")
    return 0


def capture(
    proxy: CaptureProxy, topic: str, name: str, client: str, magic: int, codec: str
) -> dict[str, Any]:
    found = []
    for req in proxy.captured(0):
        body = decode_request(parse_request_header(req.frame), req.frame)
        for td in body.topic_data:
            if td.name == topic:
                found += [(req, body, bytes(pd.records)) for pd in td.partition_data]
    assert len(found) == 1, f"{name}: expected one produce request, got {len(found)}"
    req, body, records = found[0]
    batches = list(iter_batches(records))
    assert {b.magic for b in batches} == {magic}, (name, [b.magic for b in batches])
    assert {b.compression_type for b in batches} == {CODECS[codec]}, name
    (OUT / name).write_bytes(records)
    return {
        "client": client,
        "settings": settings(magic, codec),
        "produce_version": req.api_version,
        "client_id": req.client_id,
        "acks": body.acks,
        "magic": magic,
        "codec": CODECS[codec],
        "path": "in_place" if magic == 2 else "converted",
        "records": expected(client, magic),
    }


if __name__ == "__main__":
    sys.exit(main())
