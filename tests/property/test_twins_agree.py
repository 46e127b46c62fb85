"""The pure-Python reference and the compiled twin agree: on random valid
input, and on corrupted input (bit flips, truncations, overwritten fields),
the same result or the same exception type and message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.errors import KafkaError
from broker.records import _scan_py, legacy, scan
from broker.records import batch as v2
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord, varint_bytes
from broker.validator import NullRecorder, validate_records

from .strategies import simple_records
from .twin_switch import using

TWINS = [_scan_py, scan.impl]
LONG_MAX = 2**63 - 1


def _outcome(fn):
    try:
        value = fn()
    except KafkaError as e:
        return ("raised", type(e).__name__, int(e.code), str(e))
    return ("ok", value)


def _validate(buf, version, config):
    def run():
        r = validate_records(
            memoryview(bytearray(buf)), topic="t", partition=0, config=config, next_offset=5,
            partition_leader_epoch=1, now_ms=1_700_000_000_000, produce_version=version,
            recorder=NullRecorder(),
        )  # fmt: skip
        return (bytes(r.validated_records), r.num_records, r.max_timestamp,
                r.shallow_offset_of_max_timestamp, r.message_size_maybe_changed)  # fmt: skip

    return run


@st.composite
def corrupted(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    records = draw(simple_records(with_headers=magic == 2, max_size=6))
    codec = draw(st.sampled_from([0, 1]))
    if magic == 2:
        buf = build_v2_batch(records, compression_type=codec).buffer
    else:
        buf = build_legacy(records, magic=magic, compression_type=codec).buffer
    kind = draw(st.sampled_from(["flip", "truncate", "overwrite", "none"]))
    if kind == "flip" and buf:
        i = draw(st.integers(0, len(buf) - 1))
        buf[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "truncate":
        buf = buf[: draw(st.integers(0, len(buf)))]
    elif kind == "overwrite" and len(buf) > 4:
        i = draw(st.integers(0, len(buf) - 4))
        buf[i : i + 4] = draw(st.binary(min_size=4, max_size=4))
    if draw(st.booleans()):
        _fix_crc(buf)  # so the corruption reaches the record walks, not only the CRC check
    return buf, magic, draw(st.sampled_from(["producer", "gzip", "uncompressed"]))


def _fix_crc(buf):
    if len(buf) < 17:
        return
    size = int.from_bytes(buf[8:12], "big", signed=True) + 12
    if size > len(buf) or size < 26:
        return
    if buf[16] == 2 and size >= 61:
        v2.write_crc(buf, 0, size)
    elif buf[16] in (0, 1):
        crc = legacy.compute_crc(buf, 0, size)
        buf[legacy.RECORD_CRC_OFFSET : legacy.RECORD_CRC_OFFSET + 4] = crc.to_bytes(4, "big")


@settings(max_examples=200, deadline=None)
@given(corrupted())
def test_validator_twins_agree(case):
    buf, magic, topic_codec = case
    version = {0: 0, 1: 2, 2: 9}[magic]
    config = TopicConfig(compression_type=topic_codec)
    outcomes = []
    for twin in TWINS:
        with using(twin):
            outcomes.append(_outcome(_validate(buf, version, config)))
    assert outcomes[0] == outcomes[1]


@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=200),
    st.integers(0, 40),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
)
def test_walks_agree_on_random_bytes(data, count, compacted, lat, want, limit):
    results = []
    for twin in TWINS:
        results.append(
            (
                _outcome(
                    lambda t=twin: t.walk_v2(
                        data,
                        0,
                        len(data),
                        count=count,
                        base_offset=0,
                        base_timestamp=1000,
                        lat_batch=lat,
                        batch_max_timestamp=5,
                        now=1000,
                        before_max=10,
                        after_max=10,
                        create_time=True,
                        compacted=compacted,
                        want_canonical=want,
                        error_limit=limit,
                    )
                ),
                _outcome(
                    lambda t=twin: t.walk_legacy(
                        data,
                        0,
                        len(data),
                        wrapper_magic=1,
                        wrapper_offset=3,
                        wrapper_timestamp=7,
                        wrapper_lat=lat,
                        now=1000,
                        before_max=LONG_MAX,
                        after_max=LONG_MAX,
                        create_time=True,
                        compacted=compacted,
                        out=bytearray(len(data) * 2 + 64),
                        out_pos=0,
                        error_limit=limit,
                    )
                ),
                _outcome(lambda t=twin: t.scan_entries(data, 0, len(data), 1 << 20, True)),
                _outcome(lambda t=twin: t.read_varint(data, 0, len(data))),
                _outcome(lambda t=twin: t.read_varlong(data, 0, len(data))),
                t_crc(twin, data),
            )
        )
    assert results[0] == results[1]


def t_crc(twin, data):
    return twin.crc32(data, 0, len(data))


@settings(max_examples=80, deadline=None)
@given(simple_records(max_size=8), st.integers(0, 1), st.integers(-1, 50), st.booleans())
def test_encoders_agree(records, to_magic, renumber, lat):
    buf = build_v2_batch(records, base_offset=7).buffer
    count = len(records)
    outs = []
    for twin in TWINS:
        out1 = bytearray(len(buf) * 3 + 64)
        end1 = twin.reencode_v2(buf, 61, len(buf), count=count, base_timestamp=1000,
                                lat_batch=lat, batch_max_timestamp=77, out=out1,
                                out_pos=0)  # fmt: skip
        out2 = bytearray(len(buf) * 3 + 64 * count)
        res2 = twin.v2_to_legacy(buf, 61, len(buf), count=count, base_offset=7,
                                 base_timestamp=records[0].timestamp, lat_batch=lat,
                                 batch_max_timestamp=77, to_magic=to_magic,
                                 renumber_from=renumber, relative_offsets=bool(renumber % 2),
                                 first_offset=-(2**63), log_append_time=-1 if not lat else 99,
                                 clamp_timestamps=True, out=out2, out_pos=0)  # fmt: skip
        outs.append((bytes(out1[:end1]), res2, bytes(out2[: res2[1]])))
    assert outs[0] == outs[1]


@settings(max_examples=40, deadline=None)
@given(simple_records(min_size=2, max_size=6), st.integers(0, 60))
def test_encoders_refuse_a_small_output_buffer_alike(records, room):
    """Output bounds are checked per record: never a write past the buffer."""
    buf = build_v2_batch(records).buffer
    legacy_set = build_legacy([r.__class__(max(r.timestamp, -1), r.key, r.value) for r in records],
                              magic=1).buffer  # fmt: skip
    outcomes = []
    for twin in TWINS:
        got = []
        for call in (
            lambda t=twin: t.reencode_v2(buf, 61, len(buf), count=len(records),
                                         base_timestamp=0, lat_batch=False,
                                         batch_max_timestamp=0, out=bytearray(room), out_pos=0),
            lambda t=twin: t.v2_to_legacy(buf, 61, len(buf), count=len(records), base_offset=0,
                                          base_timestamp=0, lat_batch=False,
                                          batch_max_timestamp=0, to_magic=1, renumber_from=0,
                                          relative_offsets=False, first_offset=-(2**63),
                                          log_append_time=-1, clamp_timestamps=True,
                                          out=bytearray(room), out_pos=0),
            lambda t=twin: t.walk_legacy(legacy_set, 0, len(legacy_set), wrapper_magic=-1,
                                         wrapper_offset=0, wrapper_timestamp=0,
                                         wrapper_lat=False, now=0, before_max=LONG_MAX,
                                         after_max=LONG_MAX, create_time=False, compacted=False,
                                         out=bytearray(room), out_pos=0, error_limit=20)[:3],
        ):  # fmt: skip
            try:
                got.append(("ok", call()))
            except ValueError as e:
                got.append(("ValueError", str(e)))
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


@st.composite
def long_walks(draw):
    """Batches long enough for the compiled walk's fast path (which keeps a
    32-byte margin before the end), with offset deltas long enough for
    two- and three-byte varints, optionally corrupted in the middle, where
    the fast path, not the checked loop, meets the damage first."""
    n = draw(st.integers(10, 70))
    key = draw(st.one_of(st.none(), st.binary(max_size=12)))
    # all within the test's tightest limits around now=1005, or some not (record errors)
    timestamps = st.sampled_from(
        [1000, 1003, 1009] if draw(st.booleans()) else [1000, 1003, 1009, 2000, -1]
    )
    records = [
        SimpleRecord(
            draw(timestamps),
            key if draw(st.integers(0, 9)) else None,
            draw(st.binary(max_size=30)),
            draw(st.sampled_from([(), (("h", b"v"),), (("k", None), ("", b"x" * 3))])),
        )
        for _ in range(n)
    ]
    base_offset = draw(st.sampled_from([0, 5, 2**40]))
    # consecutive (canonical), or with gaps for 2- to 4-byte offset deltas
    steps = st.sampled_from([1, 1, 1, 1, 300, 70_000, 2**22, 2**24] if draw(st.booleans()) else [1])
    offsets, offset = [], base_offset
    for _ in range(n):
        offsets.append(offset)
        offset += draw(steps)
    buf = build_v2_batch(records, base_offset=base_offset, offsets=offsets).buffer
    base_timestamp = v2.read_header(buf, 0).base_timestamp
    data = bytearray(buf[v2.RECORDS_OFFSET :])
    # valid but not canonical ("attributes", "delta", "padded") as often as broken
    kind = draw(
        st.sampled_from(
            [
                *("none", "attributes", "delta", "padded", "padded"),
                *("flip", "overwrite", "long-varint", "length"),
            ]
        )
    )
    if kind in ("attributes", "delta", "padded"):  # valid, not in the canonical form
        data = _non_canonical(draw, data, draw(st.integers(0, n - 1)), kind)
    elif kind == "length":  # one record's length prefix off by a little, the rest intact
        pos, length, body = _record_at(data, draw(st.integers(0, n - 1)))
        data[pos:body] = varint_bytes(length + draw(st.sampled_from([-3, -1, 1, 2, 40])))
    elif data and kind != "none":
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "overwrite":
            data[i : i + 4] = draw(st.binary(min_size=1, max_size=4))
        else:  # a varint continuation run: four- and five-byte varints, or too long
            data[i : i + 1] = b"\x80" * draw(st.integers(1, 6)) + b"\x01"
    count = draw(st.sampled_from([n, n, n, n - 1, n + 1]))
    return bytes(data), count, base_offset, base_timestamp


def _record_at(data, k):
    """Record ``k`` of the records section ``data``: where it starts, its
    length prefix's value, where its body starts."""
    pos = 0
    for _ in range(k):
        length, body = _scan_py.read_varint(data, pos, len(data))
        pos = body + length
    length, body = _scan_py.read_varint(data, pos, len(data))
    return pos, length, body


