"""Client sides of the SASL mechanisms for the tests, written from the RFCs
(not the broker's code), so the server is checked against an independent computation;
and a JWKS with keys made at test time for OAUTHBEARER.

SCRAM (RFC 5802 section 3)::

    SaltedPassword  := Hi(Normalize(password), salt, i)
    ClientKey       := HMAC(SaltedPassword, "Client Key")
    StoredKey       := H(ClientKey)
    AuthMessage     := client-first-message-bare + "," + server-first-message + ","
                       + client-final-message-without-proof
    ClientSignature := HMAC(StoredKey, AuthMessage)
    ClientProof     := ClientKey XOR ClientSignature
    ServerSignature := HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from broker.security.scram_store import (
    MECHANISMS,
    ScramCredential,
    credential_from_salted_password,
    salted_password,
)


def scram_credential(
    mechanism: str, password: str, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(16)
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


@dataclass
class ScramClient:
    """One SCRAM exchange, client side."""

    mechanism: str
    user: str
    password: str
    nonce: str = ""
    authzid: str = ""
    #: client-first extensions, ",name=value..."
    extensions: str = ""
    #: librdkafka before 2.2: the client-final nonce is its own, then the server-first's
    repeat_nonce: bool = False

    def __post_init__(self) -> None:
        self.nonce = self.nonce or secrets.token_urlsafe(18)
        name = self.user.replace("=", "=3D").replace(",", "=2C")
        self.bare = f"n={name},r={self.nonce}{self.extensions}"
        self.gs2 = f"n,a={self.authzid}," if self.authzid else "n,,"
        self.server_signature = b""

    def first(self) -> bytes:
        return (self.gs2 + self.bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(item.split("=", 1) for item in text.split(","))
        assert attrs["r"].startswith(self.nonce)
        digest = MECHANISMS[self.mechanism][1]
        salted = hashlib.pbkdf2_hmac(
            digest, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", digest)
        stored_key = hashlib.new(digest, client_key).digest()
        channel = base64.b64encode(self.gs2.encode()).decode()
        nonce = (self.nonce if self.repeat_nonce else "") + attrs["r"]
        without_proof = f"c={channel},r={nonce}"
        auth_message = f"{self.bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", digest)
        self.server_signature = hmac.digest(server_key, auth_message, digest)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_server_final(self, server_final: bytes) -> None:
        assert server_final == b"v=" + base64.b64encode(self.server_signature)


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def oauth_token(jwt_text: str, authzid: str = "") -> bytes:
    """RFC 7628's client response as Kafka's OAuthBearerClientInitialResponse."""
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}\x01auth=Bearer {jwt_text}\x01\x01".encode()


class Jwks:
    """An RSA key, its JWKS file (``file:`` URL) and tokens it signs."""

    def __init__(self, directory: Path, kid: str = "test-key") -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = kid
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        public.update({"kid": kid, "use": "sig", "alg": "RS256"})
        self.path = directory / "jwks.json"
        self.path.write_text(json.dumps({"keys": [public]}))

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def token(self, sub: str = "alice", *, lifetime_s: int = 3600, **claims: Any) -> str:
        now = int(time.time())
        body: dict[str, Any] = {"sub": sub, "iat": now, "exp": now + lifetime_s}
        body.update(claims)
        for name in [k for k, v in body.items() if v is None]:
            del body[name]
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": self.kid})
