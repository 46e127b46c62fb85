"""``broker topics``: create, list, describe, alter and delete topics, as kafka-topics.sh does.

The options are Kafka 3.9's ``TopicCommand``'s (one action flag each run)::

    broker topics --bootstrap-server 127.0.0.1:9092 --create --topic T [--partitions N]
        [--replication-factor 1] [--config k=v ...] [--if-not-exists]
    broker topics --bootstrap-server HOST:PORT --list [--topic REGEX] [--exclude-internal]
    broker topics --bootstrap-server HOST:PORT --describe [--topic REGEX | --topic-id ID]
        [--topics-with-overrides | --under-replicated-partitions | --under-min-isr-partitions
         | --at-min-isr-partitions | --unavailable-partitions] [--exclude-internal]
        [--if-exists] [--offsets]
    broker topics --bootstrap-server HOST:PORT --alter --topic REGEX --partitions N [--if-exists]
    broker topics --bootstrap-server HOST:PORT --delete --topic REGEX [--if-exists]

``--topic`` is a regular expression for every action but ``--create``
(``topic_filter.IncludeList``). Output is Kafka's, byte for byte: ``Created
topic T.``, the sorted names of ``--list``, and for ``--describe`` one line
per topic and one per partition::

    Topic: T<TAB>TopicId: <base64>  PartitionCount: N  ReplicationFactor: 1  Configs: k=v,...
    <TAB>Topic: T  Partition: 0  Leader: 0  Replicas: 0  Isr: 0  Elr: N/A  LastKnownElr: N/A

(fields separated by tabs). ``Configs:`` lists the entries whose source is
not DEFAULT_CONFIG, in the order of the ``HashMap`` Kafka's tool prints
them from (``java_order.py``); topics come in that order too
(``allTopicNames()``). ``Elr: N/A`` is what Kafka 3.9's tool prints for a
broker that answers Metadata and not DescribeTopicPartitions, as this one.
``--offsets`` (ours) adds ``<TAB>EarliestOffset: E<TAB>LatestOffset: L`` to
each partition line (ListOffsets -2 and -1: the log start offset and the
high watermark).

``--alter`` and ``--delete`` print nothing when they succeed, as Kafka's.
A failure prints ``Error while executing topic command : <message>`` and
exits 1; the option checks of ``TopicCommandOptions.checkArgs`` print their
message and exit 1 as well. Unlike Kafka's tool the error goes to stderr
(Kafka prints it to stdout) and ``Topic 'T' does not exist as expected``
names the topic (Kafka prints ``Optional[T]``); see docs/deviations.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TextIO

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused
from broker.admin.client_security import (
    ClientSecurityError,
    add_connection_arguments,
    command_security,
)
from broker.admin.java_order import string_order
from broker.admin.topic_filter import FilterError, IncludeList, is_internal
from broker.admin.topic_requests import (
    EARLIEST,
    LATEST,
    ZERO_UUID,
    ConfigEntry,
    PartitionInfo,
    TopicAdmin,
    TopicInfo,
    kafka_uuid,
)
from broker.config import ConfigSource
from broker.errors import ErrorCode

ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORTS = (
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
    "unavailable_partitions",
)
#: option -> the actions it may come with (TopicCommandOptions.checkInvalidArgs)
ALLOWED_WITH = {
    "config": ("create",),
    "partitions": ("alter", "create"),
    "replication_factor": ("create",),
    "if_exists": ("alter", "delete", "describe"),
    "if_not_exists": ("create",),
    "exclude_internal": ("list", "describe"),
    "topics_with_overrides": ("describe",),
    "offsets": ("describe",),
    "topic_id": ("describe",),
    **dict.fromkeys(REPORTS, ("describe",)),
}
MAX_REPLICATION_FACTOR = 32767
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_')"
    " could collide. To avoid issues it is best to use either, but not both."
)


class TopicCommandError(Exception):
    """A failure printed as ``Error while executing topic command : ...``."""


class OptionError(Exception):
    """An option combination Kafka's tool refuses before connecting."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--create", action="store_true", help="Create a new topic.")
    actions.add_argument("--list", action="store_true", help="List all available topics.")
    actions.add_argument("--describe", action="store_true", help="List details for the topics.")
    actions.add_argument(
        "--alter", action="store_true", help="Alter the number of partitions of a topic."
    )
    actions.add_argument("--delete", action="store_true", help="Delete a topic.")
    parser.add_argument(
        "--topic",
        help="The topic to create, alter, describe or delete; a regular expression except for"
        ' --create (e.g. "test\\.topic").',
    )
    parser.add_argument("--topic-id", help="The topic id to describe.")
    parser.add_argument(
        "--partitions", type=int, help="Partitions of the topic being created or altered."
    )
    parser.add_argument(
        "--replication-factor",
        type=int,
        help="Replication factor of the topic being created (this broker: 1).",
    )
    parser.add_argument(
        "--config",
        action="append",
        metavar="NAME=VALUE",
        help="A topic config override for the topic being created (repeatable).",
    )
    parser.add_argument("--if-exists", action="store_true", help="Only if the topic exists.")
    parser.add_argument(
        "--if-not-exists", action="store_true", help="Only if the topic does not exist."
    )
    parser.add_argument(
        "--exclude-internal", action="store_true", help="Leave out internal topics."
    )
    parser.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="Describe only topics that have overridden configs.",
    )
    parser.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="Only partitions with fewer in-sync replicas than replicas.",
    )
    parser.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="Only partitions whose ISR is smaller than min.insync.replicas.",
    )
    parser.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="Only partitions whose ISR is exactly min.insync.replicas.",
    )
    parser.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="Only partitions whose leader is not available.",
    )
    parser.add_argument(
        "--offsets",
        action="store_true",
        help="With --describe: add each partition's earliest and latest offsets (not Kafka's).",
    )


