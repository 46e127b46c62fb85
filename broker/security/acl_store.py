"""The ACLs on disk: one JSON file in the first log dir, replaced atomically.

Kafka keeps ACLs as records in its ``__cluster_metadata`` log; this broker
has no metadata log, so the ACLs live in ``<first log dir>/acls.json``, in
the names Kafka's tools print (``SecurityUtils``, ``AclEntry``)::

    {
      "version": 1,
      "acls": [
        {"resourceType": "Topic", "name": "orders", "patternType": "LITERAL",
         "principal": "User:alice", "host": "*", "operation": "Write",
         "permissionType": "Allow"}
      ]
    }

Every change writes the whole file to ``acls.json.tmp``, fsyncs it, renames it
over ``acls.json`` and fsyncs the directory (``log/checkpoints.atomic_write``):
after a crash the file holds either the ACLs before the change or after it,
never a mix. A missing file means no ACLs. A file that cannot be read stops
the broker at start (:class:`AclStoreError`): starting with some ACLs
forgotten could allow what a forgotten DENY forbids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from broker.errors import KafkaError
from broker.log.checkpoints import atomic_write
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    check_new_binding,
)

FILE_NAME = "acls.json"
VERSION = 1
_KEYS = ("resourceType", "name", "patternType", "principal", "host", "operation", "permissionType")


class AclStoreError(Exception):
    """The ACL file exists but cannot be read back."""


def encode_binding(binding: AclBinding) -> dict[str, str]:
    pattern, entry = binding.pattern, binding.entry
    return {
        "resourceType": pattern.resource_type.pascal,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation.pascal,
        "permissionType": entry.permission_type.pascal,
    }


def decode_binding(item: Any) -> AclBinding:
    """One entry of the file; ValueError if it is not a binding that could be created."""
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {item!r}")
    try:
        fields = {key: item[key] for key in _KEYS}
    except KeyError as exc:
        raise ValueError(f"missing {exc.args[0]!r} in {item!r}") from None
    if not all(isinstance(v, str) for v in fields.values()):
        raise ValueError(f"every field must be a string: {item!r}")
    binding = AclBinding(
        ResourcePattern(
            ResourceType.from_name(fields["resourceType"]),
            fields["name"],
            PatternType.from_name(fields["patternType"]),
        ),
        AccessControlEntry(
            fields["principal"],
            fields["host"],
            AclOperation.from_name(fields["operation"]),
            AclPermissionType.from_name(fields["permissionType"]),
        ),
    )
    try:
        check_new_binding(binding)
    except KafkaError as exc:
        raise ValueError(f"{exc}: {item!r}") from None
    return binding


class AclStore:
    """Reads and replaces ``acls.json`` in one log dir."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME

    def load(self) -> list[AclBinding]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise AclStoreError(f"cannot read the ACL file {self.path}: {exc}") from exc
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("version") != VERSION:
                raise ValueError(f"expected an object with version {VERSION}")
            items = doc.get("acls")
            if not isinstance(items, list):
                raise ValueError("expected a list of acls")
            return [decode_binding(item) for item in items]
        except ValueError as exc:
            raise AclStoreError(
                f"the ACL file {self.path} is not readable: {exc}. Restore it from a backup, "
                "or move it away to start without ACLs."
            ) from exc

    def save(self, bindings: Iterable[AclBinding]) -> None:
        """Replace the file with ``bindings`` (atomically, durable on return)."""
        doc = {"version": VERSION, "acls": [encode_binding(b) for b in bindings]}
        data = json.dumps(doc, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data)
