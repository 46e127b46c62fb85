"""Checkpoint files, clean-shutdown marker, partition.metadata, meta.properties, snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.checkpoints import (
    CleanShutdownFile,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    read_meta_properties,
    uuid_from_string,
    uuid_to_string,
    write_meta_properties,
)
from broker.log.errors import CheckpointError, CorruptSnapshotError
from broker.log.files import TopicPartition, offset_from_file_name, parse_topic_partition_name
from broker.log.leader_epoch import LeaderEpochCache
from broker.log.producer_state import (
    ProducerStateEntry,
    decode_snapshot,
    encode_snapshot,
)


def test_offset_checkpoint_round_trip_and_format(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    cp.write({TopicPartition("b", 1): 7, TopicPartition("a", 0): 3})
    assert cp.path.read_bytes() == b"0\n2\na 0 3\nb 1 7\n"
    assert cp.read() == {TopicPartition("a", 0): 3, TopicPartition("b", 1): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


@pytest.mark.parametrize(
    "text",
    ["1\n0\n", "0\n2\na 0 3\n", "0\n1\na 0\n", "0\n1\na x 3\n", "x\n", "0\n 1\n"],
)
def test_offset_checkpoint_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        OffsetCheckpointFile(path).read()


def test_empty_or_missing_checkpoint_has_no_entries(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "missing").read() == {}
    (tmp_path / "empty").write_text("")
    assert OffsetCheckpointFile(tmp_path / "empty").read() == {}


def test_leader_epoch_checkpoint_after_assign_and_truncate(tmp_path: Path) -> None:
    """``LeaderEpochCheckpointFile``'s text: ``0\\n1\\n0 0\\n`` after the first append at epoch 0."""
    cache = LeaderEpochCache(tmp_path)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b""
    cache.assign(0, 0)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n0 0\n"
    cache.assign(3, 10)
    cache.assign(2, 5)  # not monotonic: entries at or after it go
    assert LeaderEpochCheckpointFile(tmp_path).read() == [EpochEntry(0, 0), EpochEntry(2, 5)]
    cache.truncate_from_start(7)
    assert cache.entries() == [EpochEntry(2, 7)]
    cache.truncate_from_end(7)
    assert cache.entries() == []


def test_clean_shutdown_marker(tmp_path: Path) -> None:
    marker = CleanShutdownFile(tmp_path)
    marker.write(42)
    assert marker.path.read_bytes() == b'{"version":0,"brokerEpoch":42}'
    assert marker.read_broker_epoch() == 42
    marker.path.write_bytes(b"")  # a pre-3.7 marker: only existence counts
    assert marker.exists() and marker.read_broker_epoch() is None
    marker.delete()
    assert not marker.exists()


def test_partition_metadata(tmp_path: Path) -> None:
    raw = bytes.fromhex("f8f3a1c2d4e5b6a7980102030405060a")
    meta = PartitionMetadataFile(tmp_path)
    meta.write(raw)
    assert meta.path.read_text() == f"version: 0\ntopic_id: {uuid_to_string(raw)}"
    assert meta.read() == raw
    assert uuid_from_string(uuid_to_string(raw)) == raw
    meta.path.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CheckpointError):
        meta.read()


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, {"version": "1", "node.id": "3", "cluster.id": "abc"})
    text = (tmp_path / "meta.properties").read_text()
    assert text.startswith("#\n#")
    assert text.endswith("cluster.id=abc\nnode.id=3\nversion=1\n")
    assert read_meta_properties(tmp_path) == {"version": "1", "node.id": "3", "cluster.id": "abc"}


def test_snapshot_round_trip_and_corruption() -> None:
    entry = ProducerStateEntry(77, 2, 5, 1234)
    entry.add_batch(2, 9, 100, 3, 1234)
    data = encode_snapshot([entry])
    assert len(data) == 10 + 46
    (decoded,) = decode_snapshot(data)
    assert (decoded.producer_id, decoded.producer_epoch, decoded.last_seq, decoded.first_seq) == (
        77,
        2,
        9,
        6,
    )
    assert (decoded.first_data_offset, decoded.last_data_offset, decoded.coordinator_epoch) == (
        97,
        100,
        5,
    )
    corrupt = bytearray(data)
    corrupt[20] ^= 1
    with pytest.raises(CorruptSnapshotError, match="CRC"):
        decode_snapshot(bytes(corrupt))
    with pytest.raises(CorruptSnapshotError, match="version"):
        decode_snapshot(b"\x00\x02" + data[2:])
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(data[:5])


def test_file_names() -> None:
    assert offset_from_file_name("00000000000000000042.log.deleted") == 42
    assert parse_topic_partition_name("my-topic-3") == TopicPartition("my-topic", 3)
    assert parse_topic_partition_name(
        "t-1.0123456789abcdef0123456789abcdef-delete"
    ) == TopicPartition("t", 1)
    for bad in ("nodash", "t-", "-1", "t-x", "t-1.abc-deleted-delete!"):
        with pytest.raises(ValueError):
            parse_topic_partition_name(bad)