# ---- what the options mean ----------------------------------------------------------------


def _flag(dest: str) -> str:
    return "[" + dest.replace("_", "-") + "]"


def check_options(args: argparse.Namespace) -> str:
    """The action, after Kafka's checks of the option combination (OptionError)."""
    given = [a for a in ACTIONS if getattr(args, a)]
    if len(given) != 1:
        raise OptionError(
            "Command must include exactly one action: --list, --describe, --create, --alter or"
            " --delete"
        )
    (action,) = given
    if action == "describe" and args.if_exists and not (args.topic or args.topic_id):
        raise OptionError("--topic or --topic-id is required to describe a topic")
    if action not in ("list", "describe") and args.topic is None:
        raise OptionError(f'Missing required argument "{_flag("topic")}"')
    if action == "alter":
        if args.config:
            raise OptionError(
                f'Option "{_flag("config")}" can\'t be used with option "{_flag("alter")}"'
                " (broker configs alters topic configs: --entity-type topics --alter)"
            )
        if args.partitions is None:
            raise OptionError(f'Missing required argument "{_flag("partitions")}"')
    for dest, allowed in ALLOWED_WITH.items():
        value = getattr(args, dest)
        if value not in (None, False, []) and action not in allowed:
            raise OptionError(
                f'Option "{_flag(dest)}" can\'t be used with option "{_flag(action)}"'
            )
    reports = [r for r in REPORTS if getattr(args, r)]
    if args.topics_with_overrides and reports:
        raise OptionError(
            f'Option "{_flag(reports[0])}" can\'t be used with option'
            f' "{_flag("topics_with_overrides")}"'
        )
    return action


def parse_topic_configs(items: list[str] | None) -> dict[str, str]:
    """``--config k=v`` (each split on ``=`` with the spaces around it, as Java's
    ``split("\\s*=\\s*")``: exactly one ``=`` and a value)."""
    out = {}
    for item in items or []:
        parts = re.split(r"\s*=\s*", item)
        while parts and not parts[-1]:
            parts.pop()  # Java's split drops trailing empty strings
        if len(parts) != 2:
            raise TopicCommandError(
                "requirement failed: Invalid topic config: all configs to be added must be in"
                ' the format "key=val".'
            )
        out[parts[0].strip()] = parts[1].strip()
    return out


