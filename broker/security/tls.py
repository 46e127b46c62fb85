"""TLS contexts of SSL and SASL_SSL listeners, from Kafka's ``ssl.*`` keys.

Each key is read as ``listener.name.<listener>.<key>`` first, then
``<key>`` (Kafka's per-listener override), with one exception (KIP-684,
Kafka 2.8+): a SASL_SSL listener asks for client certificates only when its
own ``listener.name.<listener>.ssl.client.auth`` says so; the broker-wide
``ssl.client.auth`` applies to SSL listeners alone (:data:`LISTENER_ONLY`).
Key material, as Kafka's ``DefaultSslEngineFactory`` takes it:

    key store    ssl.keystore.type=PEM     ssl.keystore.location: one PEM file with the
                                           certificate chain and the private key
                                           (encrypted PKCS#8 with ssl.key.password, or plain);
                                           or inline ssl.keystore.certificate.chain +
                                           ssl.keystore.key (+ ssl.key.password)
                 ssl.keystore.type=PKCS12  ssl.keystore.location + ssl.keystore.password
                                           (+ ssl.key.password, Kafka's key entry password;
                                           PKCS12 files have one password, the store's)
    trust store  ssl.truststore.type=PEM   ssl.truststore.location, or inline
                                           ssl.truststore.certificates
                 ssl.truststore.type=PKCS12 ssl.truststore.location + ssl.truststore.password

JKS is refused with the keytool command that converts it. An unset type is
told by the file's content (PEM text, a JKS magic number, else PKCS12).
PKCS12 stores and inline or encrypted keys are read with ``cryptography``;
``ssl.SSLContext.load_cert_chain`` only reads files, so the key is handed
to it through an anonymous memory file (``memfd_create``, never on a file
system, gone once closed) and, even there, encrypted under a one-time
random password: the private key is never written anywhere in clear.

``ssl.client.auth`` none | requested | required (CERT_NONE / CERT_OPTIONAL /
CERT_REQUIRED; a trust store is needed unless none), ``ssl.enabled.protocols``
(TLSv1.2 and TLSv1.3 only: the context's minimum and maximum version),
``ssl.cipher.suites`` (OpenSSL names for TLS 1.2; TLS 1.3 suites are
OpenSSL's and always on).
"""

from __future__ import annotations

import logging
import os
import secrets
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from broker.config import BrokerConfig, broker_key
from broker.errors import InvalidConfigError

log = logging.getLogger(__name__)

JKS_MAGIC = b"\xfe\xed\xfe\xed"
TLS13_SUITES = frozenset(
    {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
        "TLS_AES_128_CCM_8_SHA256",
    }
)
_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


#: keys a listener of these protocols reads only under its own prefix, never from the
#: broker-wide key. Kafka's ``ChannelBuilders.create`` (KIP-684): for a SASL_SSL server
#: channel without ``listener.name.<l>.ssl.client.auth`` it passes
#: ``sslClientAuthOverride=none`` to ``SslFactory`` (and warns when the broker-wide value
#: is not none); an SSL listener falls back to ``ssl.client.auth`` as every key does
LISTENER_ONLY: dict[str, frozenset[str]] = {"ssl.client.auth": frozenset({"SASL_SSL"})}


def _prefixed(listener: str, key: str) -> str:
    return f"listener.name.{listener.lower()}.{key}"


def _listener_only(key: str, protocol: str | None) -> bool:
    return protocol is not None and protocol in LISTENER_ONLY.get(key, frozenset())


def listener_value(cfg: BrokerConfig, listener: str, key: str, protocol: str | None = None) -> Any:
    """``listener.name.<listener>.<key>`` if set, else ``<key>`` (or its default); for
    the :data:`LISTENER_ONLY` keys of a ``protocol`` listener, the prefixed key or the
    key's default."""
    prefixed = _prefixed(listener, key)
    if cfg.is_set(prefixed):
        return cfg.get(prefixed)
    if _listener_only(key, protocol):
        declared = broker_key(key)
        return None if declared is None else declared.default
    return cfg.get(key)


def listener_key_name(
    cfg: BrokerConfig, listener: str, key: str, protocol: str | None = None
) -> str:
    """The name under which ``key`` is set for ``listener`` (for messages)."""
    prefixed = _prefixed(listener, key)
    return prefixed if cfg.is_set(prefixed) or _listener_only(key, protocol) else key


