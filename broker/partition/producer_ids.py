"""Producer ids for idempotent producers (``ProducerIdManager`` on one broker).

Kafka's controller hands out ids in blocks of 1000 and persists every
block it gives away, so an id is never issued twice across restarts. Here
the block is persisted in the first log dir, in a one-line text file::

    producer-id-block:   <first id of the next block>\\n

written to a temporary file, fsynced and renamed before any id of a new
block is returned. At start the next id is also kept above every producer
id found in the logs' producer state, so a lost or older file cannot make
a new producer collide with an old one's sequence numbers.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdManager:
    """Allocates producer ids; used from the event loop thread."""

    def __init__(self, log_dir: Path, floor: int = 0) -> None:
        self.path = log_dir / FILE_NAME
        stored = self._read()
        self._next = max(stored, floor)
        self._block_end = self._next  # nothing of a block is reserved yet

    def _read(self) -> int:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return 0
        try:
            value = int(text)
        except ValueError:
            return 0  # unreadable: the floor from the producer states still applies
        return max(value, 0)

    def _persist(self, block_end: int) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, f"{block_end}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def next_producer_id(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + BLOCK_SIZE
            self._persist(self._block_end)
        pid = self._next
        self._next += 1
        return pid
