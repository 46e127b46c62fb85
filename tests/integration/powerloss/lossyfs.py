"""A FUSE file system that forgets, when its power is cut, everything not fsynced.

Run as its own process (``mount.py`` starts it; libfuse 3 through mfusepy)::

    python -m tests.integration.powerloss.lossyfs SEED STORE MOUNTPOINT

SEED is an ordinary directory whose tree becomes the mount's starting
content, all of it durable. File data lives in STORE, one backing file per
file of the mount (``STORE/<node id>``), written through on every write;
names live in memory. Nothing is cached in this process: the mount runs
without direct_io and without the kernel's writeback cache, so a
``write(2)`` returns only after this process has stored it, and a page
dirtied through a shared ``mmap`` reaches this process when the kernel
writes it back (``msync``, ``fsync``, ``close``, its own write-back).

What "durable" means here, per object:

* **Data and size of a regular file**: as of the file's last ``fsync`` or
  ``fdatasync`` (``msync(MS_SYNC)`` is an fdatasync to FUSE). Every write
  and truncate since then is kept in an undo log (the bytes it overwrote
  and the size before it); the power cut plays those back in reverse, so
  the file is exactly what it was at its last fsync. fsync and fdatasync
  are treated alike (both persist the size). ``sync_file_range`` never
  reaches a FUSE file system and makes nothing durable, as on a disk.
* **Directory entries** (create, mkdir, unlink, rmdir, rename): as of the
  directory's last fsync. A file created after it is gone after the cut
  (and with it its data, fsynced or not), an unlinked one is back, a
  rename is undone. A file renamed into another directory survives under
  the name of each of the two directories whose fsync came after the
  rename (both, one or neither).
* Not modelled: modes and timestamps keep their latest values; the cut
  drops every unsynced change at once, never a part of one (a real device
  may have written any part of what was not synced; ``test_log_crash.py``
  tears and garbles tails by hand). Refused: renaming a directory into
  another directory (EXDEV), rename flags, hard links, symlinks, special
  files, xattrs, ``fallocate``; locks are the kernel's own (``lockf`` works,
  nothing reaches this process).

Control, one JSON object per line: commands on stdin, events on stdout.

* ``{"cmd": "arm", "pattern": "/t-*/*.log"}``: cut the power right after
  the next write to a file whose path matches (``fnmatch``), inside that
  write's request, so it is one not yet fsynced.
* ``{"cmd": "cut"}``: cut the power now.
* ``{"cmd": "stats"}``: the files' sizes, durable sizes and fsync counts.
* ``{"cmd": "materialize", "dest": DIR}`` (after the cut): write the durable
  tree into the new directory DIR.

Events: ``ready`` (the kernel initialised the mount), ``cut`` (with the
stats as they were at that moment), ``stats``, ``materialized``,
``error``. After the cut every request but ``release`` fails with EIO, as
if the disk had gone: the broker sees it only until the test kills it. On
end of stdin the process unmounts its mount point and exits; so does an
``umount`` of the mount point.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import mfusepy
from mfusepy import FuseOSError

F = TypeVar("F", bound=Callable[..., Any])

#: fuse_common.h (libfuse 3)
FUSE_CAP_WRITEBACK_CACHE = 1 << 16


@dataclass(frozen=True)
class Undo:
    """How to take one write or truncate back: the size before it, and the
    bytes it overwrote at ``offset`` (empty when only zeros or nothing were
    there: restoring the size brings zeros back)."""

    size: int
    offset: int
    old: bytes


@dataclass
class Node:
    id: int
    is_dir: bool
    mode: int
    #: directories: the entries now, and as of the directory's last fsync
    entries: dict[str, int] = field(default_factory=dict)
    durable_entries: dict[str, int] = field(default_factory=dict)
    #: regular files: the changes since the file's last fsync, oldest first
    undo: list[Undo] = field(default_factory=list)
    fsyncs: int = 0
    mtime_ns: int = 0


def guarded(op: F) -> F:
    """One request at a time against the control thread; EIO once the power is cut."""

    @functools.wraps(op)
    def run(self: LossyFS, *args: Any) -> Any:
        with self.mutex:
            if self.powered_off:
                raise FuseOSError(errno.EIO)
            return op(self, *args)

    return run  # type: ignore[return-value]


class LossyFS(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, seed: Path, store: Path, emit: Callable[[dict[str, Any]], None]) -> None:
        self.store = store
        self.emit = emit
        self.mutex = threading.Lock()
        self.powered_off = False
        self.armed: str | None = None
        self.nodes: dict[int, Node] = {}
        self.handles: dict[int, int] = {}  # open file: our fd of its backing file -> node id
        self.root = self._import(seed)

    def init_with_config(self, conn: Any, config: Any) -> None:
        """The kernel connected: make sure of write-through, say ``ready``."""
        # every write(2) and every written-back page must reach this process
        # before the kernel calls it done; the kernel's writeback cache would
        # keep them (libfuse 3 leaves it off; this keeps it so)
        conn.want &= ~FUSE_CAP_WRITEBACK_CACHE
        config.direct_io = 0  # the page cache stays: shared mmap needs it
        self.emit({"event": "ready", "pid": os.getpid()})

    # ---- namespace --------------------------------------------------------------------------

    def _new(self, is_dir: bool, mode: int) -> Node:
        node = Node(len(self.nodes) + 1, is_dir, mode & 0o7777, mtime_ns=time.time_ns())
        self.nodes[node.id] = node
        if not is_dir:
            os.close(os.open(self._backing(node), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
        return node

    def _backing(self, node: Node) -> Path:
        return self.store / str(node.id)

    def _import(self, path: Path) -> Node:
        """The seed tree, durable as it is."""
        if path.is_dir():
            node = self._new(True, path.stat().st_mode)
            for child in sorted(path.iterdir()):
                node.entries[child.name] = self._import(child).id
            node.durable_entries = dict(node.entries)
            return node
        if not path.is_file():
            raise ValueError(f"{path}: only directories and regular files can be seeded")
        node = self._new(False, path.stat().st_mode)
        shutil.copyfile(path, self._backing(node))
        return node

    def _lookup(self, path: str) -> Node:
        node = self.root
        for name in path.strip("/").split("/"):
            if not name:
                continue
            if not node.is_dir:
                raise FuseOSError(errno.ENOTDIR)
            child = node.entries.get(name)
            if child is None:
                raise FuseOSError(errno.ENOENT)
            node = self.nodes[child]
        return node

    def _parent(self, path: str) -> tuple[Node, str]:
        head, _, name = path.rstrip("/").rpartition("/")
        parent = self._lookup(head)
        if not parent.is_dir:
            raise FuseOSError(errno.ENOTDIR)
        return parent, name

    def _node(self, path: str | None, fh: int | None) -> Node:
        if fh is not None and fh in self.handles:
            return self.nodes[self.handles[fh]]
        if path is None:
            raise FuseOSError(errno.EBADF)
        return self._lookup(path)

    def _walk(self, node: Node, path: str, durable: bool) -> Iterator[tuple[str, Node]]:
        entries = node.durable_entries if durable else node.entries
        for name, child_id in sorted(entries.items()):
            child = self.nodes[child_id]
            yield f"{path}/{name}", child
            if child.is_dir:
                yield from self._walk(child, f"{path}/{name}", durable)

    # ---- attributes -------------------------------------------------------------------------

    @guarded
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        node = self._node(path, fh)
        common = {"st_ino": node.id, "st_uid": os.getuid(), "st_gid": os.getgid()}
        if node.is_dir:
            return {
                **common,
                "st_mode": stat.S_IFDIR | node.mode,
                "st_nlink": 2,
                "st_size": 4096,
                "st_atime": node.mtime_ns,
                "st_mtime": node.mtime_ns,
                "st_ctime": node.mtime_ns,
            }
        st = os.stat(self._backing(node))
        return {
            **common,
            "st_mode": stat.S_IFREG | node.mode,
            "st_nlink": 1,
            "st_size": st.st_size,
            "st_blocks": st.st_blocks,
            "st_atime": st.st_atime_ns,
            "st_mtime": st.st_mtime_ns,
            "st_ctime": st.st_ctime_ns,
        }

    @guarded
    def chmod(self, path: str, mode: int) -> int:
        self._lookup(path).mode = mode & 0o7777
        return 0

    @guarded
    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        node = self._lookup(path)
        if node.is_dir:
            node.mtime_ns = times[1] if times else time.time_ns()
        else:
            os.utime(self._backing(node), ns=times)
        return 0

    @guarded
    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.store)
        keys = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree")
        return {k: getattr(st, k) for k in (*keys, "f_favail", "f_namemax")}

    # ---- directories ------------------------------------------------------------------------

    @guarded
    def opendir(self, path: str) -> int:
        node = self._lookup(path)
        if not node.is_dir:
            raise FuseOSError(errno.ENOTDIR)
        return node.id

    @guarded
    def readdir(self, path: str | None, fh: int) -> list[str]:
        return [".", "..", *self.nodes[fh].entries]

    def releasedir(self, path: str | None, fh: int) -> int:
        return 0

    @guarded
    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        node = self.nodes[fh]
        node.durable_entries = dict(node.entries)
        node.fsyncs += 1
        return 0

    @guarded
    def mkdir(self, path: str, mode: int) -> int:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FuseOSError(errno.EEXIST)
        parent.entries[name] = self._new(True, mode).id
        return 0

    @guarded
    def rmdir(self, path: str) -> int:
        parent, name = self._parent(path)
        node = self._lookup(path)
        if not node.is_dir:
            raise FuseOSError(errno.ENOTDIR)
        if node.entries:
            raise FuseOSError(errno.ENOTEMPTY)
        del parent.entries[name]
        return 0

    @guarded
    def unlink(self, path: str) -> int:
        parent, name = self._parent(path)
        if self._lookup(path).is_dir:
            raise FuseOSError(errno.EISDIR)
        # the node and its backing file stay: open handles use them, and the
        # directory's durable entries may still name it
        del parent.entries[name]
        return 0

    @guarded
    def rename(self, old: str, new: str) -> int:
        src_parent, src_name = self._parent(old)
        node = self._lookup(old)
        dst_parent, dst_name = self._parent(new)
        replaced = dst_parent.entries.get(dst_name)
        if replaced is not None:
            target = self.nodes[replaced]
            if target.is_dir and not node.is_dir:
                raise FuseOSError(errno.EISDIR)
            if node.is_dir and not target.is_dir:
                raise FuseOSError(errno.ENOTDIR)
            if target.is_dir and target.entries:
                raise FuseOSError(errno.ENOTEMPTY)
        if node.is_dir and dst_parent is not src_parent:
            # not modelled: the model could leave a directory in two places
            raise FuseOSError(errno.EXDEV)
        del src_parent.entries[src_name]
        dst_parent.entries[dst_name] = node.id
        return 0

    # ---- files ------------------------------------------------------------------------------

    def _open_handle(self, node: Node) -> int:
        # O_RDWR whatever the caller asked (the kernel checked that), never
        # O_APPEND: the kernel sends every write with its offset
        fd = os.open(self._backing(node), os.O_RDWR)
        self.handles[fd] = node.id
        return fd

    @guarded
    def create(self, path: str, mode: int, flags: int) -> int:
        parent, name = self._parent(path)
        existing = parent.entries.get(name)
        if existing is not None:
            if flags & os.O_EXCL:
                raise FuseOSError(errno.EEXIST)
            node = self.nodes[existing]
            fh = self._open_handle(node)
            if flags & os.O_TRUNC:
                self._truncate(node, fh, 0)
            return fh
        node = self._new(False, mode)
        parent.entries[name] = node.id
        return self._open_handle(node)

    @guarded
    def open(self, path: str, flags: int) -> int:
        node = self._lookup(path)
        if node.is_dir:
            raise FuseOSError(errno.EISDIR)
        fh = self._open_handle(node)
        if flags & os.O_TRUNC:
            self._truncate(node, fh, 0)
        return fh

    @guarded
    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    @guarded
    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        node = self.nodes[self.handles[fh]]
        size = os.fstat(fh).st_size
        old = os.pread(fh, len(data), offset) if offset < size else b""
        node.undo.append(Undo(size, offset, old))
        written = os.pwrite(fh, data, offset)
        if self.armed is not None and path is not None and fnmatch.fnmatch(path, self.armed):
            self.emit(self._power_off(f"after a write of {len(data)} bytes at {offset} to {path}"))
        return written

    @guarded
    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        node = self._node(path, fh)
        if node.is_dir:
            raise FuseOSError(errno.EISDIR)
        if fh is not None and fh in self.handles:
            self._truncate(node, fh, length)
            return 0
        fd = os.open(self._backing(node), os.O_RDWR)
        try:
            self._truncate(node, fd, length)
        finally:
            os.close(fd)
        return 0

    def _truncate(self, node: Node, fd: int, length: int) -> None:
        size = os.fstat(fd).st_size
        old = os.pread(fd, size - length, length) if length < size else b""
        if old.count(0) == len(old):
            old = b""  # zeros come back with the size
        node.undo.append(Undo(size, length, old))
        os.ftruncate(fd, length)

    @guarded
    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        node = self.nodes[self.handles[fh]]
        node.undo.clear()
        node.fsyncs += 1
        return 0

    @guarded
    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def release(self, path: str | None, fh: int) -> int:
        # allowed after the cut too: the kernel closes what a killed process had open
        with self.mutex:
            self.handles.pop(fh, None)
            os.close(fh)
        return 0

    # ---- the power cut ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Per path (as the names are now): size, durable size, fsyncs so far."""
        files: dict[str, Any] = {}
        dirs: dict[str, Any] = {}
        for path, node in self._walk(self.root, "", durable=False):
            if node.is_dir:
                dirs[path] = {
                    "fsyncs": node.fsyncs,
                    "unsynced": node.entries != node.durable_entries,
                }
                continue
            size = os.stat(self._backing(node)).st_size
            files[path] = {
                "size": size,
                "durable_size": node.undo[0].size if node.undo else size,
                "unsynced_changes": len(node.undo),
                "fsyncs": node.fsyncs,
            }
        return {
            "files": files,
            "dirs": dirs,
            "root_unsynced": self.root.entries != self.root.durable_entries,
        }

    def _power_off(self, why: str) -> dict[str, Any]:
        """Called with the lock held: no request gets through from now on; the
        ``cut`` event, with the stats of this moment."""
        self.powered_off = True
        self.armed = None
        return {"event": "cut", "why": why, **self.stats()}

    def materialize(self, dest: Path) -> dict[str, Any]:
        """Write the durable state into the new directory ``dest``: every file's
        changes since its fsync undone, the names as of each directory's fsync."""
        with self.mutex:
            if not self.powered_off:
                raise RuntimeError("materialize before the power was cut")
            for node in self.nodes.values():
                if node.undo:
                    fd = os.open(self._backing(node), os.O_RDWR)
                    try:
                        for u in reversed(node.undo):
                            os.ftruncate(fd, u.size)
                            if u.old:
                                os.pwrite(fd, u.old, u.offset)
                    finally:
                        os.close(fd)
                    node.undo.clear()
            dest.mkdir()
            files = 0
            for path, node in self._walk(self.root, "", durable=True):
                target = dest / path.lstrip("/")
                if node.is_dir:
                    target.mkdir()
                else:
                    shutil.copyfile(self._backing(node), target)
                    files += 1
            return {"event": "materialized", "files": files}


