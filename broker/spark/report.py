"""The audit's human report: ``OUT/report.md`` with charts as PNG beside it.

Made from the Parquet tables ``audit.py`` wrote (read with pyarrow; no Spark
needed, so a report can be redrawn from the tables alone). What a reader
looks at first comes first: the verdict (problems or none), the totals,
then where the bytes are (per topic and codec), how well each kind of batch
compresses, records over time, and the problems themselves, by partition
and listed. Tables stay short (the first rows, with a pointer to the
Parquet file holding all of them).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from broker.spark.plain import (
    HOUR_MS,
    PROBLEM_CRC,
    PROBLEM_GAP,
    PROBLEM_OFFSET_INDEX,
    PROBLEM_TIME_INDEX,
    PROBLEM_UNDECODABLE,
    PROBLEM_UNREADABLE,
    problem_count,
)

Row = dict[str, Any]

PROBLEM_LABELS = {
    PROBLEM_UNREADABLE: "unreadable bytes",
    PROBLEM_CRC: "CRC failures",
    PROBLEM_UNDECODABLE: "undecodable batches",
    PROBLEM_OFFSET_INDEX: "offset index mismatches",
    PROBLEM_TIME_INDEX: "time index mismatches",
    PROBLEM_GAP: "offset gaps",
}
PROBLEM_COLOURS = {
    PROBLEM_UNREADABLE: "#7f0000",
    PROBLEM_CRC: "#d62728",
    PROBLEM_UNDECODABLE: "#ff7f0e",
    PROBLEM_OFFSET_INDEX: "#9467bd",
    PROBLEM_TIME_INDEX: "#c5b0d5",
    PROBLEM_GAP: "#8c564b",
}
CODEC_COLOURS = {
    "none": "#9e9e9e",
    "gzip": "#1f77b4",
    "snappy": "#2ca02c",
    "lz4": "#ff7f0e",
    "zstd": "#9467bd",
}
MAX_TABLE_ROWS = 30
#: time buckets of the timeline chart, the finest that keeps it within 120 bars
BUCKETS = [
    (HOUR_MS, "hour"),
    (6 * HOUR_MS, "6 hours"),
    (24 * HOUR_MS, "day"),
    (7 * 24 * HOUR_MS, "week"),
    (30 * 24 * HOUR_MS, "30 days"),
    (365 * 24 * HOUR_MS, "365 days"),
]


def read_table(out_dir: Path, name: str) -> list[Row]:
    import pyarrow.parquet as pq

    path = out_dir / name
    if not path.exists():
        return []
    rows: list[Row] = pq.read_table(path).to_pylist()
    return rows


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def human_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _percent(r: float | None) -> str:
    """A compacted group's dirty ratio; ``-`` for a topic that is not compacted."""
    return "-" if r is None else f"{100 * r:.0f}%"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titleweight": "bold",
            "axes.titlesize": 12,
            "font.size": 9,
        }
    )
    return plt


def _byte_unit(largest: float) -> tuple[str, float]:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if largest >= size:
            return unit, float(size)
    return "B", 1.0


