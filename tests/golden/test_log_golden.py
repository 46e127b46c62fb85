"""Byte-for-byte: files written by the log equal Kafka's formats, built here by hand.

See VECTORS.md for where each layout comes from.
"""

from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from broker.log.offset_index import OffsetIndex
from broker.log.producer_state import ProducerStateManager
from broker.log.time_index import TimeIndex


def hand_batch(
    base_offset: int, value: bytes, timestamp: int, producer_id: int = -1, seq: int = -1
) -> bytes:
    """One v2 batch with one record (key null), every field spelled out."""
    # record: length | attributes | timestampDelta | offsetDelta | keyLength(-1) | valueLength | value | headers
    body = b"\x00" + b"\x00" + b"\x00" + b"\x01" + bytes([len(value) * 2]) + value + b"\x00"
    record = bytes([len(body) * 2]) + body
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            0,  # attributes: no codec, CreateTime
            0,  # lastOffsetDelta
            timestamp,  # baseTimestamp
            timestamp,  # maxTimestamp
            producer_id,
            0 if producer_id >= 0 else -1,  # producerEpoch
            seq,  # baseSequence
            1,  # records count
        )
        + record
    )
    batch_length = 4 + 1 + 4 + len(after_crc)  # epoch + magic + crc + rest
    return (
        struct.pack(">qiib", base_offset, batch_length, 0, 2)
        + struct.pack(">I", crc32c(after_crc))
        + after_crc
    )


def test_segment_files_are_kafka_bytes(tmp_path: Path) -> None:
    b1 = hand_batch(0, b"a", 1000)
    b2 = hand_batch(1, b"b", 2000)
    b3 = hand_batch(2, b"c", 3000, producer_id=1000, seq=0)
    assert len(b1) == len(b2) == len(b3) == 69

    log_dir = tmp_path / "data"
    manager = LogManager([log_dir])
    manager.startup()
    manager.create_topic("golden", 1, {"index.interval.bytes": "60"})
    log = manager.get_log(TopicPartition("golden", 0))
    assert log is not None
    for batch in (b1, b2, b3):
        log.append(batch)
    manager.shutdown()

    part = log_dir / "golden-0"
    assert (part / "00000000000000000000.log").read_bytes() == b1 + b2 + b3
    # interval 60: append 1 never indexed; append 2 (69 bytes since) -> (1, 69);
    # append 3 -> (2, 138); entries are (relative offset, position)
    assert (part / "00000000000000000000.index").read_bytes() == bytes.fromhex(
        "00000001 00000045 00000002 0000008a"
    )
    # time entries go with the index entries, max timestamp so far; the close
    # entry (3000, 2) is not new, so not repeated
    assert (part / "00000000000000000000.timeindex").read_bytes() == bytes.fromhex(
        "00000000000007d0 00000001 0000000000000bb8 00000002"
    )
    entry = struct.pack(">qhiqiqiq", 1000, 0, 0, 2, 0, 3000, -1, -1)
    body = struct.pack(">i", 1) + entry
    snapshot = struct.pack(">h", 1) + struct.pack(">I", crc32c(body)) + body
    assert (part / "00000000000000000003.snapshot").read_bytes() == snapshot
    assert (part / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n0 0\n"
    topic_id = manager.topic_id_string("golden")
    assert (
        part / "partition.metadata"
    ).read_bytes() == f"version: 0\ntopic_id: {topic_id}".encode()
    assert (log_dir / "recovery-point-offset-checkpoint").read_bytes() == b"0\n1\ngolden 0 3\n"
    assert (log_dir / "log-start-offset-checkpoint").read_bytes() == b"0\n0\n"
    assert (log_dir / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert sorted(p.name for p in part.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000003.snapshot",
        "leader-epoch-checkpoint",
        "partition.metadata",
    ]


def test_empty_snapshot(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    state.update_map_end_offset(7)
    path = state.take_snapshot()
    assert path is not None
    assert path.name == "00000000000000000007.snapshot"
    assert path.read_bytes() == bytes.fromhex("0001 48674BC7 00000000")


def test_preallocated_index_sizes(tmp_path: Path) -> None:
    offset_index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 10485760)
    time_index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, 10485760)
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 10485760
    assert (tmp_path / "00000000000000000000.timeindex").stat().st_size == 10485756
    assert (tmp_path / "00000000000000000000.index").read_bytes() == bytes(10485760)
    offset_index.close()
    time_index.close()
