"""The test's side of ``lossyfs``: mount it, cut its power, collect what survived.

::

    with LossyMount(seed_dir, work_dir) as fs:      # mounted at fs.mountpoint
        ...                                         # the broker runs on fs.mountpoint
        fs.arm("/t-0/*.log"); cut = fs.wait_cut()   # or: cut = fs.cut()
        ...                                         # SIGKILL the broker (EIO until then)
        fs.materialize(dest)                        # the durable state, as a plain directory
    # unmounted here, the lossyfs process gone

Nothing is skipped when the machine lacks FUSE: mounting fails, and the
test with it, with the reason (no /dev/fuse, no libfuse 3, no mfusepy, no
permission to mount), as on a CI machine that cannot run it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


class LossyMount:
    def __init__(self, seed: Path, work: Path) -> None:
        self.seed = seed
        self.store = work / "lossyfs-store"
        self.mountpoint = work / "mnt"
        self.stderr_path = work / "lossyfs.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()

    # ---- start and stop ---------------------------------------------------------------------

    def start(self, timeout: float = 20.0) -> LossyMount:
        if not os.path.exists("/dev/fuse"):
            raise RuntimeError("the power-loss tests need /dev/fuse (the fuse kernel module)")
        self.store.mkdir()
        self.mountpoint.mkdir()
        env = dict(os.environ, FUSE_LIBRARY_NAME="fuse3")  # mfusepy prefers libfuse 2 if present
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.integration.powerloss.lossyfs",
                    str(self.seed),
                    str(self.store),
                    str(self.mountpoint),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=REPO,
                env=env,
            )
        self._reader = threading.Thread(
            target=self._read_events, daemon=True, name="lossyfs-events"
        )
        self._reader.start()
        try:
            self._expect("ready", timeout)
        except BaseException:
            self.close()
            raise
        if not self.mounted():
            self.close()
            raise RuntimeError(f"lossyfs said ready but {self.mountpoint} is not a mount point")
        return self

    def _read_events(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._events.put(json.loads(line))
        self._events.put(None)  # the process is gone

    def _expect(self, event: str, timeout: float) -> dict[str, Any]:
        try:
            got = self._events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"lossyfs: no {event!r} within {timeout}s") from None
        if got is None or got.get("event") != event:
            raise RuntimeError(f"lossyfs: expected {event!r}, got {got!r}\n{self.stderr()}")
        return got

    def _command(self, msg: dict[str, Any], reply: str, timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return self._expect(reply, timeout)

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def mounted(self) -> bool:
        """From the mount table: a stat of the mount point fails once the power is cut."""
        with open("/proc/self/mounts") as table:
            return any(line.split()[1] == str(self.mountpoint) for line in table)

    def close(self, timeout: float = 15.0) -> None:
        """Unmount, then wait for the process (kill it, by PID, past ``timeout``)."""
        if self.proc is None:
            return
        if self.mounted():
            done = subprocess.run(
                ["umount", str(self.mountpoint)], capture_output=True, check=False
            )
            if done.returncode != 0:
                # busy: a file is still open (a failed test's); detach the mount,
                # which lives on until that file is closed, and stop serving it
                subprocess.run(["umount", "-l", str(self.mountpoint)], check=False)
                self.proc.kill()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)  # it reads to the end of the dead process's output
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                assert pipe is not None
                pipe.close()
        self.proc = None

    def __enter__(self) -> LossyMount:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the power cut ----------------------------------------------------------------------

    def arm(self, pattern: str) -> None:
        """Cut the power right after the next write to a path matching ``pattern``."""
        self._command({"cmd": "arm", "pattern": pattern}, "armed")

    def wait_cut(self, timeout: float = 20.0) -> dict[str, Any]:
        """The ``cut`` event of an armed cut: its reason and the stats at that moment."""
        return self._expect("cut", timeout)

    def cut(self) -> dict[str, Any]:
        """Cut the power now; the stats at that moment."""
        return self._command({"cmd": "cut"}, "cut")

    def stats(self) -> dict[str, Any]:
        return self._command({"cmd": "stats"}, "stats")

    def materialize(self, dest: Path) -> int:
        """Write what survived the cut into the new directory ``dest``; the file count."""
        return int(
            self._command({"cmd": "materialize", "dest": str(dest)}, "materialized")["files"]
        )
