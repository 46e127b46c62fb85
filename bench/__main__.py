"""``python -m bench [name ...]``: run every ``bench/bench_*.py`` (or the named ones).

Each module exposes ``main(report: Report) -> None``. Results are printed as
they come and written to ``bench/out/results.json``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

from bench.common import Report


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    report = Report()
    failed = []
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
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
    if failed:
        print(f"failed benchmarks: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
