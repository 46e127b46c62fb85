"""TLS contexts from Kafka's ssl.* keys: PEM (files, inline, encrypted keys), PKCS12,
JKS refused, client auth, protocol versions, reload; the principal mapping rules."""

from __future__ import annotations

import os
import re
import ssl
import threading
import warnings
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.errors import InvalidConfigError
from broker.security.principal_mapping import NoMatchingRule, PrincipalMapper
from broker.security.tls import JKS_MAGIC, ReloadingContext, TlsSettings, build_context
from tests.integration.security_setup import KEY_PASSWORD, STORE_PASSWORD, Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


def settings(**props: str) -> TlsSettings:
    return TlsSettings.from_config(BrokerConfig.from_properties(props), "SSL", "SSL")


def handshake(
    server: ssl.SSLContext,
    pki: Pki,
    client_cert: tuple[Path, Path] | None = None,
    **client_opts: object,
) -> tuple[str, dict | None]:
    """A TLS handshake over a socket pair: (negotiated version, peer cert seen by the server)."""
    import socket

    client = ssl.create_default_context(cafile=str(pki.ca_pem))
    client.check_hostname = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.0/1.1 on purpose
        for name, value in client_opts.items():
            setattr(client, name, value)
    a, b = socket.socketpair()
    if client_cert is not None:
        client.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
    result: dict[str, object] = {}

    def serve() -> None:
        s = server.wrap_socket(a, server_side=True, do_handshake_on_connect=False)
        try:
            s.do_handshake()
            result["peer"] = s.getpeercert()
            result["version"] = s.version()
        except (ssl.SSLError, OSError) as exc:
            result["error"] = exc
        finally:
            s.close()

    t = threading.Thread(target=serve)
    t.start()
    c = client.wrap_socket(b, server_hostname="localhost", do_handshake_on_connect=False)
    try:
        c.do_handshake()
        c.recv(1)
    except (ssl.SSLError, OSError):
        pass
    finally:
        c.close()
    t.join(10)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return str(result["version"]), result["peer"]  # type: ignore[return-value]


def test_pem_file_with_encrypted_key(pki: Pki) -> None:
    ctx = build_context(
        settings(
            **{
                "ssl.keystore.location": str(pki.pem_keystore()),
                "ssl.key.password": KEY_PASSWORD,
            }
        )
    )
    assert handshake(ctx, pki)[0] == "TLSv1.3"
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.key.password is not set")):
        build_context(settings(**{"ssl.keystore.location": str(pki.pem_keystore())}))
    with pytest.raises(InvalidConfigError, match=re.escape("wrong ssl.key.password")):
        build_context(
            settings(
                **{"ssl.keystore.location": str(pki.pem_keystore()), "ssl.key.password": "nope"}
            )
        )


def test_inline_pem_and_pkcs12(pki: Pki) -> None:
    inline = settings(
        **{
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": pki.chain_pem(pki.server).decode(),
            "ssl.keystore.key": pki.key_pem(pki.server, KEY_PASSWORD).decode(),
            "ssl.key.password": KEY_PASSWORD,
        }
    )
    assert handshake(build_context(inline), pki)[0] == "TLSv1.3"
    p12 = settings(
        **{
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.pkcs12_keystore()),
            "ssl.keystore.password": STORE_PASSWORD,
        }
    )
    assert handshake(build_context(p12), pki)[0] == "TLSv1.3"
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.keystore.password")):
        build_context(
            settings(**{"ssl.keystore.location": str(pki.pkcs12_keystore())})  # no password
        )


def test_jks_is_refused_with_the_keytool_command(tmp_path: Path) -> None:
    jks = tmp_path / "server.jks"
    jks.write_bytes(JKS_MAGIC + bytes(60))
    with pytest.raises(
        InvalidConfigError, match=r"keytool -importkeystore .* -deststoretype PKCS12"
    ):
        build_context(settings(**{"ssl.keystore.location": str(jks)}))


def test_missing_key_store_names_the_keys() -> None:
    with pytest.raises(InvalidConfigError, match=r"listener SSL serves TLS and needs a key store"):
        build_context(settings())
    with pytest.raises(InvalidConfigError, match="cannot read /nonexistent"):
        build_context(settings(**{"ssl.keystore.location": "/nonexistent/k.pem"}))


