"""Writer process of ``test_log_crash.py``: appends to a partition log forever.

``python -m tests.integration.log_crash_writer DIR SEED PREALLOCATE``

Every batch's value is derived from its offset (so the reader can check
content); every few appends the log is flushed, the recovery-point
checkpoint written, and ``flushed <offset>`` printed (offsets below it are
durable). It runs until killed.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from broker.config import BrokerConfig
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from tests.unit.log.batches import v2_batch

TP = TopicPartition("crash", 0)


def value_for(offset: int, size: int) -> bytes:
    return (b"%012d|" % offset) * (size // 13 + 1)


def main(argv: list[str]) -> int:
    log_dir, seed, preallocate = Path(argv[0]), int(argv[1]), argv[2] == "1"
    rng = random.Random(seed)
    manager = LogManager([log_dir], BrokerConfig())
    manager.startup()
    overrides = {
        "segment.bytes": "65536",
        "index.interval.bytes": "512",
        "preallocate": str(preallocate).lower(),
    }
    if manager.get_log(TP) is None:
        manager.create_topic(TP.topic, 1, overrides)
    else:
        manager.alter_topic_config(TP.topic, overrides)
    log = manager.get_log(TP)
    assert log is not None
    appended = 0
    while True:
        base = log.log_end_offset
        count = rng.randint(1, 4)
        size = rng.randint(13, 700)
        values = [value_for(base + i, size)[:size] for i in range(count)]
        log.append(
            v2_batch(
                base,
                values,
                base_timestamp=base,
                producer_id=42,
                producer_epoch=0,
                base_sequence=base,
            )
        )
        appended += 1
        if appended % rng.randint(1, 8) == 0:
            log.flush()
            manager.checkpoint_recovery_offsets()
            sys.stdout.write(f"flushed {log.recovery_point}\n")
            sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
