"""``broker dump-log``: Kafka's kafka-dump-log.sh lines, legacy segments, --json."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from broker.cli import main as cli_main
from broker.config import TopicConfig
from broker.log import dump
from broker.log.transaction_index import AbortedTxn, TransactionIndex
from broker.log.unified_log import UnifiedLog
from broker.records.batch import CompressionType, read_header
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.unit.log.batches import v2_batch
from tests.unit.log.helpers import MockTime


def run_dump(*argv: str) -> tuple[int, str, str]:
    parser = __import__("argparse").ArgumentParser()
    dump.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    status = dump.run(parser.parse_args(list(argv)), out, err)
    return status, out.getvalue(), err.getvalue()


def make_log(tmp_path: Path, interval: int = 10) -> tuple[Path, list[bytes]]:
    log = UnifiedLog.open(
        tmp_path / "t-0", TopicConfig(index_interval_bytes=interval), time_ms=MockTime()
    )
    batches = [
        v2_batch(0, [b"hello", b"there"], keys=[b"k1", None], base_timestamp=1000),
        v2_batch(
            2,
            [b"x"],
            producer_id=7,
            producer_epoch=1,
            base_sequence=5,
            base_timestamp=1005,
            partition_leader_epoch=3,
        ),
    ]
    for b in batches:
        log.append(b)
    log.close()
    return tmp_path / "t-0", batches


def test_log_lines_are_kafkas(tmp_path: Path) -> None:
    part, batches = make_log(tmp_path)
    path = part / "00000000000000000000.log"
    status, out, _ = run_dump("--files", str(path), "--print-data-log")
    assert status == 0
    h0, h1 = read_header(batches[0]), read_header(batches[1])
    assert out.splitlines() == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1000 size: {len(batches[0])} "
        f"magic: 2 compresscodec: none crc: {h0.crc} isvalid: true",
        "| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [] key: k1 payload: hello",
        "| offset: 1 CreateTime: 1000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: there",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 5 lastSequence: 5 producerId: 7 "
        "producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: {len(batches[0])} CreateTime: 1005 "
        f"size: {len(batches[1])} magic: 2 compresscodec: none crc: {h1.crc} isvalid: true",
        "| offset: 2 CreateTime: 1005 keySize: -1 valueSize: 1 sequence: 5 headerKeys: [] payload: x",
    ]


def test_shallow_by_default_and_decoders(tmp_path: Path) -> None:
    part, _ = make_log(tmp_path)
    path = str(part / "00000000000000000000.log")
    _, shallow, _ = run_dump("--files", path)
    assert not any(line.startswith("|") for line in shallow.splitlines())
    _, hexed, _ = run_dump(
        "--files", path, "--value-decoder-class", "hex", "--key-decoder-class", "none"
    )
    assert (
        "| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [] payload: 68656c6c6f"
        in hexed
    )
    _, bare, _ = run_dump("--files", path, "--print-data-log", "--skip-record-metadata")
    assert "| key: k1 payload: hello" in bare.splitlines()


def test_legacy_segments_as_old_brokers_wrote_them(tmp_path: Path) -> None:
    v0 = build_legacy([SimpleRecord(value=b"a"), SimpleRecord(value=b"b")], magic=0, base_offset=0)
    v1 = build_legacy(
        [SimpleRecord(timestamp=50, key=b"k", value=b"c"), SimpleRecord(timestamp=60, value=b"d")],
        magic=1,
        base_offset=2,
        compression_type=CompressionType.GZIP,
    )
    part = tmp_path / "old-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(v0.buffer) + bytes(v1.buffer))
    status, out, err = run_dump(
        "--files", str(part / "00000000000000000000.log"), "--deep-iteration"
    )
    assert status == 0, err
    lines = out.splitlines()
    assert lines[2].startswith("offset: 0 position: 0 NoTimestampType: -1 size: ")
    assert lines[2].endswith("magic: 0 compresscodec: none crc: " + lines[2].split("crc: ")[1])
    assert lines[3].startswith(
        "| offset: 0 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true crc: "
    )
    assert lines[3].endswith("}")
    wrapper = [line for line in lines if line.startswith("offset: 3 ")]
    assert (
        wrapper and "CreateTime: 60" in wrapper[0] and "magic: 1 compresscodec: gzip" in wrapper[0]
    )
    inner = [line for line in lines if line.startswith(("| offset: 2 ", "| offset: 3 "))]
    assert [line.split()[4] for line in inner] == ["50", "60"]


def test_index_and_time_index_and_mismatches(tmp_path: Path) -> None:
    part, batches = make_log(tmp_path)
    index = part / "00000000000000000000.index"
    status, out, err = run_dump("--files", f"{index},{part / '00000000000000000000.timeindex'}")
    assert status == 0 and err == ""
    assert f"offset: 2 position: {len(batches[0])}" in out
    assert "timestamp: 1005 offset: 2" in out
    _, sane, _ = run_dump("--files", str(index), "--index-sanity-check")
    assert f"{index} passed sanity check." in sane
    data = bytearray(index.read_bytes())
    data[3] = 1  # the entry now claims offset 1 at the second batch's position
    index.write_bytes(bytes(data))
    _, verify, err = run_dump("--files", str(index), "--verify-index-only")
    assert verify.splitlines() == [f"Dumping {index}"]
    assert f"Mismatches in :{index.absolute()}" in err
    assert "  Index offset: 1, log offset: 2" in err


def test_snapshot_and_unknown_files(tmp_path: Path) -> None:
    part, _ = make_log(tmp_path)
    snapshot = part / "00000000000000000003.snapshot"
    _, out, _ = run_dump("--files", f"{snapshot},{part / 'leader-epoch-checkpoint'}")
    assert (
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1005 firstSequence: 5 lastSequence: 5 lastOffset: 2 "
        "offsetDelta: 0 timestamp: 1005"
    ) in out.splitlines()


def test_trailing_bytes_and_max_bytes(tmp_path: Path) -> None:
    part, batches = make_log(tmp_path)
    path = part / "00000000000000000000.log"
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    _, out, _ = run_dump("--files", str(path))
    assert out.splitlines()[-1] == "Found 10 invalid bytes at the end of 00000000000000000000.log"
    _, limited, _ = run_dump("--files", str(path), "--max-bytes", str(len(batches[0]) + 5))
    assert sum(line.startswith("baseOffset") for line in limited.splitlines()) == 1
    assert "invalid bytes" not in limited


def test_json(tmp_path: Path) -> None:
    part, _ = make_log(tmp_path)
    _, out, _ = run_dump(
        "--files", str(part / "00000000000000000000.log"), "--json", "--print-data-log"
    )
    doc = json.loads(out)
    assert doc["type"] == "log" and len(doc["batches"]) == 2
    assert doc["batches"][0]["records"][0]["payload"] == "hello"
    assert doc["batches"][1]["producer_id"] == 7


def test_registered_in_the_broker_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part, _ = make_log(tmp_path)
    assert cli_main(["dump-log", "--files", str(part / "00000000000000000000.index")]) == 0
    assert "offset: 2 position:" in capsys.readouterr().out


def test_a_cleaned_segment_dumps_like_kafka_dump_log(tmp_path: Path) -> None:
    """After the log cleaner: an empty batch (count: 0, the producer's last
    sequence kept), a batch with a delete horizon (deleteHorizonMs:
    OptionalLong[...]) and a tombstone (no payload), offset gaps reported as
    Kafka's tool reports them with --deep-iteration."""
    from tests.unit.log.cleaner_helpers import (
        append_record,
        append_records,
        clean,
        make_cleaner,
    )
    from tests.unit.log.cleaner_helpers import (
        make_log as make_compacted,
    )

    clock = MockTime()
    log = make_compacted(tmp_path, clock)
    append_record(log, 0, 0, producer_id=1, producer_epoch=0, sequence=0)
    append_records(log, [(1, 1), (0, None), (2, 2)])
    append_record(log, 1, 5)
    log.roll()
    clean(make_cleaner(100), log, 0, now=clock())
    path = log.segments[0].log.path
    log.close()
    status, out, err = run_dump("--files", str(path), "--print-data-log", "--deep-iteration")
    assert status == 0
    lines = out.splitlines()
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 0 count: 0 baseSequence: 0 lastSequence: 0"
    )
    assert "producerId: 1 " in lines[2] and "deleteHorizonMs: OptionalLong.empty" in lines[2]
    horizon = clock() + 86_400_000
    assert lines[3].startswith("baseOffset: 1 lastOffset: 3 count: 2 ")
    assert f"deleteHorizonMs: OptionalLong[{horizon}]" in lines[3]
    assert lines[4] == (
        "| offset: 2 CreateTime: 1700000000000 keySize: 1 valueSize: -1 sequence: -1 "
        "headerKeys: [] key: 0"
    )
    assert lines[5].endswith("key: 2 payload: 2")
    assert lines[6].startswith("baseOffset: 4 lastOffset: 4 count: 1 ")
    assert err == ""  # records 2, 3, 4 follow each other: the removed ones sat in whole batches
    # a gap between records of one batch is reported
    log = make_compacted(tmp_path, clock, name="gap-0")
    append_records(log, [(1, 1), (2, 2), (2, 3)])
    log.roll()
    clean(make_cleaner(100), log, 0, now=clock())
    path = log.segments[0].log.path
    log.close()
    status, out, err = run_dump("--files", str(path), "--deep-iteration")
    assert err.splitlines() == [
        f"Non-consecutive offsets in {path.absolute()}",
        "  0 is followed by 2",
    ]