def test_client_auth_required_checks_client_certificates(pki: Pki) -> None:
    s = settings(
        **{
            "ssl.keystore.location": str(pki.pem_keystore()),
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": str(pki.ca_pem),
            "ssl.client.auth": "required",
        }
    )
    ctx = build_context(s)
    _, peer = handshake(ctx, pki, pki.client("alice"))
    assert peer is not None and ("commonName", "alice") in [rdn[0] for rdn in peer["subject"]]
    with pytest.raises(ssl.SSLError):
        handshake(ctx, pki)  # no certificate
    other = Pki.make(pki.root / "other")
    with pytest.raises(ssl.SSLError):
        handshake(ctx, pki, other.client("mallory"))  # a certificate of another CA
    with pytest.raises(InvalidConfigError, match="needs a trust store"):
        build_context(
            settings(
                **{
                    "ssl.keystore.location": str(pki.pem_keystore()),
                    "ssl.key.password": KEY_PASSWORD,
                    "ssl.client.auth": "requested",
                }
            )
        )


def test_tls_versions(pki: Pki) -> None:
    base = {"ssl.keystore.location": str(pki.pem_keystore()), "ssl.key.password": KEY_PASSWORD}
    ctx = build_context(settings(**base, **{"ssl.enabled.protocols": "TLSv1.2"}))
    assert handshake(ctx, pki)[0] == "TLSv1.2"
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.enabled.protocols")):
        settings(**base, **{"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"})
    ctx = build_context(settings(**base))
    with pytest.raises(ssl.SSLError):
        handshake(
            ctx,
            pki,
            minimum_version=ssl.TLSVersion.TLSv1,
            maximum_version=ssl.TLSVersion.TLSv1_1,
        )


def test_reload_serves_the_new_certificate_to_new_connections(pki: Pki) -> None:
    path = pki.root / "reload.pem"
    path.write_bytes(pki.pem_keystore().read_bytes())
    tls = ReloadingContext(
        settings(**{"ssl.keystore.location": str(path), "ssl.key.password": KEY_PASSWORD})
    )
    assert not tls.changed()
    fresh = pki.ca.issue_cert("127.0.0.1", common_name="broker-renewed")
    path.write_bytes(pki.chain_pem(fresh) + pki.key_pem(fresh, KEY_PASSWORD))
    os.utime(path, ns=(1, 1))
    assert tls.changed()
    errors: list[str] = []
    assert tls.reload(errors.append) and not errors
    import socket

    a, b = socket.socketpair()
    client = ssl.create_default_context(cafile=str(pki.ca_pem))
    client.check_hostname = False
    seen: dict[str, object] = {}

    def serve() -> None:
        s = tls.listening.wrap_socket(a, server_side=True)
        s.close()

    t = threading.Thread(target=serve)
    t.start()
    with client.wrap_socket(b, server_hostname="localhost") as c:
        seen["cert"] = c.getpeercert()
    t.join(10)
    subject = dict(rdn[0] for rdn in seen["cert"]["subject"])  # type: ignore[index]
    assert subject["commonName"] == "broker-renewed"
    path.write_bytes(b"broken")
    assert not tls.reload(errors.append) and errors  # the old context stays in use


@pytest.mark.parametrize(
    ("rules", "dn", "name"),
    [
        ("DEFAULT", "CN=alice,OU=eng,O=Example", "CN=alice,OU=eng,O=Example"),
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=Duke,OU=ServiceUsers,O=Org,C=US",
            "Duke",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
            "duke@javasoft",
        ),
        ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U", "cn=duke,ou=x", "DUKE"),
        ("RULE:^CN=([^,]+)$/$12x/", "CN=a", "a2x"),  # $12 with one group: $1 then '2'
        ("RULE:^CN=([^,]+)$/a\\/b/", "CN=a", "a/b"),
    ],
)
def test_principal_mapping_rules(rules: str, dn: str, name: str) -> None:
    assert PrincipalMapper(rules).name(dn) == name


def test_no_rule_applies() -> None:
    with pytest.raises(NoMatchingRule):
        PrincipalMapper("RULE:^CN=x$/y/").name("CN=z")
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.principal.mapping.rules")):
        PrincipalMapper("RULE:^CN=(.*$/x/")
