"""Test certificates and client settings for the TLS and SASL integration tests.

Everything is made at test time (trustme): a CA, a server certificate for
127.0.0.1 / localhost, client certificates for mutual TLS, in the forms
Kafka's keys take (a PEM key store file with an encrypted key, inline PEM, a
PKCS12 key store, PEM and PKCS12 trust stores). Private keys are written
0600 in the test's own temporary directory and never committed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

#: test secrets, made up here and used only against a broker the test starts
STORE_PASSWORD = "store-secret"
KEY_PASSWORD = "key-secret"


def _write(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


@dataclass
class Pki:
    """One CA and what it issued, as files in ``root``."""

    root: Path
    ca: trustme.CA
    server: trustme.LeafCert

    @classmethod
    def make(cls, root: Path) -> Pki:
        root.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        server = ca.issue_cert("127.0.0.1", "localhost", common_name="broker")
        pki = cls(root, ca, server)
        _write(pki.ca_pem, ca.cert_pem.bytes())
        return pki

    @property
    def ca_pem(self) -> Path:
        return self.root / "ca.pem"

    def key_pem(self, leaf: trustme.LeafCert, password: str | None) -> bytes:
        key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )

    def chain_pem(self, leaf: trustme.LeafCert) -> bytes:
        return b"".join(blob.bytes() for blob in leaf.cert_chain_pems)

    def pem_keystore(self, name: str = "server", leaf: trustme.LeafCert | None = None) -> Path:
        """Chain and encrypted key in one PEM file (ssl.keystore.type=PEM)."""
        leaf = leaf or self.server
        return _write(
            self.root / f"{name}.pem", self.chain_pem(leaf) + self.key_pem(leaf, KEY_PASSWORD)
        )

    def pkcs12_keystore(self, name: str = "server", leaf: trustme.LeafCert | None = None) -> Path:
        leaf = leaf or self.server
        key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
        certs = x509.load_pem_x509_certificates(self.chain_pem(leaf))
        blob = pkcs12.serialize_key_and_certificates(
            name.encode(),
            key,  # type: ignore[arg-type]
            certs[0],
            certs[1:] or None,
            serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
        )
        return _write(self.root / f"{name}.p12", blob)

    def pkcs12_truststore(self) -> Path:
        cert = x509.load_pem_x509_certificate(self.ca.cert_pem.bytes())
        blob = pkcs12.serialize_key_and_certificates(
            None, None, None, [cert], serialization.BestAvailableEncryption(STORE_PASSWORD.encode())
        )
        return _write(self.root / "truststore.p12", blob)

    def client(self, user: str) -> tuple[Path, Path]:
        """(certificate chain PEM, unencrypted key PEM) of a client certificate CN=user."""
        leaf = self.ca.issue_cert(f"{user}.clients.test", common_name=user)
        cert = _write(self.root / f"{user}-cert.pem", self.chain_pem(leaf))
        key = _write(self.root / f"{user}-key.pem", self.key_pem(leaf, None))
        return cert, key

    def server_overrides(self, listener: str, *, form: str = "pem") -> dict[str, str]:
        """The ssl.* keys of ``listener`` (listener-prefixed) in one of the forms."""
        p = f"listener.name.{listener.lower()}."
        if form == "pem":
            return {
                p + "ssl.keystore.type": "PEM",
                p + "ssl.keystore.location": str(self.pem_keystore()),
                p + "ssl.key.password": KEY_PASSWORD,
                p + "ssl.truststore.location": str(self.ca_pem),
            }
        if form == "pkcs12":
            return {
                p + "ssl.keystore.type": "PKCS12",
                p + "ssl.keystore.location": str(self.pkcs12_keystore()),
                p + "ssl.keystore.password": STORE_PASSWORD,
                p + "ssl.truststore.type": "PKCS12",
                p + "ssl.truststore.location": str(self.pkcs12_truststore()),
                p + "ssl.truststore.password": STORE_PASSWORD,
            }
        raise ValueError(form)


def librdkafka_security(
    protocol: str,
    pki: Pki,
    *,
    mechanism: str | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    """confluent-kafka / kcat properties."""
    out: dict[str, Any] = {"security.protocol": protocol}
    if "SSL" in protocol:
        out["ssl.ca.location"] = str(pki.ca_pem)
        out["ssl.endpoint.identification.algorithm"] = "none"
    if client_cert is not None:
        out["ssl.certificate.location"] = str(client_cert[0])
        out["ssl.key.location"] = str(client_cert[1])
    if mechanism is not None:
        out["sasl.mechanism"] = mechanism
        if mechanism != "OAUTHBEARER":
            out["sasl.username"] = user
            out["sasl.password"] = password
    return out


def kafka_python_security(
    protocol: str,
    pki: Pki,
    *,
    mechanism: str | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    """kafka-python keyword arguments (aiokafka takes the same names but an ssl_context)."""
    out: dict[str, Any] = {"security_protocol": protocol}
    if "SSL" in protocol:
        out["ssl_cafile"] = str(pki.ca_pem)
        out["ssl_check_hostname"] = False
    if client_cert is not None:
        out["ssl_certfile"] = str(client_cert[0])
        out["ssl_keyfile"] = str(client_cert[1])
    if mechanism is not None:
        out["sasl_mechanism"] = mechanism
        out["sasl_plain_username"] = user
        out["sasl_plain_password"] = password
    return out


def aiokafka_security(
    protocol: str,
    pki: Pki,
    *,
    mechanism: str | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    import ssl

    out: dict[str, Any] = {"security_protocol": protocol}
    if "SSL" in protocol:
        ctx = ssl.create_default_context(cafile=str(pki.ca_pem))
        ctx.check_hostname = False
        if client_cert is not None:
            ctx.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
        out["ssl_context"] = ctx
    if mechanism is not None:
        out["sasl_mechanism"] = mechanism
        out["sasl_plain_username"] = user
        out["sasl_plain_password"] = password
    return out
