"""Which segment files a path names (``broker.spark.layout``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.files import TopicPartition
from broker.spark.layout import LayoutError, discover, split_paths
from tests.spark_logs import legacy_appends, v2_appends, write_log_dir


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    a, _ = v2_appends(30, 4)  # several segments at segment.bytes 4096
    b, _ = legacy_appends(1, 3, 2)
    write_log_dir(tmp_path / "logs", {TopicPartition("a", 0): a, TopicPartition("b-x", 3): b})
    return tmp_path / "logs"


def test_a_log_dir_names_every_segment_in_offset_order(log_dir: Path) -> None:
    segments = discover([str(log_dir)])
    assert {(s.topic, s.partition) for s in segments} == {("a", 0), ("b-x", 3)}
    a = [s for s in segments if s.topic == "a"]
    assert len(a) > 1
    assert [s.base_offset for s in a] == sorted(s.base_offset for s in a)
    # each segment covers up to the next one's base offset; the last is open-ended
    assert [s.next_base_offset for s in a[:-1]] == [s.base_offset for s in a[1:]]
    assert a[-1].next_base_offset is None and a[-1].is_last
    assert all(s.size == Path(s.path).stat().st_size for s in segments)


def test_a_partition_folder_and_a_segment_file(log_dir: Path) -> None:
    whole = discover([str(log_dir / "a-0")])
    assert {s.topic for s in whole} == {"a"}
    one = discover([whole[1].path])
    assert one == [whole[1]]  # the file keeps its neighbours' offsets
    # the same file twice, and through its folder, is read once
    assert discover([whole[1].path, str(log_dir / "a-0")]) == whole


def test_folders_being_deleted_and_suffixed_files_are_not_the_log(log_dir: Path) -> None:
    (log_dir / "a-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    src = discover([str(log_dir / "a-0")])[0]
    Path(src.path + ".deleted").write_bytes(b"x" * 40)
    (log_dir / "a-0" / "00000000000000009999.log.swap").write_bytes(b"y" * 40)
    assert {s.path for s in discover([str(log_dir)])} == {
        s.path for s in discover([str(log_dir / "a-0"), str(log_dir / "b-x-3")])
    }


def test_paths_that_are_not_logs_are_refused(tmp_path: Path, log_dir: Path) -> None:
    with pytest.raises(LayoutError, match="does not exist"):
        discover([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LayoutError, match="neither"):
        discover([str(tmp_path / "empty")])
    with pytest.raises(LayoutError, match="not a segment file"):
        discover([str(log_dir / "a-0" / "leader-epoch-checkpoint")])
    stray = tmp_path / "loose" / "00000000000000000000.log"
    stray.parent.mkdir()
    stray.write_bytes(b"")
    with pytest.raises(LayoutError, match="topic and partition"):
        discover([str(stray)])


def test_option_paths() -> None:
    assert split_paths("/a/b") == ["/a/b"]
    assert split_paths('["/a", "/b c"]') == ["/a", "/b c"]
    with pytest.raises(LayoutError):
        split_paths("[1, 2]")
