"""``broker log-dirs``: the log dirs of a running broker and their partitions, as
kafka-log-dirs.sh (Kafka 3.9's ``LogDirsCommand``) prints them.

::

    broker log-dirs --bootstrap-server 127.0.0.1:9092 --describe [--topic-list a,b]
        [--broker-list 0]

Output, three lines (the last is one JSON document; DescribeLogDirs with
every partition, filtered by ``--topic-list`` here as Kafka's tool filters)::

    Querying brokers for log directories information
    Received log directory information from brokers 0
    {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"t-0","size":N,
      "offsetLag":0,"isFuture":false}],"error":null,"logDir":"/path"}]}],"version":1}

Kafka's tool writes that JSON from ``HashMap`` objects with Jackson, so keys,
log dirs and partitions come in ``java.util.HashMap`` order; the same order
is computed here (``java_order.py``) so the bytes are the same. ``error`` is
the Java exception class Kafka would name (``...KafkaStorageException`` for
a dir that cannot be read). A broker of ``--broker-list`` that the cluster
does not have fails the run (exit 1), as in Kafka.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any, TextIO

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, error_name
from broker.admin.client_security import (
    ClientSecurity,
    ClientSecurityError,
    add_connection_arguments,
    command_security,
)
from broker.admin.java_order import hash_order, string_hash, string_order, topic_partition_hash
from broker.admin.topic_requests import LogDir, TopicAdmin
from broker.errors import ErrorCode

#: the Java exception Errors.forCode(code).exception() is, by error code
EXCEPTION_CLASSES: dict[int, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "org.apache.kafka.common.errors.UnknownServerException",
    ErrorCode.KAFKA_STORAGE_ERROR: "org.apache.kafka.common.errors.KafkaStorageException",
}


class LogDirsError(Exception):
    """A failure Kafka's tool prints as its bare message (exit 1)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument(
        "--describe", action="store_true", help="Describe the log directories of the brokers."
    )
    parser.add_argument(
        "--topic-list",
        default="",
        help='Topics to show, "topic1,topic2,topic3" (default: every topic).',
    )
    parser.add_argument(
        "--broker-list", default="", help='Brokers to query, "0,1,2" (default: every broker).'
    )


def split_list(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


def java_map(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``HashMap<String, Object>`` filled in this order, as Jackson writes it."""
    values = dict(pairs)
    return {k: values[k] for k in string_order(k for k, _ in pairs)}


def log_dir_json(result: LogDir, topics: set[str]) -> dict[str, Any]:
    partitions = [
        (t.name, p) for t in result.topics for p in t.partitions if not topics or t.name in topics
    ]
    ordered = hash_order(partitions, lambda tp: topic_partition_hash(tp[0], tp[1].partition_index))
    code = result.error_code
    return java_map(
        [
            ("logDir", result.log_dir),
            (
                "error",
                None if code == ErrorCode.NONE else EXCEPTION_CLASSES.get(code, error_name(code)),
            ),
            (
                "partitions",
                [
                    java_map(
                        [
                            ("partition", f"{name}-{p.partition_index}"),
                            ("size", p.partition_size),
                            ("offsetLag", p.offset_lag),
                            ("isFuture", bool(p.is_future_key)),
                        ]
                    )
                    for name, p in ordered
                ],
            ),
        ]
    )


def describe_json(by_broker: dict[int, list[LogDir]], topics: set[str]) -> str:
    brokers = hash_order(by_broker, int, initial=len(by_broker))
    document = java_map(
        [
            ("version", 1),
            (
                "brokers",
                [
                    java_map(
                        [
                            ("broker", b),
                            (
                                "logDirs",
                                [
                                    log_dir_json(r, topics)
                                    # logDirDescriptions: a HashMap made with the dirs' count
                                    for r in hash_order(
                                        by_broker[b],
                                        lambda r: string_hash(r.log_dir),
                                        initial=len(by_broker[b]),
                                    )
                                ],
                            ),
                        ]
                    )
                    for b in brokers
                ],
            ),
        ]
    )
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def hash_set(ids: set[int]) -> list[int]:
    """``new HashSet<>(collection)``'s order of small integer ids."""
    return hash_order(sorted(ids), int, initial=max(int(len(ids) / 0.75) + 1, 16))


def describe(
    admin: TopicAdmin,
    args: argparse.Namespace,
    security: ClientSecurity,
    out: TextIO,
) -> None:
    topics = set(split_list(args.topic_list))
    try:
        wanted = {int(b) for b in split_list(args.broker_list)}
    except ValueError:
        raise LogDirsError(f"--broker-list: not a list of broker ids: {args.broker_list}") from None
    admin.topics()  # the brokers of the cluster
    cluster = {b.node_id: b for b in admin.brokers}
    missing = wanted - set(cluster)
    if missing:
        raise LogDirsError(
            "ERROR: The given brokers do not exist from --broker-list:"
            f" {','.join(map(str, hash_set(missing)))}. Current existent brokers:"
            f" {','.join(map(str, hash_set(set(cluster))))}"
        )
    chosen = wanted or set(cluster)
    print("Querying brokers for log directories information", file=out)
    by_broker: dict[int, list[LogDir]] = {}
    for node_id in sorted(chosen):
        if len(cluster) == 1:
            by_broker[node_id] = admin.describe_log_dirs()
            continue
        b = cluster[node_id]
        with contextlib.closing(
            AdminConnection.connect(f"{b.host}:{b.port}", args.timeout, security)
        ) as conn:
            by_broker[node_id] = admin.describe_log_dirs(conn)
    print(
        f"Received log directory information from brokers {','.join(map(str, hash_set(chosen)))}",
        file=out,
    )
    print(describe_json(by_broker, topics), file=out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    if not args.describe:
        print('Missing required argument "[describe]"', file=sys.stderr)
        return 1
    try:
        security = command_security(args)
        conn = AdminConnection.connect(args.bootstrap_server, args.timeout, security)
        with TopicAdmin(conn) as admin:
            describe(admin, args, security, stream)
        return 0
    except (AdminClientError, BrokerRefused, ClientSecurityError, LogDirsError) as exc:
        print(exc, file=sys.stderr)
        return 1
