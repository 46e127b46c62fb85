"""``broker configs``: describe and alter topic configs, as kafka-configs.sh does.

The options are Kafka 3.9's ``ConfigCommand``'s::

    broker configs --bootstrap-server 127.0.0.1:9092 --entity-type topics --entity-name T
        --describe [--all]
    broker configs --bootstrap-server HOST:PORT --entity-type topics --describe   (every topic)
    broker configs --bootstrap-server HOST:PORT --topic T --alter
        [--add-config 'k1=v1,k2=[a,b]' | --add-config-file FILE] [--delete-config k3,k4]

Output is kafka-configs.sh's::

    Dynamic configs for topic T are:                        (All configs ... with --all)
      cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,
        DEFAULT_CONFIG:log.cleanup.policy=delete}
    Completed updating config for topic T.

(one line per entry, sorted by name; without ``--all`` only the topic's own
overrides). ``--add-config`` splits at commas outside square brackets and
drops the brackets (``ConfigCommand.parseConfigsToBeAdded``); ``--alter``
sends IncrementalAlterConfigs SET and DELETE operations in one request, and
refuses to delete a key the topic does not override (``Invalid config(s):
k3``), as Kafka's tool.

Users (``--entity-type users``): their SCRAM credentials are what
``broker scram-users`` manages; this tool hands ``--describe`` and the
``SCRAM-SHA-256=[iterations=N,password=P]`` configs of ``--alter`` to that
module's functions, so both tools print the same lines. Client quotas do not
exist here. Brokers, broker loggers, clients, IPs and client metrics are
refused with one line: this broker has no dynamic broker configuration yet.

Errors print one line and exit 1: Kafka's message for an option it refuses,
``Error while executing config command: <broker's message>`` for a refused
request.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TextIO

from broker.admin import scram_users
from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, error_name
from broker.admin.client_security import (
    ClientSecurityError,
    UsageError,
    add_connection_arguments,
    command_security,
)
from broker.admin.java_order import string_order
from broker.admin.topic_requests import ConfigEntry, TopicAdmin
from broker.config import parse_properties
from broker.errors import ErrorCode
from broker.security.scram_store import MECHANISMS

TOPICS, USERS = "topics", "users"
#: ConfigCommand.BrokerSupportedConfigTypes
ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics")
#: ConfigEntry.ConfigSource names by DescribeConfigsResponse's source id
SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
}
DYNAMIC_TOPIC_CONFIG = 1
#: commas and '=' outside square brackets (the look-ahead of parseConfigsToBeAdded)
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_KEY = re.compile(r"[a-zA-Z0-9._-]*")


class ConfigCommandError(Exception):
    """A command line or config Kafka's tool refuses (its message, exit 1)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--describe", action="store_true", help="List configs for the entity.")
    parser.add_argument("--alter", action="store_true", help="Alter the config of the entity.")
    parser.add_argument(
        "--all", action="store_true", help="With --describe: every config, not only overrides."
    )
    parser.add_argument(
        "--entity-type",
        action="append",
        default=[],
        help="topics or users (brokers, clients, ... are not served yet).",
    )
    parser.add_argument("--entity-name", action="append", default=[], help="Name of the entity.")
    parser.add_argument(
        "--entity-default", action="store_true", help="The default entity (not served here)."
    )
    parser.add_argument("--topic", help="The topic's name (--entity-type topics --entity-name).")
    parser.add_argument("--user", help="The user's name (--entity-type users --entity-name).")
    for flag in ("--broker", "--broker-logger", "--client", "--ip"):
        parser.add_argument(flag, help=argparse.SUPPRESS)
    parser.add_argument(
        "--add-config",
        metavar="CONFIGS",
        help="k1=v1,k2=[v1,v2,v2],k3=v3 (brackets group values that hold commas).",
    )
    parser.add_argument(
        "--add-config-file", metavar="FILE", help="A properties file of configs to add."
    )
    parser.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="KEYS",
        help="Config keys to remove: k1,k2 (repeatable).",
    )
    parser.add_argument("--force", action="store_true", help="Accepted and ignored (Kafka's).")


# ---- what the options mean ----------------------------------------------------------------


