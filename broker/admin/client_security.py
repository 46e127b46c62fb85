"""How the admin tools reach a secured listener: Kafka's client keys, TLS, SASL.

``--command-config FILE`` is a properties file with the keys a Kafka client
takes (kafka-acls.sh, kafka-configs.sh and kafka-consumer-groups.sh read the
same file)::

    security.protocol=SASL_SSL                     PLAINTEXT (default), SSL, SASL_PLAINTEXT,
                                                   SASL_SSL
    ssl.truststore.type=PEM                        PEM or PKCS12 (JKS: convert it with keytool)
    ssl.truststore.location=/etc/kafka/ca.pem      without one, the system's CAs
    ssl.truststore.password=...                    PKCS12 only
    ssl.keystore.location=/etc/kafka/admin.p12     mutual TLS (ssl.keystore.type, .password,
                                                   ssl.key.password; or the inline PEM keys)
    ssl.endpoint.identification.algorithm=https    the default: the broker's certificate must
                                                   name the host; empty: not checked
    sasl.mechanism=SCRAM-SHA-512                   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="...";

Other keys (``client.id``, timeouts, ...) are accepted and ignored, as a
Kafka tool warns about and ignores keys it does not know. OAUTHBEARER needs
a token provider (Kafka's login callback handlers); the tools refuse it with
a message.

The SASL exchange, client side, is Kafka's ``SaslClientAuthenticator`` with
SaslHandshake v1 and SaslAuthenticate (v2, or the highest the broker serves)::

    PLAIN    one token: NUL username NUL password (RFC 4616)
    SCRAM    client-first, client-final (scram_client.py), the server's signature checked

Failures raise :class:`ClientSecurityError`; no message carries the
password.
"""

from __future__ import annotations

import argparse
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from broker.admin.scram_client import ScramClient, ScramClientError
from broker.config import parse_properties
from broker.errors import ErrorCode, InvalidConfigError
from broker.protocol.data import Data
from broker.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from broker.security.jaas import parse_jaas
from broker.security.tls import TlsSettings, build_client_context

if TYPE_CHECKING:
    from broker.protocol.message_classes import Request

_R = TypeVar("_R", bound=Data)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SASL_AUTHENTICATE = 36


class ClientSecurityError(Exception):
    """A --command-config the tools cannot use, or a refused authentication."""


class Call(Protocol):
    """Sends one request and reads its answer (``AdminConnection.call``)."""

    def __call__(self, request: Request[_R], version: int, /) -> _R: ...


@dataclass(frozen=True)
class ClientSecurity:
    """What a connection does before its first request."""

    protocol: str = "PLAINTEXT"
    #: the TLS context (SSL, SASL_SSL)
    tls: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def sasl(self) -> bool:
        return self.mechanism is not None

    def open(self, host: str, port: int, timeout_s: float) -> socket.socket:
        """A connected socket, TLS done when the protocol asks for it."""
        sock = socket.create_connection((host, port), timeout=timeout_s)
        if self.tls is None:
            return sock
        try:
            return self.tls.wrap_socket(sock, server_hostname=host)
        except (ssl.SSLError, ssl.CertificateError) as exc:
            sock.close()
            raise ClientSecurityError(f"TLS handshake with {host}:{port} failed: {exc}") from exc
        except BaseException:
            sock.close()
            raise

    def authenticate(self, call: Call, versions: Mapping[int, tuple[int, int]]) -> None:
        """The SASL exchange on a connection that has sent nothing else but
        ApiVersions; ``call(request, version)`` answers one request."""
        if self.mechanism is None:
            return
        handshake = call(SaslHandshakeRequest(mechanism=self.mechanism), 1)
        if handshake.error_code != ErrorCode.NONE:
            raise ClientSecurityError(
                f"the broker refused SASL mechanism {self.mechanism}:"
                f" {_code_name(handshake.error_code)} (its listener enables"
                f" {', '.join(handshake.mechanisms) or 'none'})"
            )
        low, high = versions.get(SASL_AUTHENTICATE, (0, 2))
        version = max(low, min(high, 2))

        def step(token: bytes) -> bytes:
            answer = call(SaslAuthenticateRequest(auth_bytes=token), version)
            if answer.error_code != ErrorCode.NONE:
                raise ClientSecurityError(
                    f"authentication as {self.username!r} failed:"
                    f" {answer.error_message or _code_name(answer.error_code)}"
                )
            return bytes(answer.auth_bytes)

        if self.mechanism == "PLAIN":
            step(f"\0{self.username}\0{self.password}".encode())
            return
        client = ScramClient(self.mechanism, self.username, self.password)
        try:
            client.check_final(step(client.final(step(client.first()))))
        except ScramClientError as exc:
            raise ClientSecurityError(
                f"the broker's SCRAM answer is not acceptable: {exc}"
            ) from None


