"""The audit in one process, without Spark: the reference and the baseline.

It reads every segment the simple way -- each batch through
``broker.records.iterate`` into :class:`~broker.records.record.Record`
objects -- and adds the numbers up in Python. The Spark audit
(``audit.py``) computes the same tables from the ``kafka-log`` data source
(batch facts from the compiled record walk, sums and windows in Spark); the
tests hold the two to equality and the benchmark times one against the
other. Framing of damaged files (``segment_scan.frame``) and the index rules
(``index_check``) are shared: they define what the audit looks for.

A partition is a partition folder, keyed (log dir, topic, partition): the
same topic-partition in two log dirs (replicas, a copy, a conversion's source
and result) is two logs, audited apart; topics add up all their folders.

Definitions (per segment; partitions and topics add their segments up):

=========================  ====================================================
``bytes``                  the ``.log``'s size
``batches``                entries that could be framed (any magic)
``records``                records of the batches that could be decoded
``record_batch_bytes``     stored size of those batches
``uncompressed_bytes``     their size with the records stored uncompressed
``compression_ratio``      uncompressed_bytes / record_batch_bytes
``first_offset``           smallest first offset of a framed batch
``last_offset``            largest last offset of a framed batch
``min/max_timestamp``      over records with a timestamp (>= 0)
``no_timestamp_records``   records without one (v0, or -1)
``crc_failures``           framed batches whose CRC does not match
``undecodable_batches``    framed batches whose records could not be read
``unreadable_spans/bytes`` byte ranges that could not be framed (torn tails,
                           garbage; ``segment_scan.frame``)
``*_index_entries``        entries of the ``.index`` / ``.timeindex``
``*_index_mismatches``     entries (or files) breaking ``LogSegment.append``'s
                           index rules (``index_check``)
``offset_gaps``            places where a batch's first offset is past the
                           previous batch's last offset + 1 (batches in log
                           order through the partition's segments; counted in
                           the later batch's segment), in a topic that is not
                           compacted: a problem
``cleaned_offset_gaps``    the same in a compacted topic: what the log cleaner
                           removed, not a problem
``missing_offsets``        offsets those gaps (both kinds) skip
``batch_offset_holes``     offsets inside decoded batches without a record
                           (last - first + 1 - records: compaction)
``legacy_batches``         framed batches of magic 0 or 1
``compacted_segments``     segments of compacted topics
``dirty_bytes``            bytes of compacted topics' segments the log cleaner
                           has not cleaned yet (the one holding the partition's
                           first dirty offset, ``cleaner-offset-checkpoint``,
                           and those after it; all of a never-cleaned one)
``dirty_ratio``            (partitions, topics) dirty_bytes / bytes of the
                           compacted segments; None without any
=========================  ====================================================

``batch_kinds``: per segment, magic and codec: framed batches, undecodable
ones, and records / stored bytes / uncompressed bytes of the decoded ones.
``timeline``: records of decoded batches (CRC not failed) per topic and hour
of the batch's largest record timestamp. ``problems``: one row per unreadable span, CRC
failure, undecodable batch, index mismatch and offset gap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from broker.records import legacy
from broker.records.batch import MAGIC_V2, RECORD_BATCH_OVERHEAD, CompressionType
from broker.records.entries import Entry
from broker.records.iterate import DEFAULT_MAX_DECOMPRESSED_BYTES, Batch
from broker.spark.index_check import (
    BatchExtent,
    check_offset_index,
    check_time_index,
    load_offset_index,
    load_time_index,
)
from broker.spark.layout import SegmentFile, discover
from broker.spark.segment_scan import DECODE_ERRORS, SegmentBytes, codec_name, frame

HOUR_MS = 3_600_000

SEGMENT_COUNTERS = (
    "bytes",
    "batches",
    "records",
    "record_batch_bytes",
    "uncompressed_bytes",
    "no_timestamp_records",
    "crc_failures",
    "undecodable_batches",
    "unreadable_spans",
    "unreadable_bytes",
    "offset_index_entries",
    "offset_index_mismatches",
    "time_index_entries",
    "time_index_mismatches",
    "offset_gaps",
    "cleaned_offset_gaps",
    "missing_offsets",
    "batch_offset_holes",
    "legacy_batches",
    "compacted_segments",
    "dirty_bytes",
)
#: the counters that count problems (the audit's "problems" figure is their sum)
PROBLEM_COUNTERS = (
    "crc_failures",
    "undecodable_batches",
    "unreadable_spans",
    "offset_index_mismatches",
    "time_index_mismatches",
    "offset_gaps",
)
SEGMENT_MINIMA = ("first_offset", "min_timestamp")
SEGMENT_MAXIMA = ("last_offset", "max_timestamp")

PROBLEM_UNREADABLE = "unreadable"
PROBLEM_CRC = "crc"
PROBLEM_UNDECODABLE = "undecodable"
PROBLEM_OFFSET_INDEX = "offset-index"
PROBLEM_TIME_INDEX = "time-index"
PROBLEM_GAP = "gap"

Row = dict[str, Any]


@dataclass
class AuditTables:
    """The audit's tables as lists of rows (column name -> value)."""

    segments: list[Row] = field(default_factory=list)
    batch_kinds: list[Row] = field(default_factory=list)
    partitions: list[Row] = field(default_factory=list)
    topics: list[Row] = field(default_factory=list)
    problems: list[Row] = field(default_factory=list)
    timeline: list[Row] = field(default_factory=list)


