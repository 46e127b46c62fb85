"""Kafka messages <-> bytes, sans I/O (Kafka 3.9's protocol, every version it accepts).

Layers inside the package::

    schemas/*.py    hand-written descriptions of each message (transcribed from Kafka 3.9)
    schema.py       the description language (types, version ranges, defaults, tags)
    generator.py    classes + per-version decoders/encoders, generated Python source
    gen_decode.py   emits decoders          gen_encode.py  emits encoders
    source.py       source builder; coalesces fixed-size fields into one struct call
    primitives.py   varints, DecodeError / EncodeError
    header.py       request header v0/v1/v2, response header v0/v1
    api_keys.py     the API table (key, name, version ranges) for ApiVersions
    messages.py     the typed facade: classes, lookups, whole frames
    stubs.py        writes message_classes.pyi, the classes' types for mypy (--check: stale?)
    encoded.py      Encoded: the segments of an encoded message

A request frame is ``RequestHeader body``; a response frame is
``size:INT32 ResponseHeader body``. Record data stays opaque bytes here: a
decoded ``records`` field is a ``memoryview`` slice of the request frame,
an encoded one is passed through as its own segment.
"""

from __future__ import annotations

from broker.protocol.api_keys import API_KEYS, ApiKey
from broker.protocol.data import Data
from broker.protocol.encoded import Encoded
from broker.protocol.header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_request_header,
    parse_response_header,
    request_header_version,
    response_header_version,
)
from broker.protocol.messages import (
    compile_all,
    decode,
    decode_request,
    decode_response,
    decode_response_to,
    encode,
    encode_request,
    encode_response,
    request_decoder,
    request_encoder,
    response_decoder,
    response_encoder,
)
from broker.protocol.primitives import DecodeError, EncodeError

__all__ = [
    "API_KEYS",
    "ApiKey",
    "Data",
    "DecodeError",
    "EncodeError",
    "Encoded",
    "RequestHeader",
    "compile_all",
    "decode",
    "decode_request",
    "decode_response",
    "decode_response_to",
    "encode",
    "encode_request",
    "encode_request_header",
    "encode_response",
    "encode_response_header",
    "parse_request_header",
    "parse_response_header",
    "request_decoder",
    "request_encoder",
    "request_header_version",
    "response_decoder",
    "response_encoder",
    "response_header_version",
]
