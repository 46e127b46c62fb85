"""SCRAM credentials: salted keys only, kept in one JSON file in the first log dir.

Kafka keeps a user's SCRAM credential (KIP-554) as a record in its metadata
log: the salt, the iteration count, and the keys derived from the salted
password (``ScramFormatter``)::

    SaltedPassword = Hi(password, salt, iterations)      PBKDF2-HMAC-SHA-256/512
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

This broker keeps the same four values per user and mechanism, never the
password nor the salted password, in ``<first log dir>/scram-credentials.json``
(base64)::

    {"version": 1, "credentials": [
      {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192,
       "salt": "...", "storedKey": "...", "serverKey": "..."}]}

written like the ACLs (temp file created 0600, fsync, rename, directory
fsync): a crash leaves the credentials before or after a change. A file that cannot be read stops
the broker at start.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.log.checkpoints import atomic_write

FILE_NAME = "scram-credentials.json"
VERSION = 1
#: mechanism name -> (KIP-554 type id, hash name, minimum iterations)
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256", 4096), "SCRAM-SHA-512": (2, "sha512", 4096)}
MECHANISM_BY_TYPE = {v[0]: k for k, v in MECHANISMS.items()}
#: Kafka's ScramControlManager.MAX_ITERATIONS
MAX_ITERATIONS = 16384


class ScramStoreError(Exception):
    """The credentials file exists but cannot be read back."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials carries -> what is kept (``ScramFormatter``)."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", digest)
    return ScramCredential(salt, stored_key, server_key, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(): PBKDF2 over the UTF-8 password, as Kafka's ScramFormatter (no SASLprep)."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode(), salt, iterations)


def new_salt() -> bytes:
    return secrets.token_bytes(32)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class ScramStore:
    """The credentials, in memory and in ``scram-credentials.json``."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self.credentials: dict[tuple[str, str], ScramCredential] = {}

    def load(self) -> ScramStore:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return self
        except (OSError, UnicodeDecodeError) as exc:
            raise ScramStoreError(f"cannot read {self.path}: {exc}") from exc
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("version") != VERSION:
                raise ValueError(f"expected an object with version {VERSION}")
            loaded = {}
            for item in doc["credentials"]:
                mechanism = item["mechanism"]
                if mechanism not in MECHANISMS:
                    raise ValueError(f"unknown mechanism {mechanism!r}")
                loaded[(str(item["user"]), mechanism)] = ScramCredential(
                    base64.b64decode(item["salt"], validate=True),
                    base64.b64decode(item["storedKey"], validate=True),
                    base64.b64decode(item["serverKey"], validate=True),
                    int(item["iterations"]),
                )
        except (ValueError, KeyError, TypeError) as exc:
            raise ScramStoreError(
                f"the SCRAM credentials file {self.path} is not readable: {exc}. Restore it"
                " from a backup, or move it away to start without SCRAM users."
            ) from exc
        self.credentials = loaded
        return self

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def users(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations."""
        out: dict[str, dict[str, int]] = {}
        for (user, mechanism), cred in sorted(self.credentials.items()):
            out.setdefault(user, {})[mechanism] = cred.iterations
        return out

    def encode(self, credentials: dict[tuple[str, str], ScramCredential]) -> bytes:
        items: list[dict[str, Any]] = [
            {
                "user": user,
                "mechanism": mechanism,
                "iterations": cred.iterations,
                "salt": _b64(cred.salt),
                "storedKey": _b64(cred.stored_key),
                "serverKey": _b64(cred.server_key),
            }
            for (user, mechanism), cred in sorted(credentials.items())
        ]
        return json.dumps({"version": VERSION, "credentials": items}, indent=1).encode() + b"\n"

    def save(self, credentials: dict[tuple[str, str], ScramCredential]) -> None:
        """Replace the file (durable on return), then the credentials in memory."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 from the start: the keys are not passwords, but nobody else needs them
        atomic_write(self.path, self.encode(credentials), mode=0o600)
        self.credentials = dict(credentials)
