"""The compiled walks release the GIL while they run.

A large produce request is validated in a worker thread so that the event
loop keeps serving other connections; that only helps when the walk does not
hold the GIL. The test starts a long walk in a thread and counts how often the
main thread runs while it is in progress: with the GIL held for the whole walk
the main thread cannot run at all until it ends.
"""

from __future__ import annotations

import itertools
import threading
import time

from broker.records import _scan_c  # type: ignore[attr-defined]

#: a v2 record: length 6, attributes 0, timestamp delta 0, offset delta 0, null key,
#: empty value, no headers (a keyless record: an error on a compacted topic)
KEYLESS = bytes([6 << 1, 0, 0, 0, 1, 0, 0])
COUNT = 3_000_000
LONG_MAX = 2**63 - 1


def _longest_stall(call) -> tuple[int, int]:
    """Run ``call`` in another thread while the main thread takes time stamps;
    returns (the longest gap between the main thread's stamps while ``call``
    ran, how long ``call`` ran), in ns. A call that holds the GIL stalls the
    main thread for all of its run but the first switch interval (5 ms)."""
    started = threading.Event()
    finished = threading.Event()
    span: list[int] = []

    def run() -> None:
        started.set()
        span.append(time.perf_counter_ns())
        call()
        span.append(time.perf_counter_ns())
        finished.set()

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    stamps = []
    while not finished.is_set():
        stamps.append(time.perf_counter_ns())
    thread.join()
    begin, end = span
    inside = [begin, *(t for t in stamps if begin < t < end), end]
    return max(b - a for a, b in itertools.pairwise(inside)), end - begin


def test_a_call_that_holds_the_gil_lets_the_main_thread_spin_little():
    """The control: a long C call that keeps the GIL (bytes.count)."""
    data = bytes(256 << 20)
    stall, took = _longest_stall(lambda: data.count(b"\x01\x02\x03"))
    assert stall > took / 2, (stall, took)


def test_walk_v2_and_walk_legacy_release_the_gil():
    """(The compiled twin, imported directly: the pure-Python reference holds
    the GIL by nature and is not what runs in production.)"""
    data = KEYLESS * COUNT
    stall, took = _longest_stall(
        lambda: _scan_c.walk_v2(
            data,
            0,
            len(data),
            count=COUNT,
            base_offset=0,
            base_timestamp=0,
            lat_batch=False,
            batch_max_timestamp=-1,
            now=0,
            before_max=LONG_MAX,
            after_max=LONG_MAX,
            create_time=True,
            compacted=True,
            want_canonical=False,
            error_limit=20,
        )
    )
    assert stall < took / 2, (stall, took)
    # v0 inner messages (null key and value) of a legacy wrapper, all keyless
    entry = bytes(8) + (14).to_bytes(4, "big") + _v0_body()
    legacy = entry * (COUNT // 2)
    stall, took = _longest_stall(
        lambda: _scan_c.walk_legacy(
            legacy,
            0,
            len(legacy),
            wrapper_magic=0,
            wrapper_offset=0,
            wrapper_timestamp=-1,
            wrapper_lat=False,
            now=0,
            before_max=LONG_MAX,
            after_max=LONG_MAX,
            create_time=True,
            compacted=True,
            out=None,
            out_pos=0,
            error_limit=20,
        )
    )
    assert stall < took / 2, (stall, took)


def _v0_body() -> bytes:
    import zlib

    rest = bytes([0, 0]) + (-1).to_bytes(4, "big", signed=True) * 2
    return zlib.crc32(rest).to_bytes(4, "big") + rest


def test_copy_into_releases_the_gil():
    """A decoder's output is copied into its bounded buffer without the GIL
    (``BoundedOutput.append`` on a worker thread: an lz4 bomb's 1 MB steps
    into fresh pages held the event loop off for a switch interval each)."""
    src = bytes(256 << 20)
    dst = _scan_c.new_buffer(len(src))
    stall, took = _longest_stall(lambda: _scan_c.copy_into(dst, 0, src))
    assert stall < took / 2, (stall, took)
