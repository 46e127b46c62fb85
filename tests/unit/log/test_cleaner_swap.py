"""The cleaner's swap and what a restart makes of its files at every step
(Kafka's LogCleanerTest.testRecoveryAfterCrash and LogLoader's swap rules),
the placeholder segment, and readers of replaced segments."""

from __future__ import annotations

import os
from pathlib import Path

from broker.config import TopicConfig
from broker.log import files
from broker.log.unified_log import UnifiedLog
from tests.unit.log.cleaner_helpers import (
    LONG_MAX,
    append_record,
    clean,
    clean_segments,
    key,
    keys_in_log,
    make_cleaner,
    make_log,
    records,
)
from tests.unit.log.helpers import MockTime


def forget_pending_deletes(log: UnifiedLog) -> None:
    """``time.scheduler.clear()``: the ``.deleted`` files stay on disk."""
    local = log.local_log
    for _deadline, segments in local._pending_deletes:
        for segment in segments:
            segment.close_handlers()
    local._pending_deletes = []


def recover_and_check(directory: Path, config: TopicConfig, expected_keys: list[int]) -> UnifiedLog:
    """``recoverAndCheck``: open after an unclean stop, compare the keys."""
    log = UnifiedLog.open(directory, config, recovery_point=0, time_ms=MockTime())
    assert keys_in_log(log) == expected_keys
    offsets = [r.offset for _, r in records(log)]
    assert offsets == sorted(set(offsets))
    names = [p.name for p in directory.iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    return log


def rename_suffix(path: Path, old: str, new: str) -> None:
    name = path.name[: -len(old)] if old else path.name
    os.replace(path, path.with_name(name + new))


def undelete(directory: Path) -> None:
    for path in directory.iterdir():
        if path.name.endswith(files.DELETED_FILE_SUFFIX):
            rename_suffix(path, files.DELETED_FILE_SUFFIX, "")


def first_segment_files(directory: Path, suffix: str = "") -> list[Path]:
    first = min(
        files.offset_from_file_name(p.name) for p in directory.iterdir() if p.name.endswith(".log")
    )
    prefix = files.filename_prefix_from_offset(first)
    return [
        p
        for p in directory.iterdir()
        if p.name.startswith(prefix)
        and p.name.endswith(suffix)
        and not p.name.endswith((".snapshot", ".deleted"))
    ]


def fill(log: UnifiedLog, count: list[int]) -> None:
    while log.number_of_segments < 10:
        append_record(log, log.log_end_offset, log.log_end_offset)
        count[0] += 1


def test_recovery_after_crash(tmp_path: Path) -> None:
    cleaner = make_cleaner(2**31 - 1)
    log = make_log(tmp_path, segment_bytes=300, index_interval_bytes=1, file_delete_delay_ms=10)
    config, directory = log.config, log.dir
    count = [0]
    fill(log, count)
    all_keys = keys_in_log(log)

    def odd_keys_gone() -> None:
        for k in range(1, count[0], 2):
            cleaner.offset_map.put(key(k), LONG_MAX)

    odd_keys_gone()
    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    log.close()

    # 1) crash just after the .cleaned files were written: the cleaning is undone
    for path in first_segment_files(directory):
        rename_suffix(path, "", files.CLEANED_FILE_SUFFIX)
    undelete(directory)
    log = recover_and_check(directory, config, all_keys)

    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    log.close()

    # 2) crash while the .cleaned files were being renamed .swap: undone
    for path in first_segment_files(directory):
        rename_suffix(path, "", files.CLEANED_FILE_SUFFIX)
    (log_file,) = (p for p in directory.iterdir() if p.name.endswith(".log.cleaned"))
    rename_suffix(log_file, files.CLEANED_FILE_SUFFIX, files.SWAP_FILE_SUFFIX)
    undelete(directory)
    log = recover_and_check(directory, config, all_keys)

    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    cleaned_keys = keys_in_log(log)
    log.close()

    # 3) crash after the .swap files, before the old segments were renamed .deleted: finished
    for path in first_segment_files(directory):
        rename_suffix(path, "", files.SWAP_FILE_SUFFIX)
    undelete(directory)
    log = recover_and_check(directory, config, cleaned_keys)

    fill(log, count)
    odd_keys_gone()
    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    cleaned_keys = keys_in_log(log)
    log.close()

    # 4) crash after the old segments were renamed .deleted, before .swap -> final: finished
    for path in first_segment_files(directory):
        rename_suffix(path, "", files.SWAP_FILE_SUFFIX)
    log = recover_and_check(directory, config, cleaned_keys)

    fill(log, count)
    odd_keys_gone()
    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    cleaned_keys = keys_in_log(log)
    log.close()

    # 5) crash while the .swap files were being renamed: finished
    (time_index,) = (p for p in first_segment_files(directory) if p.name.endswith(".timeindex"))
    rename_suffix(time_index, "", files.SWAP_FILE_SUFFIX)
    log = recover_and_check(directory, config, cleaned_keys)

    fill(log, count)
    odd_keys_gone()
    clean_segments(cleaner, log, 9)
    forget_pending_deletes(log)
    cleaned_keys = keys_in_log(log)
    log.close()

    # 6) crash after the swap, before the .deleted files were removed
    log = recover_and_check(directory, config, cleaned_keys)
    log.close()


def cleaned_away_log(tmp_path: Path) -> UnifiedLog:
    """Segments [0: keys 1, 2][1: key 9][2: key 9][3: key 9][active], with
    segment.bytes such that the first three are one group: the cleaned group
    ends at offset 1, before segment 2's base (key 9's latest value is in 3)."""
    log = make_log(tmp_path)
    append_record(log, 1, 1)
    append_record(log, 2, 2)
    log.roll()
    for _ in range(3):
        append_record(log, 9, log.log_end_offset)
        log.roll()
    import dataclasses

    log.config = dataclasses.replace(
        log.config, segment_bytes=sum(s.size for s in log.segments[:3])
    )
    return log


def crash_mid_delete(directory: Path, group: list[int], keep_placeholder: bool) -> None:
    """Turn the files of a finished swap of ``group`` (base offsets) back into
    those of a crash right after its first old segment was renamed ``.deleted``."""
    prefixes = [files.filename_prefix_from_offset(o) for o in group]
    first, last = prefixes[0], prefixes[-1]
    for path in list(directory.iterdir()):
        if path.name.endswith(".deleted") and path.name[:20] in prefixes[1:]:
            rename_suffix(path, files.DELETED_FILE_SUFFIX, "")
    for suffix in (".log", ".index", ".timeindex"):
        rename_suffix(directory / f"{first}{suffix}", "", files.SWAP_FILE_SUFFIX)
        if keep_placeholder:
            (directory / f"{last}{suffix}{files.SWAP_FILE_SUFFIX}").write_bytes(b"")


def test_placeholder_keeps_a_crashed_swap_whole(tmp_path: Path) -> None:
    """Kafka finishes an interrupted swap by deleting the old files in [first base,
    next offset of the swap). When a group's later segments were cleaned away
    entirely that range misses them, and a crash after only some old segments
    were renamed ``.deleted`` would leave the others (obsolete records) in the
    log. The empty placeholder at the last old base closes that hole."""
    for keep_placeholder in (True, False):
        log = cleaned_away_log(tmp_path / str(keep_placeholder))
        config, directory = log.config, log.dir
        clean(make_cleaner(10_000), log, 0)
        after = [(r.offset, r.key, r.value) for _, r in records(log)]
        assert [o for o, _, _ in after] == [0, 1, 4]
        forget_pending_deletes(log)
        names = [p.name for p in directory.iterdir()]
        assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
        log.close()
        crash_mid_delete(directory, [0, 2, 3], keep_placeholder)
        log = UnifiedLog.open(directory, config, recovery_point=0, time_ms=MockTime())
        got = [(r.offset, r.key, r.value) for _, r in records(log)]
        if keep_placeholder:
            assert got == after
        else:  # Kafka's files alone: the obsolete records of segments 2 and 3 come back
            assert [o for o, _, _ in got] == [0, 1, 2, 3, 4]
        log.close()


def test_a_reader_of_a_replaced_segment_still_reads_its_bytes(tmp_path: Path) -> None:
    """A fetch holds a file slice of a segment the cleaner replaces: the old file
    is renamed ``.deleted`` and kept open until file.delete.delay.ms."""
    clock = MockTime()
    log = make_log(tmp_path, clock, segment_bytes=300, file_delete_delay_ms=60_000)
    for i in range(20):
        append_record(log, i % 3, i)
    log.roll()
    info = log.read(0, 10_000)
    assert info.records is not None
    expected = info.records.read()
    clean(make_cleaner(100), log, 0)
    assert info.records.read() == expected
    assert (log.dir / "00000000000000000000.log.deleted").exists()
    assert log.delete_expired_files(clock() + 59_999) == 0
    assert log.delete_expired_files(clock() + 60_000) > 0
    assert not [p for p in log.dir.iterdir() if p.name.endswith(files.DELETED_FILE_SUFFIX)]
    log.close()


def test_the_swap_is_refused_when_the_log_changed(tmp_path: Path) -> None:
    log = make_log(tmp_path)
    for i in range(30):
        append_record(log, i % 3, i)
    log.roll()
    from broker.log.cleaning_plan import LogToClean, prepare_job
    from broker.log.errors import LogCleaningAbortedError
    from tests.unit.log.cleaner_helpers import TP

    job = prepare_job(LogToClean.of(TP, log, 0, log.active_segment.base_offset), 0)
    log.mark_deleted()
    cleaner = make_cleaner(100)
    import pytest

    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean(job)
    assert not [p for p in log.dir.iterdir() if ".cleaned" in p.name or ".swap" in p.name]
    log.close_handlers()
