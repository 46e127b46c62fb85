"""``broker scram-users``: SCRAM users of a running broker, as kafka-configs.sh manages them.

Over the broker's own protocol (KIP-554's DescribeUserScramCredentials and
AlterUserScramCredentials), so it works against any listener the tool can
reach (``--command-config`` for TLS and SASL, ``client_security.py``)::

    broker scram-users --bootstrap-server 127.0.0.1:9092 add --user alice \\
        --mechanism SCRAM-SHA-256 --mechanism SCRAM-SHA-512 --iterations 8192 \\
        [--password-file FILE]            (else asked twice on a terminal, else one stdin line)
    broker scram-users --bootstrap-server 127.0.0.1:9092 add --user alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    broker scram-users --bootstrap-server 127.0.0.1:9092 delete --user alice [--mechanism M]
    broker scram-users --bootstrap-server 127.0.0.1:9092 list [--user alice]

``--add-config`` is kafka-configs.sh's syntax (``--alter --add-config ...
--entity-type users --entity-name alice``): ``MECHANISM=[iterations=N,password=P]``,
comma-separated, iterations 4096 when absent or -1. A password on a command
line is visible to the machine's other users (``ps``); the other ways keep
it off. The password never leaves the tool: it sends a random 32-byte salt
and the salted password (PBKDF2 with the mechanism's hash, Kafka's
``ScramFormatter.hi``), and the broker keeps keys derived from them.

Output is kafka-configs.sh's: "Completed updating config for user alice."
and "SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192". ``delete`` without ``--mechanism`` deletes
every credential the user has. Each mechanism's change is a request of its
own (Kafka refuses a user named twice in one), each durable when answered.
Exit 0 on success, 1 when the broker refused or could not be reached, 2 for
a usage error.
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from pathlib import Path
from typing import TextIO

from broker.admin.client import AdminClientError, AdminConnection
from broker.admin.client_security import (
    ClientSecurityError,
    UsageError,
    add_connection_arguments,
    command_security,
)
from broker.errors import ErrorCode
from broker.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from broker.security.scram_store import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MECHANISMS,
    new_salt,
    salted_password,
)

Deletion = AlterUserScramCredentialsRequest.ScramCredentialDeletion
Upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
UserCredentials = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult

DESCRIBE, ALTER = 50, 51
#: ConfigCommand.DefaultScramIterations
DEFAULT_ITERATIONS = 4096
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="users and their mechanisms and iterations")
    listing.add_argument("--user", action="append", default=[], help="only these (repeatable)")
    add = sub.add_parser("add", help="add or replace a user's credentials")
    add.add_argument("--user", required=True)
    add.add_argument(
        "--mechanism",
        action="append",
        default=[],
        choices=sorted(MECHANISMS),
        help="repeatable; the password is the same for each",
    )
    add.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"PBKDF2 iterations, 4096-{MAX_ITERATIONS} (default {DEFAULT_ITERATIONS})",
    )
    add.add_argument("--password-file", metavar="FILE", help="the password is its first line")
    add.add_argument(
        "--add-config",
        metavar="CONFIG",
        help="kafka-configs.sh's 'SCRAM-SHA-256=[iterations=8192,password=...],...'",
    )
    delete = sub.add_parser("delete", help="delete a user's credentials")
    delete.add_argument("--user", required=True)
    delete.add_argument(
        "--mechanism",
        action="append",
        default=[],
        choices=sorted(MECHANISMS),
        help="repeatable; default: every mechanism the user has",
    )


# ---- what the options mean ----------------------------------------------------------------


def split_config(text: str) -> list[tuple[str, str]]:
    """``a=[x,y],b=c`` -> [(a, "x,y"), (b, "c")]: commas inside brackets stay
    (ConfigCommand.parseConfigs)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            item = text[start:i].strip()
            start = i + 1
            if not item:
                continue
            name, sep, value = item.partition("=")
            if not sep:
                raise UsageError(f"Invalid entity config: all configs to be added must be in the"
                                 f" format \"key=val\", not {name.strip()!r}")  # fmt: skip
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            items.append((name.strip(), value))
    return items


def parse_add_config(text: str) -> list[tuple[str, int, str]]:
    """(mechanism, iterations, password) of each ``MECHANISM=[...]``."""
    out = []
    for name, value in split_config(text):
        mechanism = name.upper()
        if mechanism not in MECHANISMS:
            raise UsageError(
                f"Only SCRAM credential configs can be added for users here; unexpected config"
                f" name {name}"
            )
        match = _CREDENTIAL.fullmatch(value)
        if match is None:
            raise UsageError(f"Invalid credential property {mechanism}=[...]: expected"
                             " [iterations=N,]password=P")  # fmt: skip
        raw = match.group(1)
        iterations = DEFAULT_ITERATIONS if raw in (None, "", "-1") else int(raw)
        out.append((mechanism, check_iterations(mechanism, iterations), match.group(2)))
    if not out:
        raise UsageError("--add-config names no SCRAM mechanism")
    return out


