"""The lossy layer itself: what a power cut keeps and drops (``lossyfs.py``'s model).

Each test mounts lossyfs over a small seed, does file operations through
the mount as the broker does them (``os.pwrite``, ``os.ftruncate``,
``os.fsync``/``fdatasync``, shared ``mmap`` + ``msync``, ``os.replace``,
directory fsyncs), cuts the power, and compares what survived with what
the model says must survive: the last fsynced data of each file, the names
of each directory as of its last fsync.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.powerloss.mount import LossyMount

pytestmark = pytest.mark.integration


@pytest.fixture
def lossy(tmp_path: Path) -> Iterator[LossyMount]:
    seed = tmp_path / "seed"
    (seed / "sub").mkdir(parents=True)
    (seed / "seeded").write_bytes(b"seed data")
    (seed / "sub" / "old-name").write_bytes(b"renamed later")
    with LossyMount(seed, tmp_path) as fs:
        yield fs


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tree(root: Path) -> dict[str, bytes | None]:
    """path -> content (None for a directory)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def test_file_data_reverts_to_its_last_fsync(lossy: LossyMount, tmp_path: Path) -> None:
    m = lossy.mountpoint
    fd = os.open(m / "seeded", os.O_RDWR)
    os.pwrite(fd, b"SEED", 0)  # overwritten, never fsynced
    os.close(fd)
    fd = os.open(m / "f", os.O_RDWR | os.O_CREAT, 0o644)
    fsync_dir(m)  # the name is durable, the (empty) file too
    os.pwrite(fd, b"a" * 10_000, 0)
    os.fdatasync(fd)  # 10 000 a's durable
    os.pwrite(fd, b"b" * 100, 5000)  # inside: lost
    os.pwrite(fd, b"c" * 3000, 10_000)  # past the end: lost
    os.ftruncate(fd, 7000)  # shrink: lost
    os.ftruncate(fd, 1 << 20)  # grow: lost
    stats = lossy.stats()["files"]["/f"]
    assert (stats["size"], stats["durable_size"], stats["fsyncs"]) == (1 << 20, 10_000, 1)
    g = os.open(m / "g", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(g, b"xyz", 0)
    os.fsync(g)
    os.ftruncate(g, 1)
    os.fsync(g)  # a truncate made durable
    fsync_dir(m)
    lossy.cut()
    for f in (fd, g):
        with contextlib.suppress(OSError):
            os.close(f)
    lossy.materialize(tmp_path / "after")
    after = tree(tmp_path / "after")
    assert after == {
        "f": b"a" * 10_000,
        "g": b"x",
        "seeded": b"seed data",
        "sub": None,
        "sub/old-name": b"renamed later",
    }


def test_names_revert_to_their_directory_fsync(lossy: LossyMount, tmp_path: Path) -> None:
    m = lossy.mountpoint
    # a checkpoint replaced atomically, a new directory with a file: all durable
    (m / "ckpt.tmp").write_bytes(b"v2")
    fd = os.open(m / "ckpt.tmp", os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.replace(m / "ckpt.tmp", m / "ckpt")
    (m / "new-dir").mkdir()
    (m / "new-dir" / "inside").write_bytes(b"")
    fsync_dir(m / "new-dir")
    fsync_dir(m)
    # the top directory is not fsynced again: everything here is undone ...
    fd = os.open(m / "unnamed", os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"fsynced, but its name never was")
    os.fsync(fd)
    os.close(fd)
    os.unlink(m / "seeded")
    (m / "late-dir").mkdir()
    # ... but a rename inside ``sub``, whose fsync came after it, is kept
    os.rename(m / "sub" / "old-name", m / "sub" / "new-name")
    fsync_dir(m / "sub")
    stats = lossy.stats()
    assert stats["root_unsynced"] and not stats["dirs"]["/sub"]["unsynced"]
    lossy.cut()
    lossy.materialize(tmp_path / "after")
    assert tree(tmp_path / "after") == {
        "ckpt": b"v2",
        "new-dir": None,
        "new-dir/inside": b"",
        "seeded": b"seed data",
        "sub": None,
        "sub/new-name": b"renamed later",
    }


def test_shared_mmap_writes_count_once_msync_or_fsync_sent_them(
    lossy: LossyMount, tmp_path: Path
) -> None:
    """How the broker writes its .index/.timeindex files: preallocate, map
    shared, store entries into the map, fsync (Kafka's ``OffsetIndex``)."""
    m = lossy.mountpoint
    fd = os.open(m / "a.index", os.O_RDWR | os.O_CREAT, 0o644)
    fsync_dir(m)
    os.ftruncate(fd, 1 << 20)
    mm = mmap.mmap(fd, 1 << 20)
    mm[0:8] = b"entry-01"
    mm.flush()  # msync(MS_SYNC): an fdatasync to FUSE
    mm[8:16] = b"entry-02"
    os.fsync(fd)  # writes the dirty page back first
    mm[16:24] = b"entry-03"  # dirty in the kernel's page cache only
    mm[8192:8200] = b"entry-04"
    assert lossy.stats()["files"]["/a.index"]["durable_size"] == 1 << 20
    lossy.cut()
    mm.close()
    with contextlib.suppress(OSError):  # close writes the dirty pages back: EIO now
        os.close(fd)
    lossy.materialize(tmp_path / "after")
    data = (tmp_path / "after" / "a.index").read_bytes()
    assert len(data) == 1 << 20
    assert data[:24] == b"entry-01entry-02" + bytes(8)
    assert data[8192:8200] == bytes(8)


def test_the_cut_fails_every_later_request(lossy: LossyMount) -> None:
    m = lossy.mountpoint
    (m / "sub" / "x.log").write_bytes(b"")
    other = os.open(m / "seeded", os.O_RDWR)
    log = os.open(m / "sub" / "x.log", os.O_RDWR)
    lossy.arm("/sub/*.log")
    os.pwrite(other, b"no match", 0)
    assert lossy.stats()["files"]["/sub/x.log"]["size"] == 0  # not cut yet
    os.pwrite(log, b"the write that cuts", 0)  # it is stored, then the power goes
    cut = lossy.wait_cut()
    assert cut["why"] == "after a write of 19 bytes at 0 to /sub/x.log"
    assert cut["files"]["/sub/x.log"] == {
        "size": 19,
        "durable_size": 0,
        "unsynced_changes": 1,
        "fsyncs": 0,
    }
    # requests that reach the layer (a read or a stat the kernel can answer
    # from its caches may not)
    for attempt in (
        lambda: os.pwrite(log, b"more", 19),
        lambda: os.fsync(log),
        lambda: os.open(m / "seeded", os.O_RDONLY),
        lambda: (m / "new").write_bytes(b""),
        lambda: os.listdir(m / "sub"),
    ):
        with pytest.raises(OSError) as raised:
            attempt()
        assert raised.value.errno == errno.EIO
    for fd in (other, log):
        with contextlib.suppress(OSError):
            os.close(fd)
