"""The ``.log`` file of a segment (``FileRecords.java``, ``FileLogInputStream.java``).

Bytes are appended with ``os.pwrite`` at the logical end (the file may be
longer: ``preallocate=true`` sizes a new file to ``segment.bytes`` and the
tail is trimmed on roll and close). Reads never copy records into Python
objects: the read path returns a :class:`FileSlice` (descriptor, position,
length) that the server can hand to ``os.sendfile``; header-level walks
read at most 61 bytes per batch with ``os.pread``.

Walking a file follows ``FileLogInputStream.nextBatch``: stop when fewer
than 18 bytes remain or the next entry does not fit; an entry whose size
field is below 14 is a CorruptRecordError.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from broker.errors import CorruptRecordError
from broker.log import writeback
from broker.log.held_field import HeldField
from broker.log.index import round_down_to_exact_multiple
from broker.records import entries
from broker.records.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
)
from broker.records.entries import BatchSummary, Entry

if TYPE_CHECKING:
    from broker.log.active_segment import ActiveSegment

#: v2 header; enough for a legacy v1 entry header (26 bytes) as well
_HEADER_READ = RECORD_BATCH_OVERHEAD
_LEGACY_MIN_ENTRY = {0: LOG_OVERHEAD + 14, 1: LOG_OVERHEAD + 22}
_OFFSET_SIZE = struct.Struct(">qi")
_MAGIC = struct.Struct(">b")


class FileSlice(NamedTuple):
    """Bytes ``[position, position + size)`` of a segment file.

    ``fd`` belongs to the log: do not close it. It stays valid at least
    ``file.delete.delay.ms`` after the segment is deleted, so a slice handed
    to ``os.sendfile`` right away is safe.
    """

    fd: int
    position: int
    size: int
    path: Path

    def read(self) -> bytes:
        """The bytes, copied (tests, tools; the server uses ``os.sendfile``)."""
        if self.size == 0:
            return b""
        return os.pread(self.fd, self.size, self.position)


class LogOffsetPosition(NamedTuple):
    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None


class FileBatch(NamedTuple):
    """A batch found in a file: where it is and its header facts."""

    position: int
    size: int
    summary: BatchSummary

    @property
    def last_offset(self) -> int:
        return self.summary.last_offset

    @property
    def max_timestamp(self) -> int:
        return self.summary.max_timestamp

    @property
    def magic(self) -> int:
        return self.summary.magic


def _valid_header_size(magic: int, size: int) -> bool:
    if magic >= MAGIC_V2:
        return size >= RECORD_BATCH_OVERHEAD
    return size >= _LEGACY_MIN_ENTRY.get(magic, 1 << 62)


class FileRecords:
    """One segment's ``.log``: descriptor, logical size, appends and header walks."""

    __slots__ = ("_active", "_closed", "_own_size", "_writeback_end", "fd", "path", "writable")

    #: bytes of batches (the logical end; the file may be longer), held by the
    #: append owner while this is the active segment's ``.log``
    size = HeldField[int]("_own_size", "size")

    def __init__(self, path: Path, fd: int, size: int, writable: bool = True) -> None:
        #: the append owner while this is the active segment's ``.log`` (it holds ``size``)
        self._active: ActiveSegment | None = None
        self.path = path
        self.fd = fd
        self._own_size = size
        self.writable = writable
        self._closed = False
        #: write-out was started for the bytes below this (start_writeback)
        self._writeback_end = size

    @classmethod
    def open(
        cls,
        path: Path,
        file_already_exists: bool = False,
        init_file_size: int = 0,
        preallocate: bool = False,
        read_only: bool = False,
    ) -> FileRecords:
        """``FileRecords.open``: a new preallocated file has length
        ``init_file_size`` and logical size 0; an existing file's logical
        size is its length."""
        if read_only:
            fd = os.open(path, os.O_RDONLY)
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if preallocate and not file_already_exists and not read_only:
                os.ftruncate(fd, init_file_size)
                size = 0
            else:
                size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, size, writable=not read_only)

    def file_length(self) -> int:
        return os.fstat(self.fd).st_size

    # ---- writing -----------------------------------------------------------------

    def append(self, data: memoryview | bytes | bytearray) -> int:
        """Write ``data`` at the logical end; returns the bytes written."""
        n = len(data)
        position = self.size
        written = os.pwrite(self.fd, data, position)
        if written != n:
            self.finish_short_write(data, position, written)
        self.size = position + n
        return n

    def finish_short_write(
        self, data: memoryview | bytes | bytearray, position: int, written: int
    ) -> None:
        """Write the rest after a short ``pwrite`` (disk full, signal) or raise."""
        view = memoryview(data)
        n = view.nbytes
        while written < n:
            step = os.pwrite(self.fd, view[written:], position + written)
            if step <= 0:
                raise OSError(f"short write to {self.path}")
            written += step

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to ``target_size`` bytes; returns the bytes removed."""
        original = self.size
        if target_size > original or target_size < 0:
            raise ValueError(
                f"Attempt to truncate log segment {self.path} to {target_size} bytes failed, "
                f"size of this log segment is {original} bytes."
            )
        if target_size < self.file_length():
            os.ftruncate(self.fd, target_size)
        self.size = target_size
        self._writeback_end = min(self._writeback_end, target_size)
        return original - target_size

    def trim(self) -> None:
        """Drop preallocated bytes past the logical end."""
        if self.writable and self.file_length() > self.size:
            os.ftruncate(self.fd, self.size)

    def flush(self) -> None:
        os.fsync(self.fd)

    def start_writeback(self) -> bool:
        """Start write-out of the bytes appended since the last call, from the
        page the last call ended in, once there are at least
        ``writeback.MIN_BYTES`` of them (``broker/log/writeback.py``); False
        when there were fewer."""
        size = self.size
        if size - self._writeback_end < writeback.MIN_BYTES:
            return False
        start = round_down_to_exact_multiple(self._writeback_end, writeback.PAGE_SIZE)
        self._writeback_end = size
        return writeback.start_writeback(self.fd, start, size - start)

    # ---- reading -------------------------------------------------------------------

    def pread(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def slice(self, position: int, size: int) -> FileSlice:
        end = min(self.size, position + max(size, 0))
        return FileSlice(self.fd, position, max(0, end - position), self.path)

    def iter_batches(self, start: int = 0, end: int | None = None) -> Iterator[FileBatch]:
        """Batches (header facts only) from ``start`` up to ``end`` (default: size).

        A header that cannot belong to a valid batch of its magic raises
        CorruptRecordError (only recovery meets such bytes; it uses its own
        scanner).
        """
        stop = self.size if end is None else min(end, self.size)
        pos = start
        fd = self.fd
        while pos < stop - HEADER_SIZE_UP_TO_MAGIC:
            header = os.pread(fd, min(_HEADER_READ, stop - pos), pos)
            if len(header) <= HEADER_SIZE_UP_TO_MAGIC:
                return
            offset, size = _OFFSET_SIZE.unpack_from(header, 0)
            if size < entries.MIN_ENTRY_SIZE_FIELD:
                raise CorruptRecordError(
                    f"Found record size {size} smaller than minimum record overhead "
                    f"({entries.MIN_ENTRY_SIZE_FIELD}) in file {self.path}."
                )
            total = size + LOG_OVERHEAD
            if pos + total > stop:
                return
            magic = _MAGIC.unpack_from(header, MAGIC_OFFSET)[0]
            if not _valid_header_size(magic, total) or len(header) < min(total, _HEADER_READ):
                raise CorruptRecordError(
                    f"Invalid batch of magic {magic} and size {total} at position {pos} "
                    f"in {self.path}"
                )
            summary = entries.summarize(header, Entry(0, total, magic, offset))
            yield FileBatch(pos, total, summary)
            pos += total

    def read_batch_bytes(self, batch: FileBatch) -> bytes:
        return os.pread(self.fd, batch.size, batch.position)

    def search_for_offset_with_size(
        self, target_offset: int, starting_position: int
    ) -> LogOffsetPosition | None:
        """First batch at or after ``starting_position`` whose last offset >= target."""
        for batch in self.iter_batches(starting_position):
            if batch.last_offset >= target_offset:
                return LogOffsetPosition(batch.last_offset, batch.position, batch.size)
        return None

    def largest_timestamp_after(self, starting_position: int) -> TimestampAndOffset:
        max_timestamp = NO_TIMESTAMP
        offset = -1
        epoch = -1
        for batch in self.iter_batches(starting_position):
            if batch.max_timestamp > max_timestamp:
                max_timestamp = batch.max_timestamp
                offset = batch.last_offset
                epoch = batch.summary.partition_leader_epoch
        return TimestampAndOffset(max_timestamp, offset, epoch if epoch >= 0 else None)

    def first_batch(self) -> FileBatch | None:
        return next(self.iter_batches(0), None)

    def last_batch(self, start: int = 0) -> FileBatch | None:
        last = None
        for batch in self.iter_batches(start):
            last = batch
        return last

    # ---- lifecycle -------------------------------------------------------------------

    def rename_to(self, path: Path) -> None:
        try:
            os.replace(self.path, path)
        finally:
            self.path = path

    def close(self) -> None:
        if self._closed:
            return
        if self.writable:
            self.trim()
        self.close_handlers()

    def close_handlers(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.fd)

    @property
    def is_closed(self) -> bool:
        return self._closed

    def delete_if_exists(self) -> bool:
        self.close_handlers()
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True
