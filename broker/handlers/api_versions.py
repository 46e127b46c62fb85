"""ApiVersions (key 18), versions 0-4.

Behaviour:
- Answers with every API this broker serves and its version range, taken
  from the handler registry (so ranges are declared once, on the handlers).
- v3+: keeps the client's software name and version on the connection; the
  conversion metrics are broken down by them.
- A request of a version outside 0-4 is answered with a v0 body carrying
  UNSUPPORTED_VERSION and the API list, so the client can pick a version it
  shares with us (``RequestContext.isUnsupportedApiVersionsRequest``); the
  dispatcher routes such requests here.
- v3+ with an invalid client software name or version (empty, or characters
  other than ``[a-zA-Z0-9.-]`` at the ends / inside, as Kafka's
  ``ApiVersionsRequest.isValid``) gets INVALID_REQUEST.

Version notes:
- v1+: throttle_time_ms. v3+: flexible; tagged supported/finalized features
  (none here). The response header is always v0 (KIP-511).
"""

from __future__ import annotations

import re

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

# ApiVersionsRequest.isValid: SOFTWARE_NAME_VERSION_PATTERN
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


class ApiVersionsHandler(RequestHandler[ApiVersionsRequest]):
    API_KEY = 18
    MIN_VERSION = 0
    MAX_VERSION = 4

    _api_keys: tuple[ApiVersionsResponse.ApiVersion, ...] = ()

    def api_versions(self) -> list[ApiVersionsResponse.ApiVersion]:
        # the registry does not change once built: the list is made once (every
        # client connection asks, SASL ones before authenticating)
        if not self._api_keys:
            registry = self.broker.registry
            assert registry is not None
            self._api_keys = tuple(
                ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, lo, hi in registry.versions()
            )
        return list(self._api_keys)

    def handle(self, ctx: RequestContext, request: ApiVersionsRequest) -> Reply:
        version = ctx.header.api_version
        if not self.supports(version):
            ctx.count_error(ErrorCode.UNSUPPORTED_VERSION)
            return ApiVersionsResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=self.api_versions()
            )
        if version >= 3:
            name = request.client_software_name
            ver = request.client_software_version
            if not (name and ver and _SOFTWARE.match(name) and _SOFTWARE.match(ver)):
                ctx.count_error(ErrorCode.INVALID_REQUEST)
                return ApiVersionsResponse(
                    error_code=ErrorCode.INVALID_REQUEST, api_keys=self.api_versions()
                )
            ctx.connection.client_software_name = name
            ctx.connection.client_software_version = ver
        ctx.count_error(ErrorCode.NONE)
        return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=self.api_versions())
