"""The typed facade over the generated codecs: message classes, lookups, framing.

A request frame (after the 4-byte size prefix the server cut off) and a
response frame (with the size prefix, as ``encode_response`` returns it)::

    request  => RequestHeader (v0/v1/v2)  body (the API's request, in header.api_version)
    response => size:INT32  ResponseHeader (v0/v1)  body (the API's response)

Server side::

    header = parse_request_header(frame)                  # header.py
    request = decode_request(header, frame)               # DecodeError on bad bytes
    response = ProduceResponse(responses=[...])           # one class for all versions
    encoded = encode_response(header, response)           # Encoded: segments + size
    transport.writelines(encoded.segments)

``request_decoder`` / ``response_encoder`` return the generated functions
themselves for callers that look them up once. Codecs for a version are
compiled on first use; :func:`compile_all` compiles every one up front
(a server may call it at start-up so no request pays for it).
"""

from __future__ import annotations

import struct
from typing import Final

from broker.protocol.api_keys import API_KEYS
from broker.protocol.data import Data
from broker.protocol.encoded import Encoded
from broker.protocol.generator import Decoder, Encoder, MessageCodec
from broker.protocol.header import (
    RequestHeader,
    encode_request_header,
    parse_response_header,
    response_header_version,
)
from broker.protocol.primitives import DecodeError, EncodeError
from broker.records.buffers import ReadableBuffer

_INT32 = struct.Struct(">i")
_SIZE_PREFIX = struct.Struct(">i").pack_into

CODECS: Final[dict[str, MessageCodec]] = {
    spec.name: MessageCodec(spec)
    for api in API_KEYS.values()
    for spec in (api.request, api.response)
}
_REQUESTS = {api.key: CODECS[api.request.name] for api in API_KEYS.values()}
_RESPONSES = {api.key: CODECS[api.response.name] for api in API_KEYS.values()}
_BY_CLASS = {codec.cls: codec for codec in CODECS.values()}


def codec_for(message: Data) -> MessageCodec:
    try:
        return _BY_CLASS[type(message)]
    except KeyError:
        raise EncodeError(f"{type(message).__qualname__} is not a top-level message") from None


def _request_codec(api_key: int) -> MessageCodec:
    try:
        return _REQUESTS[api_key]
    except KeyError:
        # RequestHeader.parse: InvalidRequestException("Unknown API key ...")
        raise DecodeError(f"Unknown API key {api_key}") from None


def request_decoder(api_key: int, api_version: int) -> Decoder:
    """The decoder of an API's request body.

    DecodeError (INVALID_REQUEST) for an API key we do not serve,
    UnsupportedVersionError for a version outside the API's range.
    """
    return _request_codec(api_key).decoder(api_version)


def response_encoder(api_key: int, api_version: int) -> Encoder:
    return _RESPONSES[api_key].encoder(api_version)


def request_encoder(api_key: int, api_version: int) -> Encoder:
    return _REQUESTS[api_key].encoder(api_version)


def response_decoder(api_key: int, api_version: int) -> Decoder:
    return _RESPONSES[api_key].decoder(api_version)


def decode_request(header: RequestHeader, frame: ReadableBuffer) -> Data:
    """The body of a request frame whose header is ``header`` (trailing bytes ignored, as Kafka)."""
    return _request_codec(header.api_key).decoder(header.api_version)(frame, header.size)[0]


def encode(message: Data, version: int) -> Encoded:
    """The body of ``message`` in ``version``, without header or size prefix."""
    segments, size = codec_for(message).encoder(version)(message, bytearray())
    return Encoded(segments, size)


def decode(cls: type[Data], version: int, buf: ReadableBuffer, pos: int = 0) -> Data:
    """Decode a body of message class ``cls`` (tests and tools)."""
    return _BY_CLASS[cls].decoder(version)(buf, pos)[0]


#: per API key and version: (response class, encoder, bytes of size + response header)
_RESPONSE_PLANS: dict[int, dict[int, tuple[type[Data], Encoder, int]]] = {
    key: {} for key in _RESPONSES
}
_SIZE_AND_ID_INTO = struct.Struct(">ii").pack_into