@dataclass
class _Decoded:
    """What the walk of one batch found (None: not known)."""

    position: int
    size: int
    magic: int
    codec: int
    base_offset: int | None
    last_offset: int
    header_max_timestamp: int
    crc_valid: bool | None
    records: int | None = None
    uncompressed_bytes: int | None = None
    timestamps: list[int] = field(default_factory=list)
    error: str | None = None


def problem_count(counters: Mapping[str, Any]) -> int:
    """Problems in one row of counters (a segment, a partition or the totals)."""
    return sum(int(counters.get(c) or 0) for c in PROBLEM_COUNTERS)


def ratio(uncompressed: int | None, stored: int | None) -> float | None:
    if not stored or uncompressed is None:
        return None
    return uncompressed / stored


def _decode(buf: Any, entry: Entry, verify_crc: bool, max_bytes: int) -> _Decoded:
    b = Batch(buf, entry)
    if b.magic == MAGIC_V2:
        h = b.header()
        out = _Decoded(
            entry.position,
            entry.size_in_bytes,
            h.magic,
            h.compression_type,
            h.base_offset,
            h.last_offset,
            h.max_timestamp,
            b.is_valid if verify_crc else None,
        )
    else:
        lh = b.legacy_header()
        out = _Decoded(
            entry.position,
            entry.size_in_bytes,
            lh.magic,
            lh.compression_type,
            None if lh.compression_type else lh.offset,
            lh.offset,
            lh.timestamp,
            b.is_valid if verify_crc else None,
        )
    try:
        records = b.records(max_decompressed_bytes=max_bytes)
    except DECODE_ERRORS as exc:
        out.error = f"undecodable batch: {exc}"
        return out
    out.records = len(records)
    out.timestamps = [r.timestamp for r in records]
    record_bytes = sum(r.size_in_bytes for r in records)
    if b.magic == MAGIC_V2:
        out.uncompressed_bytes = RECORD_BATCH_OVERHEAD + record_bytes
    elif out.codec == CompressionType.NONE:
        out.uncompressed_bytes = entry.size_in_bytes
    else:
        value_len = legacy.key_value_spans(buf, entry.position, entry.size_in_bytes)[3]
        out.uncompressed_bytes = entry.size_in_bytes - value_len + record_bytes
    if out.base_offset is None and records:
        out.base_offset = records[0].offset
    return out


def _segment_row(seg: SegmentFile) -> Row:
    row: Row = {
        "log_dir": seg.log_dir,
        "topic": seg.topic,
        "partition": seg.partition,
        "segment": seg.path,
        "segment_base_offset": seg.base_offset,
    }
    for name in SEGMENT_COUNTERS:
        row[name] = 0
    for name in (*SEGMENT_MINIMA, *SEGMENT_MAXIMA):
        row[name] = None
    return row


