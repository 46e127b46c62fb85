"""``broker ... | head``: a reader that goes away ends the command quietly, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.unit.log.test_dump import make_log


def test_a_closed_stdout_ends_the_command_without_a_traceback(tmp_path: Path) -> None:
    folder, _ = make_log(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "broker", "dump-log", "--print-data-log", "--files",
             str(folder / "00000000000000000000.log")],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.returncode == 1
    assert proc.stderr == b"", proc.stderr.decode()