def _response_plan(api_key: int, api_version: int) -> tuple[type[Data], Encoder, int]:
    codec = _RESPONSES.get(api_key)
    if codec is None:
        raise EncodeError(f"no response encoder for API key {api_key}")
    # size + correlation id, and for response header v1 one zero byte: its empty tag buffer
    head = 9 if response_header_version(api_key, api_version) >= 1 else 8
    plan = (codec.cls, codec.encoder(api_version), head)
    _RESPONSE_PLANS[api_key][api_version] = plan
    return plan


def encode_response(
    header: RequestHeader, response: Data, *, version: int | None = None
) -> Encoded:
    """A whole response frame: size prefix, response header, body.

    ``version`` overrides the request's version: an ApiVersions request of an
    unsupported version is answered with a v0 body (``RequestContext.parseRequest``).
    """
    api_version = header.api_version if version is None else version
    try:
        cls, encoder, head = _RESPONSE_PLANS[header.api_key][api_version]
    except KeyError:  # first use of this version, or an API we do not serve
        cls, encoder, head = _response_plan(header.api_key, api_version)
    if type(response) is not cls:
        raise EncodeError(
            f"{type(response).__qualname__} is not the response of API {header.api_key}"
        )
    out = bytearray(head)
    segments, size = encoder(response, out)
    _SIZE_AND_ID_INTO(out, 0, size - 4, header.correlation_id)
    return Encoded(segments, size)


def encode_request(
    api_version: int, correlation_id: int, client_id: str | None, request: Data
) -> Encoded:
    """A whole request frame with size prefix (what a client sends; tests and the benchmark)."""
    codec = codec_for(request)
    api_key = codec.spec.api_key
    out = bytearray(4)
    out += encode_request_header(api_key, api_version, correlation_id, client_id)
    segments, size = codec.encoder(api_version)(request, out)
    _SIZE_PREFIX(out, 0, size - 4)
    return Encoded(segments, size)


def decode_response(api_key: int, api_version: int, frame: ReadableBuffer) -> tuple[int, Data]:
    """``(correlation_id, body)`` of a response frame without its size prefix."""
    correlation_id, pos = parse_response_header(
        frame, response_header_version(api_key, api_version)
    )
    return correlation_id, _RESPONSES[api_key].decoder(api_version)(frame, pos)[0]


def compile_all() -> int:
    """Compile every decoder and encoder of every version; returns how many."""
    count = 0
    for codec in CODECS.values():
        valid = codec.spec.valid
        for version in range(valid.low, (valid.high or valid.low) + 1):
            codec.decoder(version)
            codec.encoder(version)
            count += 2
    return count


def _cls(name: str) -> type[Data]:
    return CODECS[name].cls


