"""Writing a :class:`~broker.handlers.file_region.FileRegion` to a transport.

The region is mapped read-only (``mmap`` from the page boundary below its
start) and handed to the transport as one ``memoryview`` slice: the kernel
copies the pages straight from the page cache into the socket; what the
socket does not take at once stays queued as the view (uvloop) or is
copied into the transport's buffer (the stdlib loop). No
Python object per batch, no read into a bytes object. The mapping closes
itself once the transport has let go of the view.

``os.sendfile`` would save the remaining copy, but an asyncio transport
owns its socket and its write buffer, so bytes written around a sendfile
could be reordered; a memory map keeps every write in transport order on
both uvloop and the stdlib loop.
"""

from __future__ import annotations

import asyncio
import mmap

from broker.handlers.file_region import FileRegion

_PAGE = mmap.ALLOCATIONGRANULARITY


def write_file_region(transport: asyncio.WriteTransport, region: object) -> None:
    if not isinstance(region, FileRegion):
        raise TypeError(f"cannot write a {type(region).__name__} to a connection")
    if region.size == 0:
        return
    start = region.position - region.position % _PAGE
    mapped = mmap.mmap(
        region.fd, region.position + region.size - start, access=mmap.ACCESS_READ, offset=start
    )
    # Not released or closed here: a transport may keep the view until the
    # socket takes the rest (uvloop queues memoryviews as they are); the
    # mapping is unmapped when the last view of it goes away.
    transport.write(memoryview(mapped)[region.position - start :])
