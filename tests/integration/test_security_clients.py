"""TLS and SASL with every real client, against one broker with four listeners.

The broker (a subprocess) listens on::

    INTERNAL  PLAINTEXT  (unused by the clients: the broker's own start-up check)
    SSL       TLS, no client certificate: User:ANONYMOUS
    MTLS      TLS with ssl.client.auth=required; the principal from the
              certificate's CN (ssl.principal.mapping.rules)
    SASL_SSL  TLS then PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (JWTs
              signed by a key made here, checked against its JWKS file)

with the authorizer on (``super.users=User:admin``, topics without ACLs open
to everyone, the cluster named by an ACL so that only the admin changes
credentials). Certificates, keys, passwords and the JWT key are made by the
test (security_setup.py, tests/unit/security/sasl_support.py). The SCRAM user
is created over SASL_SSL by ``broker scram-users`` (SHA-256) and by
confluent-kafka's AdminClient (SHA-512), both as the PLAIN admin.

confluent-kafka, kcat, kafka-python and aiokafka each produce and consume
(assign, no group) over SSL, mutual TLS and SASL_SSL with PLAIN and both
SCRAMs; confluent-kafka also with OAUTHBEARER through ``oauth_cb``. Refused:
a wrong password, an unknown user, an expired JWT, a JWT for another
audience, a certificate of another CA; nothing of theirs is stored.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.aio import run
from tests.integration.harness import HOST, BrokerProcess, free_port
from tests.integration.security_setup import (
    KEY_PASSWORD,
    Pki,
    aiokafka_security,
    kafka_python_security,
    librdkafka_security,
)
from tests.unit.security.sasl_support import Jwks

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

TIMEOUT = 20.0
RECORDS = 5
ISSUER, AUDIENCE = "https://issuer.test", "kafka"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass
class Secured:
    broker: BrokerProcess
    pki: Pki
    jwks: Jwks
    root: Path
    ports: dict[str, int]
    #: user -> password, made up for this run
    passwords: dict[str, str] = field(default_factory=dict)
    certs: dict[str, tuple[Path, Path]] = field(default_factory=dict)
    #: confluent-kafka's AdminClient as the PLAIN super user (kept: a dropped
    #: handle fails its pending futures)
    admin: Any = None

    def bootstrap(self, listener: str) -> str:
        return f"{HOST}:{self.ports[listener]}"

    def metric(self, name: str, **labels: str) -> float:
        total = 0.0
        for line in self.broker.metrics().splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("security")
    pki = Pki.make(root / "pki")
    jwks = Jwks(root)
    data = root / "data"
    data.mkdir()
    broker = BrokerProcess(data)
    ports = {
        "INTERNAL": broker.port,
        "SSL": free_port(),
        "MTLS": free_port(),
        "SASL_SSL": free_port(),
    }
    passwords = {u: secrets.token_urlsafe(12) for u in ("admin", "alice", "bob")}
    jaas = (
        f"{PLAIN_LOGIN} required "
        + " ".join(f'user_{u}="{passwords[u]}"' for u in ("admin", "alice"))
        + ";"
    )
    broker.overrides.update(
        {
            "listeners": ",".join(f"{n}://{HOST}:{p}" for n, p in ports.items()),
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
            **pki.server_overrides("SSL"),
            **pki.server_overrides("MTLS", form="pkcs12"),
            **pki.server_overrides("SASL_SSL"),
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": (
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
            ),
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "sasl.oauthbearer.jwks.endpoint.url": jwks.url,
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:admin",
            "allow.everyone.if.no.acl.found": "true",
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
        }
    )
    s = Secured(broker.start(), pki, jwks, root, ports, passwords)
    s.certs = {u: pki.client(u) for u in ("carol", "dave")}
    s.admin = admin_client(s)
    try:
        # an ACL naming the cluster: only the super user may change credentials
        # (with none, allow.everyone.if.no.acl.found would let anyone)
        cluster = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                             "User:admin", "*", AclOperation.ALTER, AclPermissionType.ALLOW)  # fmt: skip
        for f in s.admin.create_acls([cluster]).values():
            f.result(TIMEOUT)
        # the SCRAM user: SHA-256 through broker scram-users, SHA-512 through confluent-kafka
        secret = root / "bob.password"
        secret.write_text(passwords["bob"] + "\n")
        done = broker_tool(s, "scram-users", "add", "--user", "bob",
                           "--mechanism", "SCRAM-SHA-256", "--iterations", "8192",
                           "--password-file", str(secret))  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Completed updating config for user bob.\n"
        up = UserScramCredentialUpsertion(
            "bob",
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
            passwords["bob"].encode(),
        )
        for f in s.admin.alter_user_scram_credentials([up]).values():
            f.result(TIMEOUT)
        yield s
    finally:
        assert broker.stop() == 0, broker.log()
    # no credential reached the log
    log = broker.log()
    assert not any(p in log for p in passwords.values())


# ---- clients and their settings -----------------------------------------------------------------

#: security mode -> (listener, protocol, mechanism, user)
MODES = {
    "ssl": ("SSL", "SSL", None, None),
    "mtls": ("MTLS", "SSL", None, "carol"),
    "plain": ("SASL_SSL", "SASL_SSL", "PLAIN", "alice"),
    "scram-sha-256": ("SASL_SSL", "SASL_SSL", "SCRAM-SHA-256", "bob"),
    "scram-sha-512": ("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "bob"),
}


def settings(
    s: Secured, mode: str, maker: Callable[..., dict[str, Any]], **over: Any
) -> dict[str, Any]:
    _listener, protocol, mechanism, user = MODES[mode]
    kwargs: dict[str, Any] = {"mechanism": mechanism}
    if mechanism is not None:
        kwargs.update(user=user, password=s.passwords[user or ""])
    if mode == "mtls":
        kwargs["client_cert"] = s.certs[user or ""]
    kwargs.update(over)
    return maker(protocol, s.pki, **kwargs)


def admin_client(s: Secured) -> AdminClient:
    """confluent-kafka's AdminClient as the PLAIN super user, over SASL_SSL."""
    config = librdkafka_security("SASL_SSL", s.pki, mechanism="PLAIN", user="admin",
                                 password=s.passwords["admin"])  # fmt: skip
    return AdminClient({"bootstrap.servers": s.bootstrap("SASL_SSL"), **config})


