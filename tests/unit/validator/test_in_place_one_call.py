"""The produce hot path in one call (``validate._in_place_v2`` over
``scan.assign_in_place_v2``) against the general path it short-cuts.

Both paths apply the rules of ``scan.assign_in_place_v2``; what the general
path (``validate_messages_and_assign_offsets`` ->
``assign_offsets_non_compressed``, then ``batch_infos``) adds is its layers.
For any single uncompressed v2 batch, ``validate_records`` must give the
same result, leave the same bytes, raise the same error and record the same
metrics whether the one-call path runs (with either twin of
``assign_in_place_v2``) or the general path does (with the pure-Python
reference); the test reaches the general path by making the dispatch's
condition fail. The two twins of ``assign_in_place_v2`` must agree with each
other byte for byte, and change nothing when they reject a batch.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.config_key import LONG_MAX
from broker.errors import KafkaError
from broker.records import _scan_py, scan
from broker.records.batch import write_crc
from broker.validator import validate
from broker.validator.checks import MAX_LISTED_RECORD_ERRORS
from broker.validator.validate import validate_records
from tests.unit.log.batches import v2_batch
from tests.unit.records.twins import TWINS

NOW = 1_700_000_000_000


class CallRecorder:
    """Every metric the validator records, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def record_invalid_magic(self, count: int = 1) -> None:
        self.calls.append(("magic", count))

    def record_invalid_offset(self) -> None:
        self.calls.append(("offset", 1))

    def record_invalid_sequence(self) -> None:
        self.calls.append(("sequence", 1))

    def record_invalid_checksums(self) -> None:
        self.calls.append(("checksum", 1))

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        self.calls.append(("no_key", count))


def _patch(buf: bytearray, fmt: str, pos: int, value: int) -> None:
    struct.pack_into(fmt, buf, pos, value)
    write_crc(buf, 0, len(buf))


@st.composite
def batches(draw: Any) -> bytes:
    """One v2 batch, mostly valid, with the header fields the checks look at
    drawn from their edge values."""
    n = draw(st.integers(1, 12))
    values = draw(st.lists(st.one_of(st.none(), st.binary(max_size=20)), min_size=n, max_size=n))
    keys = draw(st.lists(st.one_of(st.none(), st.binary(max_size=8)), min_size=n, max_size=n))
    base = draw(st.sampled_from([NOW, NOW - 5_000, NOW + 5_000, 0, -1]))
    deltas = draw(
        st.lists(st.sampled_from([0, 1, 7, 999, -3, 4_000, -4_000]), min_size=n, max_size=n)
    )
    attributes = draw(st.sampled_from([0, 0, 0, 0x08, 0x10, 0x20, 0x40, 0x80, 0x18, 0x01, -0x8000]))
    producer_id, producer_epoch, base_sequence = draw(
        st.sampled_from(
            [(-1, -1, -1), (1000, 0, 0), (1000, 2, 2**31 - 3), (1000, 0, -1), (-1, 0, 5)]
        )
    )
    buf = bytearray(
        v2_batch(
            0,
            values,
            keys=keys,
            timestamps=[base + d for d in deltas],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            attributes=attributes,
            partition_leader_epoch=draw(st.sampled_from([0, -1, 7])),
        )
    )
    tweak = draw(
        st.sampled_from(["none"] * 6 + ["max_ts", "count", "delta", "base_offset", "record"])
    )
    if tweak == "max_ts":
        _patch(buf, ">q", 35, draw(st.sampled_from([-1, 0, NOW, 2**62])))
    elif tweak == "count":
        _patch(buf, ">i", 57, draw(st.sampled_from([0, -1, n + 1, n - 1])))
    elif tweak == "delta":
        _patch(buf, ">i", 23, draw(st.sampled_from([-1, n, n - 2, 2**31 - 1])))
    elif tweak == "base_offset":
        _patch(buf, ">q", 0, draw(st.sampled_from([2**63 - 1, 5])))
    elif tweak == "record":
        # the first record's length varint: negative, too long or cut short
        _patch(buf, ">B", 61, draw(st.sampled_from([0x01, 0x7E, 0x00])))
    return bytes(buf)


configs = st.builds(
    TopicConfig,
    cleanup_policy=st.sampled_from([("delete",), ("compact",)]),
    message_timestamp_type=st.sampled_from(["CreateTime", "LogAppendTime"]),
    message_timestamp_before_max_ms=st.sampled_from([LONG_MAX, 1_000, 10_000]),
    message_timestamp_after_max_ms=st.sampled_from([LONG_MAX, 1_000]),
)


