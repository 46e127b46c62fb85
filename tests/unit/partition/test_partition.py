"""``broker/partition/partition.py``: one partition's produce checks and append path.

The checks a produce partition passes before it counts in TotalProduceRequests
(``check_produce``: internal topic, ``ProduceRequest.validateRecords``), the
min.insync.replicas refusal of acks=-1 (``check_min_isr``), inline and queued
appends in the order of arrival, idempotent producers' duplicates and sequence
errors, the coordinator's own batches and the append listeners.
"""

from __future__ import annotations

import asyncio

import pytest

from broker.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTopicError,
    NotEnoughReplicasError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
)
from broker.partition.partition import LEADER_EPOCH, AppendOutcome, Partition
from broker.records.batch import CompressionType
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.aio import run
from tests.unit.partition.conftest import NOW_MS, Replicas


def records(n: int = 3) -> list[SimpleRecord]:
    return [SimpleRecord(NOW_MS, f"k{i}".encode(), f"v{i}".encode()) for i in range(n)]


def batch(n: int = 3, **kwargs: int) -> memoryview:
    """A writable view of one v2 batch, as a request's records arrive."""
    return memoryview(bytearray(build_v2_batch(records(n), **kwargs).buffer))


def partition_of(replicas: Replicas, topic: str = "t", **configs: str) -> Partition:
    replicas.manager.create_topic(topic, 1, configs or None)
    partition = replicas.manager.get_partition(topic, 0)
    assert partition is not None
    return partition


# ---- check_produce: the request's checks --------------------------------------------------------


def test_check_produce_returns_the_records_of_one_whole_v2_batch(replicas):
    partition = partition_of(replicas)
    view = batch()
    assert partition.check_produce(view, 9) is view
    assert not partition.internal


def test_check_produce_refuses_an_internal_topic_before_looking_at_the_records(replicas):
    partition = partition_of(replicas, "__consumer_offsets")
    assert partition.internal
    for view in (batch(), None):
        with pytest.raises(InvalidTopicError, match="Cannot append to internal topic "
                           "__consumer_offsets"):  # fmt: skip
            partition.check_produce(view, 9)


def test_check_produce_refuses_null_records(replicas):
    with pytest.raises(InvalidRecordError, match="records must not be null"):
        partition_of(replicas).check_produce(None, 9)


def test_check_produce_is_validate_records_by_version(replicas):
    """``ProduceRequest.validateRecords``: v3+ one magic 2 batch, zstd from v7."""
    partition = partition_of(replicas)
    legacy = memoryview(bytearray(build_legacy(records(), magic=1).buffer))
    assert partition.check_produce(legacy, 2) is legacy  # v0-v2: message sets, up-converted
    with pytest.raises(InvalidRecordError, match="magic version 2"):
        partition.check_produce(legacy, 3)
    two = memoryview(bytearray(bytes(batch()) + bytes(batch())))
    partition.check_produce(two, 2)
    with pytest.raises(InvalidRecordError, match="only allowed to contain"):
        partition.check_produce(two, 3)
    with pytest.raises(InvalidRecordError, match="at least one record batch"):
        partition.check_produce(memoryview(bytearray()), 3)
    zstd = batch(compression_type=CompressionType.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError):
        partition.check_produce(zstd, 6)
    assert partition.check_produce(zstd, 7) is zstd


# ---- check_min_isr ---------------------------------------------------------------------------------


def test_min_isr_of_one_passes_and_more_is_not_enough_replicas(replicas):
    partition_of(replicas, "one").check_min_isr(0)
    two = partition_of(replicas, "two", **{"min.insync.replicas": "2"})
    with pytest.raises(NotEnoughReplicasError) as raised:
        two.check_min_isr(7)
    assert raised.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert str(raised.value) == (
        "The size of the current ISR {7} is insufficient to satisfy the min.isr requirement "
        "of 2 for partition two-0"
    )


# ---- inline appends --------------------------------------------------------------------------------


def test_a_new_partition_starts_leader_epoch_0_at_its_log_end(replicas):
    partition = partition_of(replicas)
    assert partition.leader_epoch == LEADER_EPOCH == 0
    assert partition.log.leader_epoch_cache.latest_epoch == 0


def test_inline_appends_take_consecutive_offsets(replicas):
    partition = partition_of(replicas)
    first = partition.append(batch(3), 9)
    second = partition.append(batch(2), 9)
    assert isinstance(first, AppendOutcome)
    assert isinstance(second, AppendOutcome)
    assert (first.base_offset, first.last_offset, first.num_records) == (0, 2, 3)
    assert (second.base_offset, second.last_offset, second.num_records) == (3, 4, 2)
    assert first.log_append_time_ms == -1  # CreateTime
    assert not first.duplicate
    assert partition.log.log_end_offset == 5
    assert partition.queued_append is None


def test_append_records_as_leader_validates_and_appends_on_the_callers_thread(replicas):
    partition = partition_of(replicas)
    outcome = partition.append_records_as_leader(batch(4), 9)
    assert (outcome.base_offset, outcome.last_offset) == (0, 3)
    with pytest.raises(CorruptRecordError):
        corrupt = batch()
        corrupt[-1] ^= 0xFF  # the CRC no longer matches
        partition.append_records_as_leader(corrupt, 9)
    assert partition.log.log_end_offset == 4