def test_txn_index_lines_are_kafkas(tmp_path: Path) -> None:
    """``DumpLogSegments.dumpTxnIndex``: one line per entry, a trailing partial
    entry not shown; an unknown version stops the dump with the error on stderr."""
    path = tmp_path / "00000000000000000040.txnindex"
    with TransactionIndex(40, path) as index:
        index.append(AbortedTxn(7, 40, 45, 40))
        index.append(AbortedTxn(983493, 137, 299, 200))
    with open(path, "ab") as f:
        f.write(b"\x00" * 5)
    status, out, err = run_dump("--files", str(path))
    assert status == 0 and err == ""
    assert out.splitlines() == [
        f"Dumping {path}",
        "version: 0 producerId: 7 firstOffset: 40 lastOffset: 45 lastStableOffset: 40",
        "version: 0 producerId: 983493 firstOffset: 137 lastOffset: 299 lastStableOffset: 200",
    ]
    _, out, _ = run_dump("--files", str(path), "--json")
    doc = json.loads(out)
    assert doc["type"] == "txnindex"
    assert doc["aborted_txns"][1] == {
        "producer_id": 983493,
        "first_offset": 137,
        "last_offset": 299,
        "lso": 200,
    }
    future = tmp_path / "00000000000000000000.txnindex"
    future.write_bytes(
        AbortedTxn(1, 0, 1, 0).to_bytes() + b"\x00\x01" + AbortedTxn(2, 2, 3, 0).to_bytes()[2:]
    )
    _, out, err = run_dump("--files", str(future))
    assert out.splitlines()[1:] == [
        "version: 0 producerId: 1 firstOffset: 0 lastOffset: 1 lastStableOffset: 0"
    ]
    assert "Unexpected aborted transaction version 1" in err