def _outcome(
    data: bytes, config: TopicConfig, next_offset: int, epoch: int, twin: Any, one_call: bool
) -> tuple[Any, bytes, list[tuple[str, int]]]:
    """``validate_records`` on a copy of ``data`` with ``twin`` (a twin module) as
    ``scan.assign_in_place_v2``: through the one-call path, or (``one_call``
    False) through the general path."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "assign_in_place_v2", twin.assign_in_place_v2)
        if not one_call:
            patch.setattr(validate, "_V2_ONLY", 0)  # the dispatch's condition fails
        buf = memoryview(bytearray(data))
        recorder = CallRecorder()
        try:
            result: Any = validate_records(
                buf, topic="t", partition=0, config=config, next_offset=next_offset,
                partition_leader_epoch=epoch, now_ms=NOW, produce_version=9,
                recorder=recorder,
            )  # fmt: skip
            got: Any = result._replace(validated_records=bytes(result.validated_records))
        except KafkaError as exc:
            got = (type(exc), str(exc))
        return got, bytes(buf), recorder.calls


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=400, deadline=None)
@given(
    data=batches(),
    config=configs,
    next_offset=st.sampled_from([0, 1, 41, 2**40]),
    epoch=st.sampled_from([-1, 0, 12]),
)
def test_one_call_and_general_path_agree(
    twin: Any, data: bytes, config: TopicConfig, next_offset: int, epoch: int
) -> None:
    assert _outcome(data, config, next_offset, epoch, twin, True) == _outcome(
        data, config, next_offset, epoch, _scan_py, False
    )


def test_the_one_call_path_is_taken_for_a_plain_client_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The property above would pass with the shortcut never taken: count its uses."""
    calls: list[int] = []
    real = scan.assign_in_place_v2

    def counting(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(scan, "assign_in_place_v2", counting)
    data = v2_batch(0, [b"a", b"b"], timestamps=[NOW, NOW + 1])
    buf = memoryview(bytearray(data))
    got = validate_records(
        buf, topic="t", partition=0, config=TopicConfig(), next_offset=5,
        partition_leader_epoch=0, now_ms=NOW, produce_version=9, recorder=CallRecorder(),
    )  # fmt: skip
    assert calls == [True]
    assert (got.first_offset, got.last_offset, got.max_timestamp) == (5, 6, NOW + 1)
    assert got.batches[0].base_offset == 5


def test_the_general_path_is_taken_when_the_dispatch_condition_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_outcome``'s way to the general path does reach it."""
    calls: list[int] = []
    monkeypatch.setattr(validate, "_in_place_v2", lambda *args, **kwargs: calls.append(1))
    monkeypatch.setattr(validate, "_V2_ONLY", 0)
    data = v2_batch(0, [b"a"], timestamps=[NOW])
    got = validate_records(
        memoryview(bytearray(data)), topic="t", partition=0, config=TopicConfig(),
        next_offset=5, partition_leader_epoch=0, now_ms=NOW, produce_version=9,
        recorder=CallRecorder(),
    )  # fmt: skip
    assert calls == []
    assert (got.first_offset, got.last_offset, got.batches[0].base_offset) == (5, 5, 5)


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=300, deadline=None)
@given(
    data=batches(),
    compacted=st.booleans(),
    log_append_time=st.booleans(),
    client_origin=st.booleans(),
    before=st.sampled_from([LONG_MAX, 1_000]),
)
def test_the_twins_agree_and_a_rejected_batch_is_untouched(
    twin: Any,
    data: bytes,
    compacted: bool,
    log_append_time: bool,
    client_origin: bool,
    before: int,
) -> None:
    args = {
        "next_offset": 77,
        "partition_leader_epoch": 3,
        "now": NOW,
        "before_max": before,
        "after_max": LONG_MAX,
        "compacted": compacted,
        "log_append_time": log_append_time,
        "client_origin": client_origin,
        "error_limit": MAX_LISTED_RECORD_ERRORS,
    }
    outcomes = []
    for impl in (_scan_py, twin):
        buf = bytearray(data)
        got: Any
        try:
            got = impl.assign_in_place_v2(memoryview(buf), **args)
        except scan.BatchRejected as rejected:
            got = ("rejected", rejected.check, rejected.errors, rejected.error_counts)
        except KafkaError as exc:
            got = (type(exc), str(exc))
        if isinstance(got[0], str | type):
            assert bytes(buf) == data  # rejected or raised: nothing changed
        outcomes.append((got, bytes(buf)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("size", [0, 60, 61])
def test_a_buffer_without_the_whole_batch_is_refused_alike(twin: Any, size: int) -> None:
    data = bytearray(v2_batch(0, [b"a"], timestamps=[NOW])[:size])
    for impl in (_scan_py, twin):
        with pytest.raises(ValueError, match="does not hold a whole v2 batch"):
            impl.assign_in_place_v2(memoryview(bytearray(data)), next_offset=0,
                                    partition_leader_epoch=0, now=NOW, before_max=LONG_MAX,
                                    after_max=LONG_MAX, compacted=False, log_append_time=False,
                                    client_origin=True, error_limit=1)  # fmt: skip


@pytest.mark.parametrize("twin", TWINS)
@given(
    base_offset=st.sampled_from([0, 5, 2**63 - 1, -(2**63)]),
    last_offset_delta=st.sampled_from([-1, 0, 1, 2, 2**31 - 1, -(2**31)]),
    records_count=st.sampled_from([-1, 0, 1, 2, 3, 2**31 - 1]),
    attributes=st.sampled_from([0, 0x20, 0x10, 0x30, -0x8000, 0x7FFF]),
    producer=st.sampled_from([(-1, -1), (-1, 5), (1000, 0), (1000, -1), (0, -5)]),
)
def test_the_client_batch_checks_agree(
    twin: Any,
    base_offset: int,
    last_offset_delta: int,
    records_count: int,
    attributes: int,
    producer: tuple[int, int],
) -> None:
    producer_id, base_sequence = producer
    args = {
        "base_offset": base_offset,
        "last_offset_delta": last_offset_delta,
        "records_count": records_count,
        "attributes": attributes,
        "producer_id": producer_id,
        "base_sequence": base_sequence,
    }
    assert twin.check_client_batch(**args) == _scan_py.check_client_batch(**args)