def check_iterations(mechanism: str, iterations: int) -> int:
    minimum = MECHANISMS[mechanism][2]
    if iterations < minimum:
        raise UsageError(
            f"Iterations {iterations} is less than the minimum {minimum} required for {mechanism}"
        )
    if iterations > MAX_ITERATIONS:
        raise UsageError(f"Iterations {iterations} is more than the maximum {MAX_ITERATIONS}")
    return iterations


def read_password(args: argparse.Namespace, stdin: TextIO) -> str:
    if args.password_file:
        try:
            lines = Path(args.password_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read {args.password_file}: {exc.strerror}") from None
        password = lines[0] if lines else ""
    elif stdin.isatty():
        password = getpass.getpass(f"Password for {args.user}: ")
        if getpass.getpass("Again: ") != password:
            raise UsageError("the passwords differ")
    else:
        password = stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("the password is empty")
    return password


def upsertions(args: argparse.Namespace, stdin: TextIO) -> list[Upsertion]:
    if not args.user:
        raise UsageError("--user must not be empty")
    if args.add_config:
        if args.mechanism or args.password_file:
            raise UsageError("--add-config takes the mechanisms and the password itself")
        wanted = parse_add_config(args.add_config)
    else:
        if not args.mechanism:
            raise UsageError("name at least one --mechanism (SCRAM-SHA-256, SCRAM-SHA-512)")
        password = read_password(args, stdin)
        wanted = [(m, check_iterations(m, args.iterations), password) for m in args.mechanism]
    out: list[Upsertion] = []
    chosen = {mechanism: (iterations, password) for mechanism, iterations, password in wanted}
    for mechanism, (iterations, password) in chosen.items():
        salt = new_salt()
        out.append(
            Upsertion(
                name=args.user,
                mechanism=MECHANISMS[mechanism][0],
                iterations=iterations,
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations),
            )
        )
    return out


# ---- talking to the broker -------------------------------------------------------------------


class BrokerRefused(Exception):
    pass


def describe(conn: AdminConnection, users: list[str]) -> list[UserCredentials]:
    request = DescribeUserScramCredentialsRequest(
        users=[DescribeUserScramCredentialsRequest.UserName(name=u) for u in users] or None
    )
    response = conn.call(request, conn.version_for(DESCRIBE))
    if response.error_code != ErrorCode.NONE:
        raise BrokerRefused(_error(response.error_code, response.error_message))
    return list(response.results)


def alter(conn: AdminConnection, deletions: list[Deletion], upserts: list[Upsertion]) -> None:
    """One request per change: Kafka's ScramControlManager refuses a user named
    twice in one request (DUPLICATE_RESOURCE), whatever the mechanisms."""
    version = conn.version_for(ALTER)
    changes: list[tuple[Deletion | Upsertion, AlterUserScramCredentialsRequest]] = [
        (d, AlterUserScramCredentialsRequest(deletions=[d], upsertions=[])) for d in deletions
    ]
    changes += [
        (u, AlterUserScramCredentialsRequest(deletions=[], upsertions=[u])) for u in upserts
    ]
    for change, request in changes:
        for r in conn.call(request, version).results:
            if r.error_code != ErrorCode.NONE:
                what = MECHANISM_BY_TYPE.get(change.mechanism, "")
                raise BrokerRefused(f"{r.user} {what}: {_error(r.error_code, r.error_message)}")


def _error(code: int, message: str | None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return f"{name}: {message}" if message else name


def describe_text(result: UserCredentials) -> str:
    infos = ", ".join(
        f"{MECHANISM_BY_TYPE.get(i.mechanism, i.mechanism)}=iterations={i.iterations}"
        for i in result.credential_infos
    )
    return f"SCRAM credential configs for user-principal '{result.user}' are {infos}"


def run(args: argparse.Namespace, out: TextIO | None = None, stdin: TextIO | None = None) -> int:
    stream = out or sys.stdout
    try:
        security = command_security(args)
        upserts = upsertions(args, stdin or sys.stdin) if args.action == "add" else []
    except (UsageError, ClientSecurityError) as exc:
        print(f"broker scram-users: {exc}", file=sys.stderr)
        return 2
    try:
        with AdminConnection.connect(args.bootstrap_server, args.timeout, security) as conn:
            if args.action == "list":
                for result in describe(conn, args.user):
                    if result.error_code != ErrorCode.NONE:
                        print(
                            "Error retrieving SCRAM credential configs for user-principal"
                            f" '{result.user}': {_error(result.error_code, result.error_message)}",
                            file=stream,
                        )
                    else:
                        print(describe_text(result), file=stream)
                return 0
            if args.action == "add":
                alter(conn, [], upserts)
            else:
                mechanisms = args.mechanism
                if not mechanisms:
                    (result,) = describe(conn, [args.user])
                    if result.error_code != ErrorCode.NONE:
                        raise BrokerRefused(_error(result.error_code, result.error_message))
                    mechanisms = [MECHANISM_BY_TYPE[i.mechanism] for i in result.credential_infos]
                alter(
                    conn,
                    [Deletion(name=args.user, mechanism=MECHANISMS[m][0]) for m in mechanisms],
                    [],
                )
            print(f"Completed updating config for user {args.user}.", file=stream)
            return 0
    except (AdminClientError, BrokerRefused) as exc:
        print(f"Error while executing config command: {exc}", file=sys.stderr)
        return 1
