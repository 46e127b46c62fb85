"""Creating and deleting ACLs: on disk first, then in the authorizer.

This is Kafka's ``AclControlManager`` for a broker without a metadata log.
A change is computed and written (``acl_store.py``: temp file, fsync,
rename, directory fsync) on one worker thread, so changes are applied one
after another in arrival order, none is lost to a concurrent one, and the
event loop never waits for the disk. Only once the file is durable does the
authorizer get the new ACLs (and drop its cached decisions); a request is
answered after that, as Kafka answers once the ACL records are committed.
A write that fails leaves both the file and the authorizer as they were.

Creating an ACL that exists is a success that changes nothing
(``existingAcls``); a delete filter answers every ACL it matched, and an ACL
matched by two filters of one request is listed by both.

``open_acl_control`` builds the authorizer from the configuration
(``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``)
and the ACLs of the first log dir.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from broker.config import BrokerConfig, parse_super_users
from broker.security.acl import AclBinding, AclBindingFilter
from broker.security.acl_store import AclStore
from broker.security.authorizer import StandardAuthorizer

log = logging.getLogger(__name__)

#: ACLs one request may create or delete (``QuorumController.MAX_RECORDS_PER_USER_OP``)
MAX_ACLS_PER_REQUEST = 10_000

T = TypeVar("T")


class AclControl:
    """The authorizer and the file its ACLs are kept in."""

    def __init__(self, authorizer: StandardAuthorizer, store: AclStore) -> None:
        self.authorizer = authorizer
        self.store = store
        #: the ACLs in the file; read and replaced on the worker thread only
        self._persisted = authorizer.bindings
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="acls")
        self._submitted = 0
        self._applied = 0

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add ``bindings`` (already checked with ``check_new_binding``); OSError
        if the file could not be written (then nothing changed)."""
        wanted = tuple(bindings)

        def change() -> tuple[tuple[AclBinding, ...], None]:
            current = self._persisted
            new = tuple(dict.fromkeys(current + wanted))
            if len(new) != len(current):
                self.store.save(new)
                self._persisted = new
                log.info("ACLs created: %s", "; ".join(str(b) for b in new[len(current) :]))
            return new, None

        await self._apply(change)

    async def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every ACL a filter matches; the ACLs each filter matched."""
        wanted = tuple(filters)

        def change() -> tuple[tuple[AclBinding, ...], list[list[AclBinding]]]:
            current = self._persisted
            matched = [[b for b in current if f.matches(b)] for f in wanted]
            gone = {b for found in matched for b in found}
            if gone:
                new = tuple(b for b in current if b not in gone)
                self.store.save(new)
                self._persisted = new
                log.info("ACLs deleted: %s", "; ".join(str(b) for b in current if b in gone))
            return self._persisted, matched

        return await self._apply(change)

    async def _apply(self, change: Callable[[], tuple[tuple[AclBinding, ...], T]]) -> T:
        """Run ``change`` on the worker thread; give its ACLs to the authorizer
        unless a later change was applied already."""
        self._submitted += 1
        order = self._submitted
        state, result = await asyncio.get_running_loop().run_in_executor(self._worker, change)
        if order > self._applied:
            self._applied = order
            if state != self.authorizer.bindings:
                self.authorizer.replace(state)
        return result

    def close(self) -> None:
        """Wait for a change being written, then stop the worker thread."""
        self._worker.shutdown(wait=True)


def open_acl_control(config: BrokerConfig, log_dir: Path) -> AclControl | None:
    """The authorizer the configuration asks for, with the ACLs stored in
    ``log_dir``; None when ``authorizer.class.name`` is empty. AclStoreError if
    the stored ACLs cannot be read."""
    if not config.get("authorizer.class.name"):
        return None
    store = AclStore(log_dir)
    authorizer = StandardAuthorizer(
        super_users=parse_super_users(config.get("super.users")),
        allow_if_no_acl=bool(config.get("allow.everyone.if.no.acl.found")),
        bindings=store.load(),
    )
    log.info(
        "authorizer on: %d ACLs from %s, super.users=%s, allow.everyone.if.no.acl.found=%s",
        authorizer.acl_count,
        store.path,
        ",".join(sorted(authorizer.super_users)) or "(none)",
        authorizer.allow_if_no_acl,
    )
    return AclControl(authorizer, store)