def _non_canonical(draw, data, k, kind):
    """``data`` with record ``k`` still valid but no longer canonical: its
    attributes set, its one-byte offset delta replaced (out of order), or one
    of its varints padded."""
    if kind == "padded":
        return _pad_one_varint(data, k, draw(st.integers(0, 7)))
    _, _, body = _record_at(data, k)
    if kind == "attributes":
        data[body] = draw(st.integers(1, 255))
    else:
        _, delta_at = _scan_py.read_varlong(data, body + 1, len(data))
        if data[delta_at] < 0x80:
            data[delta_at] = draw(st.integers(0, 0x7F))
    return data


def _pad_one_varint(data, k, which):
    """Record ``k`` of ``data`` with varint number ``which`` (timestamp delta,
    offset delta, key length, value length, header count, first header key
    length, first header value length; 7: the length prefix) written one byte
    longer than it needs (a 0x80 continuation, then 0x00), and its length
    prefix grown to match."""
    pos, length, body = _record_at(data, k)
    p = body + 1  # attributes
    spots = []
    _, q = _scan_py.read_varlong(data, p, len(data))
    spots.append((p, q))
    p = q
    for field in range(5):  # offset delta, key, value, header count, header key
        value, q = _scan_py.read_varint(data, p, len(data))
        spots.append((p, q))
        p = q + (value if field in (1, 2, 4) and value > 0 else 0)
        if field == 3 and value == 0:
            break
    else:
        spots.append((p, _scan_py.read_varint(data, p, len(data))[1]))
    if which == 7:  # the length prefix itself
        prefix = bytes(data[pos:body])
        return data[:pos] + prefix[:-1] + bytes([prefix[-1] | 0x80, 0]) + data[body:]
    if which >= len(spots):
        return data
    start, stop = spots[which]
    padded = bytes(data[start : stop - 1]) + bytes([data[stop - 1] | 0x80, 0])
    record = bytes(data[body:start]) + padded + bytes(data[stop : body + length])
    return data[:pos] + varint_bytes(length + 1) + record + data[body + length :]


