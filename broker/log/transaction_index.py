"""A segment's aborted-transaction index, ``<base offset>.txnindex`` (``TransactionIndex.java``,
``AbortedTxn.java``, ``TxnIndexSearchResult.java``, ``CompletedTxn.java``).

One entry per transaction whose ABORT marker was written in this segment, in
marker order, so the last offsets strictly increase. No header, no padding:
34-byte entries, big-endian::

    offset  size  field
         0     2  Version           Int16, 0 (AbortedTxn.CURRENT_VERSION)
         2     8  ProducerId        Int64
        10     8  FirstOffset       Int64  first offset of the aborted transaction
        18     8  LastOffset        Int64  offset of its ABORT marker
        26     8  LastStableOffset  Int64  the partition's LSO when the marker was written

A READ_COMMITTED fetch asks each segment from the one holding the fetch
offset for the aborted transactions overlapping ``[fetch offset, upper
bound)`` (:meth:`TransactionIndex.collect_aborted_txns`); an entry whose
last stable offset reaches the upper bound ends the search (later segments
can only hold transactions that started after it).

Unlike ``.index``/``.timeindex`` the file is not preallocated nor mapped: it
is created by the first :meth:`TransactionIndex.append` (a segment of a log
without aborted transactions has none), appended with ``pwrite`` and read
in chunks of :data:`READ_CHUNK_ENTRIES` entries, so a read holds one chunk
and what it returns. The descriptor is opened on first use and kept until
:meth:`TransactionIndex.close` (Kafka opens an existing file at once); a
closed index opens its file again when used (Kafka's reads then see nothing).

Kafka's behaviours kept: the "last offset must increase" check compares with
entries appended (or kept by a truncation) since the index was opened, not
with the file's last entry; an entry whose version is above 0 fails every
read (Kafka reads the version as the entry's first byte, we read the Int16);
a trailing partial entry is never returned by a read. Ours in addition:
:meth:`TransactionIndex.sanity_check` rejects a length that is not a multiple
of 34, and :meth:`TransactionIndex.truncate_to` that keeps every entry drops
such a partial tail, so a torn append is repaired by the segment's recovery.

Threading: an index belongs to its segment's owner thread; the flusher
fsyncs the file through a descriptor of its own (``LogSegment.flush_paths``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from broker.errors import UnknownServerError
from broker.log.errors import CorruptIndexError, InvalidOffsetError

CURRENT_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
#: entries read per ``pread`` (34 KiB)
READ_CHUNK_ENTRIES = 1024


class CompletedTxn(NamedTuple):
    """``CompletedTxn``: a transaction ended by a marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool

    def __str__(self) -> str:
        return (
            f"CompletedTxn(producerId={self.producer_id}, firstOffset={self.first_offset}, "
            f"lastOffset={self.last_offset}, isAborted={str(self.is_aborted).lower()})"
        )


