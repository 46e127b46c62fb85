"""The shell blocks of README.md and docs/operations.md, run as written.

A new user reads README.md, then docs/operations.md, in one checkout with
``make run`` going. This test does the same: it starts the broker ``make
run`` starts (``broker serve`` with the same two overrides, on free
127.0.0.1 ports, in a temporary working dir that gets ``data/``) and runs
every shell block of both documents in order, in that one working dir
(files made by one block are there for later ones), each with ``bash -euo
pipefail``, a timeout and only these substitutions: ``127.0.0.1:9092`` and
``127.0.0.1:9404`` become the ports of the block's broker and ``.venv/bin/``
the bin dir of the interpreter running the test (which is taken out of
``PATH``, so a bare ``broker`` fails as it would for the user).

The markers above a fence (``tests/integration/docs_blocks.py``) say when a
block is not run here (and why), is run by another test (which must exist
and mention its command), needs another broker (one a ``starts broker=NAME``
block of the docs starts: the test runs that command itself and stops it by
its PID), runs with the default broker stopped (files a clean shutdown
writes), or is a file's content. A block with no marker is run, so a new
block cannot skip the test silently. A failure names the block's file and
line and shows its output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.docs_blocks import Block, MarkerError, blocks, check_markers, key_command
from tests.integration.harness import HOST, free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/operations.md")
BLOCK_TIMEOUT = 60.0
#: the interpreter's venv bin dir as it was invoked (not resolved: .venv/bin/python is a link)
VENV_BIN = Path(sys.executable).parent


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(ROOT, doc)]


def broker_names(found: list[Block]) -> set[str]:
    names = {"default"}
    for b in found:
        starts = b.directive("starts")
        if starts is not None:
            names.add(starts.args["name"])
    return names


def test_every_block_is_run_or_says_why() -> None:
    found = all_blocks()
    names = broker_names(found)
    problems = [f"{b.where}: {p}" for b in found for p in check_markers(ROOT, b, names)]
    assert not problems, "\n".join(problems)
    assert sum(b.is_shell for b in found) >= 20, "the docs' fences were not found"


SAMPLE = """Text.

<!-- docs-test: not run: needs a cluster -->
```sh
kubectl apply -k deploy/k8s
```

  <!-- docs-test: run by tests/integration/test_docs_commands.py -->
  ```bash
  echo x | .venv/bin/broker dump-log --files a.log
  ```

```properties
a=b
```

```python
print("not collected")
```
"""


def test_markers_are_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text(SAMPLE)
    found = blocks(tmp_path, "doc.md")
    assert [(b.line, b.lang) for b in found] == [(4, "sh"), (9, "bash"), (13, "properties")]
    assert found[0].directive("not_run") is not None
    assert found[1].text == "echo x | .venv/bin/broker dump-log --files a.log\n"
    assert key_command(found[1]) == "dump-log"
    assert check_markers(ROOT, found[0], {"default"}) == []
    assert check_markers(ROOT, found[1], {"default"}) == []
    # a run-by file must exist and mention the command; file content needs a marker
    assert check_markers(tmp_path, found[1], {"default"}) == [
        "run by tests/integration/test_docs_commands.py: no such file"
    ]
    assert "needs `file=NAME`" in check_markers(ROOT, found[2], {"default"})[0]
    (tmp_path / "bad.md").write_text("<!-- docs-test: skip -->\n```sh\ntrue\n```\n")
    with pytest.raises(MarkerError, match=r"bad\.md:2: unknown docs-test marker"):
        blocks(tmp_path, "bad.md")


def test_a_block_that_fails_or_hangs_is_reported(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("```sh\necho out; false\n```\n```sh\nsleep 30 | cat\n```\n")
    failing, hanging = blocks(tmp_path, "doc.md")
    assert run_block(failing, None, tmp_path) == "exit status 1\nout\n"
    began = time.monotonic()
    report = run_block(hanging, None, tmp_path, timeout=0.5)
    assert report is not None and report.startswith("timed out")
    assert time.monotonic() - began < 10


def substitute(text: str, broker: DocBroker | None) -> str:
    text = text.replace(".venv/bin/", f"{VENV_BIN}/")
    if broker is not None:
        text = text.replace(f"{HOST}:9092", f"{HOST}:{broker.port}")
        text = text.replace(f"{HOST}:9404", f"{HOST}:{broker.metrics_port}")
    return text


def user_env() -> dict[str, str]:
    """The environment of a user's shell: ours without the venv on PATH."""
    env = dict(os.environ)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
    env["PATH"] = os.pathsep.join(path)
    env.pop("VIRTUAL_ENV", None)
    return env


