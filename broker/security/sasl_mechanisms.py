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

SCRAM (RFC 5802 / 7677 as Kafka's ``ScramSaslServer`` and ``ScramMessages``
speak them; written here with ``hmac``/``hashlib`` because the library
checks are stricter than Kafka's in ways real clients meet, see below)::

    client-first  n,[a=authzid],n=saslname,r=c-nonce[,ext=value...]
    server-first  r=<c-nonce><s-nonce>,s=<salt base64>,i=<iterations>
    client-final  c=<gs2 header base64>,r=<nonce>[,ext=value...],p=<proof base64>
    server-final  v=<server signature base64>

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage)
    StoredKey      == H(ClientSignature XOR proof)          (compared in constant time)
    ServerSignature = HMAC(ServerKey, AuthMessage)

Kafka's leniencies, kept: the client-final nonce must *end with* the
server-first's (librdkafka before 2.2, Debian's kcat among them, sends its
own nonce twice; scramp demands equality), an authorization id equal to
the user is accepted (scramp refuses any), client-first extensions are
ignored except ``tokenauth=true`` (delegation tokens, which this broker
does not have: refused as Kafka refuses an unknown token), and the channel
binding attribute is not compared with the gs2 header (the proof covers
it). Only the ``n`` gs2 flag (no channel binding) is accepted, as Kafka's
pattern. An unknown user goes through the exchange with a made-up
credential (salt and keys derived from a per-process secret and the name)
and fails at the proof, so neither the answer nor the step it fails at
tells whether the user exists (Kafka fails it one step earlier).

OAUTHBEARER (RFC 7628, Kafka's ``OAuthBearerSaslServer``)::

    client-first  gs2-header ^A auth=Bearer <JWT> ^A [key=value ^A]... ^A
    error         {"status":"invalid_token"} as a challenge; the client's ^A ends it
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable
from typing import Any, Protocol

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

# ScramMessages' character classes, without Java's && intersections
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # \x01-\x7F but ','
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # \x21-\x7E but ','
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # VALUE-SAFE or =2C / =3D
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c={_BASE64},r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_BASE64})"
)


class ScramExchange:
    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        *,
        server_nonce: str | None = None,
    ) -> None:
        """``server_nonce``: None for a fresh random one; a fixed one only
        reproduces a published exchange (RFC 7677's vector)."""
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism][1]
        self._lookup = lookup
        self._server_nonce = server_nonce or secrets.token_urlsafe(24)
        self._step = 0
        self._user = ""
        self._credential: ScramCredential | None = None
        self._known = False
        self._bare = ""
        self._server_first = ""
        self.complete = False
        self.authorization_id = ""
        self.lifetime_ms: int | None = None

    def _credential_of(self, user: str) -> tuple[ScramCredential, bool]:
        """(credential, whether the user exists): an unknown user gets one nobody
        can match, the same for the same name at every attempt."""
        cred = self._lookup(user, self.mechanism)
        if cred is not None:
            return cred, True
        seed = hmac.digest(_PROCESS_SECRET, f"{self.mechanism}\0{user}".encode(), "sha256")
        size = hashlib.new(self._digest).digest_size
        fake = ScramCredential(
            hmac.digest(seed, b"salt", "sha256"),
            hmac.digest(seed, b"keys", self._digest)[:size],
            hmac.digest(seed, b"server", self._digest)[:size],
            4096,
        )
        return fake, False

    def _fail(self, detail: str) -> AuthenticationFailed:
        return AuthenticationFailed(generic_failure(self.mechanism), detail)

    def evaluate(self, token: bytes) -> bytes:
        step, self._step = self._step, self._step + 1
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("not UTF-8") from None
        if step == 0:
            return self._client_first(text)
        if step == 1:
            return self._client_final(text)
        raise self._fail("unexpected token after the SCRAM exchange")

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._fail("Invalid SCRAM client first message format")
        extensions = dict(
            item.split("=", 1) for item in match.group("extensions").split(",") if item
        )
        if extensions.get("tokenauth", "").lower() == "true":
            # a delegation token's id instead of a user: there are none here
            raise self._fail("delegation tokens are not supported")
        self._user = match.group("saslname").replace("=2C", ",").replace("=3D", "=")
        authzid = match.group("authzid")
        if authzid and authzid != self._user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is"
                " different from username"
            )
        self._credential, self._known = self._credential_of(self._user)
        minimum = MECHANISMS[self.mechanism][2]
        if self._credential.iterations < minimum:
            raise self._fail(f"Iterations {self._credential.iterations} is less than {minimum}")
        self._bare = match.group("bare")
        salt = base64.b64encode(self._credential.salt).decode()
        nonce = match.group("nonce") + self._server_nonce
        self._server_first = f"r={nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise self._fail("Invalid SCRAM client final message format")
        nonce = self._server_first[2 : self._server_first.index(",")]
        # Kafka: endsWith (librdkafka < 2.2 repeats its own nonce before the server's)
        if not match.group("nonce").endswith(nonce):
            raise self._fail("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._bare},{self._server_first},{match.group('without_proof')}"
        message = auth_message.encode()
        try:
            proof = base64.b64decode(match.group("proof"), validate=True)
        except binascii.Error:
            raise self._fail("Invalid SCRAM client final message format") from None
        signature = hmac.digest(credential.stored_key, message, self._digest)
        if len(proof) != len(signature):
            raise self._fail("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(signature, proof, strict=True))
        computed = hashlib.new(self._digest, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key) or not self._known:
            raise self._fail("Invalid client credentials")
        server_signature = hmac.digest(credential.server_key, message, self._digest)
        self._credential = None
        self.authorization_id = self._user
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


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
