"""bench/common.py: how a missed goal is told from noise, and bench/__main__'s exit status."""

from __future__ import annotations

import types

import pytest

from bench import __main__ as bench_main
from bench import common
from bench.common import Report, note_rounds, verdict


@pytest.fixture(autouse=True)
def _no_pending_noise() -> None:
    common._pending_noise.clear()


def test_a_missed_goal_within_the_measured_noise_is_not_a_miss() -> None:
    assert verdict(0.68, ">= 0.7x", False, 0.05) == "within noise"
    assert verdict(1.08, "<= 1.05x", False, 0.05) == "within noise"


def test_a_goal_missed_beyond_the_noise_is_missed() -> None:
    assert verdict(0.50, ">= 0.7x", False, 0.05) == "MISSED"
    assert verdict(1.20, "<= 1.05x", False, 0.05) == "MISSED"


def test_without_noise_or_a_readable_threshold_a_miss_is_a_miss() -> None:
    assert verdict(0.69, ">= 0.7x", False, None) == "MISSED"
    assert verdict(0.69, "p99 under 20 ms", False, 0.5) == "MISSED"
    assert verdict(0.69, ">= 0.7x", True, None) == "met"
    assert verdict(0.69, "", None, None) == ""


def test_note_rounds_takes_the_gap_between_the_best_two_rounds() -> None:
    note_rounds([1.0, 1.1, 3.0])  # times: the best is the lowest
    note_rounds([100.0, 80.0, 95.0], best="max")  # rates: the best is the highest
    note_rounds([5.0])  # one round says nothing about noise
    assert common._pending_noise == pytest.approx([0.1, 0.05])


def test_report_uses_the_two_largest_spreads_and_lists_real_misses() -> None:
    report = Report()
    report.section("s")
    for spread in (0.01, 0.02, 0.03):
        note_rounds([1.0, 1.0 + spread])
    report.ratio("close", 0.67, 1.0, goal=">= 0.7x", ok=False)
    assert report.results["s"]["close"]["noise"] == pytest.approx(0.05)
    assert report.results["s"]["close"]["verdict"] == "within noise"
    report.ratio("far", 0.30, 1.0, goal=">= 0.7x", ok=False)  # nothing noted since
    assert report.results["s"]["far"]["verdict"] == "MISSED"
    assert report.missed == ["s: far 0.30x (>= 0.7x)"]


def test_a_bench_whose_requirement_is_missing_is_named_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = []
    fake = types.SimpleNamespace(
        REQUIRES=("surely_not_installed_module",), main=lambda report: ran.append(1)
    )
    monkeypatch.setattr(bench_main.importlib, "import_module", lambda name: fake)
    monkeypatch.setitem(bench_main.EXTRAS, "surely_not_installed_module", "clients")
    assert bench_main.main(["fake"]) == 2
    assert not ran
    err = capsys.readouterr().err
    assert "bench fake needs surely_not_installed_module (the clients extra)" in err
    assert "pip install -e '.[clients]'" in err
