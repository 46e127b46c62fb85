"""The fenced blocks of the user docs and the ``docs-test`` markers above them.

``tests/integration/test_docs_commands.py`` runs the shell blocks of
``README.md`` and ``docs/operations.md``; this module finds them. A block is
a fence (```` ```sh ````, ```` ```bash ````, ```` ```console ````, or a file
content fence such as ```` ```properties ````), possibly indented under a list
item. The HTML comments directly above its fence (no blank line between)
say how the test treats it::

    <!-- docs-test: not run: REASON -->           not run here, and why
    <!-- docs-test: run by PATH ["KEY"] -->       run by another test: PATH exists
                                                  and holds KEY (default: the block's
                                                  first program, or broker's sub-command)
    <!-- docs-test: broker=NAME -->               run against broker NAME (default: `make run`'s)
    <!-- docs-test: broker stopped -->            run once the default broker stopped cleanly
    <!-- docs-test: starts broker=NAME -->        the command that starts broker NAME
    <!-- docs-test: file=NAME -->                 file content, written to NAME first

A shell block with no marker is run against the default broker. A file
content block needs ``file=`` or ``not run:``. Other fences (python) are
examples, not commands, and are not collected.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

#: fences whose content is shell commands
SHELL_LANGS = frozenset({"sh", "bash", "console"})
#: fences whose content is a file's
FILE_LANGS = frozenset({"properties", "ini", "conf", "text"})

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_NAME = r"[A-Za-z0-9_-]+"
_DIRECTIVES = (
    ("not_run", re.compile(r"^not run:\s*(?P<reason>\S.*)$")),
    ("run_by", re.compile(r'^run by (?P<path>\S+)(?:\s+"(?P<key>[^"]+)")?$')),
    ("broker", re.compile(rf"^broker=(?P<name>{_NAME})$")),
    ("stopped", re.compile(r"^broker stopped$")),
    ("starts", re.compile(rf"^starts broker=(?P<name>{_NAME})$")),
    ("file", re.compile(r"^file=(?P<name>[\w./-]+)$")),
)


class MarkerError(ValueError):
    """A ``docs-test`` marker the test does not understand."""


@dataclass(frozen=True)
class Directive:
    kind: str
    args: dict[str, str]


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str  # the content, its fence's indentation removed
    directives: tuple[Directive, ...]

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def directive(self, kind: str) -> Directive | None:
        return next((d for d in self.directives if d.kind == kind), None)

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL_LANGS

    def commands(self) -> list[str]:
        """The block's commands: its lines that are not blank or comments, a
        line ending in a backslash joined with the next."""
        out: list[str] = []
        pending = ""
        for line in self.text.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1]
                continue
            out.append(pending + line)
            pending = ""
        if pending:
            out.append(pending)
        return out


def parse_directive(body: str) -> Directive:
    for kind, pattern in _DIRECTIVES:
        match = pattern.match(body)
        if match:
            return Directive(kind, {k: v for k, v in match.groupdict().items() if v is not None})
    raise MarkerError(f"unknown docs-test marker {body!r}")


def blocks(root: Path, doc: str) -> list[Block]:
    """Every shell and file-content block of ``root / doc``, in order."""
    lines = (root / doc).read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match or not match.group("lang"):
            i += 1
            continue
        indent, lang, start = match.group("indent"), match.group("lang"), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang not in SHELL_LANGS and lang not in FILE_LANGS:
            continue
        markers: list[str] = []
        j = start - 1
        while j >= 0 and (marker := _MARKER.match(lines[j])):
            markers.insert(0, marker.group("body"))
            j -= 1
        try:
            directives = tuple(parse_directive(m) for m in markers)
        except MarkerError as exc:
            raise MarkerError(f"{doc}:{start + 1}: {exc}") from None
        text = "\n".join(body) + "\n"
        found.append(Block(doc, start + 1, lang, text, directives))
    return found


def key_command(block: Block) -> str:
    """What a test that runs ``block`` must mention: the marker's KEY, else the
    program of the first command (the last one of a pipeline), or for
    ``broker`` its sub-command."""
    run_by = block.directive("run_by")
    if run_by is not None and "key" in run_by.args:
        return run_by.args["key"]
    first = block.commands()[0]
    words = shlex.split(first.split("|")[-1])
    words = [w for w in words if w != "sudo" and not re.match(r"^\w+=", w)]
    program = Path(words[0]).name
    if program == "broker" and len(words) > 1:
        return next(w for w in words[1:] if not w.startswith("-"))
    return program


def check_markers(root: Path, block: Block, broker_names: set[str]) -> list[str]:
    """What is wrong with ``block``'s markers (empty when nothing)."""
    kinds = [d.kind for d in block.directives]
    problems: list[str] = []
    exclusive = {"not_run", "run_by", "starts", "file"}
    if len([k for k in kinds if k in exclusive]) > 1 or len(set(kinds)) != len(kinds):
        problems.append(f"conflicting markers {kinds}")
    if not block.is_shell and not {"file", "not_run"} & set(kinds):
        problems.append(f"a ```{block.lang} block needs `file=NAME` or `not run: REASON`")
    if block.is_shell and "file" in kinds:
        problems.append("`file=` is for file content, not shell blocks")
    if {"not_run", "run_by", "starts", "file"} & set(kinds) and (
        {"broker", "stopped"} & set(kinds)
    ):
        problems.append(f"a block that is not run here names a broker: {kinds}")
    broker = block.directive("broker")
    if broker is not None and broker.args["name"] not in broker_names:
        problems.append(f"no `starts broker={broker.args['name']}` block defines that broker")
    starts = block.directive("starts")
    if starts is not None and len(block.commands()) != 1:
        problems.append("a `starts` block must hold exactly one command")
    run_by = block.directive("run_by")
    if run_by is not None:
        path = root / run_by.args["path"]
        key = key_command(block)
        if not path.is_file():
            problems.append(f"run by {run_by.args['path']}: no such file")
        elif key not in path.read_text():
            problems.append(f"run by {run_by.args['path']}: it never mentions {key!r}")
    return problems
