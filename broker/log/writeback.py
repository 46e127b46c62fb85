"""Start write-out of appended bytes without waiting (Linux ``sync_file_range``).

One call per acks=all produce request, on the event-loop thread, right
after the append (``broker/server/group_commit.py`` makes it)::

    .log  |<-- started by earlier calls -->|<--- this call --->|
          0                  page of the last end           size

``SYNC_FILE_RANGE_WRITE`` submits the dirty pages of the range to the device
and returns: it waits for nothing and makes nothing durable (no metadata, no
device cache flush). The fsync of the group-commit round still decides what
is durable; this only moves the device's work earlier.

Why: an fsync submits every dirty page of the file, then waits for them. A
request's pages used to leave only when the round covering it began, after
the running round ended, so the device idled while the broker validated the
next request and then had the whole backlog to write while every waiter
waited. Started at append time, the pages are on their way while the broker
works on the next request, and the round's fsync mostly waits for the fast
commit and the cache flush. RocksDB (``bytes_per_sync``) and PostgreSQL
(``wal_writer_flush_after``) start write-out early for the same reason.
``python -m bench server`` (3) measured the gain for 1 MB acks=all requests
(docs/performance.md), with less broker CPU per request too (fewer wake-ups
of the flusher thread per round).

The range includes the partly filled last page, and the next range starts
at that page again: the page goes to the device twice (4 KB more per
range), but the round's fsync finds nothing of the request left to submit.
Leaving that page to the fsync cost each round one more write to submit
and wait for, a clear loss in the same measurement. A
range starts only once ``MIN_BYTES`` (64 KiB) were appended since the last
one, so small requests do not each rewrite that page (a 1 KB request would
write 4 KB) or send the device one small write each.
(On a device that needs stable pages during write-out, ``queue/stable_writes``
= 1, the next append into that page would wait for its write to finish; the
virtio disk this was measured on does not.)

Not on Linux (or a libc without the call) this does nothing.
"""

from __future__ import annotations

import ctypes
import mmap
from collections.abc import Callable

#: flags of sync_file_range(2)
SYNC_FILE_RANGE_WRITE = 2
PAGE_SIZE = mmap.PAGESIZE
#: start write-out once this many bytes were appended since the last start;
#: the partly filled last page goes to the device again with the next range,
#: so this bounds that extra write to 1/16 of what is appended (small acks=all
#: requests leave their pages to the round's fsync, as before)
MIN_BYTES = 16 * PAGE_SIZE


def _load() -> Callable[[int, int, int, int], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load()
#: whether this platform can start write-out at all
AVAILABLE = _sync_file_range is not None


def start_writeback(fd: int, offset: int, nbytes: int) -> bool:
    """Submit the dirty pages of ``[offset, offset + nbytes)`` of ``fd`` for
    write-out and return at once; False where that is not possible.

    A failure here is not reported further: an I/O error on these pages
    fails the fsync that must follow, which answers the waiting requests."""
    if _sync_file_range is None or nbytes <= 0:
        return False
    return _sync_file_range(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE) == 0
