"""The security keys: listeners' protocols, TLS, SASL, with Kafka's names and defaults.

Declared here (``KEYS``; ``broker.config`` builds its one table of broker keys
from it and the other owners' tuples) so the shared config module only gains
the listener-prefix rule.
Sources (Kafka 3.9): ``SocketServerConfigs``, ``BrokerSecurityConfigs``,
``SslConfigs``, ``SaslConfigs``.

Per-listener keys take Kafka's prefix and win over the plain key::

    listener.name.<listener, lower case>.<key>                 any key below
    listener.name.<listener>.<mechanism, lower case>.<key>     MECHANISM_KEYS only

e.g. ``listener.name.sasl_ssl.ssl.keystore.location``,
``listener.name.sasl_plaintext.plain.sasl.jaas.config``.
:func:`listener_key` resolves such a name to the declaration of its key.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from broker.config_key import ConfigKey, ConfigType, in_range, list_of, one_of
from broker.errors import InvalidConfigError

#: Kafka's SecurityProtocol names
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: keys that may also carry a mechanism prefix after the listener's
MECHANISM_KEYS = frozenset(
    {
        "sasl.jaas.config",
        "sasl.server.callback.handler.class",
        "connections.max.reauth.ms",
    }
)
_LISTENER_PREFIX = re.compile(r"^listener\.name\.([a-z0-9_\-]+)\.(.+)$")


def _check_protocol_map(name: str, value: Any) -> None:
    parse_protocol_map(name, value)


def parse_protocol_map(name: str, value: Any) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` (``listener.security.protocol.map``); names upper-cased."""
    out: dict[str, str] = {}
    for item in value or ():
        listener, sep, protocol = item.partition(":")
        listener, protocol = listener.strip().upper(), protocol.strip().upper()
        if not sep or not listener or protocol not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(
                f"Invalid value {','.join(value)} for configuration {name}: {item!r} is not"
                f" LISTENER_NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        if listener in out:
            raise InvalidConfigError(
                f"Invalid value {','.join(value)} for configuration {name}: listener {listener}"
                " is named twice"
            )
        out[listener] = protocol
    return out


#: the security keys (``broker.config`` puts them in its table of broker keys)
KEYS = (
    ConfigKey(
        "listener.security.protocol.map",
        ConfigType.LIST,
        tuple(f"{p}:{p}" for p in SECURITY_PROTOCOLS),
        "Security protocol of each listener name (NAME:PROTOCOL,...); listeners named after"
        " a protocol need no entry.",
        _check_protocol_map,
    ),
    ConfigKey(
        "inter.broker.listener.name",
        ConfigType.STRING,
        None,
        "Accepted for compatibility: this broker has no other brokers to talk to.",
        inert=True,
    ),
    ConfigKey(
        "security.inter.broker.protocol",
        ConfigType.STRING,
        "PLAINTEXT",
        "Accepted for compatibility: this broker has no other brokers to talk to.",
        one_of(*SECURITY_PROTOCOLS),
        inert=True,
    ),
    # ---- TLS ----------------------------------------------------------------------------
    ConfigKey(
        "ssl.keystore.type",
        ConfigType.STRING,
        None,
        "PEM or PKCS12 (JKS is refused: convert it with keytool). Unset: told by the"
        " file's content (Kafka's default is JKS).",
        one_of("PEM", "PKCS12", "JKS", case_sensitive=False),
    ),
    ConfigKey("ssl.keystore.location", ConfigType.STRING, None, "Key store file."),
    ConfigKey(
        "ssl.keystore.password", ConfigType.PASSWORD, None, "Password of the key store file."
    ),
    ConfigKey(
        "ssl.key.password",
        ConfigType.PASSWORD,
        None,
        "Password of the private key (PEM: of an encrypted key; PKCS12: of the key entry).",
    ),
    ConfigKey(
        "ssl.keystore.certificate.chain",
        ConfigType.PASSWORD,
        None,
        "The certificate chain in PEM, inline (ssl.keystore.type=PEM).",
    ),
    ConfigKey(
        "ssl.keystore.key",
        ConfigType.PASSWORD,
        None,
        "The private key in PEM (PKCS#8, may be encrypted), inline (ssl.keystore.type=PEM).",
    ),
    ConfigKey(
        "ssl.truststore.type",
        ConfigType.STRING,
        None,
        "PEM or PKCS12 (JKS is refused). Unset: told by the file's content.",
        one_of("PEM", "PKCS12", "JKS", case_sensitive=False),
    ),
    ConfigKey("ssl.truststore.location", ConfigType.STRING, None, "Trust store file."),
    ConfigKey(
        "ssl.truststore.password", ConfigType.PASSWORD, None, "Password of a PKCS12 trust store."
    ),
    ConfigKey(
        "ssl.truststore.certificates",
        ConfigType.PASSWORD,
        None,
        "Trusted certificates in PEM, inline (ssl.truststore.type=PEM).",
    ),
    ConfigKey(
        "ssl.client.auth",
        ConfigType.STRING,
        "none",
        "Client certificates: none, requested (checked when sent) or required.",
        one_of("none", "requested", "required", case_sensitive=False),
    ),
    ConfigKey(
        "ssl.enabled.protocols",
        ConfigType.LIST,
        ("TLSv1.2", "TLSv1.3"),
        "TLS versions offered (TLSv1 and TLSv1.1 are refused).",
        list_of("tlsv1.2", "tlsv1.3"),
    ),
    ConfigKey(
        "ssl.protocol",
        ConfigType.STRING,
        "TLSv1.3",
        "Accepted for compatibility; ssl.enabled.protocols decides the versions.",
        inert=True,
    ),
    ConfigKey(
        "ssl.cipher.suites",
        ConfigType.LIST,
        (),
        "TLS 1.2 cipher suites allowed, by OpenSSL's names (ECDHE-RSA-AES256-GCM-SHA384, not"
        " Java's TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384); empty = OpenSSL's defaults. TLS 1.3"
        " suites are OpenSSL's and always on.",
    ),
    ConfigKey(
        "ssl.principal.mapping.rules",
        ConfigType.STRING,
        "DEFAULT",
        "Rules turning a client certificate's subject (RFC 2253) into a user name:"
        " RULE:pattern/replacement/[LU], ..., DEFAULT.",
    ),
    ConfigKey(
        "ssl.endpoint.identification.algorithm",
        ConfigType.STRING,
        "https",
        "Accepted for compatibility: a broker does not check its clients' host names.",
        inert=True,
    ),
    # ---- SASL ---------------------------------------------------------------------------
    ConfigKey(
        "sasl.enabled.mechanisms",
        ConfigType.LIST,
        ("GSSAPI",),
        "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,"
        " OAUTHBEARER (Kafka's default GSSAPI is not supported: set this key).",
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        ConfigType.STRING,
        "GSSAPI",
        "Accepted for compatibility: this broker has no other brokers to talk to.",
        inert=True,
    ),
    ConfigKey(
        "sasl.jaas.config",
        ConfigType.PASSWORD,
        None,
        'JAAS login module configuration; PLAIN users as user_<name>="<password>".',
    ),
    ConfigKey(
        "sasl.server.callback.handler.class",
        ConfigType.STRING,
        None,
        "OAUTHBEARER: org.apache.kafka.common.security.oauthbearer."
        "OAuthBearerValidatorCallbackHandler (signed JWTs, the only kind accepted).",
    ),
    ConfigKey(
        "sasl.server.max.receive.size",
        ConfigType.INT,
        524_288,
        "Largest frame a client may send before it has authenticated.",
        in_range(1),
    ),
    ConfigKey(
        "connections.max.reauth.ms",
        ConfigType.LONG,
        0,
        "SASL session lifetime: a client must re-authenticate within it (KIP-368); 0 = none.",
        in_range(0),
    ),
    ConfigKey(
        "connection.failed.authentication.delay.ms",
        ConfigType.INT,
        100,
        "How long a failed authentication waits before its answer and the close.",
        in_range(0),
    ),
    ConfigKey(
        "sasl.oauthbearer.jwks.endpoint.url",
        ConfigType.STRING,
        None,
        "JWKS with the keys JWTs are signed with: a file: URL (read again when it changes).",
    ),
    ConfigKey(
        "sasl.oauthbearer.expected.issuer",
        ConfigType.STRING,
        None,
        "The iss claim a JWT must carry (unset: not checked).",
    ),
    ConfigKey(
        "sasl.oauthbearer.expected.audience",
        ConfigType.LIST,
        (),
        "Audiences of which a JWT's aud claim must name one (empty: not checked).",
    ),
    ConfigKey(
        "sasl.oauthbearer.clock.skew.seconds",
        ConfigType.INT,
        30,
        "Tolerance when checking exp, nbf and iat.",
        in_range(0),
    ),
    ConfigKey(
        "sasl.oauthbearer.scope.claim.name",
        ConfigType.STRING,
        "scope",
        "Name of the scope claim.",
    ),
    ConfigKey(
        "sasl.oauthbearer.sub.claim.name",
        ConfigType.STRING,
        "sub",
        "Name of the claim that names the principal.",
    ),
    ConfigKey(
        "ssl.reload.interval.ms",
        ConfigType.LONG,
        10_000,
        "How often key and trust store files are checked for changes (this broker's;"
        " SIGHUP also reloads); 0 = only on SIGHUP.",
        in_range(0),
    ),
)

SECURITY_KEYS = frozenset(k.name for k in KEYS)


def listener_candidates(
    name: str, known: Mapping[str, ConfigKey]
) -> tuple[str, str, list[str]] | None:
    """For a misspelt ``listener.name.<listener>.<rest>``: (prefix, rest, the keys
    :func:`listener_key` accepts after that prefix); None without the prefix."""
    match = _LISTENER_PREFIX.match(name)
    if match is None:
        return None
    prefix = name[: match.start(2)]
    plain = [k for k in known if not k.startswith("listener.") and k != "listeners"]
    by_mechanism = [f"{m.lower()}.{k}" for m in SASL_MECHANISMS for k in sorted(MECHANISM_KEYS)]
    return prefix, match.group(2), plain + by_mechanism


def listener_key(name: str, known: Mapping[str, ConfigKey]) -> ConfigKey | None:
    """The declaration of ``listener.name.<listener>.[<mechanism>.]<key>``, renamed;
    None if ``name`` has no such prefix or names no known key."""
    match = _LISTENER_PREFIX.match(name)
    if match is None:
        return None
    rest = match.group(2)
    base = known.get(rest)
    if base is None:
        mechanism, _, key = rest.partition(".")
        if key not in MECHANISM_KEYS or mechanism.upper() not in SASL_MECHANISMS:
            return None
        base = known[key]
    if base.name.startswith("listener.") or base.name == "listeners":
        return None
    return dataclasses.replace(base, name=name, default=None)