def chart_bytes_by_topic(kinds: list[Row], path: Path) -> bool:
    """Horizontal bars: stored bytes per topic, one colour per codec."""
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for k in kinds:
        per[k["topic"]][k["codec"]] += k["stored_bytes"] or 0
    if not per:
        return False
    plt = _pyplot()
    topics = sorted(per, key=lambda t: sum(per[t].values()))[-30:]
    codecs = [c for c in CODEC_COLOURS if any(per[t].get(c) for t in topics)]
    codecs += sorted({c for t in topics for c in per[t]} - set(codecs))
    unit, scale = _byte_unit(max(sum(per[t].values()) for t in topics))
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(topics) + 1.6))
    left = [0.0] * len(topics)
    for codec in codecs:
        widths = [per[t].get(codec, 0) / scale for t in topics]
        ax.barh(topics, widths, left=left, label=codec, color=CODEC_COLOURS.get(codec, "#17becf"))
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for i, total in enumerate(left):
        ax.text(total, i, f"  {human_bytes(total * scale)}", va="center", fontsize=8)
    ax.set_xlabel(f"stored bytes ({unit})")
    ax.set_title("Where the bytes are: stored size per topic, by codec")
    ax.legend(title="codec", loc="lower right", frameon=False)
    ax.set_xlim(0, max(left) * 1.25 if max(left) > 0 else 1)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_compression(kinds: list[Row], path: Path) -> bool:
    """Bars: compression ratio per magic and codec (uncompressed / stored)."""
    totals: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for k in kinds:
        entry = totals[(k["magic"], k["codec"])]
        entry[0] += k["uncompressed_bytes"] or 0
        entry[1] += k["stored_bytes"] or 0
        entry[2] += k["batches"] or 0
    shown = sorted((key, v) for key, v in totals.items() if v[1] > 0)
    if not shown:
        return False
    plt = _pyplot()
    labels = [f"v{magic} {codec}" for (magic, codec), _ in shown]
    ratios = [u / s for _, (u, s, _n) in shown]
    colours = [CODEC_COLOURS.get(codec, "#17becf") for (_m, codec), _ in shown]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(shown) + 2), 3.8))
    bars = ax.bar(labels, ratios, color=colours)
    for bar, (_key, (_u, stored, n)) in zip(bars, shown, strict=True):
        ax.annotate(
            f"{bar.get_height():.2f}x\n{n:,} batches\n{human_bytes(stored)}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.axhline(1.0, color="#444", linewidth=0.8, linestyle=":")
    ax.set_ylabel("uncompressed / stored")
    ax.set_ylim(0, max(ratios) * 1.45)
    ax.set_title("Compression by batch kind (magic, codec)")
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_timeline(timeline: list[Row], path: Path) -> bool:
    """Records per hour (of each batch's latest timestamp), stacked by topic
    (the eight busiest; the rest as "other"). When everything falls within a
    few hours a line says little: records per topic as bars instead."""
    if not timeline:
        return False
    plt = _pyplot()
    totals: dict[str, int] = defaultdict(int)
    for row in timeline:
        totals[row["topic"]] += row["records"]
    busiest = sorted(totals, key=lambda t: -totals[t])[:8]
    hours = sorted({row["hour"] for row in timeline})
    first, last = human_time(hours[0]), human_time(hours[-1] + HOUR_MS - 1)
    if len(hours) <= 3:
        names = sorted(totals, key=lambda t: totals[t])[-30:]
        fig, ax = plt.subplots(figsize=(8, 0.42 * len(names) + 1.6))
        ax.barh(names, [totals[t] for t in names], color="#1f77b4")
        for i, t in enumerate(names):
            ax.text(totals[t], i, f"  {totals[t]:,}", va="center", fontsize=8)
        ax.set_xlabel("records")
        ax.set_title(f"Records per topic, all from {first} to {last}")
    else:
        span = hours[-1] - hours[0] + HOUR_MS
        size, label = next((b for b in BUCKETS if span / b[0] <= 120), BUCKETS[-1])
        start = hours[0] // size * size
        slots = (hours[-1] - start) // size + 1
        series: dict[str, list[int]] = {}
        for row in timeline:
            name = row["topic"] if row["topic"] in busiest else "other"
            counts = series.setdefault(name, [0] * slots)
            counts[(row["hour"] - start) // size] += row["records"]
        x = [dt.datetime.fromtimestamp((start + i * size) / 1000, tz=dt.UTC) for i in range(slots)]
        names = [t for t in busiest if t in series] + (["other"] if "other" in series else [])
        fig, ax = plt.subplots(figsize=(9, 4))
        bottom = [0] * slots
        for name in names:
            ax.bar(
                x, series[name], width=size / 86_400_000, bottom=bottom, align="edge", label=name
            )
            bottom = [a + b for a, b in zip(bottom, series[name], strict=True)]
        ax.set_ylabel(f"records per {label}")
        ax.set_title(f"Records over time, per {label} of each batch's latest timestamp")
        ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_problems(problems: list[Row], path: Path) -> bool:
    """Stacked horizontal bars: problems per partition, by kind."""
    if not problems:
        return False
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in problems:
        per[f"{p['topic']}-{p['partition']}"][p["kind"]] += 1
    plt = _pyplot()
    names = sorted(per, key=lambda n: sum(per[n].values()))[-25:]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 2.4))
    left = [0] * len(names)
    for kind, label in PROBLEM_LABELS.items():
        counts = [per[n].get(kind, 0) for n in names]
        if any(counts):
            ax.barh(names, counts, left=left, label=label, color=PROBLEM_COLOURS[kind])
            left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.set_xlabel("problems")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_title("Problems per partition, by kind")
    ax.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def _verdict(totals: Row, problems: list[Row]) -> str:
    if not problems:
        return (
            f"**No problems found** in {_num(totals.get('segments'))} segments of "
            f"{_num(totals.get('partitions'))} partitions: every batch framed, every CRC "
            "matched, every batch decoded, every index entry agrees with its log, and no "
            "offsets are missing."
        )
    counts: dict[str, int] = defaultdict(int)
    for p in problems:
        counts[p["kind"]] += 1
    parts = [f"{n:,} {PROBLEM_LABELS.get(k, k)}" for k, n in sorted(counts.items())]
    return f"**{len(problems):,} problems found**: " + ", ".join(parts) + "."