PLAINTEXT = ClientSecurity()


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


class UsageError(Exception):
    """A command line the admin tools refuse (printed, exit status 2)."""


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-server``, ``--command-config`` and ``--timeout``, shared by the
    admin tools."""
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to talk to"
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties for a secured listener: security.protocol, ssl.truststore.*,"
        " ssl.keystore.*, sasl.mechanism, sasl.jaas.config",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")


def command_security(args: argparse.Namespace) -> ClientSecurity:
    path = getattr(args, "command_config", None)
    return PLAINTEXT if not path else load_command_config(path)


def load_command_config(path: str | Path) -> ClientSecurity:
    """The security settings of a ``--command-config`` file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClientSecurityError(
            f"cannot read the command config {path}: {exc.strerror}"
        ) from None
    return client_security(parse_properties(text))


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """Kafka's client keys -> :class:`ClientSecurity`; ClientSecurityError naming the key."""

    def get(key: str) -> str | None:
        value = props.get(key, "").strip()
        return value or None

    protocol = (get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ClientSecurityError(
            f"Invalid value {protocol} for configuration security.protocol: one of"
            f" {', '.join(PROTOCOLS)}"
        )
    tls = None
    if protocol in ("SSL", "SASL_SSL"):
        settings = TlsSettings(
            listener="",
            keystore_type=(get("ssl.keystore.type") or "").upper() or None,
            keystore_location=get("ssl.keystore.location"),
            keystore_password=get("ssl.keystore.password"),
            key_password=get("ssl.key.password"),
            keystore_chain=get("ssl.keystore.certificate.chain"),
            keystore_key=get("ssl.keystore.key"),
            truststore_type=(get("ssl.truststore.type") or "").upper() or None,
            truststore_location=get("ssl.truststore.location"),
            truststore_password=get("ssl.truststore.password"),
            truststore_certificates=get("ssl.truststore.certificates"),
            client_auth="none",
            protocols=tuple(
                p.strip()
                for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
                if p.strip()
            ),
            cipher_suites=(),
        )
        # Kafka's default is https (check the host name); an empty value turns it off
        identification = props.get("ssl.endpoint.identification.algorithm", "https").strip()
        try:
            tls = build_client_context(settings, check_hostname=identification.lower() == "https")
        except InvalidConfigError as exc:
            raise ClientSecurityError(str(exc)) from None
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ClientSecurity(protocol, tls)
    mechanism = (get("sasl.mechanism") or "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise ClientSecurityError(
            f"Invalid value {mechanism} for configuration sasl.mechanism: the broker's tools"
            f" authenticate with {', '.join(MECHANISMS)}"
            + (" (Kafka's default GSSAPI: set sasl.mechanism)" if mechanism == "GSSAPI" else "")
        )
    jaas = get("sasl.jaas.config")
    if jaas is None:
        raise ClientSecurityError(
            f"security.protocol={protocol} needs sasl.jaas.config, e.g. {LOGIN_MODULES[mechanism]}"
            ' required username="..." password="...";'
        )
    try:
        entry = parse_jaas(jaas, "sasl.jaas.config")
    except InvalidConfigError as exc:
        raise ClientSecurityError(str(exc)) from None
    if entry.login_module != LOGIN_MODULES[mechanism]:
        raise ClientSecurityError(
            f"sasl.jaas.config: sasl.mechanism={mechanism} needs {LOGIN_MODULES[mechanism]},"
            f" not {entry.login_module}"
        )
    username, password = entry.options.get("username"), entry.options.get("password")
    if not username or not password:
        raise ClientSecurityError("sasl.jaas.config: set the username and password options")
    return ClientSecurity(protocol, tls, mechanism, username, password)