def _lower(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _higher(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _problem(
    seg: SegmentFile, position: int | None, offset: int | None, kind: str, detail: str
) -> Row:
    return {
        "log_dir": seg.log_dir,
        "topic": seg.topic,
        "partition": seg.partition,
        "segment": seg.path,
        "segment_base_offset": seg.base_offset,
        "position": position,
        "offset": offset,
        "kind": kind,
        "detail": detail,
    }


@dataclass
class PartitionWalk:
    """Gap detection across the segments of one partition: the last offset
    of the latest batch with a known first offset."""

    last: int | None = None


def audit_segment(
    seg: SegmentFile,
    tables: AuditTables,
    walk: PartitionWalk,
    *,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Row:
    row = _segment_row(seg)
    kinds: dict[tuple[int, str], Row] = {}
    extents: list[BatchExtent] = []
    hours: dict[tuple[str, int], int] = defaultdict(int)
    index = load_offset_index(seg.offset_index_path, seg.base_offset)
    positions = sorted({p for _, p in index.entries})
    with SegmentBytes(seg.path) as data:
        buf = data.buf
        row["bytes"] = data.size
        row["compacted_segments"] = int(seg.compacted)
        row["dirty_bytes"] = data.size if seg.dirty else 0
        for span in frame(buf, data.size, 0, None, positions):
            if not span.readable:
                row["unreadable_spans"] += 1
                row["unreadable_bytes"] += span.size
                tables.problems.append(
                    _problem(seg, span.position, None, PROBLEM_UNREADABLE, span.problem or "")
                )
                continue
            d = _decode(
                buf,
                Entry(span.position, span.size, span.magic, 0),
                verify_crc,
                max_decompressed_bytes,
            )
            extents.append(
                BatchExtent(d.position, d.position + d.size, d.last_offset, d.header_max_timestamp)
            )
            row["batches"] += 1
            if d.magic < MAGIC_V2:
                row["legacy_batches"] += 1
            kind = kinds.setdefault(
                (d.magic, codec_name(d.codec)),
                {
                    "batches": 0,
                    "undecodable": 0,
                    "records": 0,
                    "stored_bytes": 0,
                    "uncompressed_bytes": 0,
                },
            )
            kind["batches"] += 1
            row["last_offset"] = _higher(row["last_offset"], d.last_offset)
            row["first_offset"] = _lower(row["first_offset"], d.base_offset)
            if d.crc_valid is False:
                row["crc_failures"] += 1
                tables.problems.append(
                    _problem(
                        seg,
                        d.position,
                        d.last_offset,
                        PROBLEM_CRC,
                        f"CRC mismatch in a magic v{d.magic} batch",
                    )
                )
            if d.error is not None:
                row["undecodable_batches"] += 1
                kind["undecodable"] += 1
                offset = d.base_offset if d.base_offset is not None else d.last_offset
                tables.problems.append(
                    _problem(seg, d.position, offset, PROBLEM_UNDECODABLE, d.error)
                )
            else:
                assert d.records is not None and d.uncompressed_bytes is not None
                row["records"] += d.records
                row["record_batch_bytes"] += d.size
                row["uncompressed_bytes"] += d.uncompressed_bytes
                kind["records"] += d.records
                kind["stored_bytes"] += d.size
                kind["uncompressed_bytes"] += d.uncompressed_bytes
                stamped = [t for t in d.timestamps if t >= 0]
                row["no_timestamp_records"] += len(d.timestamps) - len(stamped)
                if stamped:
                    row["min_timestamp"] = _lower(row["min_timestamp"], min(stamped))
                    row["max_timestamp"] = _higher(row["max_timestamp"], max(stamped))
                    if d.crc_valid is not False:  # a damaged batch's timestamps mislead
                        hours[(seg.topic, max(stamped) // HOUR_MS * HOUR_MS)] += d.records
                if d.base_offset is not None:
                    holes = d.last_offset - d.base_offset + 1 - d.records
                    row["batch_offset_holes"] += max(holes, 0)
            if d.base_offset is not None:
                if walk.last is not None and d.base_offset > walk.last + 1:
                    missing = d.base_offset - walk.last - 1
                    row["missing_offsets"] += missing
                    if seg.compacted:
                        row["cleaned_offset_gaps"] += 1
                    else:
                        row["offset_gaps"] += 1
                    if not seg.compacted:
                        tables.problems.append(
                            _problem(
                                seg,
                                d.position,
                                walk.last + 1,
                                PROBLEM_GAP,
                                f"{missing} offsets missing before offset {d.base_offset}",
                            )
                        )
                walk.last = d.last_offset
        time_index = load_time_index(seg.time_index_path, seg.base_offset)
        for finding in check_offset_index(index, extents, data.size):
            if finding.slot >= 0:
                row["offset_index_entries"] += 1
            if finding.mismatch:
                row["offset_index_mismatches"] += 1
                tables.problems.append(
                    _problem(
                        seg,
                        finding.position,
                        finding.offset,
                        PROBLEM_OFFSET_INDEX,
                        f"slot {finding.slot}: {finding.problem}",
                    )
                )
        for finding in check_time_index(time_index, extents, segment_is_last=seg.is_last):
            if finding.slot >= 0:
                row["time_index_entries"] += 1
            if finding.mismatch:
                row["time_index_mismatches"] += 1
                tables.problems.append(
                    _problem(
                        seg,
                        None,
                        finding.offset,
                        PROBLEM_TIME_INDEX,
                        f"slot {finding.slot}: {finding.problem}",
                    )
                )
    row["compression_ratio"] = ratio(row["uncompressed_bytes"], row["record_batch_bytes"])
    for (magic, codec), kind in sorted(kinds.items()):
        tables.batch_kinds.append(
            {
                "log_dir": seg.log_dir,
                "topic": seg.topic,
                "partition": seg.partition,
                "segment": seg.path,
                "segment_base_offset": seg.base_offset,
                "magic": magic,
                "codec": codec,
                **kind,
                "compression_ratio": ratio(kind["uncompressed_bytes"], kind["stored_bytes"]),
            }
        )
    for (topic, hour), records in hours.items():
        tables.timeline.append({"topic": topic, "hour": hour, "records": records})
    tables.segments.append(row)
    return row


def roll_up(rows: Sequence[Row], keys: Sequence[str], count_name: str) -> list[Row]:
    """Rows of ``rows`` added up per ``keys`` (counters summed, minima and
    maxima kept), with how many rows each group had as ``count_name``."""
    groups: dict[tuple[Any, ...], Row] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        group = groups.get(key)
        if group is None:
            group = {k: row[k] for k in keys}
            group[count_name] = 0
            for name in SEGMENT_COUNTERS:
                group[name] = 0
            for name in (*SEGMENT_MINIMA, *SEGMENT_MAXIMA):
                group[name] = None
            groups[key] = group
        group[count_name] += 1
        for name in SEGMENT_COUNTERS:
            group[name] += row[name]
        for name in SEGMENT_MINIMA:
            group[name] = _lower(group[name], row[name])
        for name in SEGMENT_MAXIMA:
            group[name] = _higher(group[name], row[name])
    out = []
    for key in sorted(groups):
        group = groups[key]
        group["compression_ratio"] = ratio(group["uncompressed_bytes"], group["record_batch_bytes"])
        group["dirty_ratio"] = dirty_ratio(group)
        out.append(group)
    return out


def dirty_ratio(group: Mapping[str, Any]) -> float | None:
    """How much of a group's compacted bytes the log cleaner has yet to clean."""
    if not group["compacted_segments"]:
        return None
    return group["dirty_bytes"] / group["bytes"] if group["bytes"] else 0.0


def _merge_timeline(rows: Iterable[Row]) -> list[Row]:
    merged: dict[tuple[str, int], int] = defaultdict(int)
    for row in rows:
        merged[(row["topic"], row["hour"])] += row["records"]
    return [{"topic": t, "hour": h, "records": n} for (t, h), n in sorted(merged.items())]


def audit(
    paths: Iterable[str],
    *,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> AuditTables:
    """Every table of the audit for the segments ``paths`` name."""
    tables = AuditTables()
    walks: dict[tuple[str, str, int], PartitionWalk] = {}
    for seg in discover(paths):
        walk = walks.setdefault((seg.log_dir, seg.topic, seg.partition), PartitionWalk())
        audit_segment(
            seg, tables, walk, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes
        )
    tables.partitions = roll_up(tables.segments, ("log_dir", "topic", "partition"), "segments")
    per_topic = roll_up(tables.segments, ("topic",), "segments")
    partition_counts: dict[str, int] = defaultdict(int)
    for row in tables.partitions:
        partition_counts[row["topic"]] += 1
    for row in per_topic:
        row["partitions"] = partition_counts[row["topic"]]
    tables.topics = per_topic
    tables.timeline = _merge_timeline(tables.timeline)
    return tables