def write_report(out_dir: Path, inputs: Sequence[str]) -> Path:
    """Draw the charts and write ``report.md`` in ``out_dir``; returns its path."""
    topics = sorted(read_table(out_dir, "topics"), key=lambda t: str(t["topic"]))
    partitions = read_table(out_dir, "partitions")
    kinds = read_table(out_dir, "batch_kinds")
    timeline = read_table(out_dir, "timeline")
    problems = read_table(out_dir, "problems")
    problems.sort(
        key=lambda p: (
            p["topic"],
            p["partition"],
            p["segment_base_offset"],
            p["position"] is None,
            p["position"] or 0,
            p["kind"],
        )
    )
    totals: Row = {"segments": 0, "partitions": 0}
    for name in (
        "segments",
        "partitions",
        "bytes",
        "batches",
        "records",
        "uncompressed_bytes",
        "record_batch_bytes",
        "legacy_batches",
    ):
        totals[name] = sum(t.get(name) or 0 for t in topics)
    stamps = [t["min_timestamp"] for t in topics if t.get("min_timestamp") is not None]
    highs = [t["max_timestamp"] for t in topics if t.get("max_timestamp") is not None]

    out = [
        "# Kafka log audit",
        "",
        "Inputs: " + ", ".join(f"`{p}`" for p in inputs),
        "",
        f"Generated {dt.datetime.now(tz=dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}. "
        "Every number below comes from the Parquet tables beside this file.",
        "",
        "## Verdict",
        "",
        _verdict(totals, problems),
        "",
        _md_table(
            [
                "topics",
                "partitions",
                "segments",
                "records",
                "batches",
                "stored",
                "compression",
                "legacy batches",
                "timestamps",
            ],
            [
                [
                    _num(len(topics)),
                    _num(totals["partitions"]),
                    _num(totals["segments"]),
                    _num(totals["records"]),
                    _num(totals["batches"]),
                    human_bytes(totals["bytes"]),
                    _ratio(
                        totals["uncompressed_bytes"] / totals["record_batch_bytes"]
                        if totals["record_batch_bytes"]
                        else None
                    ),
                    _num(totals["legacy_batches"]),
                    f"{human_time(min(stamps)) if stamps else '-'} to "
                    f"{human_time(max(highs)) if highs else '-'}",
                ]
            ],
        ),
        "",
    ]
    charts = [
        (
            "bytes_by_topic.png",
            chart_bytes_by_topic(kinds, out_dir / "bytes_by_topic.png"),
            "## Storage",
        ),
        (
            "compression.png",
            chart_compression(kinds, out_dir / "compression.png"),
            "## Compression",
        ),
        (
            "timeline.png",
            chart_timeline(timeline, out_dir / "timeline.png"),
            "## Records over time",
        ),
    ]
    for name, drawn, title in charts:
        out += [title, ""]
        out += [f"![{title[3:]}]({name})", ""] if drawn else ["(nothing to draw)", ""]
        if name == "compression.png" and drawn:
            out += [_kinds_table(kinds), ""]
    out += ["## Problems", ""]
    if problems:
        if chart_problems(problems, out_dir / "problems.png"):
            out += ["![Problems](problems.png)", ""]
        shown = problems[:MAX_TABLE_ROWS]
        out += [
            _md_table(
                ["partition", "segment", "byte", "offset", "kind", "detail"],
                [
                    [
                        f"{p['topic']}-{p['partition']}",
                        "/".join(Path(p["segment"]).parts[-3:]),
                        _num(p["position"]),
                        _num(p["offset"]),
                        str(PROBLEM_LABELS.get(p["kind"], p["kind"])),
                        str(p["detail"]),
                    ]
                    for p in shown
                ],
            ),
            "",
        ]
        if len(problems) > len(shown):
            out += [f"... and {len(problems) - len(shown):,} more in `problems/`.", ""]
    else:
        out += ["None.", ""]
    out += ["## Topics", "", _group_table(topics, ["topic"]), ""]
    biggest = sorted(partitions, key=lambda p: -(p["bytes"] or 0))[:MAX_TABLE_ROWS]
    keys = ["topic", "partition"]
    if len({p["log_dir"] for p in partitions}) > 1:
        keys.insert(0, "log_dir")
    out += ["## Partitions (largest first)", "", _group_table(biggest, keys), ""]
    if len(partitions) > len(biggest):
        out += [f"... and {len(partitions) - len(biggest):,} more in `partitions/`.", ""]
    out += [
        "## Tables",
        "",
        "Parquet, one folder each: `segments/`, `partitions/`, `topics/` (counts, sizes, "
        "timestamps, problems per level), `batch_kinds/` (per segment, magic and codec), "
        "`timeline/` (records per topic and hour), `problems/` (one row per problem).",
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(out))
    return path


