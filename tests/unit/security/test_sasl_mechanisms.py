"""The SASL mechanisms, server side: PLAIN (Kafka's PlainSaslServer messages),
SCRAM-SHA-256/512 against RFC 7677's vector and an independent client, salted
credentials only, OAUTHBEARER's JWT checks (signature, issuer, audience,
exp/iat with clock skew, scope, unsigned tokens)."""

from __future__ import annotations

import base64
import hmac
import json
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from broker.errors import InvalidConfigError
from broker.security.oauth import JwtValidator
from broker.security.sasl_mechanisms import (
    AuthenticationFailed,
    OAuthBearerExchange,
    PlainExchange,
    ScramExchange,
    generic_failure,
)
from broker.security.scram_store import (
    MECHANISMS,
    ScramCredential,
    ScramStore,
    credential_from_salted_password,
    salted_password,
)
from tests.unit.security.sasl_support import (
    Jwks,
    ScramClient,
    oauth_token,
    plain_token,
    scram_credential,
)

USERS = {"alice": "alice-secret", "bob": "bob-secret"}

# ---- PLAIN ------------------------------------------------------------------------------


def plain(token: bytes) -> PlainExchange:
    exchange = PlainExchange(USERS)
    assert exchange.evaluate(token) == b""
    return exchange


