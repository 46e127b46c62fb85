"""Fetch and ListOffsets with isolation_level read_committed over a log with transactions.

The transactions are written as a transaction coordinator would write them:
transactional batches appended to the partition's log, then its COMMIT or
ABORT marker (``UnifiedLog.append_end_txn_marker``); produce of transactional
batches by clients is still refused by this broker.
"""

from __future__ import annotations

from broker.protocol.messages import FetchRequest, ListOffsetsRequest
from broker.records.builder import build_v2_batch
from broker.records.control import ControlRecordType, EndTransactionMarker
from broker.records.iterate import iter_batches
from broker.records.record import SimpleRecord
from tests.unit.handlers.conftest import InProcessBroker

TOPIC = "txns"


def fetch(offset: int, isolation_level: int) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=isolation_level,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
    )


def latest(broker: InProcessBroker, isolation_level: int) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=TOPIC,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
                ],
            )
        ],
    )
    return int(broker.call(request, 5).topics[0].partitions[0].offset)


def the_partition(response: FetchRequest) -> object:
    ((part,),) = [t.partitions for t in response.responses]  # type: ignore[attr-defined]
    return part


class Writer:
    """Transactional batches and markers of producers, at the log's end."""

    def __init__(self, broker: InProcessBroker) -> None:
        broker.replica_manager.create_topic(TOPIC, 1, {})
        partition = broker.replica_manager.get_partition(TOPIC, 0)
        assert partition is not None
        self.log = partition.log
        self.sequences: dict[int, int] = {}

    def data(self, producer_id: int | None, count: int = 2) -> None:
        seq = self.sequences.get(producer_id or -1, 0)
        batch = build_v2_batch(
            [SimpleRecord(1000, None, b"v") for _ in range(count)],
            base_offset=self.log.log_end_offset,
            producer_id=-1 if producer_id is None else producer_id,
            producer_epoch=-1 if producer_id is None else 0,
            base_sequence=-1 if producer_id is None else seq,
            is_transactional=producer_id is not None,
        )
        if producer_id is not None:
            self.sequences[producer_id] = seq + count
        self.log.append(bytes(batch.buffer))

    def end(self, producer_id: int, commit: bool) -> None:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        self.log.append_end_txn_marker(
            producer_id, 0, EndTransactionMarker(kind, 0), leader_epoch=0, timestamp=1000
        )


def test_read_committed_stops_at_the_last_stable_offset_and_lists_aborted_txns(
    broker: InProcessBroker,
) -> None:
    w = Writer(broker)
    w.data(7)  # 0-1: aborted below
    w.data(None)  # 2-3
    w.end(7, commit=False)  # 4
    w.data(8)  # 5-6: committed
    w.end(8, commit=True)  # 7
    w.data(9)  # 8-9: still open
    w.data(None)  # 10-11
    assert w.log.last_stable_offset == 8

    committed = the_partition(broker.call(fetch(0, 1), 12))
    assert committed.high_watermark == 12
    assert committed.last_stable_offset == 8
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(7, 0)]
    ends = [b.header().last_offset for b in iter_batches(bytes(committed.records))]
    assert ends[-1] == 7  # nothing at or past the open transaction's first offset

    uncommitted = the_partition(broker.call(fetch(0, 0), 12))
    assert uncommitted.last_stable_offset == 8
    assert uncommitted.aborted_transactions is None
    assert [b.header().last_offset for b in iter_batches(bytes(uncommitted.records))][-1] == 11

    # from past the aborted transaction's marker: it is not listed (the consumer
    # would otherwise drop producer 7's later transactions)
    later = the_partition(broker.call(fetch(5, 1), 12))
    assert later.aborted_transactions == []
    # at the last stable offset there is nothing to read yet
    idle = the_partition(broker.call(fetch(8, 1), 12))
    assert len(bytes(idle.records)) == 0 and idle.aborted_transactions == []

    assert latest(broker, 1) == 8
    assert latest(broker, 0) == 12
    w.end(9, commit=True)
    assert latest(broker, 1) == 13
    assert the_partition(broker.call(fetch(8, 1), 12)).last_stable_offset == 13
