"""``python -m bench [name ...]``: run every ``bench/bench_*.py`` (or the named ones).

Each module exposes ``main(report: Report) -> None`` and may list in
``REQUIRES`` the modules it imports beyond the broker's own dependencies;
one that is missing is named with the extra that brings it before anything
runs. Results are printed as they come and written to
``bench/out/results.json``. Exit status 1 when a benchmark failed, could not
run, or missed a goal by more than the noise it measured
(``bench/common.py``); a goal missed within its noise is reported, not failed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
from pathlib import Path

from bench.common import Report

#: the extra of pyproject.toml that brings each module a bench may require
EXTRAS = {
    "aiokafka": "clients",
    "kafka": "clients",
    "confluent_kafka": "clients",
    "kio": "dev",
    "trustme": "dev",
    "pyspark": "spark",
    "pyarrow": "spark",
}


def missing_requirements(module: object) -> list[str]:
    return [m for m in getattr(module, "REQUIRES", ()) if importlib.util.find_spec(m) is None]


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    report = Report()
    failed = []
    modules = {name: importlib.import_module(f"bench.bench_{name}") for name in names}
    missing = {name: missing_requirements(m) for name, m in modules.items()}
    if any(missing.values()):
        for name, mods in missing.items():
            if mods:
                extras = sorted({EXTRAS.get(m, "?") for m in mods})
                print(
                    f"bench {name} needs {', '.join(mods)} (the {'/'.join(extras)} extra):"
                    " `make bench` installs every extra, or"
                    f" .venv/bin/pip install -e '.[{','.join(extras)}]'",
                    file=sys.stderr,
                )
        return 2
    for name, module in modules.items():
        report.section(name)
        start = time.perf_counter()
        try:
            module.main(report)
        except Exception as exc:  # keep going: one broken bench must not hide the others
            failed.append(name)
            print(f"  !! {name} failed: {exc!r}", flush=True)
        print(f"  ({name}: {time.perf_counter() - start:.1f}s)", flush=True)
    out = here / "out"
    out.mkdir(exist_ok=True)
    (out / "results.json").write_text(json.dumps(report.results, indent=2))
    print()
    if report.missed:
        print("goals missed by more than the noise each bench measured:")
        for line in report.missed:
            print(f"  {line}")
    else:
        print("no goal missed by more than the noise each bench measured")
    if failed:
        print(f"failed benchmarks: {', '.join(failed)}")
    return 1 if failed or report.missed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