def test_plain_authenticates_a_known_user() -> None:
    exchange = plain(plain_token("alice", "alice-secret"))
    assert exchange.complete and exchange.authorization_id == "alice"
    assert plain(plain_token("bob", "bob-secret", authzid="bob")).authorization_id == "bob"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        # the same message for a wrong password and an unknown user
        (plain_token("alice", "wrong"), "Authentication failed: Invalid username or password"),
        (plain_token("mallory", "x"), "Authentication failed: Invalid username or password"),
        (plain_token("", "x"), "Authentication failed: username not specified"),
        (plain_token("alice", ""), "Authentication failed: password not specified"),
        (
            plain_token("alice", "alice-secret", authzid="bob"),
            "Authentication failed: Client requested an authorization id that is different"
            " from username",
        ),
        (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        # PlainSaslServer.extractTokens stops after the fourth NUL
        (b"a\0b\0c\0d\0e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    ],
)
def test_plain_refusals_say_what_kafka_says(token: bytes, message: str) -> None:
    with pytest.raises(AuthenticationFailed) as refused:
        PlainExchange(USERS).evaluate(token)
    assert refused.value.client_message == message


# ---- SCRAM ------------------------------------------------------------------------------


def test_scram_sha_256_reproduces_rfc_7677() -> None:
    """RFC 7677 section 3: user "user", password "pencil", 4096 iterations."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = scram_credential("SCRAM-SHA-256", "pencil", 4096, salt)
    exchange = ScramExchange(
        "SCRAM-SHA-256",
        lambda user, mechanism: credential if user == "user" else None,
        server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = exchange.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = exchange.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert exchange.complete and exchange.authorization_id == "user"


def scram(mechanism: str, creds: dict[str, ScramCredential], client: ScramClient) -> ScramExchange:
    exchange = ScramExchange(
        mechanism, lambda user, mech: creds.get(user) if mech == mechanism else None
    )
    server_first = exchange.evaluate(client.first())
    client.check_server_final(exchange.evaluate(client.final(server_first)))
    return exchange


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
@pytest.mark.parametrize("iterations", [4096, 8192])
def test_scram_exchange_with_an_independent_client(mechanism: str, iterations: int) -> None:
    creds = {"al,ice=": scram_credential(mechanism, "s3cret", iterations)}
    client = ScramClient(mechanism, "al,ice=", "s3cret")
    exchange = scram(mechanism, creds, client)
    assert exchange.complete and exchange.authorization_id == "al,ice="


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_scram_wrong_password_and_unknown_user_fail_alike_at_the_proof(mechanism: str) -> None:
    creds = {"alice": scram_credential(mechanism, "right")}
    answers = []
    for user, password in (("alice", "wrong"), ("nobody", "wrong")):
        client = ScramClient(mechanism, user, password)
        exchange = ScramExchange(mechanism, lambda u, m: creds.get(u))
        server_first = exchange.evaluate(client.first())
        # an unknown user gets a server-first like anyone (salt, >= 4096 iterations)
        attrs = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert int(attrs["i"]) >= 4096 and base64.b64decode(attrs["s"])
        with pytest.raises(AuthenticationFailed) as refused:
            exchange.evaluate(client.final(server_first))
        answers.append(refused.value.client_message)
        assert not exchange.complete
    assert answers == [generic_failure(mechanism)] * 2
    # the made-up credential of an unknown user is the same at every attempt
    firsts = []
    for _ in range(2):
        exchange = ScramExchange(mechanism, lambda u, m: None)
        first = exchange.evaluate(ScramClient(mechanism, "nobody", "x", nonce="n").first())
        firsts.append(first.decode().split(",", 1)[1])
    assert firsts[0] == firsts[1]


@pytest.mark.parametrize(
    "client",
    [
        ScramClient("SCRAM-SHA-512", "alice", "x", authzid="alice"),
        ScramClient("SCRAM-SHA-512", "alice", "x", extensions=",foo=bar"),
        ScramClient("SCRAM-SHA-512", "alice", "x", extensions=",tokenauth=false"),
        ScramClient("SCRAM-SHA-512", "alice", "x", repeat_nonce=True),
    ],
    ids=["own-authzid", "extension", "tokenauth-false", "librdkafka-2.0-nonce"],
)
def test_scram_takes_what_kafka_takes(client: ScramClient) -> None:
    """ScramSaslServer: an authzid equal to the user, extensions other than
    tokenauth=true, a client-final nonce that ends with the server-first's."""
    exchange = scram("SCRAM-SHA-512", {"alice": scram_credential("SCRAM-SHA-512", "x")}, client)
    assert exchange.complete and exchange.authorization_id == "alice"


@pytest.mark.parametrize(
    ("client_first", "message"),
    [
        # Kafka's only extension is tokenauth (delegation tokens, none here)
        (b"n,,n=alice,r=abc,tokenauth=true", generic_failure("SCRAM-SHA-512")),
        (b"n,,r=abc", generic_failure("SCRAM-SHA-512")),
        (b"p=tls-unique,,n=alice,r=abc", generic_failure("SCRAM-SHA-512")),
        (b"y,,n=alice,r=abc", generic_failure("SCRAM-SHA-512")),
        (b"n,,n=al\xc3\xafce,r=abc", generic_failure("SCRAM-SHA-512")),
        (b"\xff", generic_failure("SCRAM-SHA-512")),
        (
            b"n,a=bob,n=alice,r=abc",
            "Authentication failed: Client requested an authorization id that is different"
            " from username",
        ),
    ],
)
def test_scram_refuses_malformed_and_foreign_client_firsts(
    client_first: bytes, message: str
) -> None:
    creds = {"alice": scram_credential("SCRAM-SHA-512", "x")}
    exchange = ScramExchange("SCRAM-SHA-512", lambda u, m: creds.get(u))
    with pytest.raises(AuthenticationFailed) as refused:
        exchange.evaluate(client_first)
    assert refused.value.client_message == message


def test_scram_nonce_must_continue_the_servers() -> None:
    creds = {"alice": scram_credential("SCRAM-SHA-256", "x")}
    client = ScramClient("SCRAM-SHA-256", "alice", "x")
    exchange = ScramExchange("SCRAM-SHA-256", lambda u, m: creds.get(u))
    exchange.evaluate(client.first())
    with pytest.raises(AuthenticationFailed):
        exchange.evaluate(b"c=biws,r=" + client.nonce.encode() + b"forged,p=AAAA")
    with pytest.raises(AuthenticationFailed):
        exchange.evaluate(b"c=biws")  # nothing after a failure


def test_scram_store_keeps_salted_keys_only(tmp_path: Path) -> None:
    """Never the password nor the salted password: salt, StoredKey, ServerKey, iterations."""
    mechanism, password, salt = "SCRAM-SHA-512", "correct horse", b"\x01" * 16
    salted = salted_password(mechanism, password, salt, 8192)
    credential = credential_from_salted_password(mechanism, salt, salted, 8192)
    store = ScramStore(tmp_path)
    store.save({("alice", mechanism): credential})
    text = store.path.read_text()
    assert password not in text
    assert base64.b64encode(salted).decode() not in text
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"
    (item,) = json.loads(text)["credentials"]
    assert set(item) == {"user", "mechanism", "iterations", "salt", "storedKey", "serverKey"}
    loaded = ScramStore(tmp_path).load()
    assert loaded.get("alice", mechanism) == credential
    assert loaded.users() == {"alice": {mechanism: 8192}}
    exchange = scram(mechanism, {"alice": credential}, ScramClient(mechanism, "alice", password))
    assert exchange.complete


def test_scram_store_is_0600_even_over_a_leftover_temporary_file(tmp_path: Path) -> None:
    """A crash between the temporary file and the rename may leave it behind with
    another mode; the credentials never take that mode."""
    mechanism, salt = "SCRAM-SHA-256", b"\x02" * 16
    credential = credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, "pw", salt, 4096), 4096
    )
    store = ScramStore(tmp_path)
    leftover = store.path.with_name(store.path.name + ".tmp")
    leftover.write_bytes(b"half")
    leftover.chmod(0o644)
    store.save({("bob", mechanism): credential})
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"
    assert not leftover.exists()