def test_a_retried_idempotent_batch_is_answered_with_its_first_offsets(replicas):
    partition = partition_of(replicas)
    idempotent = {"producer_id": 1000, "producer_epoch": 0}
    first = partition.append(batch(3, base_sequence=0, **idempotent), 9)
    partition.append(batch(1), 9)
    again = partition.append(batch(3, base_sequence=0, **idempotent), 9)
    assert isinstance(first, AppendOutcome)
    assert isinstance(again, AppendOutcome)
    assert again.duplicate
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset)
    assert partition.log.log_end_offset == 4  # nothing written


def test_idempotent_sequence_and_epoch_errors(replicas):
    partition = partition_of(replicas)
    partition.append(batch(3, producer_id=1000, producer_epoch=1, base_sequence=0), 9)
    with pytest.raises(OutOfOrderSequenceError):
        partition.append(batch(1, producer_id=1000, producer_epoch=1, base_sequence=5), 9)
    with pytest.raises(InvalidProducerEpochError):
        partition.append(batch(1, producer_id=1000, producer_epoch=0, base_sequence=3), 9)
    follow = partition.append(batch(1, producer_id=1000, producer_epoch=1, base_sequence=3), 9)
    assert isinstance(follow, AppendOutcome)
    assert follow.base_offset == 3


# ---- queued appends --------------------------------------------------------------------------------


def test_a_deferred_append_is_queued_and_later_ones_queue_behind_it(replicas):
    partition = partition_of(replicas)

    async def main() -> None:
        first = partition.append(batch(3), 9, inline=False)
        assert isinstance(first, asyncio.Future)
        assert partition.queued_append is first
        # it would fit inline, but waits its turn
        second = partition.append(batch(2), 9)
        assert isinstance(second, asyncio.Future)
        assert partition.queued_append is second
        got = [await first, await second]
        assert [(o.base_offset, o.last_offset) for o in got] == [(0, 2), (3, 4)]
        assert partition.queued_append is None
        # the queue drained: inline again
        assert isinstance(partition.append(batch(1), 9), AppendOutcome)

    run(main())
    # only the deferred one went to a worker (the second fit, validated on the loop)
    assert len(replicas.offloaded) == 1


def test_a_validation_over_the_inline_budget_runs_on_a_worker(make_replicas):
    replicas = make_replicas(inline_budget=0)
    partition = partition_of(replicas)

    async def main() -> AppendOutcome:
        queued = partition.append(batch(3), 9)
        assert isinstance(queued, asyncio.Future)
        return await queued

    assert run(main()).last_offset == 2
    assert len(replicas.offloaded) == 1
    assert partition.log.log_end_offset == 3


def test_a_queued_append_fails_with_the_clients_error_and_the_next_one_appends(make_replicas):
    replicas = make_replicas(inline_budget=0)
    partition = partition_of(replicas)
    corrupt = batch()
    corrupt[-1] ^= 0xFF

    async def main() -> None:
        bad = partition.append(corrupt, 9)
        good = partition.append(batch(2), 9)
        assert isinstance(bad, asyncio.Future)
        assert isinstance(good, asyncio.Future)
        with pytest.raises(CorruptRecordError):
            await bad
        assert (await good).base_offset == 0

    run(main())


def test_an_append_queued_on_a_deleted_topic_fails_unknown(make_replicas):
    replicas = make_replicas(inline_budget=0)
    partition = partition_of(replicas)

    async def main() -> None:
        queued = partition.append(batch(), 9)
        assert isinstance(queued, asyncio.Future)
        replicas.manager.delete_topic("t")
        assert partition.removed
        with pytest.raises(UnknownTopicOrPartitionError, match="t-0"):
            await queued

    run(main())


# ---- the coordinator's batches and the listeners ---------------------------------------------------


def test_append_built_batch_writes_at_the_log_end(replicas):
    partition = partition_of(replicas)
    partition.append(batch(2), 9)
    assert partition.append_built_batch(records(3)) == 4
    assert partition.log.log_end_offset == 5


def test_append_built_batch_refuses_a_batch_over_max_message_bytes(replicas):
    partition = partition_of(replicas, **{"max.message.bytes": "100"})
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        partition.append_built_batch(records(10))
    assert partition.log.log_end_offset == 0


def test_append_built_batch_refuses_to_pass_a_queued_append(replicas):
    partition = partition_of(replicas)

    async def main() -> None:
        queued = partition.append(batch(), 9, inline=False)
        with pytest.raises(RuntimeError, match="queued append"):
            partition.append_built_batch(records(1))
        await queued

    run(main())


def test_append_listeners_run_once_after_an_append_that_adds_records(replicas):
    partition = partition_of(replicas)
    calls: list[str] = []
    partition.add_append_listener(lambda: calls.append("a"))
    removed = lambda: calls.append("removed")  # noqa: E731
    partition.add_append_listener(removed)
    partition.remove_append_listener(removed)
    partition.remove_append_listener(removed)  # already gone: no error
    partition.append(batch(), 9)
    partition.append(batch(), 9)
    assert calls == ["a"]
    partition.add_append_listener(lambda: calls.append("built"))
    partition.append_built_batch(records(1))
    assert calls == ["a", "built"]
