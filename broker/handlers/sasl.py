"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2) outside an exchange.

A SASL listener's exchange is served by ``server/sasl_gate.py`` before the
request path. What reaches these handlers is a SASL request the gate does
not own: on a PLAINTEXT or SSL listener, or after authentication without a
session to renew. Kafka's ``KafkaApis`` answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


class SaslHandshakeHandler(RequestHandler[SaslHandshakeRequest]):
    API_KEY = 17
    MIN_VERSION = 0
    MAX_VERSION = 1

    def handle(self, ctx: RequestContext, request: SaslHandshakeRequest) -> Reply:
        ctx.count_error(ErrorCode.ILLEGAL_SASL_STATE)
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


class SaslAuthenticateHandler(RequestHandler[SaslAuthenticateRequest]):
    API_KEY = 36
    MIN_VERSION = 0
    MAX_VERSION = 2

    def handle(self, ctx: RequestContext, request: SaslAuthenticateRequest) -> Reply:
        ctx.count_error(ErrorCode.ILLEGAL_SASL_STATE)
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received after successful authentication",
            auth_bytes=b"",
        )
