"""ACLs end to end: confluent-kafka's AdminClient and producer, and ``broker acls``,
against the broker as a subprocess with the authorizer on.

On a PLAINTEXT listener every client is ``User:ANONYMOUS``. The broker runs
with ``allow.everyone.if.no.acl.found=true``, so the anonymous client may
create the first ACL (ALL on the cluster for itself: it stays the
administrator) and use topics no ACL names; a DENY
of WRITE on one topic then makes confluent-kafka's produce fail with
TOPIC_AUTHORIZATION_FAILED, nothing stored, until the ACL is deleted again.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.harness import BrokerProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANON = "User:ANONYMOUS"
TIMEOUT = 15


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    data = tmp_path_factory.mktemp("acls") / "data"
    data.mkdir()
    with BrokerProcess(
        data,
        **{"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"},
    ) as b:
        # the first ACL on the cluster is allowed because none exists; it keeps the
        # anonymous client an administrator once the tests add other cluster ACLs
        create_acls(
            AdminClient({"bootstrap.servers": b.bootstrap}),
            AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANON,
                       "*", AclOperation.ALL, AclPermissionType.ALLOW),
        )  # fmt: skip
        yield b


@pytest.fixture
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(admin: AdminClient, name: str) -> None:
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(TIMEOUT)


def create_acls(admin: AdminClient, *bindings: AclBinding) -> None:
    for f in admin.create_acls(list(bindings), request_timeout=TIMEOUT).values():
        f.result(TIMEOUT)


def produce_one(broker: BrokerProcess, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "message.timeout.ms": 5000,
            "retries": 0,
            "enable.idempotence": False,
        }
    )
    p.produce(topic, b"value", on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(TIMEOUT) == 0
    (err,) = errors
    return err


def end_offset(admin: AdminClient, topic: str) -> int:
    futures = admin.list_offsets({CTopicPartition(topic, 0): OffsetSpec.latest()})
    (f,) = futures.values()
    return int(f.result(TIMEOUT).offset)


def broker_acls(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker", "acls", "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_deny_write_makes_confluent_produce_fail_until_deleted(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    locked = topic_name("locked")
    create_topic(admin, locked)
    assert produce_one(broker, locked) is None
    create_acls(
        admin,
        AclBinding(ResourceType.TOPIC, locked, ResourcePatternType.LITERAL, ANON, "*",
                   AclOperation.WRITE, AclPermissionType.DENY),
        # DESCRIBE, so that Metadata answers and the Produce request itself is refused
        AclBinding(ResourceType.TOPIC, locked, ResourcePatternType.LITERAL, ANON, "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    )  # fmt: skip
    err = produce_one(broker, locked)
    assert err is not None
    assert err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert end_offset(admin, locked) == 1  # only the record from before the DENY
    assert 'kafka_authorization_failures_total{operation="Write",request="Produce"' in (
        broker.metrics()
    )
    # deleting the topic's ACLs takes effect at once (with only the ALLOW DESCRIBE
    # left, WRITE would stay denied: an ACL names the topic)
    topic_filter = AclBindingFilter(
        ResourceType.TOPIC, locked, ResourcePatternType.LITERAL, ANON, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    (f,) = admin.delete_acls([topic_filter], request_timeout=TIMEOUT).values()
    deleted = f.result(TIMEOUT)
    assert sorted(d.operation.name for d in deleted) == ["DESCRIBE", "WRITE"]
    assert produce_one(broker, locked) is None
    assert end_offset(admin, locked) == 2


def test_confluent_describe_acls_with_filters(admin: AdminClient) -> None:
    prefix = topic_name("pub")
    create_acls(
        admin,
        AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:*", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, prefix + "-x", ResourcePatternType.LITERAL, "User:bob",
                   "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY),
        AclBinding(ResourceType.GROUP, prefix, ResourcePatternType.LITERAL, "User:bob", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    )  # fmt: skip

    def names(f: AclBindingFilter) -> set[tuple[str, str, str]]:
        found = admin.describe_acls(f, request_timeout=TIMEOUT).result(TIMEOUT)
        return {(b.name, b.resource_pattern_type.name, b.principal) for b in found}

    match = AclBindingFilter(
        ResourceType.TOPIC, prefix + "-x", ResourcePatternType.MATCH, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    assert names(match) == {
        (prefix, "PREFIXED", "User:*"),
        (prefix + "-x", "LITERAL", "User:bob"),
    }
    by_principal = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    assert {n for n in names(by_principal) if n[0].startswith(prefix)} == {
        (prefix + "-x", "LITERAL", "User:bob"),
        (prefix, "LITERAL", "User:bob"),
    }
    # confluent-kafka calls the cluster resource type BROKER (code 4)
    bad = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL,
                     ANON, "*", AclOperation.ALTER, AclPermissionType.ALLOW)  # fmt: skip
    with pytest.raises(KafkaException) as raised:
        create_acls(admin, bad)
    assert raised.value.args[0].code() == KafkaError.INVALID_REQUEST


def test_kafka_python_admin_acls(broker: BrokerProcess) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaAdminClient
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePattern,
            ResourcePatternFilter,
        )
        from kafka.admin import ResourceType as KResourceType

    name = topic_name("kp")
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        acl = ACL(
            principal="User:frank", host="*", operation=ACLOperation.READ,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(KResourceType.TOPIC, name,
                                             ACLResourcePatternType.PREFIXED),
        )  # fmt: skip
        result = client.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        wanted = ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KResourceType.TOPIC, name + "-1",
                                                   ACLResourcePatternType.MATCH),
        )  # fmt: skip
        found, error = client.describe_acls(wanted)
        assert error.errno == 0
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [
            ("User:frank", name)
        ]
        ((_, deleted, error),) = client.delete_acls([wanted])
        assert error.errno == 0
        assert [a.principal for a in deleted] == ["User:frank"]
        assert client.describe_acls(wanted)[0] == []
    finally:
        client.close()


def test_broker_acls_command(broker: BrokerProcess, admin: AdminClient) -> None:
    topic = topic_name("cli")
    added = broker_acls(
        broker, "--add", "--allow-principal", "User:carol", "--operation", "Read",
        "--operation", "Describe", "--topic", topic, "--group", topic,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}" in (
        added.stdout
    )
    listed = broker_acls(broker, "--list", "--topic", topic)
    assert listed.returncode == 0, listed.stderr
    assert "(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    assert "operation=DESCRIBE" in listed.stdout
    # the ACLs are the broker's: confluent-kafka sees them
    f = AclBindingFilter(
        ResourceType.ANY, topic, ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    assert len(admin.describe_acls(f, request_timeout=TIMEOUT).result(TIMEOUT)) == 4
    producer = broker_acls(
        broker, "--add", "--producer", "--idempotent", "--allow-principal", "User:dan",
        "--topic", topic + "-p",
    )  # fmt: skip
    assert producer.returncode == 0, producer.stderr
    listed = broker_acls(broker, "--list", "--principal", "User:dan")
    assert "resourceType=CLUSTER, name=kafka-cluster" in listed.stdout
    assert "operation=IDEMPOTENT_WRITE" in listed.stdout
    assert "operation=CREATE" in listed.stdout
    # usage errors before connecting; refusals from the broker
    assert broker_acls(broker, "--add", "--topic", topic).returncode == 2
    bad_op = broker_acls(
        broker, "--add", "--allow-principal", "User:x", "--operation", "IdempotentWrite",
        "--topic", topic,
    )  # fmt: skip
    assert bad_op.returncode == 2 and "only supports operations" in bad_op.stderr
    # removal asks first; without a terminal nothing is removed
    refused = subprocess.run(
        [sys.executable, "-m", "broker", "acls", "--bootstrap-server", broker.bootstrap,
         "--remove", "--topic", topic],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert refused.returncode == 1
    assert len(admin.describe_acls(f, request_timeout=TIMEOUT).result(TIMEOUT)) == 4
    removed = broker_acls(broker, "--remove", "--force", "--topic", topic, "--group", topic)
    assert removed.returncode == 0, removed.stderr
    assert admin.describe_acls(f, request_timeout=TIMEOUT).result(TIMEOUT) == []


def test_acls_survive_a_restart_and_need_an_authorizer(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    overrides = {"authorizer.class.name": AUTHORIZER, "super.users": ANON}
    binding = AclBinding(ResourceType.TOPIC, "kept", ResourcePatternType.LITERAL, "User:erin",
                         "*", AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    with BrokerProcess(data, **overrides) as b:
        create_acls(AdminClient({"bootstrap.servers": b.bootstrap}), binding)
    with BrokerProcess(data, **overrides) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        found = admin.describe_acls(
            AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                             AclOperation.ANY, AclPermissionType.ANY),
            request_timeout=TIMEOUT,
        ).result(TIMEOUT)  # fmt: skip
        assert [(x.name, x.principal) for x in found] == [("kept", "User:erin")]
    # without an authorizer the ACL APIs answer SECURITY_DISABLED
    with BrokerProcess(data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        with pytest.raises(KafkaException) as raised:
            create_acls(admin, binding)
        assert raised.value.args[0].code() == KafkaError.SECURITY_DISABLED


def serve(data: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "broker", "serve", "--override", f"log.dirs={data}"]
    args += ["--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "metrics.listener="]
    for item in overrides:
        args += ["--override", item]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def test_start_refuses_an_unknown_authorizer_and_an_unreadable_acl_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    bad_class = serve(data, "authorizer.class.name=com.example.MyAuthorizer")
    assert bad_class.returncode == 2
    assert "authorizer.class.name" in bad_class.stderr
    bad_users = serve(data, f"authorizer.class.name={AUTHORIZER}", "super.users=admin")
    assert bad_users.returncode == 2
    assert "super.users" in bad_users.stderr
    (data / "acls.json").write_text('{"version": 1, "acls": [{"resourceType": "Topic"}]}')
    unreadable = serve(data, f"authorizer.class.name={AUTHORIZER}")
    assert unreadable.returncode == 1
    assert "acls.json is not readable" in unreadable.stderr
