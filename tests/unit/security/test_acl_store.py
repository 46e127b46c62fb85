"""ACL persistence: the file's round trip, atomic replacement, refusal of a bad
file, and AclControl applying changes only once they are on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.errors import InvalidRequestError
from broker.security import acl_store
from broker.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    check_new_binding,
)
from broker.security.acl_control import AclControl, open_acl_control
from broker.security.acl_store import AclStore, AclStoreError
from broker.security.authorizer import StandardAuthorizer
from tests.aio import run

READ = AclOperation.READ
WRITE = AclOperation.WRITE


def binding(
    name: str,
    op: AclOperation = READ,
    *,
    rtype: ResourceType = ResourceType.TOPIC,
    ptype: PatternType = PatternType.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    perm: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm)
    )


def topic_filter(name: str | None) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, name, PatternType.ANY),
        AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
    )


def test_bindings_round_trip_in_kafka_names(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    saved = [
        binding("orders"),
        binding("ord-", WRITE, ptype=PatternType.PREFIXED, host="10.0.0.1"),
        binding("g", rtype=ResourceType.GROUP, perm=AclPermissionType.DENY),
        binding("kafka-cluster", AclOperation.IDEMPOTENT_WRITE, rtype=ResourceType.CLUSTER),
        binding("tx-1", AclOperation.DESCRIBE, rtype=ResourceType.TRANSACTIONAL_ID),
        binding("ünïcode", principal="User:*"),
    ]
    store.save(saved)
    assert store.load() == saved
    doc = json.loads((tmp_path / "acls.json").read_text(encoding="utf-8"))
    assert doc["version"] == 1
    assert doc["acls"][3] == {
        "resourceType": "Cluster",
        "name": "kafka-cluster",
        "patternType": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "IdempotentWrite",
        "permissionType": "Allow",
    }
    assert doc["acls"][4]["resourceType"] == "TransactionalId"
    assert not (tmp_path / "acls.json.tmp").exists()


def test_missing_file_means_no_acls(tmp_path: Path) -> None:
    assert AclStore(tmp_path).load() == []


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"version": 2, "acls": []}',
        '{"version": 1}',
        '{"version": 1, "acls": [1]}',
        '{"version": 1, "acls": [{"resourceType": "Topic"}]}',
        '{"version": 1, "acls": [{"resourceType": "Topic", "name": "t", "patternType": "MATCH",'
        ' "principal": "User:a", "host": "*", "operation": "Read", "permissionType": "Allow"}]}',
        '{"version": 1, "acls": [{"resourceType": "Topic", "name": "t", "patternType": "LITERAL",'
        ' "principal": "nocolon", "host": "*", "operation": "Read", "permissionType": "Allow"}]}',
        '{"version": 1, "acls": [{"resourceType": "Nope", "name": "t", "patternType": "LITERAL",'
        ' "principal": "User:a", "host": "*", "operation": "Read", "permissionType": "Allow"}]}',
    ],
)
def test_unreadable_file_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "acls.json").write_text(text, encoding="utf-8")
    with pytest.raises(AclStoreError, match=r"acls\.json"):
        AclStore(tmp_path).load()


def test_a_torn_temp_file_does_not_replace_the_acls(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.save([binding("orders")])
    # a crash between writing the temp file and the rename leaves the old file in place
    (tmp_path / "acls.json.tmp").write_bytes(b'{"version": 1, "acls": [{"resou')
    assert store.load() == [binding("orders")]
    store.save([binding("other")])
    assert store.load() == [binding("other")]


def test_save_fsyncs_file_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    AclStore(tmp_path).save([binding("orders")])
    assert len(synced) == 2  # the temp file, then the directory after the rename


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (binding("other", rtype=ResourceType.CLUSTER), "only valid name for the CLUSTER"),
        (binding(""), "Invalid empty resource name"),
        (binding("t", rtype=ResourceType.ANY), "Invalid resourceType ANY"),
        (binding("t", rtype=ResourceType.DELEGATION_TOKEN), "no delegation tokens"),
        (binding("t", rtype=ResourceType.USER), "no delegation tokens"),
        (binding("t", ptype=PatternType.MATCH), "Invalid patternType MATCH"),
        (binding("t", ptype=PatternType.ANY), "Invalid patternType ANY"),
        (binding("t", AclOperation.ANY), "Invalid operation ANY"),
        (binding("t", perm=AclPermissionType.ANY), "Invalid permissionType ANY"),
        (binding("t", principal="alice"), "principalType:principalName but got alice"),
    ],
)
def test_check_new_binding_refusals(bad: AclBinding, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        check_new_binding(bad)


def control(tmp_path: Path, *bindings: AclBinding) -> AclControl:
    store = AclStore(tmp_path)
    return AclControl(StandardAuthorizer(bindings=bindings), store)


def test_acl_control_creates_and_deletes_durably(tmp_path: Path) -> None:
    ctl = control(tmp_path)
    try:

        async def scenario() -> list[list[AclBinding]]:
            await ctl.create([binding("a"), binding("b"), binding("a")])
            await ctl.create([binding("a")])  # exists: a success that changes nothing
            return await ctl.delete([topic_filter("a"), topic_filter(None), topic_filter("zz")])

        deleted = run(scenario())
    finally:
        ctl.close()
    # an ACL matched by two filters is listed by both
    assert deleted == [[binding("a")], [binding("a"), binding("b")], []]
    assert ctl.authorizer.bindings == ()
    assert AclStore(tmp_path).load() == []


def test_acl_control_applies_concurrent_changes_in_order(tmp_path: Path) -> None:
    import asyncio

    ctl = control(tmp_path)
    try:

        async def scenario() -> None:
            await asyncio.gather(*(ctl.create([binding(f"t{i}")]) for i in range(20)))
            await asyncio.gather(ctl.delete([topic_filter("t3")]), ctl.create([binding("late")]))

        run(scenario())
    finally:
        ctl.close()
    expected = [binding(f"t{i}") for i in range(20) if i != 3] + [binding("late")]
    assert list(ctl.authorizer.bindings) == expected
    assert AclStore(tmp_path).load() == expected


def test_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctl = control(tmp_path, binding("kept"))
    AclStore(tmp_path).save([binding("kept")])

    def broken(path: Path, data: bytes, *, sync: bool = True) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(acl_store, "atomic_write", broken)
    try:
        with pytest.raises(OSError, match="No space"):
            run(ctl.create([binding("new")]))
        assert ctl.authorizer.bindings == (binding("kept"),)
        monkeypatch.undo()
        run(ctl.create([binding("new")]))  # the next change starts from what is on disk
    finally:
        ctl.close()
    assert AclStore(tmp_path).load() == [binding("kept"), binding("new")]


def test_open_acl_control_from_config(tmp_path: Path) -> None:
    assert open_acl_control(BrokerConfig.from_properties({}), tmp_path) is None
    AclStore(tmp_path).save([binding("orders")])
    config = BrokerConfig.from_properties(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin; User:ops",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    ctl = open_acl_control(config, tmp_path)
    assert ctl is not None
    try:
        authz = ctl.authorizer
        assert authz.super_users == {"User:admin", "User:ops"}
        assert authz.allow_if_no_acl
        assert authz.bindings == (binding("orders"),)
    finally:
        ctl.close()
    (tmp_path / "acls.json").write_text("garbage", encoding="utf-8")
    with pytest.raises(AclStoreError):
        open_acl_control(config, tmp_path)
