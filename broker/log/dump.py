"""``broker dump-log``: print segment, index, time-index, snapshot and txn-index files.

The lines are those of Kafka 3.9's ``kafka-dump-log.sh``
(``core/src/main/scala/kafka/tools/DumpLogSegments.scala``), so the usual
greps keep working::

    Dumping 00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
      producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1000 size: 90 magic: 2
      compresscodec: none crc: 123456 isvalid: true                      (one line)
    | offset: 0 CreateTime: 1000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello
    offset: 5 position: 0 CreateTime: 50 size: 39 magic: 1 compresscodec: none crc: 42 isvalid: true
    offset: 12 position: 4096                                          (.index)
    timestamp: 1000 offset: 12                                         (.timeindex)
    producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty
      lastTimestamp: 9 firstSequence: 0 lastSequence: 4 lastOffset: 4 offsetDelta: 4 timestamp: 9
    version: 0 producerId: 7 firstOffset: 3 lastOffset: 9 lastStableOffset: 3   (.txnindex)

Kafka's quirks are kept: a v0/v1 record line ends ``crc: N}`` (a stray
brace in Kafka's format string), mismatch and non-consecutive lists go to
stderr newest first. Options are Kafka's; the decoder classes are
``string`` (Kafka's StringDecoder, the default), ``hex`` and ``none`` (the
part is not printed); Kafka's class names of its string decoder are
accepted too. ``--offsets-decoder`` prints ``__consumer_offsets`` records as
Kafka's ``OffsetsMessageParser`` does (``broker/group_records/json_format.py``);
``--transaction-log-decoder`` prints ``__transaction_state`` records as its
``TransactionLogMessageParser`` does: a :data:`RecordDecoder` the command
(``broker/admin/dump_log.py``) passes in, because the transaction log's
records belong to the coordinator, above this layer. ``--json`` prints one
JSON object per file instead.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from broker.errors import KafkaError, UnknownServerError
from broker.group_records.json_format import format_offsets_record
from broker.log import files
from broker.log.errors import CorruptSnapshotError
from broker.log.offset_index import OffsetIndex
from broker.log.producer_state import read_snapshot
from broker.log.time_index import TimeIndex
from broker.log.transaction_index import TransactionIndex
from broker.records.batch import (
    DELETE_HORIZON_FLAG_MASK,
    MAGIC_V2,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
    increment_sequence,
)
from broker.records.control import ControlRecordType, parse_control_type, parse_end_txn_marker
from broker.records.iterate import Batch, iter_batches
from broker.records.record import Record

INT_MAX = 2**31 - 1
RECORD_INDENT = "|"

_TIMESTAMP_TYPE_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_STRING_DECODERS = {
    "string",
    "kafka.serializer.StringDecoder",
    "org.apache.kafka.tools.api.StringDecoder",
}


def _codec_name(codec: int) -> str:
    try:
        return CompressionType(codec).name.lower()
    except ValueError:
        return f"unknown({codec})"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


Decoder = Callable[[bytes], str] | None


def make_decoder(name: str) -> Decoder:
    if name in _STRING_DECODERS:
        return lambda b: b.decode("utf-8", "replace")
    if name == "hex":
        return lambda b: b.hex()
    if name == "none":
        return None
    raise ValueError(f"unknown decoder {name!r} (string, hex or none)")


#: one record's (key text, payload text or None) for a decoder option (Kafka's
#: ``MessageParser``): called with the record's offset, key and value
RecordDecoder = Callable[[int, bytes | None, bytes | None], tuple[str | None, str | None]]


class Dumper:
    """Prints what one run of the tool finds; collects Kafka's error reports.

    ``record_decoder`` prints each record's key and value its way (implies
    ``--print-data-log``); ``--offsets-decoder`` is the __consumer_offsets one."""

    def __init__(
        self,
        args: argparse.Namespace,
        out: TextIO,
        err: TextIO,
        *,
        record_decoder: RecordDecoder | None = None,
    ) -> None:
        self.out = out
        self.err = err
        self.json = args.json
        self.print_data = bool(
            args.print_data_log or args.key_decoder_class or args.value_decoder_class
        )
        self.deep = bool(args.deep_iteration or self.print_data)
        self.verify_only = args.verify_index_only
        self.sanity_only = args.index_sanity_check
        self.max_bytes = args.max_bytes
        self.max_message_size = args.max_message_size
        self.skip_record_metadata = args.skip_record_metadata
        if getattr(args, "offsets_decoder", False):
            # Kafka's DumpLogSegments: the offsets decoder wins over any other
            record_decoder = format_offsets_record
        self.record_decoder = record_decoder
        if record_decoder is not None:
            self.print_data = self.deep = True
        self.key_decoder = make_decoder(args.key_decoder_class or "string")
        self.value_decoder = make_decoder(args.value_decoder_class or "string")
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.shallow_not_found: dict[str, list[tuple[int, int]]] = {}
        self._doc: dict[str, Any] = {}

    # ---- output helpers ---------------------------------------------------------------

    def line(self, text: str) -> None:
        if not self.json:
            print(text, file=self.out)

    def item(self, key: str, value: Any) -> None:
        if self.json:
            self._doc.setdefault(key, []).append(value)

    # ---- entry point ---------------------------------------------------------------------

    def dump(self, arg: str) -> None:
        path = Path(arg)
        self._doc = {"file": arg}
        self.line(f"Dumping {arg}")
        name = path.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        if suffix == files.LOG_FILE_SUFFIX:
            self._doc["type"] = "log"
            self.dump_log(path)
        elif suffix == files.INDEX_FILE_SUFFIX:
            self._doc["type"] = "index"
            self.dump_index(path)
        elif suffix == files.TIME_INDEX_FILE_SUFFIX:
            self._doc["type"] = "timeindex"
            self.dump_time_index(path)
        elif suffix == files.PRODUCER_SNAPSHOT_FILE_SUFFIX:
            self._doc["type"] = "snapshot"
            self.dump_snapshot(path)
        elif suffix == files.TXN_INDEX_FILE_SUFFIX:
            self._doc["type"] = "txnindex"
            self.dump_txn_index(path)
        else:
            print(f"Ignoring unknown file {arg}", file=self.err)
            self._doc["type"] = "unknown"
        if self.json:
            print(json.dumps(self._doc, separators=(",", ":")), file=self.out)

    # ---- .log ------------------------------------------------------------------------------

    def dump_log(self, path: Path) -> None:
        start = files.offset_from_file_name(path.name)
        self.line(f"Log starting offset: {start}")
        self._doc["log_start_offset"] = start
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as data:
                self._dump_log_bytes(path, data, min(size, self.max_bytes))

    def _dump_log_bytes(self, path: Path, data: mmap.mmap, end: int) -> None:
        valid_bytes = 0
        last_offset = -1
        try:
            for batch in iter_batches(data, 0, end, file=True):
                self._print_batch(batch, valid_bytes)
                if self.deep:
                    for record in batch.records():
                        if last_offset != -1 and record.offset != last_offset + 1:
                            self.non_consecutive.setdefault(str(path.absolute()), []).insert(
                                0, (last_offset, record.offset)
                            )
                        last_offset = record.offset
                        self._print_record(batch, record)
                valid_bytes += batch.size_in_bytes
        except KafkaError as exc:
            print(f"Error at position {valid_bytes} of {path}: {exc}", file=self.err)
        trailing = end - valid_bytes
        self._doc["trailing_bytes"] = trailing
        if trailing > 0 and self.max_bytes == INT_MAX:
            self.line(f"Found {trailing} invalid bytes at the end of {path.name}")

    def _batch_facts(self, batch: Batch) -> dict[str, Any]:
        if batch.magic >= MAGIC_V2:
            h = batch.header()
            last_sequence = increment_sequence(h.base_sequence, h.last_offset_delta)
            return {
                "base_offset": h.base_offset,
                "last_offset": h.last_offset,
                "count": h.records_count,
                "base_sequence": h.base_sequence,
                "last_sequence": last_sequence,
                "producer_id": h.producer_id,
                "producer_epoch": h.producer_epoch,
                "partition_leader_epoch": h.partition_leader_epoch,
                "is_transactional": h.is_transactional,
                "is_control": h.is_control_batch,
                "delete_horizon_ms": h.base_timestamp
                if h.attributes & DELETE_HORIZON_FLAG_MASK
                else None,
                "timestamp_type": h.timestamp_type,
                "max_timestamp": h.max_timestamp,
                "magic": h.magic,
                "compression_type": h.compression_type,
                "crc": h.crc,
            }
        lh = batch.legacy_header()
        return {
            "last_offset": lh.offset,
            "timestamp_type": lh.timestamp_type,
            "max_timestamp": lh.timestamp,
            "magic": lh.magic,
            "compression_type": lh.compression_type,
            "crc": lh.crc,
        }

    def _print_batch(self, batch: Batch, position: int) -> None:
        f = self._batch_facts(batch)
        valid = batch.is_valid
        if batch.magic >= MAGIC_V2:
            head = (
                f"baseOffset: {f['base_offset']} lastOffset: {f['last_offset']} "
                f"count: {f['count']} baseSequence: {f['base_sequence']} "
                f"lastSequence: {f['last_sequence']} producerId: {f['producer_id']} "
                f"producerEpoch: {f['producer_epoch']} "
                f"partitionLeaderEpoch: {f['partition_leader_epoch']} "
                f"isTransactional: {_bool(f['is_transactional'])} "
                f"isControl: {_bool(f['is_control'])} "
                f"deleteHorizonMs: {_optional_long(f['delete_horizon_ms'])}"
            )
        else:
            head = f"offset: {f['last_offset']}"
        ts_name = _TIMESTAMP_TYPE_NAMES[f["timestamp_type"]]
        self.line(
            f"{head} position: {position} {ts_name}: {f['max_timestamp']} "
            f"size: {batch.size_in_bytes} magic: {f['magic']} "
            f"compresscodec: {_codec_name(f['compression_type'])} crc: {f['crc']} "
            f"isvalid: {_bool(valid)}"
        )
        if self.json:
            facts = {k: v for k, v in f.items() if k != "timestamp_type"}
            facts.update(
                position=position,
                timestamp_type=ts_name,
                size=batch.size_in_bytes,
                compresscodec=_codec_name(f["compression_type"]),
                is_valid=valid,
                records=[],
            )
            self.item("batches", facts)

    def _print_record(self, batch: Batch, record: Record) -> None:
        is_control = batch.magic >= MAGIC_V2 and batch.header().is_control_batch
        ts_name = _TIMESTAMP_TYPE_NAMES[self._batch_facts(batch)["timestamp_type"]]
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        out: dict[str, Any] = {"offset": record.offset, "timestamp": record.timestamp}
        text = ""
        prefix = f"{RECORD_INDENT} "
        if not self.skip_record_metadata:
            text += (
                f"{prefix}offset: {record.offset} {ts_name}: {record.timestamp} "
                f"keySize: {key_size} valueSize: {value_size}"
            )
            prefix = " "
            out.update(key_size=key_size, value_size=value_size)
            if batch.magic >= MAGIC_V2:
                keys = ",".join(k for k, _ in record.headers)
                text += f" sequence: {record.sequence} headerKeys: [{keys}]"
                out.update(sequence=record.sequence, header_keys=[k for k, _ in record.headers])
            else:
                # Kafka's format string has a stray closing brace here
                text += f" isValid: {_bool(batch.is_valid)} crc: {record.checksum}}}"
                out.update(crc=record.checksum)
            if is_control:
                control_type = parse_control_type(record.key)
                if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                    marker = parse_end_txn_marker(record.key, record.value)
                    text += (
                        f" endTxnMarker: {marker.control_type.name} "
                        f"coordinatorEpoch: {marker.coordinator_epoch}"
                    )
                    out.update(end_txn_marker=marker.control_type.name)
                else:
                    text += f" controlType: {control_type.name}({int(control_type)})"
        if self.record_decoder is not None and not is_control:
            key_text, payload_text = self.record_decoder(record.offset, record.key, record.value)
            if key_text is not None:
                text += f"{prefix}key: {key_text}"
                out["key"] = key_text
            if payload_text is not None:
                text += f" payload: {payload_text}"
                out["payload"] = payload_text
        elif self.print_data and not is_control:
            if record.key is not None and self.key_decoder is not None:
                key = self.key_decoder(record.key)
                text += f"{prefix}key: {key}"
                prefix = " "
                out["key"] = key
            if record.value is not None and self.value_decoder is not None:
                payload = self.value_decoder(record.value)
                text += f" payload: {payload}"
                out["payload"] = payload
        self.line(text)
        if self.json:
            self._doc["batches"][-1]["records"].append(out)

    # ---- .index ---------------------------------------------------------------------------

    def dump_index(self, path: Path) -> None:
        base = files.offset_from_file_name(path.name)
        log_path = path.with_name(files.filename_prefix_from_offset(base) + files.LOG_FILE_SUFFIX)
        index = OffsetIndex(path, base, -1, writable=False)
        try:
            if index.entries == 0:
                self.line(f"{path} is empty.")
                return
            if self.sanity_only:
                index.sanity_check()
                self.line(f"{path} passed sanity check.")
                self._doc["sanity_check"] = "passed"
                return
            with open(log_path, "rb") as log:
                for i in range(index.entries):
                    entry = index.entry(i)
                    # a crash can leave a sparse file full of zero entries: stop at one
                    if entry.offset == base and i > 0:
                        return
                    chunk = os.pread(log.fileno(), self.max_message_size, entry.position)
                    first = next(iter_batches(chunk, file=True), None)
                    found = -1 if first is None else self._batch_facts(first)["last_offset"]
                    if found != entry.offset:
                        self.index_mismatches.setdefault(str(path.absolute()), []).insert(
                            0, (entry.offset, found)
                        )
                    if not self.verify_only:
                        self.line(f"offset: {entry.offset} position: {entry.position}")
                        self.item("entries", {"offset": entry.offset, "position": entry.position})
        finally:
            index.close_handler()

    # ---- .timeindex --------------------------------------------------------------------------

    def dump_time_index(self, path: Path) -> None:
        base = files.offset_from_file_name(path.name)
        prefix = files.filename_prefix_from_offset(base)
        log_path = path.with_name(prefix + files.LOG_FILE_SUFFIX)
        index_path = path.with_name(prefix + files.INDEX_FILE_SUFFIX)
        time_index = TimeIndex(path, base, -1, writable=False)
        offset_index = OffsetIndex(index_path, base, -1, writable=False)
        try:
            if self.sanity_only:
                time_index.sanity_check()
                self.line(f"{path} passed sanity check.")
                self._doc["sanity_check"] = "passed"
                return
            key = str(path.absolute())
            prev_timestamp = NO_TIMESTAMP
            with open(log_path, "rb") as log:
                data = log.read()
            for i in range(time_index.entries):
                entry = time_index.entry(i)
                if entry.offset == base and i > 0:
                    return
                position = offset_index.lookup(entry.offset).position
                found = next(
                    (
                        b
                        for b in iter_batches(data, position, file=True)
                        if self._batch_facts(b)["last_offset"] >= entry.offset
                    ),
                    None,
                )
                if found is None:
                    self.shallow_not_found.setdefault(key, []).append((entry.offset, -1))
                elif self._batch_facts(found)["last_offset"] != entry.offset:
                    self.shallow_not_found.setdefault(key, []).append(
                        (entry.offset, self._batch_facts(found)["last_offset"])
                    )
                else:
                    max_ts = max((r.timestamp for r in found.records()), default=NO_TIMESTAMP)
                    if max_ts != entry.timestamp:
                        self.time_mismatches.setdefault(key, []).append((entry.timestamp, max_ts))
                    if prev_timestamp >= entry.timestamp:
                        self.time_out_of_order.setdefault(key, []).append(
                            (entry.timestamp, prev_timestamp)
                        )
                if not self.verify_only:
                    self.line(f"timestamp: {entry.timestamp} offset: {entry.offset}")
                    self.item("entries", {"timestamp": entry.timestamp, "offset": entry.offset})
                prev_timestamp = entry.timestamp
        finally:
            time_index.close_handler()
            offset_index.close_handler()

    # ---- .snapshot and .txnindex --------------------------------------------------------------

    def dump_snapshot(self, path: Path) -> None:
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError as exc:
            print(str(exc), file=self.err)
            self._doc["error"] = str(exc)
            return
        for e in entries:
            text = (
                f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.last_timestamp} "
            )
            out: dict[str, Any] = {
                "producer_id": e.producer_id,
                "producer_epoch": e.producer_epoch,
                "coordinator_epoch": e.coordinator_epoch,
                "current_txn_first_offset": e.current_txn_first_offset,
                "last_timestamp": e.last_timestamp,
            }
            if e.batch_metadata:
                m = e.batch_metadata[0]
                text += (
                    f"firstSequence: {m.first_seq} lastSequence: {m.last_seq} "
                    f"lastOffset: {m.last_offset} offsetDelta: {m.offset_delta} "
                    f"timestamp: {m.timestamp}"
                )
                out.update(
                    first_sequence=m.first_seq,
                    last_sequence=m.last_seq,
                    last_offset=m.last_offset,
                    offset_delta=m.offset_delta,
                    timestamp=m.timestamp,
                )
            self.line(text)
            self.item("producers", out)

    def dump_txn_index(self, path: Path) -> None:
        """``DumpLogSegments.dumpTxnIndex``: one line per entry (a trailing
        partial entry is not shown). An entry of an unknown version stops the
        dump with the index's error on stderr (Kafka: the exception)."""
        index = TransactionIndex(files.offset_from_file_name(path.name), path)
        try:
            for txn in index.aborted_txns():
                self.line(
                    f"version: {txn.version} producerId: {txn.producer_id} "
                    f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
                    f"lastStableOffset: {txn.last_stable_offset}"
                )
                self.item(
                    "aborted_txns",
                    {
                        "producer_id": txn.producer_id,
                        "first_offset": txn.first_offset,
                        "last_offset": txn.last_offset,
                        "lso": txn.last_stable_offset,
                    },
                )
        except UnknownServerError as exc:
            print(str(exc), file=self.err)
            self._doc["error"] = str(exc)
        finally:
            index.close()

    # ---- errors, as Kafka prints them at the end -------------------------------------------------

    def print_errors(self) -> None:
        for name, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{name}", file=self.err)
            for index_offset, log_offset in pairs:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=self.err)
        for name, pairs in self.time_mismatches.items():
            print(f"Found timestamp mismatch in :{name}", file=self.err)
            for index_ts, log_ts in pairs:
                print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=self.err)
        for name, pairs in self.time_out_of_order.items():
            print(f"Found out of order timestamp in :{name}", file=self.err)
            for index_ts, prev in pairs:
                print(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}",
                    file=self.err,
                )
        for pairs in self.shallow_not_found.values():
            print("The following indexed offsets are not found in the log.", file=self.err)
            for index_offset, log_offset in pairs:
                print(
                    f"Indexed offset: {index_offset}, found log offset: {log_offset}", file=self.err
                )
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {name}", file=self.err)
            for first, second in pairs:
                print(f"  {first} is followed by {second}", file=self.err)

    @property
    def found_problems(self) -> bool:
        return any(
            (
                self.index_mismatches,
                self.time_mismatches,
                self.time_out_of_order,
                self.shallow_not_found,
                self.non_consecutive,
            )
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--files",
        required=True,
        help="REQUIRED: The comma separated list of data and index log files to be dumped.",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="Print the messages' content (set by any decoder option).",
    )
    parser.add_argument(
        "--deep-iteration",
        action="store_true",
        help="Print every record, not only batches (set by --print-data-log).",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="Just verify the index against the log without printing its content.",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="Just check the index sanity without printing its content (the check that "
        "decides at start-up whether an index is rebuilt).",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=INT_MAX,
        help="Read at most this many bytes of each .log file.",
    )
    parser.add_argument(
        "--max-message-size", type=int, default=5 * 1024 * 1024, help="Size of largest message."
    )
    parser.add_argument(
        "--key-decoder-class",
        help="How keys are printed: string (default), hex or none.",
    )
    parser.add_argument(
        "--value-decoder-class",
        help="How values are printed: string (default), hex or none.",
    )
    parser.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="Decode records as __consumer_offsets records (offset commits and group "
        "metadata, Kafka's JSON); implies --print-data-log.",
    )
    parser.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="Do not print the metadata of each record.",
    )
    parser.add_argument(
        "--json", action="store_true", help="One JSON object per file instead of Kafka's lines."
    )


def run(
    args: argparse.Namespace,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    record_decoder: RecordDecoder | None = None,
) -> int:
    try:
        dumper = Dumper(args, out or sys.stdout, err or sys.stderr, record_decoder=record_decoder)
    except ValueError as exc:
        print(f"Error: {exc}", file=err or sys.stderr)
        return 2
    status = 0
    for name in (f.strip() for f in args.files.split(",")):
        if not name:
            continue
        try:
            dumper.dump(name)
        except BrokenPipeError:
            raise  # the reader of the output went away: broker.cli ends quietly
        except (OSError, KafkaError, ValueError) as exc:
            print(f"Error dumping {name}: {exc}", file=dumper.err)
            status = 1
    dumper.print_errors()
    return status