@settings(max_examples=500, deadline=None)
@given(
    long_walks(),
    st.booleans(),
    # (0, 5) puts every record on the checked loop (each one is a record error)
    st.sampled_from([(10, 10), (LONG_MAX, LONG_MAX), (LONG_MAX, LONG_MAX), (0, 5)]),
    st.booleans(),
)
def test_walk_v2_fast_path_agrees(case, compacted, limits, want_canonical):
    """The compiled walk takes ordinary records on an unchecked fast path and
    hands anything else to its checked loop: same results, same errors."""
    data, count, base_offset, base_timestamp = case
    before_max, after_max = limits

    def walk(twin):
        return twin.walk_v2(
            data, 0, len(data), count=count, base_offset=base_offset,
            base_timestamp=base_timestamp, lat_batch=False, batch_max_timestamp=-1, now=1005,
            before_max=before_max, after_max=after_max, create_time=True, compacted=compacted,
            want_canonical=want_canonical, error_limit=20,
        )  # fmt: skip

    outcomes = [_outcome(lambda t=twin: walk(t)) for twin in TWINS]
    assert outcomes[0] == outcomes[1]


@st.composite
def valid_long_batches(draw):
    """Long, valid batches, canonical or made non-canonical in one record
    (attributes set, an offset delta out of order, a varint padded)."""
    n = draw(st.integers(10, 70))
    headers = draw(st.sampled_from([(), (("h", b"v"),), (("k", None), ("", b"x" * 3))]))
    records = [
        SimpleRecord(
            1000 + draw(st.integers(0, 9)), draw(st.binary(max_size=9)), b"v" * 20, headers
        )
        for _ in range(n)
    ]
    data = bytearray(build_v2_batch(records).buffer[v2.RECORDS_OFFSET :])
    kind = draw(st.sampled_from(["none", "attributes", "delta", "padded"]))
    if kind != "none":
        data = _non_canonical(draw, data, draw(st.integers(0, n - 1)), kind)
    return bytes(data), n