@dataclass(frozen=True)
class TlsSettings:
    """The ``ssl.*`` keys of one listener."""

    listener: str
    keystore_type: str | None
    keystore_location: str | None
    keystore_password: str | None
    key_password: str | None
    keystore_chain: str | None
    keystore_key: str | None
    truststore_type: str | None
    truststore_location: str | None
    truststore_password: str | None
    truststore_certificates: str | None
    client_auth: str
    protocols: tuple[str, ...]
    cipher_suites: tuple[str, ...]
    #: the listener's security protocol (SSL or SASL_SSL; empty for a client's settings)
    protocol: str = ""

    @classmethod
    def from_config(cls, cfg: BrokerConfig, listener: str, protocol: str) -> TlsSettings:
        """The ``ssl.*`` keys of the ``protocol`` listener ``listener``."""

        def get(key: str) -> Any:
            value = listener_value(cfg, listener, key, protocol)
            return value if value != "" else None

        broker_wide = str(cfg.get("ssl.client.auth")).lower()
        if (
            _listener_only("ssl.client.auth", protocol)
            and not cfg.is_set(_prefixed(listener, "ssl.client.auth"))
            and broker_wide != "none"
        ):
            log.warning(
                "listener %s (%s) does not ask for client certificates: ssl.client.auth=%s"
                " applies to SSL listeners only (KIP-684); set %s for this one",
                listener,
                protocol,
                broker_wide,
                _prefixed(listener, "ssl.client.auth"),
            )
        ks_type, ts_type = get("ssl.keystore.type"), get("ssl.truststore.type")
        return cls(
            listener=listener,
            protocol=protocol,
            keystore_type=ks_type.upper() if ks_type else None,
            keystore_location=get("ssl.keystore.location"),
            keystore_password=get("ssl.keystore.password"),
            key_password=get("ssl.key.password"),
            keystore_chain=get("ssl.keystore.certificate.chain"),
            keystore_key=get("ssl.keystore.key"),
            truststore_type=ts_type.upper() if ts_type else None,
            truststore_location=get("ssl.truststore.location"),
            truststore_password=get("ssl.truststore.password"),
            truststore_certificates=get("ssl.truststore.certificates"),
            client_auth=str(get("ssl.client.auth") or "none").lower(),
            protocols=tuple(get("ssl.enabled.protocols") or ()),
            cipher_suites=tuple(get("ssl.cipher.suites") or ()),
        )

    @property
    def files(self) -> tuple[Path, ...]:
        """The files the context is built from (watched for changes)."""
        return tuple(Path(p) for p in (self.keystore_location, self.truststore_location) if p)

    def key(self, name: str) -> str:
        """How to name ``name`` for this listener in a message (a client's
        settings have no listener: the key alone)."""
        if not self.listener:
            return name
        if _listener_only(name, self.protocol):
            return _prefixed(self.listener, name)
        return f"{name} (or listener.name.{self.listener.lower()}.{name})"


def _store_type(declared: str | None, data: bytes, key: str, path: str) -> str:
    kind = declared
    if kind is None:
        if data.startswith(JKS_MAGIC):
            kind = "JKS"
        elif b"-----BEGIN" in data[:4096]:
            kind = "PEM"
        else:
            kind = "PKCS12"
    if kind == "JKS" or data.startswith(JKS_MAGIC):
        raise InvalidConfigError(
            f"{key}: {path} is a JKS key store, which this broker does not read. Convert it to"
            f" PKCS12: keytool -importkeystore -srckeystore {path} -srcstoretype JKS"
            f" -destkeystore {Path(path).with_suffix('.p12')} -deststoretype PKCS12, then set"
            " ssl.keystore.type=PKCS12 (ssl.truststore.type for a trust store) and the"
            " location and password of the new file"
        )
    return kind


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None


def _password(text: str | None) -> bytes | None:
    return text.encode() if text else None


def _load_key(pem: bytes, password: str | None, key: str) -> Any:
    try:
        return serialization.load_pem_private_key(pem, _password(password))
    except TypeError:
        raise InvalidConfigError(
            f"{key}: the private key is encrypted and ssl.key.password is not set"
        ) from None
    except ValueError:
        raise InvalidConfigError(
            f"{key}: the private key cannot be read (wrong ssl.key.password, or not a PEM"
            " private key)"
        ) from None


