"""Request headers v0/v1/v2, response headers v0/v1, and which version goes with which API."""

from __future__ import annotations

import struct

import pytest

from broker.protocol import (
    DecodeError,
    EncodeError,
    decode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
    parse_request_header,
    parse_response_header,
    request_header_version,
    response_header_version,
)
from broker.protocol.messages import ApiVersionsResponse, MetadataResponse, ProduceResponse


def test_request_header_v1():
    frame = struct.pack(">hhih", 3, 8, 1234, 3) + b"cli" + b"BODY"
    header = parse_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 8, 1234)
    assert (header.client_id, header.header_version, header.size) == ("cli", 1, 13)


def test_flexible_request_header_skips_tagged_fields():
    # Metadata v9 is flexible: header v2. client_id keeps its INT16 length
    # ("flexibleVersions": "none"), then a tag buffer with two unknown tags.
    tags = b"\x02" + b"\x00\x03abc" + b"\x81\x01\x01z"  # tag 0 (3 bytes), tag 129 (1 byte)
    frame = struct.pack(">hhih", 3, 9, 7, 2) + b"id" + tags + b"\x01"
    header = parse_request_header(frame)
    assert header.header_version == 2
    assert header.client_id == "id"
    assert header.size == len(frame) - 1


def test_flexible_header_tag_past_the_end_is_decode_error():
    frame = struct.pack(">hhih", 3, 9, 7, 0) + b"\x01\x00\x05ab"
    with pytest.raises(DecodeError):
        parse_request_header(frame)


def test_null_client_id_becomes_empty():
    # RequestHeader.parse: "we treat a null client ID as equivalent to an empty client ID"
    frame = struct.pack(">hhih", 18, 0, 1, -1)
    header = parse_request_header(frame)
    assert header.client_id == ""
    assert header.size == 10


def test_malformed_utf8_client_id_is_replaced_not_rejected():
    frame = struct.pack(">hhih", 18, 0, 1, 2) + b"\xff\xfe"
    assert parse_request_header(frame).client_id == "\ufffd\ufffd"


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00\x08\x00\x00",  # shorter than key, version, correlation id
        struct.pack(">hhi", 3, 8, 1) + b"\x00",  # half a client_id length
        struct.pack(">hhih", 3, 8, 1, 5) + b"abc",  # client_id runs past the end
        struct.pack(">hhih", 3, 9, 1, 0),  # flexible: tag buffer missing
    ],
)
def test_truncated_header_is_decode_error(frame):
    with pytest.raises(DecodeError):
        parse_request_header(frame)


def test_header_versions_follow_flexible_versions():
    assert [request_header_version(0, v) for v in (0, 8, 9, 11)] == [1, 1, 2, 2]
    assert [response_header_version(0, v) for v in (0, 8, 9, 11)] == [0, 0, 1, 1]
    assert request_header_version(60, 0) == 2  # DescribeCluster is flexible from v0
    assert response_header_version(60, 0) == 1


def test_api_versions_response_header_is_always_v0():
    # KIP-511: the client cannot know whether the broker speaks flexible headers yet
    assert request_header_version(18, 3) == 2
    assert [response_header_version(18, v) for v in range(6)] == [0] * 6
    header = parse_request_header(encode_request_header(18, 3, 99, "c") + b"\x01\x00\x01\x00\x00")
    frame = encode_response(header, ApiVersionsResponse(api_keys=[])).to_bytes()
    # size, correlation id, then the body at once: error_code INT16 (no tag buffer in between)
    assert struct.unpack_from(">iih", frame) == (len(frame) - 4, 99, 0)
    assert frame[10] == 1  # COMPACT_ARRAY of 0 api keys


def test_newer_api_versions_request_parses_with_flexible_header():
    # a client newer than us sends ApiVersions v5: still header v2, so the
    # dispatcher can answer UNSUPPORTED_VERSION with a v0 body
    raw = encode_request_header(18, 5, 3, "newer")
    header = parse_request_header(raw)
    assert (header.api_version, header.header_version, header.size) == (5, 2, len(raw))
    frame = encode_response(header, ApiVersionsResponse(error_code=35), version=0).to_bytes()
    assert struct.unpack(">iihi", frame) == (10, 3, 35, 0)


def test_unknown_api_key_parses_as_v1():
    frame = struct.pack(">hhih", 999, 4, 5, 1) + b"x" + b"rest"
    header = parse_request_header(frame)
    assert (header.api_key, header.correlation_id, header.client_id) == (999, 5, "x")
    assert header.header_version == 1


def test_controlled_shutdown_v0_has_no_client_id():
    frame = struct.pack(">hhi", 7, 0, 5) + b"\x00\x00\x00\x01"
    header = parse_request_header(frame)
    assert (header.header_version, header.size, header.client_id) == (0, 8, "")


def test_encode_request_header_round_trips_null_client_id():
    raw = encode_request_header(0, 9, 17, None)
    assert raw == struct.pack(">hhih", 0, 9, 17, -1) + b"\x00"
    assert parse_request_header(raw).client_id == ""


def test_response_header_v1_has_a_tag_buffer():
    assert encode_response_header(5, 0) == b"\x00\x00\x00\x05"
    assert encode_response_header(5, 1) == b"\x00\x00\x00\x05\x00"
    assert parse_response_header(b"\x00\x00\x00\x05\x01\x00\x01\xaa", 1) == (5, 8)
    with pytest.raises(DecodeError):
        parse_response_header(b"\x00\x00", 0)


def test_response_frame_for_flexible_metadata():
    header = parse_request_header(encode_request_header(3, 12, 42, "c"))
    frame = encode_response(header, MetadataResponse(cluster_id="k")).to_bytes()
    size, correlation_id, tags = struct.unpack_from(">iib", frame)
    assert (size, correlation_id, tags) == (len(frame) - 4, 42, 0)


def test_decode_request_starts_after_the_header():
    raw = encode_request_header(0, 3, 1, "c") + struct.pack(">hhii", -1, 1, 100, 0)
    request = decode_request(parse_request_header(raw), raw)
    assert (request.transactional_id, request.acks, request.timeout_ms) == (None, 1, 100)
    assert request.topic_data == []


def test_encode_response_rejects_the_wrong_message():
    header = parse_request_header(encode_request_header(3, 1, 1, "c"))
    with pytest.raises(EncodeError, match="not the response of API 3"):
        encode_response(header, ProduceResponse())


def test_an_api_we_do_not_serve_is_an_invalid_request():
    header = parse_request_header(struct.pack(">hhih", 999, 0, 5, 0) + b"body")
    with pytest.raises(DecodeError, match="Unknown API key 999"):
        decode_request(header, b"")
    with pytest.raises(EncodeError):
        encode_response(header, ProduceResponse())
