"""A region of a segment file placed in a response without reading it.

The Fetch handler answers with the stored batches as a :class:`FileRegion`
(descriptor, position, size); the protocol encoder treats it as an opaque
records value (it only needs ``len``), and the connection writes it to the
socket from a read-only memory map of the file (``broker/server/file_region.py``),
so the batches never become Python objects.
"""

from __future__ import annotations

import os


class FileRegion:
    """Bytes ``[position, position + size)`` of the file open as ``fd``.

    ``fd`` belongs to the log (see ``broker/log/file_records.py``: it stays
    valid for at least ``file.delete.delay.ms`` after a segment is deleted).
    """

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = fd
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """A copy of the bytes (tests and tools)."""
        return os.pread(self.fd, self.size, self.position)
