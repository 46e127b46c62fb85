"""``--command-config``: Kafka's client keys -> TLS context and SASL credentials,
and ``broker scram-users``' options (kafka-configs.sh's --add-config syntax),
without a broker (tests/integration/test_security_clients.py runs them
against one)."""

from __future__ import annotations

import argparse
import base64
import io
import ssl
from pathlib import Path

import pytest

from broker.admin import scram_users
from broker.admin.client_security import (
    ClientSecurityError,
    client_security,
    load_command_config,
)
from broker.admin.scram_client import ScramClient, ScramClientError
from broker.security.sasl_mechanisms import ScramExchange
from broker.security.tls import JKS_MAGIC
from tests.integration.security_setup import STORE_PASSWORD, Pki
from tests.unit.security.sasl_support import scram_credential

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="admin" password="admin-secret";'
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


def test_plaintext_by_default() -> None:
    security = client_security({"client.id": "x"})
    assert (security.protocol, security.tls, security.sasl) == ("PLAINTEXT", None, False)


def test_a_command_config_file_for_sasl_ssl(pki: Pki, tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text(
        "# Kafka's client keys\n"
        "security.protocol=SASL_SSL\n"
        "ssl.truststore.type=PKCS12\n"
        f"ssl.truststore.location={pki.pkcs12_truststore()}\n"
        f"ssl.truststore.password={STORE_PASSWORD}\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" password="admin-secret";\n'
        "request.timeout.ms=30000\n"
    )
    security = load_command_config(path)
    assert security.protocol == "SASL_SSL" and security.mechanism == "SCRAM-SHA-512"
    assert (security.username, security.password) == ("admin", "admin-secret")
    assert "admin-secret" not in repr(security)
    assert security.tls is not None and security.tls.check_hostname
    assert security.tls.verify_mode == ssl.CERT_REQUIRED
    assert security.tls.minimum_version == ssl.TLSVersion.TLSv1_2


def test_mutual_tls_and_no_host_name_check(pki: Pki) -> None:
    cert, key = pki.client("admin")
    security = client_security(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(pki.ca_pem),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": cert.read_text(),
            "ssl.keystore.key": key.read_text(),
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert security.tls is not None and not security.tls.check_hostname
    assert not security.sasl


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
            "sasl.mechanism",
        ),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": SCRAM_JAAS,
            },
            "PlainLoginModule",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": SCRAM_JAAS.replace(' password="admin-secret"', ""),
            },
            "username and password",
        ),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent"}, "cannot read"),
    ],
)
def test_unusable_settings_name_the_key_never_the_password(
    props: dict[str, str], message: str
) -> None:
    with pytest.raises(ClientSecurityError, match=message) as refused:
        client_security(props)
    assert "admin-secret" not in str(refused.value)


def test_a_jks_trust_store_is_refused_with_the_keytool_command(tmp_path: Path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(JKS_MAGIC + b"\0" * 32)
    with pytest.raises(ClientSecurityError, match="keytool -importkeystore"):
        client_security({"security.protocol": "SSL", "ssl.truststore.location": str(jks)})


# ---- broker scram-users' options ---------------------------------------------------------------


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scram_users.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:1", *argv])


def test_kafka_configs_add_config_syntax() -> None:
    parsed = scram_users.parse_add_config(
        "SCRAM-SHA-256=[iterations=8192,password=abc, def],SCRAM-SHA-512=[password=1234=abc]"
    )
    assert parsed == [("SCRAM-SHA-256", 8192, "abc, def"), ("SCRAM-SHA-512", 4096, "1234=abc")]
    assert scram_users.parse_add_config("SCRAM-SHA-512=[iterations=-1,password=x]") == [
        ("SCRAM-SHA-512", 4096, "x")
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("SCRAM-SHA-256=[iterations=100,password=x]", "less than the minimum 4096"),
        ("SCRAM-SHA-256=[iterations=20000,password=x]", "more than the maximum 16384"),
        ("consumer_byte_rate=1024", "unexpected config name consumer_byte_rate"),
        ("SCRAM-SHA-256=[iterations=8192]", "Invalid credential property"),
        ("SCRAM-SHA-256", "key=val"),
    ],
)
def test_bad_add_configs(config: str, message: str) -> None:
    with pytest.raises(scram_users.UsageError, match=message):
        scram_users.parse_add_config(config)


def test_upsertions_carry_a_salted_password_never_the_password(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("correct horse\n")
    args = parse(
        "add", "--user", "alice", "--mechanism", "SCRAM-SHA-256", "--mechanism", "SCRAM-SHA-512",
        "--iterations", "8192", "--password-file", str(secret),
    )  # fmt: skip
    ups = scram_users.upsertions(args, io.StringIO())
    assert [(u.name, u.mechanism, u.iterations) for u in ups] == [
        ("alice", 1, 8192),
        ("alice", 2, 8192),
    ]
    for u in ups:
        assert len(u.salt) == 32 and b"correct horse" not in bytes(u.salted_password)
    assert ups[0].salt != ups[1].salt
    # from standard input when it is not a terminal
    piped = parse("add", "--user", "bob", "--mechanism", "SCRAM-SHA-512")
    (up,) = scram_users.upsertions(piped, io.StringIO("from-stdin\n"))
    assert up.iterations == 4096
    with pytest.raises(scram_users.UsageError, match="empty"):
        scram_users.upsertions(piped, io.StringIO("\n"))
    with pytest.raises(scram_users.UsageError, match="--mechanism"):
        scram_users.upsertions(parse("add", "--user", "bob"), io.StringIO("x\n"))


def test_usage_errors_exit_2_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("add", "--user", "alice", "--add-config", "SCRAM-SHA-1=[password=x]")
    assert scram_users.run(args) == 2
    assert "unexpected config name SCRAM-SHA-1" in capsys.readouterr().err


# ---- the tools' SCRAM client ---------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_scram_client_against_the_broker_exchange(mechanism: str) -> None:
    """No SASLprep, as Kafka's ScramFormatter: a soft hyphen (which SASLprep
    removes) stays part of the password the credential was made from."""
    password = "pass\u00adword é"
    creds = {"al,ice": scram_credential(mechanism, password)}
    server = ScramExchange(mechanism, lambda u, m: creds.get(u))
    client = ScramClient(mechanism, "al,ice", password)
    client.check_final(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.authorization_id == "al,ice"


def test_the_scram_client_refuses_a_weak_or_forged_server() -> None:
    client = ScramClient("SCRAM-SHA-512", "alice", "pw")
    nonce = client.first().decode().rsplit("r=", 1)[1]
    salt = base64.b64encode(b"salt").decode()
    with pytest.raises(ScramClientError, match="less than the minimum 4096"):
        client.final(f"r={nonce}x,s={salt},i=1000".encode())
    with pytest.raises(ScramClientError, match="invalid"):
        client.final(f"r=other{nonce},s={salt},i=4096".encode())
    client.final(f"r={nonce}x,s={salt},i=4096".encode())
    with pytest.raises(ScramClientError, match="signature is wrong"):
        client.check_final(b"v=" + base64.b64encode(b"\0" * 64))
    with pytest.raises(ScramClientError, match="refused: other-error"):
        client.check_final(b"e=other-error")
