"""SASL mechanisms, server side, sans I/O: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.

Each exchange is an object made per authentication: ``evaluate(token)``
answers the client's token with the server's (``SaslServer.evaluateResponse``)
until ``complete``; then ``authorization_id`` names the user and
``lifetime_ms`` (OAUTHBEARER: the token's expiry) bounds the session.
A refusal raises :class:`AuthenticationFailed` whose ``client_message`` is
what the client is told; Kafka tells the client its
``SaslAuthenticationException`` messages and replaces every other failure
with "Authentication failed during authentication due to invalid
credentials with SASL mechanism M" (``SaslServerAuthenticator``), so the
answer never says whether the user exists.

PLAIN (RFC 4616, Kafka's ``PlainSaslServer``)::

    message = [authzid] NUL authcid NUL passwd            UTF-8

SCRAM (RFC 5802 / 7677 as Kafka speaks them, ``ScramSaslServer``), through
``scramp``::

    client-first  gs2-header n=saslname,r=c-nonce[,ext=value...]
    server-first  r=c-nonce s-nonce,s=salt,i=iterations
    client-final  c=biws,r=nonce,p=proof
    server-final  v=server-signature

Kafka's only extension is ``tokenauth=true`` (delegation tokens, which this
broker does not have): a client-first with extensions is refused. An
unknown user goes through the exchange with a made-up credential (salt and
keys derived from a per-process secret and the name) and fails at the proof,
so neither the answer nor the step it fails at tells whether the user exists.

OAUTHBEARER (RFC 7628, Kafka's ``OAuthBearerSaslServer``)::

    client-first  gs2-header ^A auth=Bearer <JWT> ^A [key=value ^A]... ^A
    error         {"status":"invalid_token"} as a challenge; the client's ^A ends it
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable
from typing import Any, Protocol

import scramp

from broker.security.scram_store import MECHANISMS, ScramCredential

_PROCESS_SECRET = secrets.token_bytes(32)


class AuthenticationFailed(Exception):
    """Authentication refused; ``client_message`` is what the client is told."""

    def __init__(self, client_message: str, detail: str = "") -> None:
        super().__init__(detail or client_message)
        self.client_message = client_message


def generic_failure(mechanism: str, reauthenticating: bool = False) -> str:
    what = "re-authentication" if reauthenticating else "authentication"
    return (
        f"Authentication failed during {what} due to invalid credentials with SASL"
        f" mechanism {mechanism}"
    )


class SaslExchange(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str
    #: when the credential expires (epoch ms), or None
    lifetime_ms: int | None

    def evaluate(self, token: bytes) -> bytes: ...


# ---- PLAIN ----------------------------------------------------------------------------------


class PlainExchange:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""
        self.lifetime_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed(generic_failure(self.mechanism), "not UTF-8") from None
        # PlainSaslServer.extractTokens looks at four NULs at most
        parts = text.split("\0", 3)
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        known = self._users.get(user)
        # the same comparison whether or not the user exists (constant time)
        expected = (known if known is not None else "\0" + secrets.token_hex(16)).encode()
        if not hmac.compare_digest(expected, password.encode()) or known is None:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is"
                " different from username"
            )
        self.authorization_id = user
        self.complete = True
        return b""


# ---- SCRAM ----------------------------------------------------------------------------------

_CLIENT_FIRST = re.compile(r"^(?P<gs2>[nyp][^,]*,(?:a=(?P<authzid>[^,]*))?,)(?P<bare>.*)$", re.S)


class ScramExchange:
    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        *,
        server_nonce: str | None = None,
    ) -> None:
        """``server_nonce``: None for a fresh random one (scramp's ``secrets``);
        a fixed one only reproduces a published exchange (RFC 7677's vector)."""
        self.mechanism = mechanism
        self._lookup = lookup
        self._server = scramp.ScramMechanism(mechanism).make_server(
            self._auth_info, s_nonce=server_nonce
        )
        self._step = 0
        self._user = ""
        self.complete = False
        self.authorization_id = ""
        self.lifetime_ms: int | None = None

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        cred = self._lookup(user, self.mechanism)
        if cred is not None:
            return cred.salt, cred.stored_key, cred.server_key, cred.iterations
        # a credential nobody can match, the same for the same name at every attempt
        digest = MECHANISMS[self.mechanism][1]
        seed = hmac.digest(_PROCESS_SECRET, f"{self.mechanism}\0{user}".encode(), "sha256")
        size = hashlib.new(digest).digest_size
        salt = hmac.digest(seed, b"salt", "sha256")
        keys = hmac.digest(seed, b"keys", digest)
        return salt, keys[:size], hmac.digest(seed, b"server", digest)[:size], 4096

    def _fail(self, detail: str) -> AuthenticationFailed:
        return AuthenticationFailed(generic_failure(self.mechanism), detail)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("not UTF-8") from None
        try:
            if self._step == 0:
                self._step = 1
                match = _CLIENT_FIRST.match(text)
                if match is None:
                    raise self._fail("malformed client-first message")
                attrs = match.group("bare").split(",")
                if len(attrs) < 2 or not attrs[0].startswith("n=") or not attrs[1].startswith("r="):
                    raise self._fail("malformed client-first message")
                if len(attrs) > 2:
                    # Kafka's only extension is tokenauth (delegation tokens: none here)
                    raise self._fail("SCRAM extensions are not supported")
                self._user = attrs[0][2:].replace("=2C", ",").replace("=3D", "=")
                authzid = match.group("authzid")
                if authzid and authzid != self._user:
                    raise AuthenticationFailed(
                        "Authentication failed: Client requested an authorization id that is"
                        " different from username"
                    )
                # scramp refuses any authzid, even the user's own (Kafka accepts that one;
                # no Kafka client sends it: docs/deviations.md)
                self._server.set_client_first(text)
                return str(self._server.get_server_first()).encode()
            if self._step == 1:
                self._step = 2
                self._server.set_client_final(text)
                final = str(self._server.get_server_final()).encode()
                if self._lookup(self._user, self.mechanism) is None:
                    raise self._fail("unknown user")  # unreachable: the made-up keys never match
                self.authorization_id = self._user
                self.complete = True
                return final
        except scramp.ScramException as exc:
            raise self._fail(str(exc)) from None
        raise self._fail("unexpected token after the SCRAM exchange")


# ---- OAUTHBEARER --------------------------------------------------------------------------

_KV = re.compile(r"^[A-Za-z]+$")


class TokenValidator(Protocol):
    def validate(self, token: str) -> tuple[str, int]:
        """(principal name, expiry epoch ms); ValueError when invalid."""
        ...


class OAuthBearerExchange:
    mechanism = "OAUTHBEARER"

    def __init__(self, validator: TokenValidator) -> None:
        self._validator = validator
        self._error: str | None = None
        self.complete = False
        self.authorization_id = ""
        self.lifetime_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed(generic_failure(self.mechanism), "not UTF-8") from None
        gs2, sep, rest = text.partition("\x01")
        match = re.match(r"^n,(?:a=([^,]*))?,$", gs2)
        if not sep or match is None or not rest.endswith("\x01\x01"):
            raise AuthenticationFailed(
                generic_failure(self.mechanism), "malformed OAUTHBEARER client response"
            )
        authzid = match.group(1) or ""
        fields = {}
        for kv in rest[:-2].split("\x01"):
            key, eq, value = kv.partition("=")
            if not eq or not _KV.match(key):
                raise AuthenticationFailed(
                    generic_failure(self.mechanism), "malformed OAUTHBEARER key/value"
                )
            fields[key] = value
        auth = fields.get("auth", "")
        scheme, _, bearer = auth.partition(" ")
        if scheme.lower() != "bearer" or not bearer:
            raise AuthenticationFailed(generic_failure(self.mechanism), "no bearer token")
        try:
            principal, expiry_ms = self._validator.validate(bearer.strip())
        except ValueError as exc:
            self._error = json.dumps({"status": "invalid_token"}, separators=(",", ":"))
            self.detail = str(exc)
            return self._error.encode()
        if authzid and authzid != principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) that"
                f" is different from the token's principal name ({principal})"
            )
        self.authorization_id = principal
        self.lifetime_ms = expiry_ms
        self.complete = True
        return b""


def make_exchange(
    mechanism: str,
    *,
    plain_users: dict[str, str] | None = None,
    scram_lookup: Callable[[str, str], ScramCredential | None] | None = None,
    validator: Any = None,
) -> SaslExchange:
    if mechanism == "PLAIN":
        return PlainExchange(plain_users or {})
    if mechanism in MECHANISMS:
        assert scram_lookup is not None
        return ScramExchange(mechanism, scram_lookup)
    if mechanism == "OAUTHBEARER":
        return OAuthBearerExchange(validator)
    raise ValueError(mechanism)
