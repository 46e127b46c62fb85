"""``broker dump-log``: ``broker/log/dump.py``'s tool with the decoders of layers above the log.

``--transaction-log-decoder`` prints each record of a ``__transaction_state``
segment as Kafka 3.9's ``kafka-dump-log.sh`` does
(``DumpLogSegments.TransactionLogMessageParser``)::

    | offset: 3 CreateTime: 1700000000000 keySize: 11 valueSize: 37 sequence: -1 headerKeys: []
      key: transaction_metadata::transactionalId=my-txn payload: producerId:7,producerEpoch:0,
      state=Ongoing,partitions=[orders-0],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000

(one line; a tombstone's payload is ``<DELETE>``). As in Kafka,
``--offsets-decoder`` wins when both are given.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from broker.coordinator.transaction.records import format_record_key_and_value
from broker.log import dump


def add_arguments(parser: argparse.ArgumentParser) -> None:
    dump.add_arguments(parser)
    parser.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="Decode records as __transaction_state records (transactional id, producer id "
        "and epoch, state, partitions); implies --print-data-log.",
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    decoder = format_record_key_and_value if args.transaction_log_decoder else None
    return dump.run(args, out, err, record_decoder=decoder)
