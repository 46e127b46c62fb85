"""Memory-mapped index files with fixed-width entries (``AbstractIndex.java``).

The offset index (8-byte entries) and the time index (12-byte entries)
share this base. Facts that follow from it (``AbstractIndex``'s constructor,
``resize`` and ``trimToValidSize``):

* A **new** file is created pre-allocated to ``segment.index.bytes`` rounded
  down to a multiple of the entry size (10485760 -> 10485760 for ``.index``,
  10485756 for ``.timeindex``), zero-filled.
* An **existing** file is trusted: entries = file length // entry size. A
  file left untrimmed by a crash therefore reads as "full of zero entries",
  which is why an unclean start rebuilds the indexes of every segment it
  recovers.
* The active segment's indexes are grown back to ``segment.index.bytes``
  after loading and after truncation; they are trimmed to the valid entries
  when the segment stops being active and on close.

Lookups binary-search the mapped bytes with ``struct.unpack_from`` (no copy
of the index into Python objects). Kafka searches the last 8192 bytes first
("warm section", a page-cache optimisation); the entries being strictly
ordered, the answer is the same and we do one search.

Threading: an index belongs to its segment's owner thread. The flusher
never touches the mapping; it fsyncs the file through a descriptor of its
own, which also writes back pages dirtied through the mapping (Linux).
"""

from __future__ import annotations

import errno
import mmap
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, NamedTuple, TypeVar

from broker.log.errors import IndexOffsetOverflowError, LogClosedError

if TYPE_CHECKING:
    from broker.log.active_segment import ActiveSegment
    from broker.log.held_field import HeldField

INT_MAX = 2**31 - 1


class IndexEntry(NamedTuple):
    """A decoded entry: ``key`` is what lookups search by, ``value`` the other half."""

    key: int
    value: int


def round_down_to_exact_multiple(number: int, factor: int) -> int:
    """``roundDownToExactMultiple(67, 8) == 64``."""
    return factor * (number // factor)


class AbstractIndex(ABC):
    """A file of fixed-width entries, mapped read-write (or read-only).

    ``_mm``, ``_entries`` and ``_max_entries`` (and each subclass's last
    entry) are held fields (``broker.log.held_field``): while the index
    belongs to the active segment its append owner (``_active``,
    ``broker.log.active_segment``) holds them, the ``_own_*`` fields
    otherwise."""

    __slots__ = (
        "_active",
        "_closed",
        "_length",
        "_own_entries",
        "_own_max_entries",
        "_own_mm",
        "base_offset",
        "max_index_size",
        "path",
        "writable",
    )

    ENTRY_SIZE: ClassVar[int]
    _active: ActiveSegment | None

    # append state: each subclass declares these as ``HeldField``s of its own
    # fields of the append owner (``broker.log.held_field``)
    _mm: HeldField[mmap.mmap | None]
    _entries: HeldField[int]
    _max_entries: HeldField[int]

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = -1, writable: bool = True
    ) -> None:
        self._active = None
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._mm = None
        self._closed = False
        newly_created = not path.exists()
        if newly_created and not writable:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        fd = os.open(path, flags, 0o644)
        try:
            if newly_created:
                if max_index_size < self.ENTRY_SIZE:
                    raise ValueError(f"Invalid max index size: {max_index_size}")
                os.ftruncate(fd, round_down_to_exact_multiple(max_index_size, self.ENTRY_SIZE))
            self._length = os.fstat(fd).st_size
            self._map(fd)
        finally:
            os.close(fd)
        self._max_entries = self._length // self.ENTRY_SIZE
        # a new file starts empty; an existing one is assumed to be trimmed
        self._entries = 0 if newly_created else self._max_entries

    # ---- mapping ---------------------------------------------------------

    def _map(self, fd: int) -> None:
        if self._length == 0:
            self._mm = None  # mmap cannot map an empty file; nothing to read anyway
            return
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        mm = mmap.mmap(fd, self._length, access=access)
        # No read-around: a page fault on a file mapping reads ahead up to the
        # device's read_ahead_kb around the faulting page, so the first entry of
        # a new (sparse, preallocated) index zero-filled that whole window, a
        # visible pause twice per roll (docs/performance.md); on an old index the same
        # fault would read megabytes from disk for one binary-search probe.
        # Index access is appends at the end and binary searches (Kafka's
        # AbstractIndex), so page-at-a-time faulting is what fits.
        mm.madvise(mmap.MADV_RANDOM)
        self._mm = mm

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"The memory mapped buffer of index {self.path} is closed")

    def _buffer(self) -> mmap.mmap:
        self._check_open()
        mm = self._mm
        if mm is None:
            raise LogClosedError(f"index {self.path} has no mapped bytes")
        return mm

    # ---- sizes -------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        """Length of the file (and mapping) in bytes."""
        return self._length

    def size_in_bytes(self) -> int:
        """Bytes holding valid entries."""
        return self._entries * self.ENTRY_SIZE

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    @property
    def is_closed(self) -> bool:
        return self._closed

    # ---- relative offsets ------------------------------------------------

    def _to_relative(self, offset: int) -> int | None:
        relative = offset - self.base_offset
        if relative < 0 or relative > INT_MAX:
            return None
        return relative

    def relative_offset(self, offset: int) -> int:
        relative = self._to_relative(offset)
        if relative is None:
            raise IndexOffsetOverflowError(f"Integer overflow for offset: {offset} ({self.path})")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return self._to_relative(offset) is not None

    # ---- entries -----------------------------------------------------------

    @abstractmethod
    def _parse(self, mm: mmap.mmap, slot: int) -> IndexEntry:
        """Key and value of ``slot`` (absolute offsets)."""

    def _slot_key(self, mm: mmap.mmap, slot: int, by_value: bool) -> int:
        entry = self._parse(mm, slot)
        return entry.value if by_value else entry.key

    def largest_lower_bound_slot(self, target: int, by_value: bool = False) -> int:
        """Slot of the largest entry <= target, or -1."""
        entries = self._entries
        if entries == 0:
            return -1
        mm = self._buffer()
        if self._slot_key(mm, 0, by_value) > target:
            return -1
        lo, hi = 0, entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            key = self._slot_key(mm, mid, by_value)
            if key > target:
                hi = mid - 1
            elif key < target:
                lo = mid
            else:
                return mid
        return lo

    def smallest_upper_bound_slot(self, target: int, by_value: bool = False) -> int:
        """Slot of the smallest entry >= target, or -1."""
        if self._entries == 0:
            return -1
        mm = self._buffer()
        if self._slot_key(mm, 0, by_value) > target:
            return 0
        slot = self.largest_lower_bound_slot(target, by_value)
        if self._slot_key(mm, slot, by_value) == target:
            return slot
        return -1 if slot == self._entries - 1 else slot + 1

    def _truncate_to_entries(self, entries: int) -> None:
        self._check_open()
        self._entries = entries
        self._after_truncate()

    @abstractmethod
    def _after_truncate(self) -> None:
        """Refresh cached last-entry state after the entry count changed."""

    @abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= ``offset``."""

    def load_entries(self, data: bytes) -> None:
        """Replace every entry with ``data`` (entries already in the file's
        layout, e.g. from the recovery scan); the file grows when they would
        not fit with one slot to spare."""
        self._check_open()
        count = len(data) // self.ENTRY_SIZE
        needed = (count + 1) * self.ENTRY_SIZE
        if self._length < needed:
            self.resize(needed)
        if count:
            self._buffer()[0 : count * self.ENTRY_SIZE] = data[: count * self.ENTRY_SIZE]
        self._entries = count
        self._after_truncate()

    def truncate(self) -> None:
        """Drop all entries."""
        self._truncate_to_entries(0)

    @abstractmethod
    def sanity_check(self) -> None:
        """Raise CorruptIndexError on obviously broken content."""

    # ---- file management -----------------------------------------------------

    def resize(self, new_size: int) -> bool:
        """Set the file and mapping length (rounded down to whole entries).

        Returns False when the length is already that. Entries are kept.
        """
        self._check_open()
        rounded = round_down_to_exact_multiple(new_size, self.ENTRY_SIZE)
        if self._length == rounded:
            return False
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, rounded)
            self._length = rounded
            self._map(fd)
        finally:
            os.close(fd)
        self._max_entries = rounded // self.ENTRY_SIZE
        self._entries = min(self._entries, self._max_entries)
        self._after_truncate()
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes())

    def reset(self) -> None:
        """All entries removed, file grown back to the maximum size."""
        self.truncate()
        self.resize(self.max_index_size)

    def flush(self) -> None:
        """msync the mapping (owner thread only)."""
        self._check_open()
        if self._mm is not None:
            self._mm.flush()

    def rename_to(self, path: Path) -> None:
        try:
            if self.path.exists():
                os.replace(self.path, path)
        finally:
            self.path = path

    def close_handler(self) -> None:
        """Unmap without trimming (used when the directory failed)."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self._closed = True

    def force_unmap(self) -> None:
        self.close_handler()

    def close(self) -> None:
        self._check_open()
        self.trim_to_valid_size()
        self.close_handler()

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(path={self.path}, entries={self._entries}, "
            f"max_entries={self._max_entries})"
        )


