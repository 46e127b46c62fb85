"""The ``broker`` command: one sub-command per tool, each in the module that owns it.

Sub-commands are declared in ``COMMANDS`` as (name, module, help); the module
provides ``add_arguments(parser)`` and ``run(args) -> int`` and is imported
only when its command runs, so ``broker dump-log`` never loads the server
and ``broker serve`` never loads Spark.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from broker import __version__

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("serve", "broker.app", "Run the broker (Kafka protocol listener and metrics endpoint)."),
    (
        "dump-log",
        "broker.admin.dump_log",
        "Print .log, .index, .timeindex, .snapshot and .txnindex files as kafka-dump-log.sh does.",
    ),
    (
        "acls",
        "broker.admin.acls",
        "Add, remove or list ACLs of a running broker, as kafka-acls.sh does.",
    ),
    (
        "scram-users",
        "broker.admin.scram_users",
        "Add, delete or list SCRAM users of a running broker, as kafka-configs.sh does.",
    ),
    (
        "groups",
        "broker.admin.consumer_groups",
        "List, describe, delete consumer groups and reset their offsets (kafka-consumer-groups).",
    ),
    (
        "topics",
        "broker.admin.topics",
        "Create, list, describe, alter or delete topics of a running broker (kafka-topics.sh).",
    ),
    (
        "configs",
        "broker.admin.configs",
        "Describe or alter topic configs of a running broker, as kafka-configs.sh does.",
    ),
    (
        "offsets",
        "broker.admin.offsets",
        "Print partition offsets for a time, as kafka-get-offsets.sh does.",
    ),
    (
        "log-dirs",
        "broker.admin.log_dirs",
        "Describe the log dirs of a running broker and their partitions (kafka-log-dirs.sh).",
    ),
    (
        "pipeline",
        "broker.spark.cli",
        "Audit, export or convert log dirs with Spark (needs the 'spark' extra).",
    ),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (to add its options)."""
    parser = argparse.ArgumentParser(
        prog="broker",
        description="Kafka-compatible append and validation broker.",
    )
    parser.add_argument("--version", action="version", version=f"broker {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name, help_text in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`broker topics --list | head -1`): stop quietly as a
        # Unix tool does. stdout points at /dev/null from here on, so the
        # interpreter's own flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return status


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(command)
    args = parser.parse_args(args_list)
    module = getattr(args, "_module", None)
    if module is None:
        parser.print_help(sys.stderr)
        return 2
    result: int = module.run(args)
    return result
