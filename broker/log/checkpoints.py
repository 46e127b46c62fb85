"""Small text files of a log directory, in Kafka's formats (``CheckpointFile.java``
and its users, ``CleanShutdownFileHandler.java``).

Offset checkpoints (``CheckpointFile.java``, ``OffsetCheckpointFile.scala``,
``LeaderEpochCheckpointFile.java``), UTF-8 with ``\\n`` line ends::

    <version>\\n            0
    <entry count>\\n
    <entry>\\n ...          recovery-point / log-start: "topic partition offset"
                           leader-epoch-checkpoint:     "epoch startOffset"

written to ``<file>.tmp``, fsynced, renamed over the target, and the
directory fsynced. Reading checks the version, the count, and every line.

Also here: the clean shutdown marker ``.kafka_cleanshutdown``
(``{"version":0,"brokerEpoch":N}``, ``CleanShutdownFileHandler.java``),
``partition.metadata`` (``version: 0\\ntopic_id: <id>``, no trailing newline,
``PartitionMetadata.java``) and ``meta.properties`` (Java properties,
``MetaProperties.java``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from broker.config import parse_properties
from broker.log.errors import CheckpointError
from broker.log.files import (
    CLEAN_SHUTDOWN_FILE_NAME,
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    META_PROPERTIES_FILE_NAME,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    TopicPartition,
)

T = TypeVar("T")

_WHITESPACE = re.compile(r"\s+")


def fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename or a new file in it survives a crash."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync: bool = True, mode: int = 0o644) -> None:
    """Write ``path`` through ``<path>.tmp`` + rename (``Utils.atomicMoveWithFallback``);
    ``mode`` is the new file's from its creation on (also when a crash left the
    temporary file behind with another mode)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if mode != 0o644:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)


class CheckpointFile(Generic[T]):
    """``CheckpointFile<T>``: version line, count line, one line per entry."""

    def __init__(
        self,
        path: Path,
        version: int,
        format_entry: Callable[[T], str],
        parse_entry: Callable[[str], T | None],
    ) -> None:
        self.path = path
        self.version = version
        self._format = format_entry
        self._parse = parse_entry

    def encode(self, entries: Iterable[T]) -> bytes:
        items = list(entries)
        lines = [str(self.version), str(len(items))]
        lines.extend(self._format(e) for e in items)
        return ("\n".join(lines) + "\n").encode("utf-8")

    def write(self, entries: Iterable[T]) -> None:
        atomic_write(self.path, self.encode(entries))

    def read(self) -> list[T]:
        """Entries of the file; a missing or empty file has none."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return []
        return self.decode(text)

    def decode(self, text: str) -> list[T]:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            return []
        version = self._to_int(lines[0])
        if version != self.version:
            raise CheckpointError(
                f"Unrecognised version:{version}, expected version: {self.version} "
                f"in checkpoint file at: {self.path}"
            )
        if len(lines) < 2:
            return []
        expected = self._to_int(lines[1])
        entries: list[T] = []
        for line in lines[2:]:
            entry = self._parse(line)
            if entry is None:
                raise self._malformed(line)
            entries.append(entry)
        if len(entries) != expected:
            raise CheckpointError(
                f"Expected [{expected}] entries in checkpoint file [{self.path}], "
                f"but found only [{len(entries)}]"
            )
        return entries

    def _to_int(self, line: str) -> int:
        # Integer.parseInt: no surrounding blanks allowed
        value = _parse_int(line) if line == line.strip() else None
        if value is None:
            raise self._malformed(line)
        return value

    def _malformed(self, line: str) -> CheckpointError:
        return CheckpointError(f"Malformed line in checkpoint file [{self.path}]: {line}")


def _parse_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


# ---- offset checkpoints (per log dir) ---------------------------------------


def _format_offset(entry: tuple[TopicPartition, int]) -> str:
    tp, offset = entry
    return f"{tp.topic} {tp.partition} {offset}"


def _parse_offset(line: str) -> tuple[TopicPartition, int] | None:
    parts = _WHITESPACE.split(line)
    if len(parts) != 3:
        return None
    partition, offset = _parse_int(parts[1]), _parse_int(parts[2])
    if partition is None or offset is None:
        return None
    return TopicPartition(parts[0], partition), offset


class OffsetCheckpointFile:
    """``recovery-point-offset-checkpoint`` / ``log-start-offset-checkpoint`` /
    ``cleaner-offset-checkpoint``."""

    VERSION = 0

    def __init__(self, path: Path) -> None:
        self._file = CheckpointFile(path, self.VERSION, _format_offset, _parse_offset)

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._file.write(sorted(offsets.items()))

    def encode(self, offsets: Mapping[TopicPartition, int]) -> bytes:
        return self._file.encode(sorted(offsets.items()))

    def read(self) -> dict[TopicPartition, int]:
        return dict(self._file.read())


def recovery_point_checkpoint(log_dir: Path) -> OffsetCheckpointFile:
    return OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT_FILE)


def log_start_offset_checkpoint(log_dir: Path) -> OffsetCheckpointFile:
    return OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT_FILE)


def cleaner_offset_checkpoint(log_dir: Path) -> OffsetCheckpointFile:
    """The log cleaner's first dirty offset of each compacted partition (LogCleanerManager)."""
    return OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE)