def _kinds_table(kinds: list[Row]) -> str:
    totals: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for k in kinds:
        t = totals[(k["magic"], k["codec"])]
        t[0] += k["batches"] or 0
        t[1] += k["records"] or 0
        t[2] += k["stored_bytes"] or 0
        t[3] += k["uncompressed_bytes"] or 0
        t[4] += k["undecodable"] or 0
    rows = [
        [
            f"v{magic}",
            codec,
            _num(b),
            _num(r),
            human_bytes(s),
            human_bytes(u),
            _ratio(u / s if s else None),
            _num(bad),
        ]
        for (magic, codec), (b, r, s, u, bad) in sorted(totals.items())
    ]
    return _md_table(
        ["magic", "codec", "batches", "records", "stored", "uncompressed", "ratio", "undecodable"],
        rows,
    )


def _group_table(rows: list[Row], keys: list[str]) -> str:
    headers = [
        *keys,
        "segments",
        "records",
        "stored",
        "compression",
        "dirty",
        "offsets",
        "timestamps",
        "problems",
    ]
    body = []
    for r in rows:
        problems = problem_count(r)
        body.append(
            [
                *[str(r[k]) for k in keys],
                _num(r.get("segments")),
                _num(r.get("records")),
                human_bytes(r.get("bytes")),
                _ratio(r.get("compression_ratio")),
                _percent(r.get("dirty_ratio")),
                f"{_num(r.get('first_offset'))}..{_num(r.get('last_offset'))}",
                f"{human_time(r.get('min_timestamp'))} to {human_time(r.get('max_timestamp'))}",
                _num(problems) if problems else "none",
            ]
        )
    return _md_table(headers, body)