def select_topics(
    topics: dict[str, TopicInfo], pattern: str | None, exclude_internal: bool
) -> list[str]:
    """``TopicService.getTopics``: sorted names the filter takes."""
    names = sorted(n for n, t in topics.items() if not (exclude_internal and _internal(t)))
    if pattern is None:
        return names
    include = IncludeList.of(pattern)
    return [n for n in names if include.allows(n)]


def _internal(topic: TopicInfo) -> bool:
    return topic.is_internal or is_internal(topic.name)


def check_found(found: list[str], requested: str | None, if_exists: bool) -> None:
    if requested and not if_exists and not found:
        raise TopicCommandError(f"Topic '{requested}' does not exist as expected")


# ---- the lines --------------------------------------------------------------------------


def configs_text(entries: list[ConfigEntry]) -> str:
    """``Configs:``'s value: the non-default entries in Kafka's HashMap order."""
    by_name = {e.name: e for e in entries}
    return ",".join(
        f"{e.name}={_java(e.value)}"
        for e in (by_name[n] for n in string_order(by_name))
        if e.config_source != ConfigSource.DEFAULT_CONFIG
    )


def _java(value: str | None) -> str:
    return "null" if value is None else value


def topic_line(topic: TopicInfo, entries: list[ConfigEntry]) -> str:
    first = topic.partitions[0] if topic.partitions else None
    line = f"Topic: {topic.name}"
    if topic.topic_id != ZERO_UUID:
        line += f"\tTopicId: {kafka_uuid(topic.topic_id)}"
    line += f"\tPartitionCount: {len(topic.partitions)}"
    line += f"\tReplicationFactor: {len(first.replicas) if first else 0}"
    return line + f"\tConfigs: {configs_text(entries)}"


def partition_lines(
    topic: TopicInfo, offsets: dict[tuple[str, int], tuple[int, int]] | None = None
) -> list[str]:
    lines = []
    for p in topic.partitions:
        line = (
            f"\tTopic: {topic.name}\tPartition: {p.partition}"
            f"\tLeader: {p.leader if p.leader >= 0 else 'none'}"
            f"\tReplicas: {','.join(map(str, p.replicas))}"
            f"\tIsr: {','.join(map(str, p.isr))}"
            "\tElr: N/A\tLastKnownElr: N/A"
        )
        if offsets is not None:
            earliest, latest = offsets[(topic.name, p.partition)]
            line += f"\tEarliestOffset: {earliest}\tLatestOffset: {latest}"
        lines.append(line)
    return lines


def _min_isr(entries: list[ConfigEntry]) -> int:
    for e in entries:
        if e.name == "min.insync.replicas" and e.value is not None:
            return int(e.value)
    return 1


def wanted_partition(
    args: argparse.Namespace, p: PartitionInfo, live: set[int], min_isr: int
) -> bool:
    """DescribeOptions.shouldPrintTopicPartition (no reassignments here: the replication
    factor is the replica count)."""
    if not any(getattr(args, r) for r in REPORTS):
        return True
    has_leader = p.leader >= 0
    isr = len(p.isr)
    return bool(
        (args.under_replicated_partitions and len(p.replicas) - isr > 0)
        or (args.unavailable_partitions and not (has_leader and p.leader in live))
        or (args.under_min_isr_partitions and (not has_leader or isr < min_isr))
        or (args.at_min_isr_partitions and isr == min_isr)
    )


# ---- the actions ------------------------------------------------------------------------


