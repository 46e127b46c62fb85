"""The uncompressed input of every golden codec vector (``tests/golden/codecs/``).

Record-like JSON lines, 1000 of them: 72,579 bytes, so the vectors cross
snappy-java's 32 KiB chunks and LZ4's 64 KiB blocks. Its SHA-256 is written
in ``tests/golden/VECTORS.md`` and pinned here, so the formula cannot drift
away from the vectors.
"""

from __future__ import annotations

import hashlib

EVENTS = (b"click", b"view", b"purchase", b"search", b"logout")
INPUT_SHA256 = "896f97aadb248b8cb18b3a82739e6a4fe8bf7c061682c9743222425dd3868659"


def golden_input() -> bytes:
    return b"".join(
        b'{"id": %d, "user": "user-%d", "event": "%s", "ts": %d}\n'
        % (i, i * 7919 % 10007, EVENTS[i % 5], 1700000000000 + i * 37)
        for i in range(1000)
    )


def golden_input_sha256() -> str:
    return hashlib.sha256(golden_input()).hexdigest()