def entity(args: argparse.Namespace) -> tuple[str, str | None]:
    """(entity type, name or None) after ConfigCommandOptions.checkArgs's checks."""
    if args.describe == args.alter:
        raise ConfigCommandError("Command must include exactly one action: --describe, --alter")
    if args.describe and (args.add_config or args.add_config_file or args.delete_config):
        raise ConfigCommandError('Option "[describe]" can\'t be used with option "[add-config]"')
    flags = {
        "topics": args.topic,
        "users": args.user,
        "brokers": args.broker,
        "broker-loggers": args.broker_logger,
        "clients": args.client,
        "ips": args.ip,
    }
    named = [(t, n) for t, n in flags.items() if n is not None]
    types = list(args.entity_type) + [t for t, _ in named]
    if len(types) != len(set(types)):
        raise ConfigCommandError(f"Duplicate entity type(s) specified: {','.join(types)}")
    for t in types:
        if t not in ENTITY_TYPES:
            raise ConfigCommandError(
                f"Invalid entity type {t}, the entity type must be one of"
                f" {', '.join(ENTITY_TYPES)} with a --bootstrap-server or --bootstrap-controller"
                " argument"
            )
    if not types:
        raise ConfigCommandError("At least one entity type must be specified")
    if named and (args.entity_type or args.entity_name or args.entity_default):
        raise ConfigCommandError(
            "--entity-{type,name,default} should not be used in conjunction with specific entity"
            " flags"
        )
    served = [t for t in types if t not in (TOPICS, USERS)]
    if served:
        raise ConfigCommandError(
            f"--entity-type {served[0]} is not served by broker configs yet: it describes and"
            " alters topics (and users' SCRAM credentials)"
        )
    if len(types) > 1:
        raise ConfigCommandError("Only one of --entity-type topics or users at a time")
    if args.entity_default:
        raise ConfigCommandError(f"--entity-default: this broker has no default {types[0]} config")
    names = list(args.entity_name) + [n for _, n in named]
    if len(names) > 1:
        raise ConfigCommandError("An entity name must be specified for every entity type")
    name = names[0] if names else None
    if args.alter and not name:
        raise ConfigCommandError(f"an entity name must be specified with --alter of {types[0]}")
    if args.alter:
        if args.add_config and args.add_config_file:
            raise ConfigCommandError(
                "Only one of --add-config or --add-config-file must be specified"
            )
        if not (args.add_config or args.add_config_file or args.delete_config):
            raise ConfigCommandError(
                "At least one of --add-config, --add-config-file, or --delete-config must be"
                " specified with --alter"
            )
    return types[0], name


