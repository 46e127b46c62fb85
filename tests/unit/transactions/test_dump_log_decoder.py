"""``broker dump-log --transaction-log-decoder`` on a ``__transaction_state`` segment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.cli import main as cli_main
from broker.config import TopicConfig
from broker.coordinator.transaction.metadata import TransactionState, TxnTransitMetadata
from broker.coordinator.transaction.records import key_to_bytes, value_to_bytes
from broker.log.files import TopicPartition
from broker.log.unified_log import UnifiedLog
from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.unit.log.helpers import MockTime

ONGOING = TxnTransitMetadata(
    producer_id=7,
    last_producer_id=-1,
    producer_epoch=0,
    last_producer_epoch=-1,
    txn_timeout_ms=60_000,
    txn_state=TransactionState.Ongoing,
    topic_partitions=frozenset({TopicPartition("orders", 1), TopicPartition("orders", 0)}),
    txn_start_timestamp=1_700_000_000_000,
    txn_last_update_timestamp=1_700_000_000_500,
)


def state_segment(tmp_path: Path) -> Path:
    log = UnifiedLog.open(tmp_path / "__transaction_state-3", TopicConfig(), time_ms=MockTime())
    records = [
        SimpleRecord(1000, key_to_bytes("t1"), value_to_bytes(ONGOING, False)),
        SimpleRecord(1001, key_to_bytes("t2"), None),  # an expired id: a tombstone
        SimpleRecord(1002, b"\x00", b"x"),  # not a record of the transaction log
    ]
    log.append(bytes(build_v2_batch(records).buffer))
    log.close()
    return tmp_path / "__transaction_state-3" / "00000000000000000000.log"


def test_records_print_as_kafkas_transaction_log_message_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = state_segment(tmp_path)
    assert cli_main(["dump-log", "--files", str(path), "--transaction-log-decoder"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| offset:")]
    assert len(lines) == 3
    assert lines[0].endswith(
        " key: transaction_metadata::transactionalId=t1 payload: producerId:7,producerEpoch:0,"
        "state=Ongoing,partitions=[orders-0,orders-1],txnLastUpdateTimestamp=1700000000500,"
        "txnTimeoutMs=60000"
    )
    assert lines[1].endswith(" key: transaction_metadata::transactionalId=t2 payload: <DELETE>")
    assert " key: Error at offset 2, skipping. " in lines[2]
    assert "payload:" not in lines[2]


def test_the_offsets_decoder_wins_and_json_carries_the_texts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = state_segment(tmp_path)
    both = ["dump-log", "--files", str(path), "--transaction-log-decoder", "--offsets-decoder"]
    assert cli_main(both) == 0
    assert "transaction_metadata::" not in capsys.readouterr().out
    assert cli_main(["dump-log", "--files", str(path), "--transaction-log-decoder", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.splitlines()[0])
    records = doc["batches"][0]["records"]
    assert records[0]["key"] == "transaction_metadata::transactionalId=t1"
    assert records[1]["payload"] == "<DELETE>"