def _load_certs(pem: bytes, key: str) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise InvalidConfigError(f"{key}: no PEM certificate found")
    return certs


def _key_material(s: TlsSettings) -> tuple[Any, list[x509.Certificate]]:
    """(private key, certificate chain) of the listener's key store."""
    if s.keystore_chain or s.keystore_key:
        if s.keystore_location:
            raise InvalidConfigError(
                f"{s.key('ssl.keystore.location')} and ssl.keystore.certificate.chain cannot both"
                " be set"
            )
        if not (s.keystore_chain and s.keystore_key):
            raise InvalidConfigError(
                f"{s.key('ssl.keystore.certificate.chain')} and ssl.keystore.key must be set"
                " together"
            )
        if s.keystore_type not in (None, "PEM"):
            raise InvalidConfigError(
                f"{s.key('ssl.keystore.type')} must be PEM with inline key material"
            )
        chain = _load_certs(s.keystore_chain.encode(), s.key("ssl.keystore.certificate.chain"))
        return _load_key(s.keystore_key.encode(), s.key_password, s.key("ssl.keystore.key")), chain
    if not s.keystore_location:
        raise InvalidConfigError(
            f"listener {s.listener} serves TLS and needs a key store: set"
            f" {s.key('ssl.keystore.location')}, or ssl.keystore.certificate.chain and"
            " ssl.keystore.key"
        )
    key = s.key("ssl.keystore.location")
    data = _read(s.keystore_location, key)
    kind = _store_type(s.keystore_type, data, key, s.keystore_location)
    if kind == "PEM":
        return _load_key(data, s.key_password, key), _load_certs(data, key)
    try:
        store = pkcs12.load_pkcs12(data, _password(s.keystore_password))
    except ValueError:
        raise InvalidConfigError(
            f"{key}: {s.keystore_location} is not a PKCS12 key store, or"
            f" {s.key('ssl.keystore.password')} is wrong"
        ) from None
    if store.key is None or store.cert is None:
        raise InvalidConfigError(f"{key}: {s.keystore_location} holds no private key entry")
    return store.key, [store.cert.certificate] + [c.certificate for c in store.additional_certs]


def _trusted_pem(s: TlsSettings) -> str | None:
    """The trusted certificates as PEM text, or None when no trust store is set."""
    if s.truststore_certificates:
        if s.truststore_location:
            raise InvalidConfigError(
                f"{s.key('ssl.truststore.location')} and ssl.truststore.certificates cannot both"
                " be set"
            )
        certs = _load_certs(
            s.truststore_certificates.encode(), s.key("ssl.truststore.certificates")
        )
    elif s.truststore_location:
        key = s.key("ssl.truststore.location")
        data = _read(s.truststore_location, key)
        if _store_type(s.truststore_type, data, key, s.truststore_location) == "PEM":
            certs = _load_certs(data, key)
        else:
            try:
                store = pkcs12.load_pkcs12(data, _password(s.truststore_password))
            except ValueError:
                raise InvalidConfigError(
                    f"{key}: {s.truststore_location} is not a PKCS12 trust store, or"
                    f" {s.key('ssl.truststore.password')} is wrong"
                ) from None
            certs = [c.certificate for c in store.additional_certs]
            if store.cert is not None:
                certs.insert(0, store.cert.certificate)
            if not certs:
                raise InvalidConfigError(f"{key}: {s.truststore_location} holds no certificate")
    else:
        return None
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _load_into(ctx: ssl.SSLContext, private_key: Any, chain: list[x509.Certificate]) -> None:
    """``load_cert_chain`` from an anonymous memory file, the key encrypted under a
    one-time password even there (see the module docstring)."""
    one_time = secrets.token_bytes(32)
    blob = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    blob += private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time),
    )
    fd = os.memfd_create("broker-tls", os.MFD_CLOEXEC)
    try:
        os.write(fd, blob)
        ctx.load_cert_chain(f"/proc/self/fd/{fd}", password=one_time)
    finally:
        os.close(fd)


def _set_versions(ctx: ssl.SSLContext, s: TlsSettings) -> None:
    """``ssl.enabled.protocols`` as the context's version range."""
    versions = sorted({_VERSIONS[p.upper()] for p in s.protocols if p.upper() in _VERSIONS})
    if not versions:
        raise InvalidConfigError(
            f"{s.key('ssl.enabled.protocols')}: no TLS version left (TLSv1.2, TLSv1.3)"
        )
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]


