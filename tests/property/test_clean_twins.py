"""The log cleaner's loops: the compiled twin agrees with the reference.

``_clean_py`` (reference) and ``_clean_c`` (compiled) must build the same
offset map and write the same bytes, with the same statuses and the same
errors, for any chunk: v2 batches of keyed records, tombstones and key-less
records, with headers, delete horizons, LogAppendTime, producer ids,
transactional and control batches, legacy entries, compressed batches (where
both stop), chunks cut anywhere, flipped bytes, output buffers of any size.
The compiled twin is imported directly, so this also runs when
``BROKER_NO_EXTENSIONS`` selects the reference for the rest of the suite.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log import _clean_py
from broker.records.batch import pack_header, write_crc
from tests.unit.log.batches import legacy_entry, zigzag_varint

_clean_c = importlib.import_module("broker.log._clean_c")

KEYS = [b"a", b"b", b"c", b"dd", b"", b"e" * 70]


def record(delta: int, ts_delta: int, key: bytes | None, value: bytes | None,
           headers: list[tuple[bytes, bytes | None]]) -> bytes:  # fmt: skip
    body = bytearray(b"\x00") + zigzag_varint(ts_delta) + zigzag_varint(delta)
    for part in (key, value):
        body += zigzag_varint(-1) if part is None else zigzag_varint(len(part)) + part
    body += zigzag_varint(len(headers))
    for hk, hv in headers:
        body += zigzag_varint(len(hk)) + hk
        body += zigzag_varint(-1) if hv is None else zigzag_varint(len(hv)) + hv
    return zigzag_varint(len(body)) + bytes(body)


@st.composite
def batches(draw: Any, base_offset: int) -> tuple[bytes, int]:
    kind = draw(st.sampled_from(["data", "data", "data", "legacy", "txn", "control", "zip"]))
    if kind == "legacy":
        key = draw(st.sampled_from([*KEYS, None]))
        value = draw(st.sampled_from([b"v", None]))
        magic = draw(st.integers(0, 1))
        return legacy_entry(base_offset, magic, value, key=key, timestamp=5), 1
    n = draw(st.integers(0, 6))
    gap = draw(st.integers(0, 3))
    recs = []
    for i in range(n):
        key = draw(st.sampled_from([*KEYS, None]))
        value = draw(st.sampled_from([b"x" * draw(st.integers(0, 40)), None]))
        headers = draw(st.lists(st.tuples(st.binary(max_size=4),
                                          st.one_of(st.none(), st.binary(max_size=4))),
                                max_size=2))  # fmt: skip
        recs.append(record(i * (gap + 1), draw(st.integers(-5, 500)), key, value, headers))
    horizon = draw(st.sampled_from([-1, -1, 50, 10_000]))
    attributes = draw(st.sampled_from([0, 0, 0x08]))
    if horizon >= 0:
        attributes |= 0x40
    if kind == "txn":
        attributes |= 0x10
    if kind == "control":
        attributes |= 0x30
    if kind == "zip":
        attributes |= 0x01
    producer_id = draw(st.sampled_from([-1, 1, 2]))
    body = b"".join(recs)
    last_delta = max(0, (n - 1) * (gap + 1)) + draw(st.integers(0, 2))
    buf = bytearray(61 + len(body))
    pack_header(
        buf,
        0,
        base_offset=base_offset,
        batch_length=len(buf) - 12,
        partition_leader_epoch=3,
        attributes=attributes,
        last_offset_delta=last_delta,
        base_timestamp=horizon if horizon >= 0 else draw(st.integers(-1, 2000)),
        max_timestamp=draw(st.integers(-1, 3000)),
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_offset if producer_id >= 0 else -1,
        records_count=n,
    )
    buf[61:] = body
    write_crc(buf, 0, len(buf))
    return bytes(buf), last_delta + 1


@st.composite
def chunks(draw: Any) -> bytes:
    out = bytearray()
    offset = draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 8))):
        data, span = draw(batches(offset))
        out += data
        offset += span + draw(st.integers(0, 2))
    if out and draw(st.booleans()):
        cut = draw(st.integers(0, len(out)))
        if draw(st.booleans()):
            out[cut % len(out)] ^= 1 << draw(st.integers(0, 7))
        else:
            del out[cut:]
    return bytes(out)


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def run_map(twin: ModuleType, data: bytes, start_offset: int, max_entries: int) -> Any:
    m = twin.OffsetMap(24 * 40)
    steps = []
    pos = 0
    while True:
        res = outcome(
            twin.map_chunk, m, data, pos, len(data), start_offset=start_offset,
            max_entries=max_entries,
        )  # fmt: skip
        steps.append(res)
        if res[0] != "ok" or res[1][1] != twin.NEEDS_CODEC:
            break
        pos = res[1][0] + 12 + int.from_bytes(data[res[1][0] + 8 : res[1][0] + 12], "big")
    state = (m.size, m.latest_offset, [m.get(k) for k in KEYS])
    return steps, state, m


@settings(max_examples=200, deadline=None)
@given(data=chunks(), start_offset=st.integers(0, 12), max_entries=st.integers(0, 40))
def test_map_chunk_twins_agree(data: bytes, start_offset: int, max_entries: int) -> None:
    py = run_map(_clean_py, data, start_offset, max_entries)
    c = run_map(_clean_c, data, start_offset, max_entries)
    assert py[:2] == c[:2]


def run_filter(twin: ModuleType, data: bytes, out_size: int, latest: int, now: int,
               producers: dict[int, tuple[int, int]], legacy_deletes: bool) -> Any:  # fmt: skip
    m = twin.OffsetMap(24 * 40)
    for i, k in enumerate(KEYS[:4]):
        m.put(k, 3 * i + 2)
    return filter_with(twin, m, data, out_size, latest, now, producers, legacy_deletes)


def filter_with(twin: ModuleType, m: Any, data: bytes, out_size: int, latest: int, now: int,
                producers: dict[int, tuple[int, int]], legacy_deletes: bool) -> Any:  # fmt: skip
    active = twin.ActiveProducers(producers)
    out = bytearray(out_size)
    steps = []
    pos = 0
    o = 0
    for _ in range(50):
        res = outcome(twin.filter_chunk, m, active, data, pos, len(data), out=out, out_pos=o,
                      latest_offset=latest, now=now, new_horizon=now + 100,
                      retain_legacy_deletes=legacy_deletes)  # fmt: skip
        steps.append(res)
        if res[0] != "ok":
            break
        pos, o, status = res[1][:3]
        if status == twin.DONE:
            break
        if status == twin.NEEDS_CODEC:
            pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        else:  # OUT_FULL: start over in a fresh buffer, or give up if it cannot fit
            if o == 0:
                break
            o = 0
    return steps, bytes(out)


@settings(max_examples=300, deadline=None)
@given(
    data=chunks(),
    out_size=st.sampled_from([0, 61, 200, 1000, 100_000]),
    latest=st.integers(-1, 40),
    now=st.sampled_from([0, 60, 20_000]),
    producers=st.dictionaries(st.integers(1, 3), st.tuples(st.integers(-1, 40), st.integers(0, 1))),
    legacy_deletes=st.booleans(),
)
def test_filter_chunk_twins_agree(data: bytes, out_size: int, latest: int, now: int,
                                  producers: dict[int, tuple[int, int]],
                                  legacy_deletes: bool) -> None:  # fmt: skip
    args = (data, out_size, latest, now, producers, legacy_deletes)
    assert run_filter(_clean_py, *args) == run_filter(_clean_c, *args)


@settings(max_examples=150, deadline=None)
@given(data=chunks(), latest=st.integers(-1, 40), now=st.sampled_from([0, 60, 20_000]))
def test_filter_records_twins_agree(data: bytes, latest: int, now: int) -> None:
    """The records of each whole v2 batch through filter_records directly (the
    compressed path's entry point), with room to spare and with none."""
    pos = 0
    while pos + 61 <= len(data):
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        if size < 61 or pos + size > len(data) or data[pos + 16] != 2:
            break
        count = int.from_bytes(data[pos + 57 : pos + 61], "big", signed=True)
        base = int.from_bytes(data[pos : pos + 8], "big", signed=True)
        base_ts = int.from_bytes(data[pos + 27 : pos + 35], "big", signed=True)
        for room in (0, 2 * size + 100):
            results = []
            for twin in (_clean_py, _clean_c):
                m = twin.OffsetMap(24 * 40)
                for i, k in enumerate(KEYS):
                    m.put(k, base + i)
                out = bytearray(room)
                res = outcome(twin.filter_records, m, data, pos + 61, pos + size, count=count,
                              base_offset=base, base_timestamp=base_ts, log_append_time=-1,
                              horizon=base_ts if data[pos + 22] & 0x40 else -1, now=now,
                              new_horizon=now + 7, latest_offset=latest, out=out,
                              out_pos=0)  # fmt: skip
                results.append((res, bytes(out)))
            assert results[0] == results[1]
        pos += size


def build_map(twin: ModuleType, data: bytes, start_offset: int, superseded: int | None,
              end_offset: int = 1 << 40) -> Any:  # fmt: skip
    """The map of a cleaning over the chunk from ``start_offset``, with a
    superseded bitmap of ``superseded`` bytes tracked from there up to
    ``end_offset`` (None: none)."""
    m = twin.OffsetMap(24 * 40, superseded or 0)
    if superseded is not None:
        assert m.track_superseded(start_offset, end_offset) == (superseded > 0)
    pos = 0
    while True:
        res = outcome(
            twin.map_chunk, m, data, pos, len(data), start_offset=start_offset, max_entries=30
        )
        if res[0] != "ok" or res[1][1] != twin.NEEDS_CODEC:
            return m
        pos = res[1][0] + 12 + int.from_bytes(data[res[1][0] + 8 : res[1][0] + 12], "big")


@settings(max_examples=200, deadline=None)
@given(
    data=chunks(),
    start_offset=st.integers(0, 12),
    superseded=st.sampled_from([0, 1, 2, 64]),
    end_offset=st.sampled_from([20, 1 << 40]),
    now=st.sampled_from([0, 60, 20_000]),
    producers=st.dictionaries(st.integers(1, 3), st.tuples(st.integers(-1, 40), st.integers(0, 1))),
)
def test_the_superseded_bitmap_answers_as_the_map(data: bytes, start_offset: int,
                                                  superseded: int, end_offset: int, now: int,
                                                  producers: dict[int, tuple[int, int]]) -> None:  # fmt: skip
    """A cleaning's filter decides the same with the bitmap (1 to 512 offsets
    from the first dirty one, or fewer up to an end offset, so also past its
    end) as with the map alone, in both twins, and the twins' bitmaps hold the
    same bits."""
    results = []
    for twin in TWINS:
        plain = build_map(twin, data, start_offset, None)
        tracked = build_map(twin, data, start_offset, superseded, end_offset)
        latest = plain.latest_offset
        assert tracked.latest_offset == latest
        args = (data, 100_000, latest, now, producers, True)
        expected = filter_with(twin, plain, *args)
        assert filter_with(twin, tracked, *args) == expected
        results.append((expected, [tracked.superseded(o) for o in range(-1, 600)]))
    assert results[0] == results[1]


@pytest.mark.parametrize("twin", ["py", "c"])
def test_the_superseded_bitmap(twin: str) -> None:
    t = _clean_py if twin == "py" else _clean_c
    m = t.OffsetMap(24 * 100, 2)  # 16 offsets
    assert m.memory == 24 * 100 + 2
    assert m.superseded(10) == -1  # off until a cleaning tracks it
    assert not m.track_superseded(10, 10)  # an empty range
    assert m.track_superseded(10, 1000)
    m.put(b"a", 10)
    m.put(b"b", 11)
    m.put(b"a", 12)
    m.put(b"a", 30)  # replaces 12; 30 itself is past the bitmap
    m.put(b"b", 31)
    assert [m.superseded(o) for o in (9, 10, 11, 12, 13, 25, 26, 30)] == [-1, 1, 1, 1, 0, 0, -1, -1]
    m.put(b"c", 31)  # not after the previous put: the bitmap stops answering
    assert m.superseded(10) == -1
    m.clear()
    assert m.superseded(10) == -1
    assert m.track_superseded(10, 13)  # up to an end: offsets 10, 11, 12 (a byte's worth)
    m.put(b"a", 10)
    m.put(b"a", 17)
    m.put(b"a", 18)
    assert [m.superseded(o) for o in (10, 17, 18)] == [1, 1, -1]
    m.clear()
    m.put(b"x", 1)
    assert not m.track_superseded(0, 100)  # only on an empty map
    assert not t.OffsetMap(24 * 100).track_superseded(0, 100)  # only with a bitmap


def test_a_key_past_its_record_is_the_same_error_in_both_twins() -> None:
    """Found by the property above: the reference read the value's length
    past the record before it noticed the key ran past it."""
    rec = bytearray(record(0, 0, b"abc", b"v", []))
    assert rec[4] == 6  # the key's length, zig-zag 3
    rec[4] = 100  # 50 bytes: past the record
    results = []
    for t in TWINS:
        m = t.OffsetMap(24 * 8)
        results.append(
            outcome(
                t.filter_records,
                m,
                bytes(rec),
                0,
                len(rec),
                count=1,
                base_offset=0,
                base_timestamp=0,
                log_append_time=-1,
                horizon=-1,
                now=0,
                new_horizon=7,
                latest_offset=5,
                out=bytearray(100),
                out_pos=0,
            )
        )
    assert results[0] == results[1]
    assert "key or value past the record" in results[0][2]


def test_a_magic_byte_is_signed_in_both_twins() -> None:
    entry = bytearray(legacy_entry(0, 1, b"v"))
    entry[16] = 0x82
    data = bytes(entry)
    for twin_results in (
        [
            outcome(
                t.map_chunk, t.OffsetMap(96), data, 0, len(data), start_offset=0, max_entries=10
            )
            for t in TWINS
        ],
        [
            outcome(
                t.filter_chunk,
                t.OffsetMap(96),
                t.ActiveProducers({}),
                data,
                0,
                len(data),
                out=bytearray(100),
                out_pos=0,
                latest_offset=5,
                now=0,
                new_horizon=0,
                retain_legacy_deletes=True,
            )
            for t in TWINS
        ],
    ):
        assert twin_results[0] == twin_results[1]
        assert "Invalid magic -126" in twin_results[0][2]


TWINS = (_clean_py, _clean_c)
