"""SCRAM-SHA-256/512, client side, as Kafka's ``ScramSaslClient`` (the admin tools).

RFC 5802 with Kafka's choices::

    client-first   n,,n=<user, "=" -> "=3D", "," -> "=2C">,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>[,ext...]
    client-final   c=biws,r=<that nonce>,p=<ClientKey XOR HMAC(StoredKey, AuthMessage)>
    server-final   v=<HMAC(ServerKey, AuthMessage)>        (or e=<error>)

The salted password is PBKDF2 over the password's UTF-8 bytes, without
SASLprep, as Kafka's ``ScramFormatter`` (and ``broker scram-users``) computes
it: a library client that normalises the password (SASLprep) would compute
another key for some passwords. Iterations below the mechanism's minimum
(4096) are refused, as Kafka's client refuses them (no downgrade by a fake
server). The server's signature is compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from broker.security.scram_store import MECHANISMS


class ScramClientError(Exception):
    """The server's messages are malformed or its signature is wrong."""


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism][1]
        self._password = password.encode()
        self._nonce = secrets.token_urlsafe(24)
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._bare = f"n={name},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        try:
            text = server_first.decode("ascii")
            attrs = dict(item.split("=", 1) for item in text.split(","))
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        except (UnicodeDecodeError, ValueError, KeyError, binascii.Error):
            raise ScramClientError("malformed SCRAM server-first message") from None
        if "m" in attrs or not nonce.startswith(self._nonce) or nonce == self._nonce:
            raise ScramClientError("invalid SCRAM server-first message")
        minimum = MECHANISMS[self.mechanism][2]
        if iterations < minimum:
            raise ScramClientError(
                f"Requested iterations {iterations} is less than the minimum {minimum}"
                f" for {self.mechanism}"
            )
        salted = hashlib.pbkdf2_hmac(self._digest, self._password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._digest)
        stored_key = hashlib.new(self._digest, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        message = f"{self._bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, message, self._digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._digest)
        self._server_signature = hmac.digest(server_key, message, self._digest)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_final(self, server_final: bytes) -> None:
        text = server_final.decode("ascii", "replace")
        if text.startswith("e="):
            raise ScramClientError(f"the server refused: {text[2:]}")
        if not text.startswith("v="):
            raise ScramClientError("malformed SCRAM server-final message")
        try:
            signature = base64.b64decode(text[2:].split(",", 1)[0], validate=True)
        except binascii.Error:
            raise ScramClientError("malformed SCRAM server-final message") from None
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramClientError("the server's SCRAM signature is wrong")