def create(admin: TopicAdmin, args: argparse.Namespace, out: TextIO) -> None:
    name = args.topic
    configs = parse_topic_configs(args.config)  # CommandTopicPartition parses them first
    if "." in name or "_" in name:
        print(COLLISION_WARNING, file=out)
    rf = args.replication_factor
    if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
        raise TopicCommandError(
            f"The replication factor must be between 1 and {MAX_REPLICATION_FACTOR} inclusive"
        )
    if args.partitions is not None and args.partitions < 1:
        raise TopicCommandError("The partitions must be greater than 0")
    try:
        admin.create_topic(
            name, -1 if args.partitions is None else args.partitions, rf or -1, configs
        )
    except BrokerRefused as exc:
        if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return
        raise
    print(f"Created topic {name}.", file=out)


def describe(admin: TopicAdmin, args: argparse.Namespace, out: TextIO) -> None:
    topics = admin.topics()
    if args.topic_id:
        found = [n for n, t in sorted(topics.items()) if kafka_uuid(t.topic_id) == args.topic_id]
        found = [n for n in found if not (args.exclude_internal and _internal(topics[n]))]
        if not found and not args.if_exists:
            raise TopicCommandError(f"TopicId '{args.topic_id}' does not exist as expected")
    else:
        found = select_topics(topics, args.topic, args.exclude_internal)
        check_found(found, args.topic, args.if_exists)
    # allTopicNames() is a HashMap made with the topics' count
    ordered = string_order(found, initial=len(found))
    configs = admin.describe_configs(ordered)
    offsets = None
    if args.offsets:
        partitions = [(n, p.partition) for n in ordered for p in topics[n].partitions]
        offsets = _offset_pairs(admin, partitions)
    live = {b.node_id for b in admin.brokers}
    reporting = any(getattr(args, r) for r in REPORTS)
    for name in ordered:
        topic, entries = topics[name], configs.get(name, [])
        if not reporting:
            overridden = any(e.config_source != ConfigSource.DEFAULT_CONFIG for e in entries)
            if not args.topics_with_overrides or overridden:
                print(topic_line(topic, entries), file=out)
        if args.topics_with_overrides:
            continue
        lines = partition_lines(topic, offsets)
        min_isr = _min_isr(entries)
        for p, line in zip(topic.partitions, lines, strict=True):
            if wanted_partition(args, p, live, min_isr):
                print(line, file=out)


def _offset_pairs(
    admin: TopicAdmin, partitions: list[tuple[str, int]]
) -> dict[tuple[str, int], tuple[int, int]]:
    if not partitions:
        return {}
    earliest = admin.list_offsets(partitions, EARLIEST)
    latest = admin.list_offsets(partitions, LATEST)
    out = {}
    for tp in partitions:
        (code_e, first), (code_l, last) = earliest[tp], latest[tp]
        for code in (code_e, code_l):
            if code != ErrorCode.NONE:
                raise BrokerRefused(f"ListOffsets {tp[0]}-{tp[1]}: {ErrorCode(code).name}", code)
        out[tp] = (first, last)
    return out


def execute(admin: TopicAdmin, args: argparse.Namespace, action: str, out: TextIO) -> None:
    if action == "create":
        create(admin, args, out)
    elif action == "describe":
        describe(admin, args, out)
    else:
        topics = admin.topics()
        found = select_topics(topics, args.topic, args.exclude_internal)
        if action == "list":
            print("\n".join(found), file=out)
            return
        check_found(found, args.topic, args.if_exists)
        if not found:
            return
        if action == "alter":
            admin.create_partitions(dict.fromkeys(found, args.partitions))
        else:
            admin.delete_topics(found)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    try:
        action = check_options(args)
        security = command_security(args)
    except (OptionError, ClientSecurityError) as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        conn = AdminConnection.connect(args.bootstrap_server, args.timeout, security)
        with TopicAdmin(conn) as admin:
            execute(admin, args, action, stream)
        return 0
    except (AdminClientError, BrokerRefused, TopicCommandError, FilterError) as exc:
        print(f"Error while executing topic command : {exc}", file=sys.stderr)
        return 1
