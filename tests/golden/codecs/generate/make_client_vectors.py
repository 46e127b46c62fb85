"""Write the golden codec vectors produced by the Python Kafka clients.

Run from the repository root with the clients installed (``.[clients]``):
``.venv/bin/python tests/golden/codecs/generate/make_client_vectors.py``.
Every file is the client's own codec function applied to
``tests.golden.codec_input.golden_input()``; see ``tests/golden/VECTORS.md``.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

import aiokafka.codec  # noqa: E402
import kafka.codec  # noqa: E402

from tests.golden.codec_input import golden_input  # noqa: E402

OUT = ROOT / "tests" / "golden" / "codecs"


def main() -> None:
    data = golden_input()
    vectors = {
        "gzip.kafka-python.bin": kafka.codec.gzip_encode(data),
        "snappy-xerial.kafka-python.bin": kafka.codec.snappy_encode(data),
        "snappy-raw.kafka-python.bin": kafka.codec.snappy_encode(data, xerial_compatible=False),
        "lz4.kafka-python.bin": kafka.codec.lz4_encode(data),
        "lz4-v0.kafka-python.bin": kafka.codec.lz4_encode_old_kafka(data),
        "zstd.kafka-python.bin": kafka.codec.zstd_encode(data),
        # aiokafka's snappy and zstd functions give the same bytes as kafka-python's
        "lz4.aiokafka.bin": aiokafka.codec.lz4_encode(data),
    }
    for name, payload in vectors.items():
        (OUT / name).write_bytes(payload)
        print(f"{name}: {len(payload)} bytes")
    for package in ("kafka-python", "aiokafka", "lz4", "zstandard", "python-snappy", "cramjam"):
        print(f"{package} {version(package)}")


if __name__ == "__main__":
    main()
