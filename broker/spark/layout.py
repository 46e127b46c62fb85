"""Finding the segment files behind the paths a job is given.

A path may be any of (``files.py`` has the naming rules)::

    <log.dir>/                            folders <topic>-<partition>/ inside
    <log.dir>/<topic>-<partition>/        NNNNNNNNNNNNNNNNNNNN.log files inside
    <log.dir>/<topic>-<partition>/NNNNNNNNNNNNNNNNNNNN.log

A log dir is told from a partition folder by what it holds: a partition
folder holds ``.log`` files, a log dir holds ``<topic>-<partition>`` folders.
Folders being deleted or moved (``...-delete``, ``-future``, ``-stray``) and
files with a ``.deleted`` / ``.cleaned`` / ``.swap`` suffix are not part of
the log and are skipped, as Kafka's loader skips them.

Each segment covers the offsets from its base offset up to the next
segment's base offset (exclusive); the last one (the active segment when a
broker runs) is open-ended. That is what offset filters prune by.

For compacted topics each segment also knows whether the log cleaner has
cleaned it: the log dir's ``cleaner-offset-checkpoint`` holds each
partition's first dirty offset (segments from the one holding it on are
dirty), ``topic-config-<topic>.properties`` the topic's ``cleanup.policy``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.config import parse_properties
from broker.log import files
from broker.log.checkpoints import cleaner_offset_checkpoint
from broker.log.errors import CheckpointError


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One ``.log`` file and where it sits in its partition."""

    topic: str
    partition: int
    base_offset: int
    path: str
    size: int
    #: base offset of the partition's next segment; None for the last one
    next_base_offset: int | None
    #: the topic is compacted: its ``topic-config-<topic>.properties`` in the log dir
    #: says ``cleanup.policy=...compact...``, or the log cleaner has a checkpoint for it
    compacted: bool = False
    #: the log cleaner's first dirty offset (``cleaner-offset-checkpoint``); None
    #: when it never cleaned the partition
    first_dirty_offset: int | None = None

    @property
    def log_dir(self) -> str:
        """The log dir holding the partition folder (two partition folders of one
        topic-partition in different log dirs are different logs: replicas,
        copies, a conversion's source and result)."""
        return str(Path(self.path).parent.parent)

    @property
    def offset_index_path(self) -> str:
        return str(files.offset_index_file(Path(self.path).parent, self.base_offset))

    @property
    def time_index_path(self) -> str:
        return str(files.time_index_file(Path(self.path).parent, self.base_offset))

    @property
    def is_last(self) -> bool:
        return self.next_base_offset is None

    @property
    def dirty(self) -> bool:
        """A compacted partition's segment the cleaner has not cleaned: it holds
        the first dirty offset or comes after it (every segment when the
        partition was never cleaned), as Kafka counts dirty bytes."""
        if not self.compacted:
            return False
        first_dirty = self.first_dirty_offset
        return (
            first_dirty is None
            or self.next_base_offset is None
            or self.next_base_offset > first_dirty
        )

    def may_hold(self, low: int | None, high: int | None) -> bool:
        """Whether offsets in ``[low, high)`` can lie in this segment."""
        if high is not None and self.base_offset >= high:
            return False
        return not (
            low is not None and self.next_base_offset is not None and self.next_base_offset <= low
        )


class LayoutError(ValueError):
    """A path that is neither a log dir, a partition folder nor a segment file."""


def _segment_offset(name: str) -> int | None:
    """The base offset of a plain ``NNNNNNNNNNNNNNNNNNNN.log`` name, else None."""
    if not name.endswith(files.LOG_FILE_SUFFIX):
        return None
    stem = name[: -len(files.LOG_FILE_SUFFIX)]
    if not stem.isdigit():
        return None
    return int(stem, 10)


def _is_partition_dir_name(name: str) -> bool:
    if name.endswith((files.DELETE_DIR_SUFFIX, files.FUTURE_DIR_SUFFIX, files.STRAY_DIR_SUFFIX)):
        return False
    try:
        files.parse_topic_partition_name(name)
    except ValueError:
        return False
    return True