def new_topic(s: Secured, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    for f in s.admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(TIMEOUT)
    return name


def end_offset(s: Secured, topic: str) -> int:
    (f,) = s.admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}).values()
    return int(f.result(TIMEOUT).offset)


def broker_tool(s: Secured, tool: str, *args: str, user: str = "admin",
                password: str | None = None,
                mechanism: str = "PLAIN") -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``broker <tool>`` over SASL_SSL as a user (its --command-config)."""
    login = PLAIN_LOGIN if mechanism == "PLAIN" else SCRAM_LOGIN
    config = s.root / f"{tool}-{user}-{uuid.uuid4().hex[:6]}.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={s.pki.ca_pem}\n"
        "ssl.truststore.type=PEM\n"
        f"sasl.mechanism={mechanism}\n"
        f'sasl.jaas.config={login} required username="{user}" \\\n'
        f'    password="{password if password is not None else s.passwords[user]}";\n'
    )
    return subprocess.run(
        [sys.executable, "-m", "broker", tool, "--bootstrap-server", s.bootstrap("SASL_SSL"),
         "--command-config", str(config), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def values(n: int = RECORDS) -> list[bytes]:
    return [b"secured-%d" % i for i in range(n)]


def confluent_round_trip(bootstrap: str, config: dict[str, Any], topic: str) -> list[bytes]:
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "message.timeout.ms": int(TIMEOUT * 1000), **config})  # fmt: skip
    for v in values():
        producer.produce(topic, v, partition=0, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(TIMEOUT) == 0
    assert errors == [None] * RECORDS, errors
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, **config})  # fmt: skip
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < RECORDS and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.2):
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        consumer.close()
    return got


def round_trip_confluent(s: Secured, mode: str, topic: str) -> list[bytes]:
    return confluent_round_trip(
        s.bootstrap(MODES[mode][0]), settings(s, mode, librdkafka_security), topic
    )


def round_trip_kcat(s: Secured, mode: str, topic: str) -> list[bytes]:
    config = settings(s, mode, librdkafka_security)
    options = [a for k, v in config.items() for a in ("-X", f"{k}={v}")]
    bootstrap = s.bootstrap(MODES[mode][0])
    produced = subprocess.run(
        ["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", *options],
        input=b"".join(v + b"\n" for v in values()), capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
         "-X", "fetch.wait.max.ms=100", *options],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr.decode()
    return consumed.stdout.splitlines()


def _kafka_python() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka

    return kafka


def round_trip_kafka_python(s: Secured, mode: str, topic: str) -> list[bytes]:
    kafka = _kafka_python()
    config = settings(s, mode, kafka_python_security)
    bootstrap = s.bootstrap(MODES[mode][0])
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                   request_timeout_ms=int(TIMEOUT * 1000), **config)  # fmt: skip
    try:
        futures = [producer.send(topic, v, partition=0) for v in values()]
        producer.flush(TIMEOUT)
        for f in futures:
            f.get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=10)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                   enable_auto_commit=False, fetch_max_wait_ms=100,
                                   request_timeout_ms=int(TIMEOUT * 1000), **config)  # fmt: skip
    got: list[bytes] = []
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + TIMEOUT
        while len(got) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got


def round_trip_aiokafka(s: Secured, mode: str, topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as AioTopicPartition

    bootstrap = s.bootstrap(MODES[mode][0])

    async def go() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                    **settings(s, mode, aiokafka_security))  # fmt: skip
        await producer.start()
        try:
            for v in values():
                await producer.send_and_wait(topic, v, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False, fetch_max_wait_ms=100,
                                    **settings(s, mode, aiokafka_security))  # fmt: skip
        await consumer.start()
        got: list[bytes] = []
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            deadline = time.monotonic() + TIMEOUT
            while len(got) < RECORDS and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    got.extend(r.value for r in records)
        finally:
            await consumer.stop()
        return got

    return run(go())


CLIENTS = {
    "confluent": round_trip_confluent,
    "kcat": round_trip_kcat,
    "kafka-python": round_trip_kafka_python,
    "aiokafka": round_trip_aiokafka,
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_produce_and_consume(secured: Secured, client: str, mode: str) -> None:
    topic = new_topic(secured, f"{client}-{mode}")
    assert CLIENTS[client](secured, mode, topic) == values()
    assert end_offset(secured, topic) == RECORDS


def test_consumer_groups_over_sasl_ssl(secured: Secured) -> None:
    """subscribe() through the group coordinator, which FindCoordinator must name
    on the client's own listener (kafka-python opens a second connection to it),
    then broker groups over SASL_SSL sees the group."""
    topic = new_topic(secured, "grouped")
    confluent_round_trip(secured.bootstrap("SASL_SSL"),
                         settings(secured, "scram-sha-512", librdkafka_security), topic)  # fmt: skip
    kafka = _kafka_python()
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=secured.bootstrap("SASL_SSL"),
                                   group_id=group, auto_offset_reset="earliest",
                                   request_timeout_ms=int(TIMEOUT * 1000),
                                   **settings(secured, "scram-sha-256", kafka_python_security))  # fmt: skip
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(got) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
        consumer.commit()
    finally:
        consumer.close()
    assert got == values()
    listed = broker_tool(secured, "groups", "list")
    assert listed.returncode == 0 and group in listed.stdout.split(), listed


# ---- OAUTHBEARER -------------------------------------------------------------------------------


def oauth_config(s: Secured, token: Callable[[], str]) -> dict[str, Any]:
    def oauth_cb(_config: str) -> tuple[str, float]:
        return token(), time.time() + 3600

    config = librdkafka_security("SASL_SSL", s.pki, mechanism="OAUTHBEARER")
    config["oauth_cb"] = oauth_cb
    return config


def test_confluent_oauthbearer(secured: Secured) -> None:
    topic = new_topic(secured, "oauth")
    config = oauth_config(
        secured, lambda: secured.jwks.token("svc-reporting", iss=ISSUER, aud=AUDIENCE)
    )
    got = confluent_round_trip(secured.bootstrap("SASL_SSL"), config, topic)
    assert got == values() and end_offset(secured, topic) == RECORDS


# ---- refusals ----------------------------------------------------------------------------------


def refused_produce(s: Secured, listener: str, config: dict[str, Any], topic: str) -> KafkaError:
    """Produce one record; the first error librdkafka reports (error_cb or delivery)."""
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": s.bootstrap(listener), "message.timeout.ms": 8000,
                         "retries": 0, "error_cb": errors.append, **config})  # fmt: skip
    producer.produce(topic, b"must-not-be-stored", partition=0,
                     on_delivery=lambda e, m: errors.append(e) if e else None)  # fmt: skip
    deadline = time.monotonic() + TIMEOUT
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    producer.purge()
    producer.flush(1)
    assert errors, "the producer saw no error"
    return errors[0]


@pytest.mark.parametrize(
    ("mechanism", "user", "password", "message"),
    [
        ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
        ("PLAIN", "mallory", "x", "Authentication failed: Invalid username or password"),
        ("SCRAM-SHA-256", "bob", "wrong", "invalid credentials with SASL mechanism SCRAM-SHA-256"),
        ("SCRAM-SHA-512", "mallory", "x", "invalid credentials with SASL mechanism SCRAM-SHA-512"),
    ],
)
def test_wrong_password_and_unknown_user_are_refused(
    secured: Secured, mechanism: str, user: str, password: str, message: str
) -> None:
    topic = new_topic(secured, "refused")
    before = secured.metric("kafka_network_authentications_total", mechanism=mechanism,
                            result="failure")  # fmt: skip
    config = librdkafka_security("SASL_SSL", secured.pki, mechanism=mechanism, user=user,
                                 password=password)  # fmt: skip
    err = refused_produce(secured, "SASL_SSL", config, topic)
    assert err.code() == KafkaError._AUTHENTICATION, err
    assert message in err.str()
    assert end_offset(secured, topic) == 0
    after = secured.metric("kafka_network_authentications_total", mechanism=mechanism,
                           result="failure")  # fmt: skip
    assert after > before


@pytest.mark.parametrize(
    "claims",
    [
        {"iss": ISSUER, "aud": AUDIENCE, "lifetime_s": -3600},  # expired
        {"iss": ISSUER, "aud": "another-service"},  # someone else's audience
    ],
    ids=["expired", "wrong-audience"],
)
def test_bad_jwts_are_refused(secured: Secured, claims: dict[str, Any]) -> None:
    topic = new_topic(secured, "oauth-refused")
    claims = dict(claims)
    lifetime = int(claims.pop("lifetime_s", 3600))
    config = oauth_config(secured, lambda: secured.jwks.token("svc", lifetime_s=lifetime, **claims))
    err = refused_produce(secured, "SASL_SSL", config, topic)
    assert err.code() == KafkaError._AUTHENTICATION, err
    assert "invalid_token" in err.str()
    assert end_offset(secured, topic) == 0


def test_an_untrusted_client_certificate_is_refused(secured: Secured) -> None:
    topic = new_topic(secured, "mtls-refused")
    stranger = Pki.make(secured.root / "other-ca").client("mallory")
    before = secured.metric("kafka_network_tls_handshake_failures_total", listener="MTLS",
                            reason="certificate")  # fmt: skip
    config = librdkafka_security("SSL", secured.pki, client_cert=stranger)
    err = refused_produce(secured, "MTLS", config, topic)
    assert err.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), err
    assert end_offset(secured, topic) == 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        after = secured.metric("kafka_network_tls_handshake_failures_total", listener="MTLS",
                               reason="certificate")  # fmt: skip
        if after > before:
            break
        time.sleep(0.1)
    assert after > before


def test_the_certificate_names_the_principal_acls_check(secured: Secured) -> None:
    """RULE:^CN=([^,]+),.*$/$1/L: carol's certificate is User:carol, whom an ACL
    lets write the topic; dave's (same CA) is User:dave, whom it does not."""
    topic = new_topic(secured, "owned")
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:carol",
                         "*", AclOperation.ALL, AclPermissionType.ALLOW)  # fmt: skip
    for f in secured.admin.create_acls([binding]).values():
        f.result(TIMEOUT)
    carol = settings(secured, "mtls", librdkafka_security)
    assert confluent_round_trip(secured.bootstrap("MTLS"), carol, topic) == values()
    dave = settings(secured, "mtls", librdkafka_security, client_cert=secured.certs["dave"])
    err = refused_produce(secured, "MTLS", dave, topic)
    assert err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    assert end_offset(secured, topic) == RECORDS
    # broker acls over SASL_SSL (--command-config) lists it
    listed = broker_tool(secured, "acls", "--list", "--topic", topic)
    assert listed.returncode == 0, listed.stderr
    assert "principal=User:carol" in listed.stdout and "operation=ALL" in listed.stdout


