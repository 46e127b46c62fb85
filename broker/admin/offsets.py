"""``broker offsets``: partition offsets for a time, as kafka-get-offsets.sh (GetOffsetShell) does.

::

    broker offsets --bootstrap-server 127.0.0.1:9092 [--topic REGEX] [--partitions 0,1]
        [--time latest]                         -1 latest (default), -2 earliest,
                                                -3 max-timestamp, -4 earliest-local,
                                                -5 latest-tiered, or a time in ms
    broker offsets --bootstrap-server HOST:PORT --topic-partitions 'orders:0-3,audit'
        [--exclude-internal-topics]

One line per partition, ``topic:partition:offset``, sorted by the text
``topic-partition`` (Kafka sorts ``TopicPartition.toString()``, so ``t-10``
comes before ``t-2``). A partition without an offset for the time (a time
past its last record) is left out, as Kafka's tool leaves it; a partition
the broker refuses is reported on stderr (``Skip getting offsets for
topic-partition t-0 due to error: ...``) and the others are printed. Errors
print ``Error occurred: <message>`` and exit 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, error_name
from broker.admin.client_security import (
    ClientSecurityError,
    add_connection_arguments,
    command_security,
)
from broker.admin.topic_filter import (
    FilterError,
    PartitionRule,
    partition_rules,
    topic_and_partitions,
)
from broker.admin.topic_requests import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    MAX_TIMESTAMP,
    TopicAdmin,
)
from broker.errors import ErrorCode

#: GetOffsetShell.parseOffsetSpec's names
TIME_NAMES = {
    "latest": LATEST,
    "earliest": EARLIEST,
    "max-timestamp": MAX_TIMESTAMP,
    "earliest-local": EARLIEST_LOCAL,
    "latest-tiered": LATEST_TIERED,
}
#: ListOffsetsResponse.UNKNOWN_OFFSET
UNKNOWN_OFFSET = -1


class OffsetsError(Exception):
    """A failure printed as ``Error occurred: ...`` (Kafka's TerseException)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument(
        "--topic",
        help="The topic to get the offsets for; a regular expression. Default: every topic.",
    )
    parser.add_argument(
        "--partitions",
        help="Comma separated partition ids (default: every partition). Not with"
        " --topic-partitions.",
    )
    parser.add_argument(
        "--topic-partitions",
        help="Comma separated topic-partition patterns: topic1:1,topic2:0-3,topic3,topic4:5-,"
        "topic5:-3 (the topic part is a regex; N-M takes N up to M exclusive).",
    )
    parser.add_argument(
        "--time",
        default="latest",
        help="-1 or latest (default), -2 or earliest, -3 or max-timestamp, -4 or earliest-local,"
        " -5 or latest-tiered, or a timestamp in ms: the first offset at or after it.",
    )
    parser.add_argument(
        "--exclude-internal-topics", action="store_true", help="Leave out internal topics."
    )


def parse_time(text: str) -> int:
    """GetOffsetShell.parseOffsetSpec: a name, a special value or a time in ms."""
    if text in TIME_NAMES:
        return TIME_NAMES[text]
    try:
        return int(text)
    except ValueError:
        raise OffsetsError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or"
            " max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long"
            " format timestamp"
        ) from None


def rules(args: argparse.Namespace) -> list[PartitionRule]:
    if args.topic_partitions is not None and (
        args.topic is not None or args.partitions is not None
    ):
        raise OffsetsError("--topic-partitions cannot be used with --topic or --partitions")
    if args.topic_partitions is not None:
        return partition_rules(args.topic_partitions)
    return [topic_and_partitions(args.topic, args.partitions)]


def chosen_partitions(
    admin: TopicAdmin, wanted: list[PartitionRule], exclude_internal: bool
) -> list[tuple[str, int]]:
    """GetOffsetShell.listPartitionInfos: partitions some rule takes."""
    return [
        (name, p.partition)
        for name, topic in sorted(admin.topics().items())
        if not (exclude_internal and topic.is_internal)
        for p in topic.partitions
        if any(r.allows(name, p.partition) for r in wanted)
    ]


def fetch_offsets(
    admin: TopicAdmin,
    wanted: list[PartitionRule],
    timestamp: int,
    exclude_internal: bool,
    errors: TextIO,
) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of the partitions ``wanted`` takes, in Kafka's order."""
    partitions = chosen_partitions(admin, wanted, exclude_internal)
    if not partitions:
        raise OffsetsError("Could not match any topic-partitions with the specified filters")
    found = admin.list_offsets(partitions, timestamp)
    out = []
    for topic, partition in sorted(partitions, key=lambda tp: f"{tp[0]}-{tp[1]}"):
        code, offset = found.get((topic, partition), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
        if code != ErrorCode.NONE:
            print(
                f"Skip getting offsets for topic-partition {topic}-{partition} due to error:"
                f" {error_name(code)}",
                file=errors,
            )
        elif offset != UNKNOWN_OFFSET:
            out.append((topic, partition, offset))
    return out


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    try:
        # GetOffsetShell parses the time and the filters before it connects
        timestamp = parse_time(args.time)
        wanted = rules(args)
        security = command_security(args)
        conn = AdminConnection.connect(args.bootstrap_server, args.timeout, security)
        with TopicAdmin(conn) as admin:
            found = fetch_offsets(
                admin, wanted, timestamp, args.exclude_internal_topics, sys.stderr
            )
            for topic, partition, offset in found:
                print(f"{topic}:{partition}:{offset}", file=stream)
        return 0
    except (
        AdminClientError,
        BrokerRefused,
        ClientSecurityError,
        FilterError,
        OffsetsError,
    ) as exc:
        print(f"Error occurred: {exc}", file=sys.stderr)
        return 1
