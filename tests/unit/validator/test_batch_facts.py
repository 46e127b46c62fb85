"""The batch facts the validator returns (``ValidationResult.batches``) are
what reading the validated bytes' headers gives (``parse_batch_infos``): the
log takes the validator's list instead of parsing again, so the two must
never differ, whatever path validated the records (the one-call in-place
path with either twin, the general in-place path, a conversion, a
recompression), and with a trailing partial batch dropped."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TopicConfig
from broker.errors import KafkaError
from broker.records import scan
from broker.records.batch import CompressionType, TimestampType
from broker.records.batch_info import parse_batch_infos
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from broker.validator import validate
from broker.validator.result import NullRecorder
from broker.validator.validate import validate_records
from tests.unit.records.twins import TWINS
from tests.unit.validator.test_in_place_one_call import NOW, batches, configs

_records = st.lists(
    st.builds(
        SimpleRecord,
        st.sampled_from([NOW, NOW + 1, NOW - 10]),
        st.one_of(st.none(), st.binary(max_size=6)),
        st.one_of(st.none(), st.binary(max_size=30)),
    ),
    min_size=1,
    max_size=6,
)
_codecs = st.sampled_from([CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4])


@st.composite
def built_v2(draw: Any) -> bytes:
    """A v2 batch from the builder: compressed or not, idempotent or not."""
    pid, epoch, seq = draw(st.sampled_from([(-1, -1, -1), (7, 0, 0), (7, 1, 2**31 - 2)]))
    return bytes(
        build_v2_batch(
            draw(_records), compression_type=draw(_codecs), producer_id=pid,
            producer_epoch=epoch, base_sequence=seq,
        ).buffer
    )  # fmt: skip


@st.composite
def built_legacy(draw: Any) -> bytes:
    """A v0/v1 message set: one entry per record, or one compressed wrapper."""
    magic = draw(st.sampled_from([0, 1]))
    return bytes(
        build_legacy(
            draw(_records), magic=magic, compression_type=draw(_codecs),
            timestamp_type=TimestampType.CREATE_TIME,
        ).buffer
    )  # fmt: skip


@pytest.mark.parametrize("path", [*TWINS, pytest.param(None, id="general")])
@settings(max_examples=300, deadline=None)
@given(
    request=st.one_of(
        batches().map(lambda data: (data, 9)),
        built_v2().map(lambda data: (data, 9)),
        built_legacy().map(lambda data: (data, 2)),
    ),
    config=configs,
    compression=st.sampled_from(["producer", "uncompressed", "gzip"]),
    next_offset=st.sampled_from([0, 41, 2**40]),
    epoch=st.sampled_from([-1, 0, 12]),
    partial_tail=st.sampled_from([0, 0, 0, 9, 30]),
)
def test_the_validators_batches_are_the_validated_bytes_headers(
    path: Any,
    request: tuple[bytes, int],
    config: TopicConfig,
    compression: str,
    next_offset: int,
    epoch: int,
    partial_tail: int,
) -> None:
    data, produce_version = request
    data += data[:partial_tail]  # a trailing partial batch is dropped before the log
    with pytest.MonkeyPatch.context() as patch:
        if path is None:
            patch.setattr(validate, "_V2_ONLY", 0)  # the one-call dispatch's condition fails
        else:
            patch.setattr(scan, "assign_in_place_v2", path.assign_in_place_v2)
        try:
            result = validate_records(
                memoryview(bytearray(data)), topic="t", partition=0,
                config=dataclasses.replace(config, compression_type=compression), next_offset=next_offset,
                partition_leader_epoch=epoch, now_ms=NOW, produce_version=produce_version,
                recorder=NullRecorder(),
            )  # fmt: skip
        except KafkaError:
            return
    assert list(result.batches) == parse_batch_infos(memoryview(result.validated_records))
    assert result.batches, "a validated append has a batch"
    assert result.batches[0].position == 0
    assert result.batches[-1].last_offset == result.last_offset
