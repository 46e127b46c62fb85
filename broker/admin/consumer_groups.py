"""``broker groups``: list, describe, delete consumer groups and reset their offsets.

The options are ``kafka-consumer-groups.sh``'s, the actions sub-commands::

    broker groups --bootstrap-server 127.0.0.1:9092 list [--state Stable,Empty]
    broker groups --bootstrap-server HOST:PORT describe --group G
    broker groups --bootstrap-server HOST:PORT delete --group G
    broker groups --bootstrap-server HOST:PORT reset-offsets --group G
        (--topic T[:P,P...] ... | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime DATE)
        [--dry-run | --execute]

It talks to a running broker (or any Kafka) through the protocol
(``admin/groups.py`` on ``admin/client.py``, the client ``broker acls``
uses); ``--command-config FILE`` takes Kafka's client keys for a TLS or
SASL listener. ``describe`` prints Kafka's columns (GROUP TOPIC PARTITION
CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID).
``reset-offsets`` needs an inactive group (Empty or Dead), as Kafka's
tool; without ``--execute`` it only prints the plan (``--dry-run`` is the
default). New offsets are clamped to the partition's earliest and latest
offsets, as Kafka's tool clamps them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
from typing import TextIO

from broker.admin.client import AdminClientError, BrokerRefused, error_name
from broker.admin.client_security import (
    ClientSecurityError,
    add_connection_arguments,
    command_security,
)
from broker.admin.groups import EARLIEST, LATEST, GroupAdmin


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="List all consumer groups.")
    listing.add_argument(
        "--state",
        action="append",
        default=[],
        type=parse_states,
        help="Only groups in these states (comma-separated, repeatable).",
    )
    describe = sub.add_parser("describe", help="Offsets, lag and members of a group.")
    describe.add_argument("--group", required=True)
    delete = sub.add_parser("delete", help="Delete an empty group and its committed offsets.")
    delete.add_argument("--group", required=True)
    reset = sub.add_parser("reset-offsets", help="Set a group's committed offsets.")
    reset.add_argument("--group", required=True)
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", help="topic or topic:0,1,2 (repeatable).")
    scope.add_argument(
        "--all-topics", action="store_true", help="Every topic the group has offsets for."
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int)
    to.add_argument("--shift-by", type=int)
    to.add_argument(
        "--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss, with an optional zone (Z, +hh:mm)."
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="Print the plan only (the default).")
    mode.add_argument("--execute", action="store_true", help="Commit the new offsets.")


#: Kafka's group states (``GroupState``), both protocols'
STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)


def parse_states(text: str) -> list[str]:
    """``Stable,Empty`` in any case to Kafka's spelling; an unknown state is refused, as
    ``kafka-consumer-groups.sh --state`` refuses it (the broker would match nothing)."""
    known = {s.lower(): s for s in STATES}
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or any(n.lower() not in known for n in names):
        raise argparse.ArgumentTypeError(
            f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}"
        )
    return [known[n.lower()] for n in names]


def parse_datetime(text: str) -> int:
    """``yyyy-MM-dd'T'HH:mm:ss.SSS`` with an optional zone, as Kafka's tool; local without."""
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.astimezone()
    return int(value.timestamp() * 1000)


def _table(out: TextIO, header: list[str], rows: list[list[object]]) -> None:
    cells = [header, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print(" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)


def describe(admin: GroupAdmin, group: str, out: TextIO) -> None:
    described = admin.describe_group(group)
    committed = admin.committed(group)
    owners: dict[tuple[str, int], tuple[str, str, str]] = {}
    for m in described.members:
        for tp in m.partitions:
            owners[tp] = (m.member_id, m.host, m.client_id)
    partitions = sorted(set(committed) | set(owners))
    ends = admin.list_offsets(dict.fromkeys(partitions, LATEST)) if partitions else {}
    rows: list[list[object]] = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends[tp]
        owner = owners.get(tp, ("-", "-", "-"))
        lag = "-" if current is None else max(end - current, 0)
        rows.append([group, tp[0], tp[1], "-" if current is None else current, end, lag, *owner])
    state = described.state
    if state == "Dead":
        print(f"Consumer group '{group}' does not exist.", file=out)
        return
    if not described.members:
        print(f"\nConsumer group '{group}' has no active members.\n", file=out)
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    _table(out, [*header, "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)


def plan_reset(admin: GroupAdmin, args: argparse.Namespace) -> dict[tuple[str, int], int]:
    committed = admin.committed(args.group)
    if args.all_topics:
        chosen = sorted(set(committed))
        if not chosen:
            topics = admin.partitions(None)
            chosen = [(t, p) for t, ps in topics.items() for p in ps]
    else:
        chosen = []
        for spec in args.topic:
            topic, _, parts = spec.partition(":")
            if parts:
                chosen += [(topic, int(p)) for p in parts.split(",") if p.strip()]
            else:
                chosen += [(topic, p) for p in admin.partitions([topic])[topic]]
    earliest = admin.list_offsets(dict.fromkeys(chosen, EARLIEST))
    latest = admin.list_offsets(dict.fromkeys(chosen, LATEST))
    if args.to_earliest:
        wanted = earliest
    elif args.to_latest:
        wanted = latest
    elif args.to_datetime is not None:
        ts = parse_datetime(args.to_datetime)
        wanted = admin.list_offsets(dict.fromkeys(chosen, ts))
    elif args.to_offset is not None:
        wanted = dict.fromkeys(chosen, args.to_offset)
    else:
        wanted = {tp: committed.get(tp, latest[tp]) + args.shift_by for tp in chosen}
    return {tp: min(max(wanted[tp], earliest[tp]), latest[tp]) for tp in chosen}


def reset_offsets(admin: GroupAdmin, args: argparse.Namespace, out: TextIO) -> int:
    state = admin.describe_group(args.group).state
    if state not in ("Empty", "Dead"):
        print(
            f"Error: Assignments can only be reset if the group '{args.group}' is inactive, "
            f"but the current state is {state}.",
            file=sys.stderr,
        )
        return 1
    plan = plan_reset(admin, args)
    rows: list[list[object]] = [[args.group, t, p, o] for (t, p), o in sorted(plan.items())]
    if args.execute:
        codes = admin.commit(args.group, plan)
        failed = {tp: c for tp, c in codes.items() if c}
        if failed:
            for (t, p), c in sorted(failed.items()):
                print(f"Error: {t}-{p}: {error_name(c)}", file=sys.stderr)
            return 1
    _table(out, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows)
    return 0


def execute(admin: GroupAdmin, args: argparse.Namespace, out: TextIO) -> int:
    """One action against the broker behind ``admin``; its exit status."""
    if args.action == "list":
        states = [s for listed in args.state for s in listed]
        for group_id in sorted(g.group_id for g in admin.list_groups(states)):
            print(group_id, file=out)
        return 0
    if args.action == "describe":
        describe(admin, args.group, out)
        return 0
    if args.action == "delete":
        admin.delete_group(args.group)
        print(f"Deletion of requested consumer groups ('{args.group}') was successful.", file=out)
        return 0
    return reset_offsets(admin, args, out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    try:
        security = command_security(args)
    except ClientSecurityError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    try:
        admin = GroupAdmin.connect(args.bootstrap_server, args.timeout, security)
        with contextlib.closing(admin):
            return execute(admin, args, out or sys.stdout)
    except (AdminClientError, BrokerRefused, ClientSecurityError, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