class AbortedTxn(NamedTuple):
    """``AbortedTxn``: one entry of the index (layout: the module docstring)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    @classmethod
    def of_completed(cls, completed_txn: CompletedTxn, last_stable_offset: int) -> AbortedTxn:
        return cls(
            completed_txn.producer_id,
            completed_txn.first_offset,
            completed_txn.last_offset,
            last_stable_offset,
        )

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(
            self.version,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, offset: int = 0) -> AbortedTxn:
        version, producer_id, first, last, lso = _ENTRY.unpack_from(data, offset)
        return cls(producer_id, first, last, lso, version)

    def __str__(self) -> str:
        return (
            f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
            f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
            f"lastStableOffset={self.last_stable_offset})"
        )


class TxnIndexSearchResult(NamedTuple):
    """``TxnIndexSearchResult``: the matches of one segment and whether the
    search is complete (no later segment needs to be asked)."""

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """The ``.txnindex`` of the segment starting at ``start_offset``."""

    __slots__ = ("_exists", "_fd", "_last_offset", "_size", "path", "start_offset")

    def __init__(self, start_offset: int, path: Path) -> None:
        self.start_offset = start_offset
        self.path = path
        self._fd: int | None = None
        self._size = 0
        self._last_offset: int | None = None
        # whether the file is there as far as this index knows (no stat later)
        self._exists = os.path.exists(path)

    def __enter__(self) -> TransactionIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def file_exists(self) -> bool:
        """The file was there when the index was opened or has been written
        since (and not deleted through this index)."""
        return self._exists

    # ---- descriptor ---------------------------------------------------------------------

    def _open(self, create: bool) -> int | None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            self._exists = False
            return None
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._exists = True
        return fd

    def _fd_or_none(self) -> int | None:
        """The open descriptor, opening an existing file; None without a file."""
        fd = self._fd
        if fd is None and self._exists:
            fd = self._open(create=False)
        return fd

    # ---- writes -------------------------------------------------------------------------

    def append(self, aborted_txn: AbortedTxn) -> None:
        """Append one entry, creating the file if needed. InvalidOffsetError
        (Kafka: ``IllegalArgumentException``; both answer UNKNOWN_SERVER_ERROR)
        when its last offset is not above the last one appended."""
        last = self._last_offset
        if last is not None and last >= aborted_txn.last_offset:
            raise InvalidOffsetError(
                "The last offset of appended transactions must increase sequentially, but "
                f"{aborted_txn.last_offset} is not greater than current last offset {last} "
                f"of index {self.path.absolute()}"
            )
        self._last_offset = aborted_txn.last_offset
        fd = self._fd_or_none()
        if fd is None:
            fd = self._open(create=True)
            assert fd is not None
        data = aborted_txn.to_bytes()
        view = memoryview(data)
        position = self._size
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written
        self._size = position

    def flush(self) -> None:
        fd = self._fd_or_none()
        if fd is not None:
            os.fsync(fd)

    def reset(self) -> None:
        """Remove every entry (the file stays, empty)."""
        fd = self._fd_or_none()
        if fd is not None:
            os.ftruncate(fd, 0)
            self._size = 0
        self._last_offset = None

    def truncate_to(self, offset: int) -> None:
        """Drop the entries from the first one whose last offset is >= ``offset``."""
        new_last: int | None = None
        for position, txn in self._entries():
            if txn.last_offset >= offset:
                self._truncate_file(position)
                self._last_offset = new_last
                return
            new_last = txn.last_offset
        whole = self._size - self._size % ENTRY_SIZE
        if whole != self._size:
            self._truncate_file(whole)  # a torn last entry (see the module docstring)

    def _truncate_file(self, size: int) -> None:
        fd = self._fd_or_none()
        assert fd is not None
        os.ftruncate(fd, size)
        self._size = size

    # ---- files --------------------------------------------------------------------------

    def close(self) -> None:
        fd = self._fd
        if fd is not None:
            self._fd = None
            os.close(fd)

    def delete_if_exists(self) -> bool:
        """Close and delete the file; whether there was one."""
        self.close()
        self._exists = False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def rename_to(self, path: Path) -> None:
        """Move the file (if any) to ``path``; the index follows it either way.
        An open descriptor stays valid."""
        try:
            if self.path.exists():
                os.replace(self.path, path)
                self._exists = True
        finally:
            self.path = path

    def update_parent_dir(self, directory: Path) -> None:
        """The path follows a renamed partition folder."""
        self.path = directory / self.path.name

    # ---- reads --------------------------------------------------------------------------

    def _entries(self) -> Iterator[tuple[int, AbortedTxn]]:
        """(position, entry) of every whole entry, read a chunk at a time."""
        fd = self._fd_or_none()
        if fd is None:
            return
        end = self._size - self._size % ENTRY_SIZE
        position = 0
        while position < end:
            chunk = os.pread(fd, min(READ_CHUNK_ENTRIES * ENTRY_SIZE, end - position), position)
            usable = len(chunk) - len(chunk) % ENTRY_SIZE
            if usable == 0:
                return  # the file shrank under us
            for at in range(0, usable, ENTRY_SIZE):
                txn = AbortedTxn.from_bytes(chunk, at)
                if txn.version > CURRENT_VERSION:
                    raise UnknownServerError(
                        f"Unexpected aborted transaction version {txn.version} in transaction "
                        f"index {self.path.absolute()}, current version is {CURRENT_VERSION}"
                    )
                yield position + at, txn
            position += usable

    def aborted_txns(self) -> Iterator[AbortedTxn]:
        """Every entry, in file order, one chunk in memory at a time."""
        for _, txn in self._entries():
            yield txn

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return list(self.aborted_txns())

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``;
        complete once an entry's last stable offset is >= the upper bound."""
        found: list[AbortedTxn] = []
        for _, txn in self._entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def sanity_check(self) -> None:
        """CorruptIndexError when the length is not a whole number of entries or
        an entry ends before this segment starts (``TransactionIndex.sanityCheck``)."""
        fd = self._fd_or_none()
        if fd is None:
            return
        if self._size % ENTRY_SIZE:
            raise CorruptIndexError(
                f"Transaction index file {self.path.absolute()} has length {self._size}, "
                f"which is not a multiple of the entry size {ENTRY_SIZE}"
            )
        for _, txn in self._entries():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index {self.path.absolute()} "
                    f"is less than start offset {self.start_offset}"
                )

    def __repr__(self) -> str:
        return f"TransactionIndex(startOffset={self.start_offset}, file={self.path})"