@dataclass
class DocBroker:
    """A broker as the docs start it: ``command`` is a shell command with the
    docs' ports, run with ``exec`` so the PID we stop is the broker's."""

    name: str
    command: str
    cwd: Path
    port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.cwd / f"broker-{self.name}.log"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0) -> None:
        if self.running():
            return
        script = "exec " + substitute(self.command, self).strip()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=self.cwd,
                env=user_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker {self.name} exited: {self.log()}")
            if self._ready():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"broker {self.name} not ready after {timeout}s: {self.log()}")

    def _ready(self) -> bool:
        url = f"http://{HOST}:{self.metrics_port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def stop(self) -> None:
        """SIGTERM (Ctrl-C's clean stop) by PID, SIGKILL after 30 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]


#: ``make run``: .venv/bin/broker serve with these two overrides, data in ./data
MAKE_RUN = (
    ".venv/bin/broker serve --override listeners=PLAINTEXT://127.0.0.1:9092"
    " --override metrics.listener=127.0.0.1:9404"
)


def make_run_matches_makefile() -> bool:
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    # the recipe's command line (the others print what it does: $(STEP) ...)
    commands = [line.strip() for line in recipe if not line.strip().startswith("$(STEP)")]
    return [" ".join(c.replace("$(BIN)/", ".venv/bin/").split()) for c in commands] == [MAKE_RUN]


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[dict[str, DocBroker]]:
    found = all_blocks()
    started = {"default": DocBroker("default", MAKE_RUN, tmp_path)}
    for b in found:
        starts = b.directive("starts")
        if starts is not None:
            name = starts.args["name"]
            started[name] = DocBroker(name, "\n".join(b.commands()), tmp_path)
    try:
        yield started
    finally:
        for broker in started.values():
            broker.stop()


def run_block(
    block: Block, broker: DocBroker | None, cwd: Path, timeout: float = BLOCK_TIMEOUT
) -> str | None:
    """None when the block ran and exited 0, else what to report. The block
    runs in a process group of its own: on a timeout the group we started
    (bash and whatever it started: kcat, curl) is killed by its id."""
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", substitute(block.text, broker)],
        cwd=cwd,
        env=user_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return f"timed out after {timeout:.0f} s\n{out.decode(errors='replace')[-4000:]}"
    if proc.returncode == 0:
        return None
    return f"exit status {proc.returncode}\n{out.decode(errors='replace')[-4000:]}"


def test_docs_commands_run_as_written(brokers: dict[str, DocBroker], tmp_path: Path) -> None:
    assert make_run_matches_makefile(), "MAKE_RUN no longer matches the Makefile's run target"
    ran, elsewhere, not_run, failures = 0, 0, 0, []
    began = time.monotonic()
    for block in all_blocks():
        if block.directive("not_run"):
            not_run += 1
            continue
        if block.directive("run_by"):
            elsewhere += 1
            continue
        file_to = block.directive("file")
        if file_to is not None:
            (tmp_path / file_to.args["name"]).write_text(substitute(block.text, None))
            continue
        starts = block.directive("starts")
        if starts is not None:
            brokers[starts.args["name"]].start()
            ran += 1
            continue
        named = block.directive("broker")
        broker = brokers[named.args["name"] if named else "default"]
        if block.directive("stopped"):
            broker.stop()
        else:
            broker.start()
        ran += 1
        failure = run_block(block, broker, tmp_path)
        if failure is not None:
            failures.append(f"{block.where}: {failure}\n--- the block:\n{block.text}")
    summary = (
        f"{ran} blocks run in {time.monotonic() - began:.1f} s, {elsewhere} run by other "
        f"tests, {not_run} not run"
    )
    print(summary)
    assert not failures, summary + "\n\n" + "\n\n".join(failures)