def _load_key_store(ctx: ssl.SSLContext, s: TlsSettings) -> None:
    """The key store's certificate chain and private key into ``ctx``."""
    private_key, chain = _key_material(s)
    try:
        _load_into(ctx, private_key, chain)
    except ssl.SSLError as exc:
        raise InvalidConfigError(
            f"{s.key('ssl.keystore.location')}: the certificate and the private key do not"
            f" go together ({exc.reason})"
        ) from None


def build_context(
    s: TlsSettings, sslobject_class: type[ssl.SSLObject] | None = None
) -> ssl.SSLContext:
    """A server context for the listener; InvalidConfigError naming the key on any problem."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if sslobject_class is not None:
        ctx.sslobject_class = sslobject_class
    _set_versions(ctx, s)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    legacy = [c for c in s.cipher_suites if c not in TLS13_SUITES]
    if legacy:
        try:
            ctx.set_ciphers(":".join(legacy))
        except ssl.SSLError:
            raise InvalidConfigError(
                f"{s.key('ssl.cipher.suites')}: OpenSSL knows none of {', '.join(legacy)}"
                " (use OpenSSL names, e.g. ECDHE-RSA-AES256-GCM-SHA384)"
            ) from None
    _load_key_store(ctx, s)
    trusted = _trusted_pem(s)
    mode = _CLIENT_AUTH.get(s.client_auth)
    if mode is None:
        raise InvalidConfigError(f"{s.key('ssl.client.auth')}: none, requested or required")
    if trusted is not None:
        ctx.load_verify_locations(cadata=trusted)
    elif mode != ssl.CERT_NONE:
        raise InvalidConfigError(
            f"{s.key('ssl.client.auth')}={s.client_auth} needs a trust store to check client"
            f" certificates: set {s.key('ssl.truststore.location')} or"
            " ssl.truststore.certificates"
        )
    ctx.verify_mode = mode
    return ctx


def build_client_context(s: TlsSettings, *, check_hostname: bool) -> ssl.SSLContext:
    """A client's context from the same keys (the admin tools' ``--command-config``):
    the trust store (the system's CAs without one), a key store when the broker
    wants client certificates, TLS 1.2 at least."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_versions(ctx, s)
    trusted = _trusted_pem(s)
    if trusted is not None:
        ctx.load_verify_locations(cadata=trusted)
    else:
        ctx.load_default_certs()
    ctx.check_hostname = check_hostname
    if s.keystore_location or s.keystore_chain or s.keystore_key:
        _load_key_store(ctx, s)
    return ctx


def peer_subject(ssl_object: ssl.SSLObject | None) -> str | None:
    """The client certificate's subject as RFC 2253 text (Java's
    ``X500Principal.getName()``), or None without a verified certificate."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


class ReloadingContext:
    """A listener's TLS context, rebuilt when its files change or on demand.

    The server listens with one context for good (``listening``); its SNI
    callback, which OpenSSL calls for every ClientHello, with or without a
    server name, moves each new connection onto the newest context, so new
    connections get new certificates and open ones keep theirs."""

    def __init__(
        self, settings: TlsSettings, sslobject_class: type[ssl.SSLObject] | None = None
    ) -> None:
        self.settings = settings
        self._sslobject_class = sslobject_class
        self.current = build_context(settings, sslobject_class)
        self._stamps = self._file_stamps()
        self.listening = self.current
        self.listening.sni_callback = self._choose
        self.reloads = 0

    def _choose(self, sslobj: ssl.SSLObject, _name: str | None, ctx: ssl.SSLContext) -> None:
        if self.current is not ctx:
            sslobj.context = self.current

    def _file_stamps(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for path in self.settings.files:
            try:
                st = path.stat()
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append((-1, -1, -1))
        return tuple(out)

    def changed(self) -> bool:
        return self._file_stamps() != self._stamps

    def reload(self, log_error: Callable[[str], None]) -> bool:
        """Build a new context from the files as they are now; on a problem keep
        the current one and report it. True when a new context is in use."""
        stamps = self._file_stamps()
        try:
            fresh = build_context(self.settings, self._sslobject_class)
        except InvalidConfigError as exc:
            self._stamps = stamps  # reported once per change, not at every check
            log_error(str(exc))
            return False
        fresh.sni_callback = self._choose
        self.current = fresh
        self._stamps = stamps
        self.reloads += 1
        return True
