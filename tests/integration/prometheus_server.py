"""A real Prometheus (Debian's package) scraping the broker, for the metrics tests.

Started on 127.0.0.1 on a free port with its config and TSDB in a temporary
directory and a 1 s scrape interval; stopped by the PID of the process
itself. Readiness and freshness are polled through the HTTP API, never
waited for with a fixed sleep (the first scrape of a new target lands some
seconds after start; platform notes).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.integration.harness import HOST, free_port

CONFIG = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: broker
    static_configs:
      - targets: ["{target}"]
"""


class PrometheusProcess:
    def __init__(self, workdir: Path, target: str) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.config = workdir / "prometheus.yml"
        self.config.write_text(CONFIG.format(target=target))
        self.log_path = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 20.0) -> PrometheusProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        # the binary itself (no shell), so proc.pid is Prometheus's PID
        self.proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                f"--web.listen-address={HOST}:{self.port}",
                "--log.level=warn",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"prometheus not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> PrometheusProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- HTTP API ------------------------------------------------------------------------

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """An instant query: (labels, value) of each element of the result vector."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as r:
            body: dict[str, Any] = json.loads(r.read())
        assert body["status"] == "success", body
        data = body["data"]
        assert data["resultType"] == "vector", data
        return [(dict(e["metric"]), float(e["value"][1])) for e in data["result"]]

    def scalar(self, promql: str) -> float | None:
        """The single value of a query returning at most one element (None if empty)."""
        result = self.query(promql)
        assert len(result) <= 1, result
        return result[0][1] if result else None

    def wait_for_value(self, promql: str, expected: float, timeout: float = 20.0) -> None:
        """Poll until the query's single value equals ``expected``."""
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            got = self.scalar(promql)
            if got == expected:
                return
            time.sleep(0.1)
        raise AssertionError(f"{promql} = {got} after {timeout}s, waiting for {expected}")