# ---- OAUTHBEARER --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jwks(tmp_path_factory: pytest.TempPathFactory) -> Jwks:
    return Jwks(tmp_path_factory.mktemp("jwks"))


def validator(jwks: Jwks, **kwargs: object) -> JwtValidator:
    options: dict[str, object] = {
        "issuer": "https://issuer.test",
        "audience": ("kafka",),
        "clock_skew_s": 30,
        "scope_claim": "scope",
        "sub_claim": "sub",
    }
    options.update(kwargs)
    return JwtValidator(jwks.url, **options)  # type: ignore[arg-type]


GOOD = {"iss": "https://issuer.test", "aud": "kafka"}


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def test_a_signed_token_names_its_subject_and_expiry(jwks: Jwks) -> None:
    token = jwks.token("alice", lifetime_s=600, scope=["produce", "consume"], **GOOD)
    principal, expiry_ms = validator(jwks).validate(token)
    assert principal == "alice"
    assert abs(expiry_ms - (time.time() + 600) * 1000) < 5000
    # another claim names the principal when configured so
    token = jwks.token("ignored", client_id="svc-1", **GOOD)
    assert validator(jwks, sub_claim="client_id").validate(token)[0] == "svc-1"


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({**GOOD, "iss": "https://other.test"}, "issuer"),
        ({**GOOD, "aud": "not-kafka"}, "Audience"),
        ({**GOOD, "aud": None}, "aud"),
        ({**GOOD, "lifetime_s": -31}, "expired"),
        ({**GOOD, "iat": None}, "iat"),
        ({**GOOD, "nbf": int(time.time()) + 3600}, "not yet valid"),
        ({**GOOD, "scope": ["read", "read"]}, "duplicates"),
        ({**GOOD, "sub": "  "}, "non-blank"),
    ],
)
def test_invalid_tokens_are_refused(jwks: Jwks, claims: dict[str, object], why: str) -> None:
    claims = dict(claims)
    sub = str(claims.pop("sub", "alice"))
    lifetime = int(claims.pop("lifetime_s", 3600))  # type: ignore[call-overload]
    token = jwks.token(sub, lifetime_s=lifetime, **claims)
    with pytest.raises(ValueError, match=why):
        validator(jwks).validate(token)


