"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) as
Kafka 3.9 answers them (KafkaApis, ControllerApis, ScramControlManager,
ScramImage): authorization, every per-user error, durability before the
answer, nothing stored for a refused user, and a stored credential that
authenticates after a restart."""

from __future__ import annotations

from typing import Any

import pytest

from broker.errors import ErrorCode
from broker.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from broker.security.acl import AclOperation
from broker.security.sasl_mechanisms import ScramExchange
from broker.security.scram_control import ScramControl
from broker.security.scram_store import ScramStore, salted_password
from tests.unit.handlers.conftest import InProcessBroker
from tests.unit.handlers.test_authorization_matrix import ALICE, AUTHORIZER, CLUSTER, acl, grant
from tests.unit.security.sasl_support import ScramClient

SHA256, SHA512 = 1, 2
Up = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
Del = AlterUserScramCredentialsRequest.ScramCredentialDeletion
Name = DescribeUserScramCredentialsRequest.UserName
SALT = b"0123456789abcdef"


def upsert(user: str, mechanism: int = SHA512, iterations: int = 8192, password: str = "pw") -> Any:
    name = {SHA256: "SCRAM-SHA-256", SHA512: "SCRAM-SHA-512"}.get(mechanism, "SCRAM-SHA-512")
    return Up(
        name=user,
        mechanism=mechanism,
        iterations=iterations,
        salt=SALT,
        salted_password=salted_password(name, password, SALT, max(iterations, 1)),
    )


def with_scram(b: InProcessBroker) -> InProcessBroker:
    b.context.scram_control = ScramControl(ScramStore(b.config.log_dirs[0]).load())
    return b


@pytest.fixture
def b(make_broker: Any) -> InProcessBroker:
    return with_scram(make_broker())


def alter(b: InProcessBroker, deletions: list[Any] = (), upsertions: list[Any] = ()) -> dict:  # type: ignore[assignment]
    response = b.call(
        AlterUserScramCredentialsRequest(deletions=list(deletions), upsertions=list(upsertions)), 0
    )
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def describe(b: InProcessBroker, *users: str) -> Any:
    request = DescribeUserScramCredentialsRequest(
        users=[Name(name=u) for u in users] if users else None
    )
    return b.call(request, 0)


def stored(b: InProcessBroker) -> dict[str, dict[str, int]]:
    return ScramStore(b.config.log_dirs[0]).load().users()


OK = (0, None)


def test_upsert_describe_delete(b: InProcessBroker) -> None:
    assert alter(b, upsertions=[upsert("alice"), upsert("bob", SHA256, 4096)]) == {
        "alice": OK,
        "bob": OK,
    }
    # durable before the answer
    assert stored(b) == {"alice": {"SCRAM-SHA-512": 8192}, "bob": {"SCRAM-SHA-256": 4096}}
    everyone = describe(b)
    assert everyone.error_code == 0
    found = {
        r.user: [(c.mechanism, c.iterations) for c in r.credential_infos] for r in everyone.results
    }
    assert found == {"alice": [(SHA512, 8192)], "bob": [(SHA256, 4096)]}
    assert alter(b, deletions=[Del(name="alice", mechanism=SHA512)]) == {"alice": OK}
    assert stored(b) == {"bob": {"SCRAM-SHA-256": 4096}}


def test_describe_errors(b: InProcessBroker) -> None:
    alter(b, upsertions=[upsert("alice")])
    results = {
        r.user: (r.error_code, r.error_message)
        for r in describe(b, "alice", "ghost", "bob", "bob").results
    }
    assert results["alice"] == OK
    assert results["ghost"] == (
        ErrorCode.RESOURCE_NOT_FOUND,
        "Attempt to describe a user credential that does not exist: ghost",
    )
    assert results["bob"] == (
        ErrorCode.DUPLICATE_RESOURCE,
        "Cannot describe SCRAM credentials for the same user twice in a single request: bob",
    )


@pytest.mark.parametrize(
    ("deletions", "upsertions", "user", "error"),
    [
        ([], [upsert("", SHA512)], "", (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")),
        ([], [upsert("u", 0)], "u", (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")),
        ([], [upsert("u", 3)], "u", (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")),
        ([], [upsert("u", SHA256, 4095)], "u", (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")),
        ([], [upsert("u", SHA512, 16385)], "u", (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")),
        (
            [Del(name="u", mechanism=SHA512)], [], "u",
            (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ),
        (
            [], [upsert("u"), upsert("u", SHA256)], "u",
            (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ),
        (
            [Del(name="keep", mechanism=SHA512)], [upsert("keep", SHA256)], "keep",
            (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ),
    ],
)  # fmt: skip
def test_refused_changes_store_nothing(
    b: InProcessBroker, deletions: list[Any], upsertions: list[Any], user: str, error: Any
) -> None:
    alter(b, upsertions=[upsert("keep")])
    results = alter(b, deletions, [*upsertions, upsert("other")])
    assert results[user] == error
    assert results["other"] == OK  # one user's refusal does not stop the others
    after = stored(b)
    assert after.pop("keep") == {"SCRAM-SHA-512": 8192}  # untouched
    assert after == {"other": {"SCRAM-SHA-512": 8192}}


def test_authorization(make_broker: Any) -> None:
    b = with_scram(make_broker(authorizer_class_name=AUTHORIZER, super_users="User:admin"))
    b.conn.principal = ALICE
    caf = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    denied = describe(b, "x", "y")
    assert denied.error_code == caf
    # DescribeUserScramCredentialsRequest.getErrorResponse: a result per user, unnamed
    assert [(r.user, r.error_code) for r in denied.results] == [("", caf), ("", caf)]
    assert alter(b, [Del(name="x", mechanism=SHA512)], [upsert("y")]) == {
        "x": (caf, "Cluster authorization failed."),
        "y": (caf, "Cluster authorization failed."),
    }
    assert stored(b) == {}
    grant(b, acl(CLUSTER, "kafka-cluster", AclOperation.ALTER))
    assert alter(b, upsertions=[upsert("y")]) == {"y": OK}
    # ALTER implies DESCRIBE
    assert describe(b, "y").error_code == 0


def test_a_stored_credential_authenticates_after_a_restart(b: InProcessBroker) -> None:
    alter(b, upsertions=[upsert("carol", SHA256, 4096, password="carol-pw")])
    store = ScramStore(b.config.log_dirs[0]).load()
    exchange = ScramExchange("SCRAM-SHA-256", store.get)
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-pw")
    client.check_server_final(exchange.evaluate(client.final(exchange.evaluate(client.first()))))
    assert exchange.authorization_id == "carol"


def test_a_write_that_fails_changes_nothing(b: InProcessBroker) -> None:
    alter(b, upsertions=[upsert("keep")])
    control = b.context.scram_control
    assert control is not None

    def refuse(credentials: Any) -> None:
        raise OSError(28, "No space left on device")

    control.store.save = refuse  # type: ignore[method-assign]
    results = alter(b, upsertions=[upsert("new")])
    assert results["new"] == (
        ErrorCode.UNKNOWN_SERVER_ERROR,
        "the credentials could not be written: No space left on device",
    )
    assert set(control.store.users()) == {"keep"}