# ---- leader-epoch-checkpoint (per partition) -----------------------------------


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def _format_epoch(entry: EpochEntry) -> str:
    return f"{entry.epoch} {entry.start_offset}"


def _parse_epoch(line: str) -> EpochEntry | None:
    parts = _WHITESPACE.split(line)
    if len(parts) != 2:
        return None
    epoch, offset = _parse_int(parts[0]), _parse_int(parts[1])
    if epoch is None or offset is None:
        return None
    return EpochEntry(epoch, offset)


class LeaderEpochCheckpointFile:
    VERSION = 0

    def __init__(self, partition_dir: Path) -> None:
        self._file = CheckpointFile(
            partition_dir / LEADER_EPOCH_CHECKPOINT_FILE, self.VERSION, _format_epoch, _parse_epoch
        )

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, entries: Iterable[EpochEntry]) -> None:
        self._file.write(entries)

    def read(self) -> list[EpochEntry]:
        return self._file.read()


# ---- clean shutdown marker (per log dir) ----------------------------------------


class CleanShutdownFile:
    """``.kafka_cleanshutdown``: only its existence matters for recovery."""

    VERSION = 0

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / CLEAN_SHUTDOWN_FILE_NAME

    def exists(self) -> bool:
        return self.path.exists()

    def write(self, broker_epoch: int = -1) -> None:
        content = json.dumps(
            {"version": self.VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":")
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, content.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.path.parent)

    def read_broker_epoch(self) -> int | None:
        """The broker epoch, or None (missing file, old empty marker, bad JSON)."""
        try:
            content = json.loads(self.path.read_text("utf-8"))
            epoch = content["brokerEpoch"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return epoch if isinstance(epoch, int) else None

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        fsync_dir(self.path.parent)


# ---- topic ids and partition.metadata -------------------------------------------

_RESERVED_UUIDS = (b"\x00" * 16, b"\x00" * 15 + b"\x01")


def uuid_to_string(raw: bytes) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_string(text: str) -> bytes:
    if len(text) > 24:
        raise ValueError(f"{text!r} is too long to be decoded as a base64 UUID")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} does not decode to 16 bytes")
    return raw


def random_uuid() -> bytes:
    """``Uuid.randomUuid``: never 0, 1, or one whose string starts with '-'."""
    while True:
        raw = uuid.uuid4().bytes
        if raw not in _RESERVED_UUIDS and not uuid_to_string(raw).startswith("-"):
            return raw


class PartitionMetadataFile:
    """``partition.metadata``: the topic id of a partition's folder."""

    VERSION = 0

    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / PARTITION_METADATA_FILE

    def exists(self) -> bool:
        return self.path.exists()

    @staticmethod
    def encode(topic_id: bytes) -> bytes:
        version = PartitionMetadataFile.VERSION
        return f"version: {version}\ntopic_id: {uuid_to_string(topic_id)}".encode()

    def write(self, topic_id: bytes) -> None:
        atomic_write(self.path, self.encode(topic_id))

    def read(self) -> bytes:
        lines = self.path.read_text("utf-8").split("\n")
        try:
            version_parts = re.split(r":\s+", lines[0])
            if len(version_parts) != 2 or int(version_parts[1]) < self.VERSION:
                raise CheckpointError(
                    f"Malformed line in checkpoint file [{self.path}]: {lines[0]}"
                )
            id_parts = re.split(r":\s+", lines[1])
            if len(id_parts) != 2:
                raise CheckpointError(
                    f"Malformed line in checkpoint file [{self.path}]: {lines[1]}"
                )
            topic_id = uuid_from_string(id_parts[1].strip())
        except (IndexError, ValueError) as exc:
            raise CheckpointError(f"Malformed partition metadata file {self.path}: {exc}") from None
        if topic_id == _RESERVED_UUIDS[0]:
            raise CheckpointError(f"Invalid topic ID in partition metadata file ({self.path})")
        return topic_id


# ---- meta.properties (per log dir) ------------------------------------------------


def encode_properties(props: Mapping[str, str], now: float | None = None) -> bytes:
    """Java ``Properties.store(writer, "")``: an empty comment line, a date line,
    then ``key=value`` lines (we sort the keys; Java's order is a hash order)."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now))
    lines = ["#", f"#{stamp}"]
    lines.extend(
        f"{_escape_property(key, True)}={_escape_property(props[key], False)}"
        for key in sorted(props)
    )
    return ("\n".join(lines) + "\n").encode("latin-1", "backslashreplace")


def _escape_property(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!" or (ch == " " and (is_key or i == 0)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    path = log_dir / META_PROPERTIES_FILE_NAME
    try:
        text = path.read_text("latin-1")
    except FileNotFoundError:
        return None
    return parse_properties(text)


def write_meta_properties(log_dir: Path, props: Mapping[str, str]) -> None:
    atomic_write(log_dir / META_PROPERTIES_FILE_NAME, encode_properties(props))
