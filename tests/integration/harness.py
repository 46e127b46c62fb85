"""Start the broker as a real subprocess on 127.0.0.1 for integration tests.

``BrokerProcess`` picks free ports, starts ``python -m broker serve`` with
the test's overrides and the suite's event loop (``BROKER_EVENT_LOOP``),
waits for ``/readyz``, and stops the process it started by its PID (SIGTERM,
then SIGKILL after a bound). Its stderr goes to a file the test can read.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"


#: ports :func:`free_port` handed out in this process
_handed_out: set[int] = set()


def free_port() -> int:
    """A port free on HOST now that this process has not handed out before.

    Two binds to port 0 in a row may return the same port (the kernel picks
    one at random from the ephemeral range), and a broker whose listener and
    metrics listener got one port cannot start.
    """
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = int(s.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no port left that this test process has not handed out")


class _PortTaken(RuntimeError):
    """The broker could not bind a port found free a moment before."""


class BrokerProcess:
    def __init__(
        self, data_dir: Path, *, env: dict[str, str] | None = None, **overrides: object
    ) -> None:
        self.data_dir = data_dir
        #: extra environment of the process (e.g. BROKER_CLEANER_FAULT)
        self.env = dict(env or {})
        self.port = free_port()
        self.metrics_port = free_port()
        self.overrides: dict[str, str] = {
            "listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "metrics.listener": f"{HOST}:{self.metrics_port}",
            "log.dirs": str(data_dir),
        }
        self.overrides.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
        self.log_path = data_dir.parent / f"broker-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Wait for the process to end on its own (a fault hook); its exit code."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self._log.close()
        return int(self.proc.returncode)

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        """Start the broker and wait until /readyz answers.

        A port found free may be taken by another process (another test's
        client connection, say) before the broker binds it; the broker then
        exits at once saying so, and the start is tried again on fresh ports
        (three times at most).
        """
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except _PortTaken:
                if attempt == 2:
                    raise
                self._new_ports()
        raise AssertionError("unreachable")

    def _new_ports(self) -> None:
        old = (f"{HOST}:{self.port}", f"{HOST}:{self.metrics_port}")
        self.port, self.metrics_port = free_port(), free_port()
        new = (f"{HOST}:{self.port}", f"{HOST}:{self.metrics_port}")
        for key, value in self.overrides.items():
            self.overrides[key] = value.replace(old[0], new[0]).replace(old[1], new[1])

    def _start_once(self, timeout: float) -> BrokerProcess:
        args = [sys.executable, "-m", "broker", "serve"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        env = dict(os.environ)
        env.setdefault("BROKER_EVENT_LOOP", "uvloop")
        env.update(self.env)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                log = self.log()
                ports = (self.port, self.metrics_port)
                if any(f"port {p} is already in use" in log for p in ports):
                    raise _PortTaken(log)
                raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{log}")
            if self.ready():
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"broker not ready after {timeout}s:\n{self.log()}")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(
                f"http://{HOST}:{self.metrics_port}/readyz", timeout=1
            ) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://{HOST}:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code (SIGKILL after ``timeout``)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return int(self.proc.returncode)

    def kill(self) -> None:
        """SIGKILL (crash tests)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()