_I = TypeVar("_I", bound=AbstractIndex)


class LazyIndex(Generic[_I]):
    """An index whose file is opened (and created) on first use (``LazyIndex.java``).

    A freshly rolled segment has no index files until something touches its
    indexes; renaming or deleting an index that was never opened just
    renames or deletes the file if it exists.
    """

    __slots__ = ("_base_offset", "_cls", "_index", "_max_index_size", "_path")

    def __init__(self, path: Path, base_offset: int, max_index_size: int, cls: type[_I]) -> None:
        self._path = path
        self._base_offset = base_offset
        self._max_index_size = max_index_size
        self._cls = cls
        #: the opened index, None until first use
        self._index: _I | None = None

    @property
    def path(self) -> Path:
        return self._index.path if self._index is not None else self._path

    @property
    def is_loaded(self) -> bool:
        return self._index is not None

    def get(self) -> _I:
        index = self._index
        if index is None:
            index = self._cls(self._path, self._base_offset, self._max_index_size)
            self._index = index
        return index

    def rename_to(self, path: Path) -> None:
        if self._index is not None:
            self._index.rename_to(path)
        else:
            try:
                if self._path.exists():
                    os.replace(self._path, path)
            finally:
                self._path = path
        self._path = path

    def update_parent_dir(self, directory: Path) -> None:
        self._path = directory / self._path.name
        if self._index is not None:
            self._index.path = directory / self._index.path.name

    def delete_if_exists(self) -> bool:
        if self._index is not None:
            return self._index.delete_if_exists()
        try:
            self._path.unlink()
        except FileNotFoundError:
            return False
        return True

    def close(self) -> None:
        if self._index is not None and not self._index.is_closed:
            self._index.close()

    def close_handler(self) -> None:
        if self._index is not None:
            self._index.close_handler()
