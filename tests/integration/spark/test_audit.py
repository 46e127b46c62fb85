"""``broker pipeline audit`` against the plain single-process decode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from broker.spark import audit, plain

pytestmark = [pytest.mark.spark, pytest.mark.integration]

KEYS = {
    "segments": ("segment",),
    "partitions": ("log_dir", "topic", "partition"),
    "topics": ("topic",),
    "batch_kinds": ("segment", "magic", "codec"),
    "timeline": ("topic", "hour"),
    "problems": ("segment", "kind", "position", "offset", "detail"),
}


def _sorted(rows: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: tuple((r[k] is None, r[k]) for k in KEYS[table]))


def _approx(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: pytest.approx(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows
    ]


def test_every_table_equals_the_plain_decode(audited: tuple[Path, list[str]]) -> None:
    out, paths = audited
    expected = plain.audit(paths)
    for table in audit.TABLES:
        got = pq.read_table(out / table).to_pylist()
        want = getattr(expected, table)
        assert got, table
        assert {tuple(sorted(r)) for r in got} == {tuple(sorted(r)) for r in want}, table
        assert _sorted(got, table) == _approx(_sorted(want, table)), table


def test_the_numbers_mean_what_they_say(audited: tuple[Path, list[str]]) -> None:
    out, _paths = audited
    legacy_dir = _paths[1]
    topics = {r["topic"]: r for r in pq.read_table(out / "topics").to_pylist()}
    partitions = pq.read_table(out / "partitions").to_pylist()
    # broker-written logs: all v2, no problem, indexes as written
    clean = [t for name, t in topics.items() if name.startswith(("kp-", "ck-"))]
    assert sum(t["records"] for t in clean) == 40 * len(clean)
    for t in clean:
        assert t["legacy_batches"] == 0 and t["crc_failures"] == 0
        assert t["offset_index_mismatches"] == t["time_index_mismatches"] == 0
        assert t["offset_gaps"] == 0 and t["unreadable_bytes"] == 0
    assert topics["kp-m2-zstd"]["compression_ratio"] > 1.5
    assert topics["kp-m0-none"]["no_timestamp_records"] == 40
    # old segments: legacy batches (the converted copy of the same topics is v2)
    old = [p for p in partitions if p["log_dir"] == legacy_dir]
    assert len(old) == 6 and all(p["legacy_batches"] == p["batches"] > 0 for p in old)
    assert sum(p["records"] for p in old if p["topic"] == "old-v0") == 180
    assert topics["old-v0"]["records"] == 2 * 180 and topics["old-v0"]["partitions"] == 4
    # the damaged topic: each kind of damage found once, where it was made
    kinds = [
        r["kind"] for r in pq.read_table(out / "problems").to_pylist() if r["topic"] == "damaged"
    ]
    for kind in ("crc", "undecodable", "unreadable", "offset-index", "gap"):
        assert kind in kinds, kind
    damaged = topics["damaged"]
    assert damaged["crc_failures"] == 2 and damaged["undecodable_batches"] == 1
    assert damaged["unreadable_spans"] == 2  # the garbage size field and the torn tail
    # the compacted topic: what the cleaner removed is no problem; kv-1 never cleaned
    assert not [p for p in pq.read_table(out / "problems").to_pylist() if p["topic"] == "kv"]
    kv = {p["partition"]: p for p in partitions if p["topic"] == "kv"}
    assert kv[0]["cleaned_offset_gaps"] > 0 and kv[0]["offset_gaps"] == 0
    assert 0 < kv[0]["dirty_bytes"] < kv[0]["bytes"]
    assert kv[0]["dirty_ratio"] == pytest.approx(kv[0]["dirty_bytes"] / kv[0]["bytes"])
    assert kv[1]["dirty_ratio"] == 1.0 and kv[1]["cleaned_offset_gaps"] == 0
    assert topics["kp-m2-none"]["dirty_ratio"] is None


def test_the_report(audited: tuple[Path, list[str]]) -> None:
    out, paths = audited
    report = (out / "report.md").read_text()
    assert report.startswith("# Kafka log audit")
    assert "problems found**" in report and "CRC failures" in report
    assert "| dirty |" in report and "| kv |" in report
    for chart in ("bytes_by_topic.png", "compression.png", "timeline.png", "problems.png"):
        data = (out / chart).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, chart
        assert f"]({chart})" in report
    assert all(f"`{p}`" in report for p in paths)