def test_clock_skew_tolerates_a_just_expired_token(jwks: Jwks) -> None:
    token = jwks.token("alice", lifetime_s=-10, **GOOD)
    assert validator(jwks, clock_skew_s=30).validate(token)[0] == "alice"
    with pytest.raises(ValueError, match="expired"):
        validator(jwks, clock_skew_s=0).validate(token)


def test_unsigned_and_foreign_tokens_are_refused(jwks: Jwks, tmp_path: Path) -> None:
    now = int(time.time())
    claims = {"sub": "alice", "iat": now, "exp": now + 600, **GOOD}
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": jwks.kid})
    with pytest.raises(ValueError):
        validator(jwks).validate(unsigned)
    # HS256 keyed with the public key (algorithm confusion), made by hand: PyJWT
    # itself refuses to sign so
    public_pem = jwks.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signing_input = b".".join(
        _b64url(json.dumps(part).encode())
        for part in ({"alg": "HS256", "typ": "JWT", "kid": jwks.kid}, claims)
    )
    forged = signing_input + b"." + _b64url(hmac.digest(public_pem, signing_input, "sha256"))
    with pytest.raises(ValueError):
        validator(jwks).validate(forged.decode())
    # signed by another key under the same kid
    other = Jwks(tmp_path, kid=jwks.kid)
    with pytest.raises(ValueError, match="Signature"):
        validator(jwks).validate(other.token("alice", **GOOD))
    # a kid the JWKS does not have
    with pytest.raises(ValueError, match="kid"):
        validator(jwks).validate(Jwks(tmp_path / "..", kid="other").token("alice", **GOOD))


def test_only_a_file_jwks_is_read(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="file: URL"):
        JwtValidator(
            "https://idp.test/jwks", issuer=None, audience=(), clock_skew_s=0,
            scope_claim="scope", sub_claim="sub",
        )  # fmt: skip
    with pytest.raises(InvalidConfigError, match="cannot read a JWKS"):
        JwtValidator(
            (tmp_path / "missing.json").as_uri(), issuer=None, audience=(), clock_skew_s=0,
            scope_claim="scope", sub_claim="sub",
        )  # fmt: skip


def test_oauthbearer_exchange(jwks: Jwks) -> None:
    check = validator(jwks)
    exchange = OAuthBearerExchange(check)
    assert exchange.evaluate(oauth_token(jwks.token("alice", lifetime_s=120, **GOOD))) == b""
    assert exchange.complete and exchange.authorization_id == "alice"
    assert exchange.lifetime_ms is not None and exchange.lifetime_ms > time.time() * 1000
    # an invalid token: the RFC 7628 error challenge, then the client's ^A ends it
    bad = OAuthBearerExchange(check)
    challenge = bad.evaluate(oauth_token(jwks.token("alice", lifetime_s=-3600, **GOOD)))
    assert json.loads(challenge) == {"status": "invalid_token"}
    with pytest.raises(AuthenticationFailed) as refused:
        bad.evaluate(b"\x01")
    assert refused.value.client_message == '{"status":"invalid_token"}'
    assert not bad.complete
    # an authorization id other than the token's principal
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(bob\)"):
        OAuthBearerExchange(check).evaluate(oauth_token(jwks.token("alice", **GOOD), "bob"))
    # not RFC 7628 framing
    with pytest.raises(AuthenticationFailed):
        OAuthBearerExchange(check).evaluate(b"n,,auth=Bearer x")


def test_scram_refuses_a_stored_credential_below_4096_iterations() -> None:
    """ScramSaslServer: "Iterations N is less than the minimum 4096" (a generic answer)."""
    weak = scram_credential("SCRAM-SHA-256", "x", iterations=1000)
    exchange = ScramExchange("SCRAM-SHA-256", lambda u, m: weak)
    with pytest.raises(AuthenticationFailed) as refused:
        exchange.evaluate(ScramClient("SCRAM-SHA-256", "alice", "x").first())
    assert refused.value.client_message == generic_failure("SCRAM-SHA-256")
    assert "less than 4096" in str(refused.value)
