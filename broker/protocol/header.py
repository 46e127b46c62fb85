"""Request and response headers (Kafka's ``RequestHeader.json``, ``ResponseHeader.json``).

::

    RequestHeader v0  => request_api_key:INT16 request_api_version:INT16 correlation_id:INT32
    RequestHeader v1  => v0, client_id:NULLABLE_STRING
    RequestHeader v2  => v1, TAG_BUFFER        (client_id keeps its INT16 length:
                                                "flexibleVersions": "none")
    ResponseHeader v0 => correlation_id:INT32
    ResponseHeader v1 => correlation_id:INT32 TAG_BUFFER

Which header version goes with a request follows Kafka's
``ApiMessageType.requestHeaderVersion`` / ``responseHeaderVersion``:

* request header v2 when the API version is flexible, else v1; v0 only for
  ControlledShutdown v0 (not served here, but its header still parses);
  the rule is applied to versions above the supported maximum too, so an
  ApiVersions request from a newer client parses (KIP-511);
* response header v1 when flexible, else v0; ApiVersions responses *always*
  use v0, so a client that does not yet know the broker's versions can
  read the reply (KIP-511).

An API key we do not know is parsed as header v1 (its first fields are the
same in every version), so the dispatcher can still log the correlation id
before refusing it. As in Kafka's ``RequestHeader.parse``, a null client_id
becomes ``""``, and malformed UTF-8 in client_id is replaced with U+FFFD
(Java's decoder does that; the id is only used for logs and quotas).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.protocol.api_keys import API_KEYS, API_VERSIONS_KEY
from broker.protocol.primitives import DecodeError, as_view, read_uvarint
from broker.records.buffers import ReadableBuffer

_KEY_VERSION_ID = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
#: ``ControlledShutdownRequest`` v0 predates client_id (``ApiMessageType``)
_CONTROLLED_SHUTDOWN_KEY = 7


class RequestHeader(NamedTuple):
    """A parsed request header (a NamedTuple: made for every request, it costs a
    third of a frozen dataclass)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    header_version: int
    #: bytes the header takes, i.e. where the request body starts in the frame
    size: int


def request_header_version(api_key: int, api_version: int) -> int:
    api = API_KEYS.get(api_key)
    if api is not None:
        return 2 if api_version in api.flexible else 1
    if api_key == _CONTROLLED_SHUTDOWN_KEY:
        return 0 if api_version == 0 else (2 if api_version >= 3 else 1)
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    api = API_KEYS.get(api_key)
    return 1 if api is not None and api_version in api.flexible else 0


def parse_request_header(frame: ReadableBuffer) -> RequestHeader:
    """Parse the header at the start of a request frame (without its size prefix)."""
    buf = as_view(frame)
    end = len(buf)
    if end < 8:
        raise DecodeError(f"request header needs at least 8 bytes, got {end}")
    api_key, api_version, correlation_id = _KEY_VERSION_ID.unpack_from(buf, 0)
    version = request_header_version(api_key, api_version)
    pos = 8
    client_id = ""
    if version >= 1:
        if end < 10:
            raise DecodeError("request header: client_id length past the end")
        length = _INT16.unpack_from(buf, 8)[0]
        pos = 10
        if length >= 0:
            if pos + length > end:
                raise DecodeError("request header: client_id runs past the end")
            client_id = str(buf[pos : pos + length], "utf-8", "replace")
            pos += length
    if version >= 2:
        if pos < end and buf[pos] == 0:
            pos += 1  # no tagged fields: what every client sends
        else:
            pos = _skip_tagged_fields(buf, pos, end)
    return RequestHeader(api_key, api_version, correlation_id, client_id, version, pos)


def _skip_tagged_fields(buf: memoryview, pos: int, end: int) -> int:
    """RequestHeader has no tagged fields in Kafka 3.9: every tag is unknown and skipped."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > end:
            raise DecodeError("request header: tagged field runs past the end")
    return pos


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The header a client sends (tests, tools, and the benchmark build requests with it)."""
    version = request_header_version(api_key, api_version)
    out = bytearray(_KEY_VERSION_ID.pack(api_key, api_version, correlation_id))
    if version >= 1:
        if client_id is None:
            out += _INT16.pack(-1)
        else:
            raw = client_id.encode()
            out += _INT16.pack(len(raw))
            out += raw
    if version >= 2:
        out.append(0)
    return bytes(out)


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    head = _INT32.pack(correlation_id)
    return head + b"\x00" if header_version >= 1 else head


def parse_response_header(frame: ReadableBuffer, header_version: int) -> tuple[int, int]:
    """``(correlation_id, header size)`` of a response frame (without its size prefix)."""
    buf = as_view(frame)
    if len(buf) < 4:
        raise DecodeError("response header needs 4 bytes")
    correlation_id = _INT32.unpack_from(buf, 0)[0]
    pos = _skip_tagged_fields(buf, 4, len(buf)) if header_version >= 1 else 4
    return correlation_id, pos