def test_admin_tools_over_sasl_ssl(secured: Secured) -> None:
    users = broker_tool(secured, "scram-users", "list", "--user", "bob")
    assert users.returncode == 0, users.stderr
    assert users.stdout == (
        "SCRAM credential configs for user-principal 'bob' are"
        " SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    groups = broker_tool(secured, "groups", "list")
    assert groups.returncode == 0, groups.stderr
    # alice is no super user: ALTER on the cluster is refused
    denied = broker_tool(secured, "scram-users", "delete", "--user", "bob", "--mechanism",
                         "SCRAM-SHA-256", user="alice")  # fmt: skip
    assert denied.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in denied.stderr
    # bob authenticates with SCRAM (the tools' client) and is no super user either
    bob = broker_tool(secured, "scram-users", "list", user="bob", mechanism="SCRAM-SHA-512")
    assert bob.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in bob.stderr
    wrong = broker_tool(secured, "scram-users", "list", password="not-it")
    assert wrong.returncode == 1
    assert "Invalid username or password" in wrong.stderr and "not-it" not in wrong.stderr


def test_broker_wide_client_auth_applies_to_ssl_listeners_only(tmp_path: Path) -> None:
    """KIP-684 (Kafka 2.8+): with ``ssl.client.auth=required`` unprefixed, a SASL_SSL
    client without a certificate authenticates and produces, while the SSL listener
    still refuses a client without one (and takes one with a certificate)."""
    pki = Pki.make(tmp_path / "pki")
    data = tmp_path / "data"
    data.mkdir()
    broker = BrokerProcess(data)
    ports = {"INTERNAL": broker.port, "MTLS": free_port(), "SASL_SSL": free_port()}
    password = secrets.token_urlsafe(12)
    broker.overrides.update(
        {
            "listeners": ",".join(f"{n}://{HOST}:{p}" for n, p in ports.items()),
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,MTLS:SSL,SASL_SSL:SASL_SSL",
            # broker-wide TLS keys, read by both TLS listeners
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.pem_keystore()),
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": str(pki.ca_pem),
            "ssl.client.auth": "required",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                f'{PLAIN_LOGIN} required user_alice="{password}";'
            ),
        }
    )
    with broker:
        sasl = librdkafka_security("SASL_SSL", pki, mechanism="PLAIN", user="alice",
                                   password=password)  # fmt: skip
        got = confluent_round_trip(f"{HOST}:{ports['SASL_SSL']}", sasl, "kip684-sasl")
        assert got == values()
        mtls = f"{HOST}:{ports['MTLS']}"
        assert confluent_round_trip(mtls, librdkafka_security("SSL", pki, client_cert=pki.client("carol")),
                                    "kip684-mtls") == values()  # fmt: skip
        errors: list[KafkaError] = []
        producer = Producer({"bootstrap.servers": mtls, "message.timeout.ms": 8000, "retries": 0,
                             "error_cb": errors.append, **librdkafka_security("SSL", pki)})  # fmt: skip
        producer.produce("kip684-mtls", b"no-certificate", partition=0,
                         on_delivery=lambda e, m: errors.append(e) if e else None)  # fmt: skip
        deadline = time.monotonic() + TIMEOUT
        while not errors and time.monotonic() < deadline:
            producer.poll(0.1)
        producer.purge()
        producer.flush(1)
        assert errors, "a client without a certificate was not refused by the SSL listener"
        codes = (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
        assert errors[0].code() in codes, errors[0]
    assert "applies to SSL listeners only (KIP-684)" in broker.log()