def parse_configs_to_be_added(text: str | None, file: str | None = None) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: ``k1=v1,k2=[a,b]`` (and a properties file)."""
    props: dict[str, str] = {}
    if file:
        try:
            props.update(parse_properties(Path(file).read_text(encoding="utf-8")))
        except OSError as exc:
            raise ConfigCommandError(f"cannot read {file}: {exc.strerror}") from None
    if text:
        items = re.split("," + _OUTSIDE_BRACKETS, text)
        while items and not items[-1]:
            items.pop()  # Java's split drops trailing empty strings
        pairs = [re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item) for item in items]
        if not all(len(p) == 2 for p in pairs):
            raise ConfigCommandError(
                'Invalid entity config: all configs to be added must be in the format "key=val".'
            )
        for key, value in pairs:
            props[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    for key in props:
        if not _KEY.fullmatch(key):
            raise ConfigCommandError(f"Invalid character found for config key: {key}")
    return props


def parse_configs_to_be_deleted(values: list[str]) -> list[str]:
    return [k.strip() for v in values for k in v.split(",") if k.strip()]


# ---- topics -----------------------------------------------------------------------------


def entry_line(entry: ConfigEntry) -> str:
    synonyms = ", ".join(
        f"{SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}={_java(s.value)}" for s in entry.synonyms
    )
    return (
        f"  {entry.name}={_java(entry.value)} sensitive={str(bool(entry.is_sensitive)).lower()}"
        f" synonyms={{{synonyms}}}"
    )


def _java(value: str | None) -> str:
    return "null" if value is None else value


def topic_entries(
    admin: TopicAdmin, topic: str, everything: bool, synonyms: bool
) -> list[ConfigEntry]:
    """ConfigCommand.getResourceConfig: sorted by name; only the topic's overrides
    unless ``everything``."""
    entries = admin.describe_configs([topic], synonyms=synonyms).get(topic, [])
    return sorted(
        (e for e in entries if everything or e.config_source == DYNAMIC_TOPIC_CONFIG),
        key=lambda e: str(e.name),
    )


def describe_topics(admin: TopicAdmin, name: str | None, everything: bool, out: TextIO) -> None:
    # without a name: listTopics(listInternal).names(), a HashSet
    names = [name] if name is not None else string_order(admin.topics())
    for topic in names:
        print(f"{'All' if everything else 'Dynamic'} configs for topic {topic} are:", file=out)
        for entry in topic_entries(admin, topic, everything, synonyms=True):
            print(entry_line(entry), file=out)


def alter_topic(admin: TopicAdmin, args: argparse.Namespace, name: str, out: TextIO) -> None:
    sets = parse_configs_to_be_added(args.add_config, args.add_config_file)
    deletes = parse_configs_to_be_deleted(args.delete_config)
    current = {e.name for e in topic_entries(admin, name, everything=False, synonyms=False)}
    invalid = [k for k in deletes if k not in current]
    if invalid:
        raise ConfigCommandError(f"Invalid config(s): {','.join(invalid)}")
    admin.alter_configs(name, sets, deletes)
    print(f"Completed updating config for topic {name}.", file=out)


# ---- users: broker scram-users' functions ---------------------------------------------------


def describe_users(conn: AdminConnection, name: str | None, out: TextIO) -> None:
    """ConfigCommand.describeClientQuotaAndUserScramCredentialConfigs, without quotas."""
    for result in scram_users.describe(conn, [name] if name else []):
        if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
            continue  # not among DescribeUserScramCredentialsResult.users()
        if result.error_code != ErrorCode.NONE:
            print(
                f"Error retrieving SCRAM credential configs for user-principal '{result.user}':"
                f" {error_name(result.error_code)}: {result.error_message}",
                file=out,
            )
        else:
            print(scram_users.describe_text(result), file=out)


def alter_user(conn: AdminConnection, args: argparse.Namespace, name: str, out: TextIO) -> None:
    deletes = parse_configs_to_be_deleted(args.delete_config)
    others = [k for k in deletes if k.upper() not in MECHANISMS]
    if others or args.add_config_file:
        raise ConfigCommandError(
            "Only SCRAM credential configs can be altered for users here (there are no client"
            f" quotas); unexpected: {', '.join(others) or '--add-config-file'}"
        )
    upserts: list[scram_users.Upsertion] = []
    if args.add_config:
        wanted = argparse.Namespace(
            user=name, add_config=args.add_config, mechanism=[], password_file=None
        )
        upserts = scram_users.upsertions(wanted, sys.stdin)
    deletions = [
        scram_users.Deletion(name=name, mechanism=MECHANISMS[k.upper()][0]) for k in deletes
    ]
    scram_users.alter(conn, deletions, upserts)
    print(f"Completed updating config for user {name}.", file=out)


def execute(
    conn: AdminConnection, args: argparse.Namespace, kind: str, name: str | None, out: TextIO
) -> None:
    if kind == USERS:
        if args.describe:
            describe_users(conn, name, out)
        else:
            assert name is not None  # entity() checked it
            alter_user(conn, args, name, out)
        return
    if name is not None and name in (".", ".."):
        raise ConfigCommandError(f'Topic name cannot be "{name}"')  # Topic.validate
    admin = TopicAdmin(conn)
    if args.describe:
        describe_topics(admin, name, args.all, out)
    else:
        assert name is not None
        alter_topic(admin, args, name, out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    try:
        kind, name = entity(args)
        security = command_security(args)
    except (ConfigCommandError, ClientSecurityError) as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        with AdminConnection.connect(args.bootstrap_server, args.timeout, security) as conn:
            execute(conn, args, kind, name, stream)
        return 0
    except (ConfigCommandError, UsageError) as exc:
        print(exc, file=sys.stderr)
        return 1
    except (AdminClientError, BrokerRefused, scram_users.BrokerRefused) as exc:
        print(f"Error while executing config command: {exc}", file=sys.stderr)
        return 1
