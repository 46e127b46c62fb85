"""Changing SCRAM credentials: on disk first, then in use (KIP-554's AlterUserScramCredentials).

The new set is written on a worker thread (``ScramStore.save``: temp file,
fsync, rename) and replaces the credentials in memory only once it is
durable; changes are applied one at a time in arrival order. A write that
fails changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from broker.security.scram_store import ScramCredential, ScramStore


class ScramControl:
    def __init__(self, store: ScramStore) -> None:
        self.store = store
        self._lock: asyncio.Lock | None = None

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.store.get(user, mechanism)

    async def alter(
        self,
        deletions: Iterable[tuple[str, str]],
        upsertions: Iterable[tuple[str, str, ScramCredential]],
    ) -> None:
        """Apply the changes (already checked); OSError when the file cannot be written."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            new = dict(self.store.credentials)
            for user, mechanism in deletions:
                new.pop((user, mechanism), None)
            for user, mechanism, credential in upsertions:
                new[(user, mechanism)] = credential
            await asyncio.get_running_loop().run_in_executor(None, self.store.save, new)
