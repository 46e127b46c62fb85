"""``broker pipeline export``: every record out, by topic and date."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from broker.spark import export
from tests.spark_logs import Expected, plain_records

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_export_round_trips_every_record(
    spark: Any, broker_logs: Path, legacy_logs: Path, tmp_path: Path
) -> None:
    paths = [str(broker_logs), str(legacy_logs)]
    out = tmp_path / "export"
    result = export.run(spark, paths, out, by_date=True, log=lambda _m: None)
    expected = plain_records(paths)
    assert result.rows == sum(len(v) for v in expected.values())
    # hive-style folders: topic=<t>/date=<yyyy-mm-dd>
    table = pq.read_table(out, partitioning="hive")
    got: dict[tuple[str, int], list[Expected]] = {}
    dates: set[tuple[int, str]] = set()
    for r in sorted(
        table.to_pylist(), key=lambda r: (str(r["topic"]), r["partition"], r["offset"])
    ):
        headers = tuple((h["key"], h["value"]) for h in r["headers"])
        got.setdefault((str(r["topic"]), r["partition"]), []).append(
            Expected(r["offset"], r["timestamp"], r["key"], r["value"], headers)
        )
        dates.add((r["timestamp"], str(r["date"])))
    assert got == expected
    for ts, date in dates:
        if ts >= 0:
            assert date == dt.datetime.fromtimestamp(ts / 1000, tz=dt.UTC).date().isoformat()
        else:
            assert date == "None" or date == "__HIVE_DEFAULT_PARTITION__"
    topics = {p.name for p in out.iterdir() if p.is_dir()}
    assert "topic=kp-m2-zstd" in topics and "topic=old-v1" in topics
    assert {p.name.split("=")[0] for p in (out / "topic=old-v1").iterdir()} == {"date"}
    assert "error" not in table.column_names
