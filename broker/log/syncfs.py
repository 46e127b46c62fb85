"""syncfs(2): one call that makes every file of a file system durable.

A group-commit round (``broker/server/group_commit.py``) that covers N
partitions fsyncs N ``.log`` files (and some index and snapshot files);
on ext4 each fsync commits the journal and flushes the device cache on its
own, and each costs kernel CPU of its own. ``syncfs`` on a descriptor of
the file system writes back every dirty page and inode of it and commits
once: with several files a round, a fraction of the fsyncs' kernel CPU, and
no longer a round (measured: docs/performance.md, "Figures moved from the
code").

The price: it also writes back whatever *other* programs left dirty on the
same file system, so a round can wait for their data too. It is meant for
a data disk of the broker's own (``acks.all.sync.method=syncfs``);
PostgreSQL offers the same choice for the same reason
(``recovery_init_sync_method``).

Which file systems: syncfs makes data durable where the file system's
``sync_fs`` commits everything written back (ext4, xfs, btrfs). FUSE does
not pass syncfs on to its server (only virtiofs does), so the files would
be written to the server but never fsynced there; network and other file
systems are not trusted either. :func:`trusted_file_system` names the ones
this broker accepts, by ``statfs`` magic.

Errors: before Linux 5.8 syncfs returned 0 even when write-back failed,
which would acknowledge records that never reached the disk; since 5.8 it
reports a write-back error of the file system that happened since the
descriptor was opened or last synced (the superblock's ``s_wb_err``).
:func:`reports_errors` checks the running kernel.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def syncfs(fd: int) -> None:
    """syncfs(2) on ``fd`` (any descriptor on the file system), without the GIL
    (ctypes releases it around the call); raises OSError on failure."""
    if _libc is None:
        raise OSError(38, "syncfs is only available on Linux")  # ENOSYS
    if _libc.syncfs(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"syncfs: {os.strerror(errno)}")


#: the first Linux release whose syncfs reports write-back errors
MIN_KERNEL = (5, 8)


def reports_errors(system: str | None = None, release: str | None = None) -> bool:
    """True where syncfs returns write-back errors (Linux 5.8 and later)."""
    system = platform.system() if system is None else system
    release = platform.release() if release is None else release
    if system != "Linux" or _libc is None:
        return False
    match = re.match(r"(\d+)\.(\d+)", release)
    if match is None:
        return False
    return (int(match.group(1)), int(match.group(2))) >= MIN_KERNEL


#: ``statfs`` ``f_type`` of the file systems whose syncfs this broker trusts
TRUSTED_FILE_SYSTEMS = {
    0xEF53: "ext4",  # also ext2/ext3 (EXT4_SUPER_MAGIC)
    0x58465342: "xfs",  # XFS_SUPER_MAGIC
    0x9123683E: "btrfs",  # BTRFS_SUPER_MAGIC
}


def file_system_type(path: str | os.PathLike[str]) -> int:
    """statfs(2)'s ``f_type`` for ``path`` (the first field of ``struct statfs``
    on 64-bit Linux, a signed long)."""
    if _libc is None:
        raise OSError(38, "statfs is only available here on Linux")  # ENOSYS
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on x86_64 / arm64
    if _libc.statfs(os.fsencode(path), buf) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"statfs {os.fspath(path)!r}: {os.strerror(errno)}")
    return int.from_bytes(buf.raw[:8], sys.byteorder, signed=True) & 0xFFFFFFFF


def trusted_file_system(path: str | os.PathLike[str]) -> str | None:
    """The name of ``path``'s file system if its syncfs is trusted, else None."""
    return TRUSTED_FILE_SYSTEMS.get(file_system_type(path))