class LossyFUSE(mfusepy.FUSE):  # type: ignore[misc]
    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        # mfusepy drops the flags; RENAME_NOREPLACE / RENAME_EXCHANGE are not modelled
        if flags:
            return -errno.EINVAL
        return int(super().rename_fuse_3(old, new, flags))


class Control:
    """stdin commands -> the file system; events -> stdout (one writer at a time)."""

    def __init__(self, mountpoint: Path) -> None:
        self.mountpoint = mountpoint
        self.out_lock = threading.Lock()
        self.fs: LossyFS | None = None

    def emit(self, event: dict[str, Any]) -> None:
        with self.out_lock:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

    def serve(self) -> None:
        for line in sys.stdin:
            try:
                self.emit(self.handle(json.loads(line)))
            except Exception as exc:  # reported to the test, which fails on it
                self.emit({"event": "error", "error": repr(exc)})
        # the test is gone: do not leave the mount behind
        subprocess.run(["umount", "-l", str(self.mountpoint)], check=False)

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        fs = self.fs
        assert fs is not None, "command before the mount was ready"
        cmd = msg["cmd"]
        if cmd == "arm":
            with fs.mutex:
                fs.armed = msg["pattern"]
            return {"event": "armed"}
        if cmd == "cut":
            with fs.mutex:
                if fs.powered_off:
                    raise RuntimeError("the power is already off")
                return fs._power_off("cut command")
        if cmd == "stats":
            with fs.mutex:
                return {"event": "stats", **fs.stats()}
        if cmd == "materialize":
            return fs.materialize(Path(msg["dest"]))
        raise ValueError(f"unknown command {cmd!r}")


def main(argv: list[str]) -> int:
    seed, store, mountpoint = (Path(a) for a in argv)
    if mfusepy.fuse_version_major != 3:
        raise SystemExit(f"lossyfs needs libfuse 3, mfusepy loaded {mfusepy._libfuse_path}")
    control = Control(mountpoint)
    fs = LossyFS(seed, store, control.emit)
    control.fs = fs
    threading.Thread(target=control.serve, name="control", daemon=True).start()
    # -f -s: foreground, one request at a time; hard_remove: an unlinked open
    # file is not renamed to .fuse_hidden* (its handles go on working)
    LossyFUSE(
        fs, str(mountpoint), foreground=True, nothreads=True, hard_remove=True, fsname="lossyfs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