ApiVersionsRequest: Final = _cls("ApiVersionsRequest")
SaslHandshakeRequest: Final = _cls("SaslHandshakeRequest")
SaslHandshakeResponse: Final = _cls("SaslHandshakeResponse")
SaslAuthenticateRequest: Final = _cls("SaslAuthenticateRequest")
SaslAuthenticateResponse: Final = _cls("SaslAuthenticateResponse")
DescribeUserScramCredentialsRequest: Final = _cls("DescribeUserScramCredentialsRequest")
DescribeUserScramCredentialsResponse: Final = _cls("DescribeUserScramCredentialsResponse")
AlterUserScramCredentialsRequest: Final = _cls("AlterUserScramCredentialsRequest")
AlterUserScramCredentialsResponse: Final = _cls("AlterUserScramCredentialsResponse")
ApiVersionsResponse: Final = _cls("ApiVersionsResponse")
MetadataRequest: Final = _cls("MetadataRequest")
MetadataResponse: Final = _cls("MetadataResponse")
ProduceRequest: Final = _cls("ProduceRequest")
ProduceResponse: Final = _cls("ProduceResponse")
InitProducerIdRequest: Final = _cls("InitProducerIdRequest")
InitProducerIdResponse: Final = _cls("InitProducerIdResponse")
FetchRequest: Final = _cls("FetchRequest")
FetchResponse: Final = _cls("FetchResponse")
ListOffsetsRequest: Final = _cls("ListOffsetsRequest")
ListOffsetsResponse: Final = _cls("ListOffsetsResponse")
OffsetForLeaderEpochRequest: Final = _cls("OffsetForLeaderEpochRequest")
OffsetForLeaderEpochResponse: Final = _cls("OffsetForLeaderEpochResponse")
CreateTopicsRequest: Final = _cls("CreateTopicsRequest")
CreateTopicsResponse: Final = _cls("CreateTopicsResponse")
DeleteTopicsRequest: Final = _cls("DeleteTopicsRequest")
DeleteTopicsResponse: Final = _cls("DeleteTopicsResponse")
DescribeConfigsRequest: Final = _cls("DescribeConfigsRequest")
DescribeConfigsResponse: Final = _cls("DescribeConfigsResponse")
AlterConfigsRequest: Final = _cls("AlterConfigsRequest")
AlterConfigsResponse: Final = _cls("AlterConfigsResponse")
IncrementalAlterConfigsRequest: Final = _cls("IncrementalAlterConfigsRequest")
IncrementalAlterConfigsResponse: Final = _cls("IncrementalAlterConfigsResponse")
CreatePartitionsRequest: Final = _cls("CreatePartitionsRequest")
CreatePartitionsResponse: Final = _cls("CreatePartitionsResponse")
DescribeClusterRequest: Final = _cls("DescribeClusterRequest")
DescribeClusterResponse: Final = _cls("DescribeClusterResponse")
FindCoordinatorRequest: Final = _cls("FindCoordinatorRequest")
FindCoordinatorResponse: Final = _cls("FindCoordinatorResponse")
DescribeLogDirsRequest: Final = _cls("DescribeLogDirsRequest")
DescribeLogDirsResponse: Final = _cls("DescribeLogDirsResponse")
DescribeAclsRequest: Final = _cls("DescribeAclsRequest")
DescribeAclsResponse: Final = _cls("DescribeAclsResponse")
CreateAclsRequest: Final = _cls("CreateAclsRequest")
CreateAclsResponse: Final = _cls("CreateAclsResponse")
DeleteAclsRequest: Final = _cls("DeleteAclsRequest")
DeleteAclsResponse: Final = _cls("DeleteAclsResponse")
DeleteRecordsRequest: Final = _cls("DeleteRecordsRequest")
DeleteRecordsResponse: Final = _cls("DeleteRecordsResponse")
JoinGroupRequest: Final = _cls("JoinGroupRequest")
JoinGroupResponse: Final = _cls("JoinGroupResponse")
SyncGroupRequest: Final = _cls("SyncGroupRequest")
SyncGroupResponse: Final = _cls("SyncGroupResponse")
HeartbeatRequest: Final = _cls("HeartbeatRequest")
HeartbeatResponse: Final = _cls("HeartbeatResponse")
LeaveGroupRequest: Final = _cls("LeaveGroupRequest")
LeaveGroupResponse: Final = _cls("LeaveGroupResponse")
OffsetCommitRequest: Final = _cls("OffsetCommitRequest")
OffsetCommitResponse: Final = _cls("OffsetCommitResponse")
OffsetFetchRequest: Final = _cls("OffsetFetchRequest")
OffsetFetchResponse: Final = _cls("OffsetFetchResponse")
OffsetDeleteRequest: Final = _cls("OffsetDeleteRequest")
OffsetDeleteResponse: Final = _cls("OffsetDeleteResponse")
DescribeGroupsRequest: Final = _cls("DescribeGroupsRequest")
DescribeGroupsResponse: Final = _cls("DescribeGroupsResponse")
ListGroupsRequest: Final = _cls("ListGroupsRequest")
ListGroupsResponse: Final = _cls("ListGroupsResponse")
DeleteGroupsRequest: Final = _cls("DeleteGroupsRequest")
DeleteGroupsResponse: Final = _cls("DeleteGroupsResponse")
ConsumerGroupHeartbeatRequest: Final = _cls("ConsumerGroupHeartbeatRequest")
ConsumerGroupHeartbeatResponse: Final = _cls("ConsumerGroupHeartbeatResponse")
ConsumerGroupDescribeRequest: Final = _cls("ConsumerGroupDescribeRequest")
ConsumerGroupDescribeResponse: Final = _cls("ConsumerGroupDescribeResponse")
