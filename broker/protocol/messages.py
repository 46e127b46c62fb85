"""The typed facade over the generated codecs: message classes, lookups, framing.

A request frame (after the 4-byte size prefix the server cut off) and a
response frame (with the size prefix, as ``encode_response`` returns it)::

    request  => RequestHeader (v0/v1/v2)  body (the API's request, in header.api_version)
    response => size:INT32  ResponseHeader (v0/v1)  body (the API's response)

Client side, ``decode_response_to`` types the body as the request's
response class (the stub's ``Request[...]``)::

    request = MetadataRequest(topics=None)
    frame = encode_request(version, correlation_id, "client", request)
    correlation_id, response = decode_response_to(request, version, answer)  # MetadataResponse

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
from typing import TYPE_CHECKING, Final, TypeVar, cast

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

if TYPE_CHECKING:
    # the stub-only base linking a request class to its response
    from broker.protocol.message_classes import Request

_R = TypeVar("_R", bound=Data)
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


def decode_response_to(
    request: Request[_R], api_version: int, frame: ReadableBuffer
) -> tuple[int, _R]:
    """``(correlation_id, body)`` of the frame answering ``request``, the body typed as the
    request's response class (``MetadataRequest`` -> ``MetadataResponse``).

    The stub links each request class to its response (``Request[...]``); at run
    time the codec tables do, so this is the one place the decoded ``Data``
    becomes that class (``test_stubs`` checks the two pairings agree).
    """
    correlation_id, body = decode_response(codec_for(request).spec.api_key, api_version, frame)
    return correlation_id, cast("_R", body)


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


if TYPE_CHECKING:
    # the classes with their fields, as the generated stub declares them
    # (message_classes.pyi, written by ``python -m broker.protocol.stubs``)
    from broker.protocol.message_classes import *  # noqa: F403
else:
    ApiVersionsRequest = _cls("ApiVersionsRequest")
    SaslHandshakeRequest = _cls("SaslHandshakeRequest")
    SaslHandshakeResponse = _cls("SaslHandshakeResponse")
    SaslAuthenticateRequest = _cls("SaslAuthenticateRequest")
    SaslAuthenticateResponse = _cls("SaslAuthenticateResponse")
    DescribeUserScramCredentialsRequest = _cls("DescribeUserScramCredentialsRequest")
    DescribeUserScramCredentialsResponse = _cls("DescribeUserScramCredentialsResponse")
    AlterUserScramCredentialsRequest = _cls("AlterUserScramCredentialsRequest")
    AlterUserScramCredentialsResponse = _cls("AlterUserScramCredentialsResponse")
    ApiVersionsResponse = _cls("ApiVersionsResponse")
    MetadataRequest = _cls("MetadataRequest")
    MetadataResponse = _cls("MetadataResponse")
    ProduceRequest = _cls("ProduceRequest")
    ProduceResponse = _cls("ProduceResponse")
    InitProducerIdRequest = _cls("InitProducerIdRequest")
    InitProducerIdResponse = _cls("InitProducerIdResponse")
    FetchRequest = _cls("FetchRequest")
    FetchResponse = _cls("FetchResponse")
    ListOffsetsRequest = _cls("ListOffsetsRequest")
    ListOffsetsResponse = _cls("ListOffsetsResponse")
    OffsetForLeaderEpochRequest = _cls("OffsetForLeaderEpochRequest")
    OffsetForLeaderEpochResponse = _cls("OffsetForLeaderEpochResponse")
    CreateTopicsRequest = _cls("CreateTopicsRequest")
    CreateTopicsResponse = _cls("CreateTopicsResponse")
    DeleteTopicsRequest = _cls("DeleteTopicsRequest")
    DeleteTopicsResponse = _cls("DeleteTopicsResponse")
    DescribeConfigsRequest = _cls("DescribeConfigsRequest")
    DescribeConfigsResponse = _cls("DescribeConfigsResponse")
    AlterConfigsRequest = _cls("AlterConfigsRequest")
    AlterConfigsResponse = _cls("AlterConfigsResponse")
    IncrementalAlterConfigsRequest = _cls("IncrementalAlterConfigsRequest")
    IncrementalAlterConfigsResponse = _cls("IncrementalAlterConfigsResponse")
    CreatePartitionsRequest = _cls("CreatePartitionsRequest")
    CreatePartitionsResponse = _cls("CreatePartitionsResponse")
    DescribeClusterRequest = _cls("DescribeClusterRequest")
    DescribeClusterResponse = _cls("DescribeClusterResponse")
    FindCoordinatorRequest = _cls("FindCoordinatorRequest")
    FindCoordinatorResponse = _cls("FindCoordinatorResponse")
    DescribeLogDirsRequest = _cls("DescribeLogDirsRequest")
    DescribeLogDirsResponse = _cls("DescribeLogDirsResponse")
    DescribeAclsRequest = _cls("DescribeAclsRequest")
    DescribeAclsResponse = _cls("DescribeAclsResponse")
    CreateAclsRequest = _cls("CreateAclsRequest")
    CreateAclsResponse = _cls("CreateAclsResponse")
    DeleteAclsRequest = _cls("DeleteAclsRequest")
    DeleteAclsResponse = _cls("DeleteAclsResponse")
    DeleteRecordsRequest = _cls("DeleteRecordsRequest")
    DeleteRecordsResponse = _cls("DeleteRecordsResponse")
    JoinGroupRequest = _cls("JoinGroupRequest")
    JoinGroupResponse = _cls("JoinGroupResponse")
    SyncGroupRequest = _cls("SyncGroupRequest")
    SyncGroupResponse = _cls("SyncGroupResponse")
    HeartbeatRequest = _cls("HeartbeatRequest")
    HeartbeatResponse = _cls("HeartbeatResponse")
    LeaveGroupRequest = _cls("LeaveGroupRequest")
    LeaveGroupResponse = _cls("LeaveGroupResponse")
    OffsetCommitRequest = _cls("OffsetCommitRequest")
    OffsetCommitResponse = _cls("OffsetCommitResponse")
    OffsetFetchRequest = _cls("OffsetFetchRequest")
    OffsetFetchResponse = _cls("OffsetFetchResponse")
    OffsetDeleteRequest = _cls("OffsetDeleteRequest")
    OffsetDeleteResponse = _cls("OffsetDeleteResponse")
    DescribeGroupsRequest = _cls("DescribeGroupsRequest")
    DescribeGroupsResponse = _cls("DescribeGroupsResponse")
    ListGroupsRequest = _cls("ListGroupsRequest")
    ListGroupsResponse = _cls("ListGroupsResponse")
    DeleteGroupsRequest = _cls("DeleteGroupsRequest")
    DeleteGroupsResponse = _cls("DeleteGroupsResponse")
    ConsumerGroupHeartbeatRequest = _cls("ConsumerGroupHeartbeatRequest")
    ConsumerGroupHeartbeatResponse = _cls("ConsumerGroupHeartbeatResponse")
    ConsumerGroupDescribeRequest = _cls("ConsumerGroupDescribeRequest")
    ConsumerGroupDescribeResponse = _cls("ConsumerGroupDescribeResponse")