@settings(max_examples=400, deadline=None)
@given(valid_long_batches())
def test_walk_v2_fast_path_canonical_agrees(case):
    """The fast path tracks the canonical form as the checked loop does."""
    data, n = case

    def walk(twin):
        return twin.walk_v2(
            data, 0, len(data), count=n, base_offset=0, base_timestamp=1000, lat_batch=False,
            batch_max_timestamp=-1, now=1005, before_max=LONG_MAX, after_max=LONG_MAX,
            create_time=True, compacted=False, want_canonical=True, error_limit=20,
        )  # fmt: skip

    outcomes = [_outcome(lambda t=twin: walk(t)) for twin in TWINS]
    assert outcomes[0] == outcomes[1]


def _header_count_at(data, k):
    """Where record ``k``'s header count is (records of ``_headers_batch``)."""
    _, _, body = _record_at(data, k)
    _, p = _scan_py.read_varlong(data, body + 1, len(data))  # timestamp delta
    _, p = _scan_py.read_varint(data, p, len(data))  # offset delta
    for _ in range(2):  # key, value
        size, p = _scan_py.read_varint(data, p, len(data))
        p += max(size, 0)
    return p


def _headers_batch():
    records = [SimpleRecord(1000, b"k", b"v" * 20, (("h", b""),)) for _ in range(40)]
    return bytearray(build_v2_batch(records).buffer[v2.RECORDS_OFFSET :])


def _count_beyond_headers():
    """Record 5 declares two headers and holds one, ending where the second
    would start."""
    data = _headers_batch()
    data[_header_count_at(data, 5)] = 4  # zig-zag 2
    return data


def _header_without_value():
    """Record 5's only header has a key and ends before its value's length."""
    data = _headers_batch()
    pos, length, body = _record_at(data, 5)
    value_length_at = _header_count_at(data, 5) + 3  # count, key length, key "h"
    del data[value_length_at]
    data[pos:body] = varint_bytes(length - 1)
    return data


@pytest.mark.parametrize("make", [_count_beyond_headers, _header_without_value])
def test_walk_v2_fast_path_hands_over_short_headers(make):
    """A record whose headers stop at its end before the count is reached is
    the checked loop's to refuse, not a record the fast path takes."""
    data = bytes(make())

    def walk(twin):
        return twin.walk_v2(
            data, 0, len(data), count=40, base_offset=0, base_timestamp=1000, lat_batch=False,
            batch_max_timestamp=-1, now=1005, before_max=LONG_MAX, after_max=LONG_MAX,
            create_time=True, compacted=False, want_canonical=False, error_limit=20,
        )  # fmt: skip

    outcomes = [_outcome(lambda t=twin: walk(t)) for twin in TWINS]
    assert outcomes[0][0] == "raised"
    assert outcomes[0] == outcomes[1]
