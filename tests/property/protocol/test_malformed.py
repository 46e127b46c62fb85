"""Hostile bytes only ever raise DecodeError, quickly and without big allocations.

* random bytes into every decoder of every version (requests and responses),
  and into the request-header parser;
* every strict prefix of a valid encoding (truncation anywhere);
* valid encodings with bytes flipped, inserted or deleted;
* hand-made lies: counts and lengths far beyond the buffer, overlong varints,
  with a ``tracemalloc`` bound on what decoding them may allocate.
"""

from __future__ import annotations

import contextlib
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import DecodeError, decode, encode, parse_request_header
from broker.protocol.messages import CODECS, FetchRequest, MetadataRequest, ProduceRequest
from tests.protocol_values import message_versions, messages

CASES = message_versions()
MESSAGE_VERSION = st.sampled_from(CASES)


def decodes_or_rejects(name: str, version: int, buf: bytes) -> None:
    """Decoding may succeed or raise DecodeError; anything else fails the test."""
    with contextlib.suppress(DecodeError):
        CODECS[name].decoder(version)(buf, 0)


@settings(max_examples=400, deadline=None)
@given(case=MESSAGE_VERSION, buf=st.binary(max_size=120))
def test_random_bytes(case, buf):
    decodes_or_rejects(*case, buf)


@settings(max_examples=300, deadline=None)
@given(buf=st.binary(max_size=40))
def test_random_request_headers(buf):
    try:
        header = parse_request_header(buf)
    except DecodeError:
        return
    assert 8 <= header.size <= len(buf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=MESSAGE_VERSION)
def test_every_truncation_is_rejected(data, case):
    name, version = case
    wire = encode(data.draw(messages(name, version)), version).to_bytes()
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            CODECS[name].decoder(version)(wire[:cut], 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=MESSAGE_VERSION)
def test_mutations(data, case):
    name, version = case
    wire = bytearray(encode(data.draw(messages(name, version)), version).to_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(wire)))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        if action == "insert" or not wire or where == len(wire):
            wire[where:where] = bytes([data.draw(st.integers(0, 255))])
        elif action == "flip":
            wire[where] ^= data.draw(st.integers(1, 255))
        else:
            del wire[where]
    decodes_or_rejects(name, version, bytes(wire))


PRODUCE_V3_HEAD = struct.pack(">hhi", -1, 1, 1000)
LIES = {
    "topic count 2**31-1": (
        ProduceRequest,
        3,
        PRODUCE_V3_HEAD + struct.pack(">i", 2**31 - 1),
        "topic_data: count does not fit",
    ),
    "negative topic count": (
        ProduceRequest,
        3,
        PRODUCE_V3_HEAD + struct.pack(">i", -7),
        "non-nullable field topic_data",
    ),
    "records length 2**31-1": (
        ProduceRequest,
        3,
        PRODUCE_V3_HEAD + struct.pack(">ih1sii", 1, 1, b"t", 1, 0) + struct.pack(">i", 2**31 - 1),
        "records: length runs past the end",
    ),
    "string length 0x7fff, 3 bytes": (
        ProduceRequest,
        3,
        struct.pack(">h", 0x7FFF) + b"abc",
        "transactional_id: length runs past the end",
    ),
    "compact count 2**32-2": (
        MetadataRequest,
        9,
        b"\xff\xff\xff\xff\x0f" + b"\x00" * 8,
        "topics: count does not fit",
    ),
    "array of 2**31-1 ints": (
        FetchRequest,
        7,
        struct.pack(">iiiibiiii", -1, 0, 0, 0, 0, 0, 0, 0, 1)
        + b"\x00\x00"
        + struct.pack(">i", 2**31 - 1),
        "partitions: count does not fit",
    ),
    "overlong varint": (
        MetadataRequest,
        9,
        b"\x80\x80\x80\x80\x80\x01",
        "longer than 5 bytes",
    ),
    "tag count 2**32-1": (
        MetadataRequest,
        9,
        b"\x01\x01\x00\x00" + b"\xff\xff\xff\xff\x0f",
        "varint runs past the end",
    ),
    "tag size 2**31": (
        MetadataRequest,
        9,
        b"\x01\x01\x00\x00" + b"\x01\x05" + b"\x80\x80\x80\x80\x08" + b"x" * 10,
        "tagged field runs past the end",
    ),
}


@pytest.mark.parametrize("lie", LIES, ids=list(LIES))
def test_lying_lengths_allocate_nothing_big(lie):
    cls, version, buf, reason = LIES[lie]
    decode(cls, version, encode(cls(), version).to_bytes())  # compile it outside the measure
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match=reason):
            decode(cls, version, buf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"decoding {len(buf)} hostile bytes allocated {peak} bytes"