def cleaning_state(directory: Path) -> tuple[bool, int | None]:
    """Whether the partition folder's topic is compacted, and its first dirty
    offset (see :class:`SegmentFile`), from the files of its log dir."""
    tp = files.parse_topic_partition_name(directory.name)
    log_dir = directory.parent
    try:
        first_dirty = cleaner_offset_checkpoint(log_dir).read().get(tp)
    except (CheckpointError, OSError):
        first_dirty = None
    compacted = first_dirty is not None
    overrides = log_dir / f"topic-config-{tp.topic}.properties"
    try:
        policy = parse_properties(overrides.read_text("latin-1")).get("cleanup.policy", "")
    except OSError:
        policy = ""
    compacted = compacted or "compact" in {p.strip().lower() for p in policy.split(",")}
    return compacted, first_dirty


def partition_segments(directory: Path) -> list[SegmentFile]:
    tp = files.parse_topic_partition_name(directory.name)
    compacted, first_dirty = cleaning_state(directory)
    found: list[tuple[int, Path]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            offset = _segment_offset(entry.name)
            if offset is not None and entry.is_file():
                found.append((offset, Path(entry.path)))
    found.sort()
    out: list[SegmentFile] = []
    for i, (offset, path) in enumerate(found):
        following = found[i + 1][0] if i + 1 < len(found) else None
        out.append(
            SegmentFile(
                tp.topic,
                tp.partition,
                offset,
                str(path),
                path.stat().st_size,
                following,
                compacted,
                first_dirty,
            )
        )
    return out


def _holds_segments(directory: Path) -> bool:
    with os.scandir(directory) as entries:
        return any(_segment_offset(e.name) is not None for e in entries)


def partition_dirs(log_dir: Path) -> list[Path]:
    """The ``<topic>-<partition>`` folders of a log dir, sorted by name."""
    with os.scandir(log_dir) as entries:
        return sorted(
            Path(e.path) for e in entries if e.is_dir() and _is_partition_dir_name(e.name)
        )


def discover(paths: Iterable[str]) -> list[SegmentFile]:
    """Every segment file the paths name, once each, ordered by topic,
    partition and base offset."""
    seen: dict[str, SegmentFile] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if _segment_offset(path.name) is None:
                raise LayoutError(f"{path} is not a segment file (NNNNNNNNNNNNNNNNNNNN.log)")
            if not _is_partition_dir_name(path.parent.name):
                raise LayoutError(
                    f"cannot tell the topic and partition of {path}: its folder is not "
                    "named <topic>-<partition>"
                )
            wanted = str(path.resolve())
            for segment in partition_segments(path.parent):
                if str(Path(segment.path).resolve()) == wanted:
                    seen.setdefault(wanted, segment)
        elif path.is_dir():
            if _is_partition_dir_name(path.name) and _holds_segments(path):
                found = partition_segments(path)
            else:
                found = [s for d in partition_dirs(path) for s in partition_segments(d)]
                if not found and not partition_dirs(path):
                    raise LayoutError(
                        f"{path} holds neither <topic>-<partition> folders nor segment files"
                    )
            for segment in found:
                seen.setdefault(str(Path(segment.path).resolve()), segment)
        else:
            raise LayoutError(f"{path} does not exist")
    return sorted(seen.values(), key=lambda s: (s.topic, s.partition, s.base_offset))


def split_paths(value: str | Sequence[str]) -> list[str]:
    """Paths from a data source option: a JSON list (Spark's ``load([...])``),
    or one path."""
    if not isinstance(value, str):
        return list(value)
    text = value.strip()
    if text.startswith("["):
        import json

        loaded = json.loads(text)
        if not isinstance(loaded, list) or not all(isinstance(p, str) for p in loaded):
            raise LayoutError(f"paths must be a list of strings, got {text!r}")
        return list(loaded)
    return [text]
