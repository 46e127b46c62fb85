"""Protocol codec speed against same-run baselines.

1. Decoding a 1 MB ProduceRequest (one partition): header + body, against a
   memcpy (``bytes(memoryview)``) of its records. Goal <= 1.2x: the decoder
   must not touch the records (they stay a view of the frame).
2. Decoding a 100-partition ProduceRequest, against kafka-python 3.0's
   classes (the JSON-driven ``ProduceRequest`` and the hand-written
   ``ProduceRequest_v3``) and kio 0.6 (Rust core). Reported, no goal.
3. Encoding whole response frames (size prefix, response header, body):
   ProduceResponse v9 (flexible) and v7 for 1 and 100 partitions, and a
   MetadataResponse v12 and v7 (3 brokers, 20 topics x 5 partitions), against a
   hand-written struct-based encoder of the same frames (below, checked to
   produce identical bytes). Goal <= 2x. kio's body encoder is reported too.
"""

from __future__ import annotations

import io
import struct
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from bench.common import Report, note_rounds, rounds_of
from broker.protocol import (
    decode_request,
    encode_request,
    encode_response,
    parse_request_header,
    request_decoder,
)
from broker.protocol.messages import MetadataResponse, ProduceRequest, ProduceResponse

#: what this bench imports beyond the broker's dependencies (checked by bench/__main__.py)
REQUIRES = ("kafka", "kio")

# -- inputs -----------------------------------------------------------------------------


def produce_request(partitions: int, records_size: int) -> Any:
    parts = [
        ProduceRequest.PartitionProduceData(index=i, records=bytes([i % 256]) * records_size)
        for i in range(partitions)
    ]
    topic = ProduceRequest.TopicProduceData(name="bench-topic", partition_data=parts)
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[topic])


def produce_response(partitions: int) -> Any:
    parts = [
        ProduceResponse.PartitionProduceResponse(
            index=i, error_code=0, base_offset=1_000_000 + i, log_start_offset=0
        )
        for i in range(partitions)
    ]
    topic = ProduceResponse.TopicProduceResponse(name="bench-topic", partition_responses=parts)
    return ProduceResponse(responses=[topic], throttle_time_ms=0)


def metadata_response(topics: int = 20, partitions: int = 5) -> Any:
    brokers = [
        MetadataResponse.MetadataResponseBroker(i, f"broker-{i}.example.com", 9092, f"rack-{i}")
        for i in range(3)
    ]
    topic_list = [
        MetadataResponse.MetadataResponseTopic(
            error_code=0,
            name=f"topic-{t}",
            topic_id=uuid.UUID(int=t + 1),
            is_internal=False,
            partitions=[
                MetadataResponse.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=p % 3,
                    leader_epoch=5,
                    replica_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                    isr_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                    offline_replicas=[],
                )
                for p in range(partitions)
            ],
            topic_authorized_operations=-(2**31),
        )
        for t in range(topics)
    ]
    return MetadataResponse(
        throttle_time_ms=0, brokers=brokers, cluster_id="bench-cluster", controller_id=0,
        topics=topic_list,
    )  # fmt: skip


def header_for(api_key: int, version: int) -> Any:
    from broker.protocol import encode_request_header

    return parse_request_header(encode_request_header(api_key, version, 42, "bench"))


# -- the hand-written baseline ----------------------------------------------------------
# What a careful engineer writes by hand for one version: precompiled structs,
# fixed fields packed together, one-byte varints from a table, parts joined once.

_I32 = struct.Struct(">i").pack
_FRAME_HEAD = struct.Struct(">ii").pack  # size, correlation id
_H = struct.Struct(">h").pack
_PART_V7 = struct.Struct(">ihqqq").pack
_PART_V9 = _PART_V7
_BROKER = struct.Struct(">i").pack
_VARINT1 = [bytes((i,)) for i in range(128)]


def _uv(n: int) -> bytes:
    if n < 128:
        return _VARINT1[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return _uv(len(raw) + 1) + raw


def _str16(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    raw = s.encode()
    return _H(len(raw)) + raw


def _frame(correlation_id: int, header_tail: bytes, parts: list[bytes]) -> bytes:
    body = b"".join(parts)
    return _FRAME_HEAD(len(body) + 4 + len(header_tail), correlation_id) + header_tail + body


def hand_produce_response_v9(resp: Any, correlation_id: int) -> bytes:
    parts = [_uv(len(resp.responses) + 1)]
    ap = parts.append
    for topic in resp.responses:
        ap(_cstr(topic.name))
        ap(_uv(len(topic.partition_responses) + 1))
        for p in topic.partition_responses:
            ap(
                _PART_V9(
                    p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset
                )
            )
            ap(_uv(len(p.record_errors) + 1))
            for e in p.record_errors:
                ap(_I32(e.batch_index))
                ap(_cstr(e.batch_index_error_message))
                ap(b"\x00")
            ap(_cstr(p.error_message))
            ap(b"\x00")
        ap(b"\x00")
    ap(_I32(resp.throttle_time_ms))
    ap(b"\x00")
    return _frame(correlation_id, b"\x00", parts)


def hand_produce_response_v7(resp: Any, correlation_id: int) -> bytes:
    parts = [_I32(len(resp.responses))]
    ap = parts.append
    for topic in resp.responses:
        ap(_str16(topic.name))
        ap(_I32(len(topic.partition_responses)))
        for p in topic.partition_responses:
            ap(
                _PART_V7(
                    p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset
                )
            )
    ap(_I32(resp.throttle_time_ms))
    return _frame(correlation_id, b"", parts)


_TOPIC_HEAD_V12 = struct.Struct(">h").pack
_PARTITION_V12 = struct.Struct(">hiii").pack
_PARTITION_V7 = struct.Struct(">hiii").pack


_INT32_ARRAYS = [struct.Struct(f">{n}i").pack for n in range(33)]  # replica lists: short


def hand_metadata_response_v12(resp: Any, correlation_id: int) -> bytes:
    parts = [_I32(resp.throttle_time_ms), _uv(len(resp.brokers) + 1)]
    ap = parts.append
    for b in resp.brokers:
        ap(_BROKER(b.node_id))
        ap(_cstr(b.host))
        ap(_I32(b.port))
        ap(_cstr(b.rack))
        ap(b"\x00")
    ap(_cstr(resp.cluster_id))
    ap(_I32(resp.controller_id))
    ap(_uv(len(resp.topics) + 1))
    for t in resp.topics:
        ap(_TOPIC_HEAD_V12(t.error_code))
        ap(_cstr(t.name))
        ap(t.topic_id.bytes)
        ap(b"\x01" if t.is_internal else b"\x00")
        ap(_uv(len(t.partitions) + 1))
        for p in t.partitions:
            ap(_PARTITION_V12(p.error_code, p.partition_index, p.leader_id, p.leader_epoch))
            replicas, isr, offline = p.replica_nodes, p.isr_nodes, p.offline_replicas
            ap(_VARINT1[len(replicas) + 1])
            ap(_INT32_ARRAYS[len(replicas)](*replicas))
            ap(_VARINT1[len(isr) + 1])
            ap(_INT32_ARRAYS[len(isr)](*isr))
            ap(_VARINT1[len(offline) + 1])
            ap(_INT32_ARRAYS[len(offline)](*offline))
            ap(b"\x00")
        ap(_I32(t.topic_authorized_operations))
        ap(b"\x00")
    ap(b"\x00")
    return _frame(correlation_id, b"\x00", parts)


def hand_metadata_response_v7(resp: Any, correlation_id: int) -> bytes:
    parts = [_I32(resp.throttle_time_ms), _I32(len(resp.brokers))]
    ap = parts.append
    for b in resp.brokers:
        ap(_BROKER(b.node_id))
        ap(_str16(b.host))
        ap(_I32(b.port))
        ap(_str16(b.rack))
    ap(_str16(resp.cluster_id))
    ap(_I32(resp.controller_id))
    ap(_I32(len(resp.topics)))
    for t in resp.topics:
        ap(_H(t.error_code))
        ap(_str16(t.name))
        ap(b"\x01" if t.is_internal else b"\x00")
        ap(_I32(len(t.partitions)))
        for p in t.partitions:
            ap(_PARTITION_V7(p.error_code, p.partition_index, p.leader_id, p.leader_epoch))
            replicas, isr, offline = p.replica_nodes, p.isr_nodes, p.offline_replicas
            ap(_I32(len(replicas)))
            ap(_INT32_ARRAYS[len(replicas)](*replicas))
            ap(_I32(len(isr)))
            ap(_INT32_ARRAYS[len(isr)](*isr))
            ap(_I32(len(offline)))
            ap(_INT32_ARRAYS[len(offline)](*offline))
    return _frame(correlation_id, b"", parts)


# -- the three measurements -------------------------------------------------------------


def _compare(*fns: Callable[[], object], seconds: float = 0.2, rounds: int = 15) -> list[float]:
    """Seconds per call of each of ``fns``, the best over interleaved rounds.

    The machine is shared: alternating the candidates round by round exposes
    them to the same load, which keeps their ratio steady.
    """
    numbers = []
    for fn in fns:
        once = min(rounds_of(fn, repeat=3, number=1))
        numbers.append(max(1, int(seconds / max(once, 1e-7) / rounds)))
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            times[i].extend(rounds_of(fn, repeat=1, number=numbers[i]))
    for each in times:
        note_rounds(each)
    return [min(each) for each in times]


def bench_big_produce_decode(report: Report) -> None:
    for version in (3, 9):
        frame = encode_request(version, 1, "bench", produce_request(1, 1 << 20)).to_bytes()
        body = memoryview(frame)[4:]

        def ours(body: memoryview = body) -> object:
            return decode_request(parse_request_header(body), body)

        records = ours().topic_data[0].partition_data[0].records
        decode, memcpy = _compare(ours, lambda records=records: bytes(records))
        report.value(f"decode 1 MB ProduceRequest v{version} (us)", decode * 1e6, "us")
        report.ratio(
            f"decode 1 MB ProduceRequest v{version} / memcpy of its records",
            decode,
            memcpy,
            goal="<= 1.2x",
            ok=decode <= 1.2 * memcpy,
        )


def bench_many_partition_decode(report: Report) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.protocol.old.produce import ProduceRequest_v3 as KpOldProduce
        from kafka.protocol.producer import ProduceRequest as KpProduce
    from kio.schema.produce.v3.request import ProduceRequest as Kio3
    from kio.schema.produce.v9.request import ProduceRequest as Kio9
    from kio.serial import entity_reader

    for version, kio_cls in ((3, Kio3), (9, Kio9)):
        msg = produce_request(100, 1024)
        body = bytes(encode_request(version, 1, "bench", msg).to_bytes()[4:])
        header = parse_request_header(body)
        payload = body[header.size :]
        decoder = request_decoder(0, version)
        reader = entity_reader(kio_cls)
        candidates = [
            lambda d=decoder, p=payload: d(p, 0),
            lambda p=payload, v=version: KpProduce.decode(p, version=v),
            lambda r=reader, p=payload: r(p, 0),
        ]
        if version == 3:
            candidates.append(lambda p=payload: KpOldProduce.decode(p))
        ours, kp, kio, *old = _compare(*candidates)
        report.value(f"decode 100-partition ProduceRequest v{version} (us)", ours * 1e6, "us")
        report.ratio(f"  ours / kafka-python ProduceRequest (JSON-driven) v{version}", ours, kp)
        if old:
            report.ratio("  ours / kafka-python ProduceRequest_v3 (hand-written)", ours, old[0])
        report.ratio(f"  ours / kio ProduceRequest v{version}", ours, kio)


def _kio_writer(name: str, version: int) -> tuple[Any, Any]:
    import importlib

    from kio.serial import entity_writer

    package = {"ProduceResponse": "produce", "MetadataResponse": "metadata"}[name]
    module = importlib.import_module(f"kio.schema.{package}.v{version}.response")
    cls = getattr(module, name)
    return cls, entity_writer(cls)


def _kio_produce(resp: Any, version: int) -> Any:
    import datetime

    from kio.schema.errors import ErrorCode

    cls, _ = _kio_writer("ProduceResponse", version)
    module = __import__(cls.__module__, fromlist=["x"])
    partition = module.PartitionProduceResponse
    extra = {"record_errors": (), "error_message": None} if version >= 8 else {}
    topics = tuple(
        module.TopicProduceResponse(
            name=t.name,
            partition_responses=tuple(
                partition(
                    index=p.index,
                    error_code=ErrorCode(p.error_code),
                    base_offset=p.base_offset,
                    log_append_time=None,
                    log_start_offset=p.log_start_offset,
                    **extra,
                )
                for p in t.partition_responses
            ),
        )
        for t in resp.responses
    )
    return cls(responses=topics, throttle_time=datetime.timedelta(0))


def _kio_metadata(resp: Any, version: int) -> Any:
    import datetime

    from kio.schema.errors import ErrorCode

    cls, _ = _kio_writer("MetadataResponse", version)
    module = __import__(cls.__module__, fromlist=["x"])
    extra_topic: dict[str, Any] = {}
    if version >= 8:
        extra_topic["topic_authorized_operations"] = -(2**31)
    if version >= 10:
        extra_topic["topic_id"] = None
    return cls(
        throttle_time=datetime.timedelta(0),
        brokers=tuple(
            module.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in resp.brokers
        ),
        cluster_id=resp.cluster_id,
        controller_id=resp.controller_id,
        topics=tuple(
            module.MetadataResponseTopic(
                error_code=ErrorCode(t.error_code),
                name=t.name,
                is_internal=t.is_internal,
                partitions=tuple(
                    module.MetadataResponsePartition(
                        error_code=ErrorCode(p.error_code),
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=tuple(p.replica_nodes),
                        isr_nodes=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
                **{k: (t.topic_id if k == "topic_id" else v) for k, v in extra_topic.items()},
            )
            for t in resp.topics
        ),
    )


def bench_response_encode(report: Report) -> None:
    cases = [
        ("ProduceResponse v9, 1 partition", 0, 9, produce_response(1), hand_produce_response_v9),
        ("ProduceResponse v9, 100 partitions", 0, 9, produce_response(100), hand_produce_response_v9),
        ("ProduceResponse v7, 1 partition", 0, 7, produce_response(1), hand_produce_response_v7),
        ("ProduceResponse v7, 100 partitions", 0, 7, produce_response(100), hand_produce_response_v7),
        ("MetadataResponse v12, 20x5", 3, 12, metadata_response(), hand_metadata_response_v12),
        ("MetadataResponse v7, 20x5", 3, 7, metadata_response(), hand_metadata_response_v7),
    ]  # fmt: skip
    for label, api_key, version, resp, hand in cases:
        header = header_for(api_key, version)
        ours_frame = encode_response(header, resp).to_bytes()
        if hand(resp, header.correlation_id) != ours_frame:
            raise AssertionError(f"{label}: the hand-written baseline disagrees with the codec")
        name = type(resp).__qualname__
        entity = (_kio_produce if name == "ProduceResponse" else _kio_metadata)(resp, version)
        _, writer = _kio_writer(name, version)

        def kio(w: Any = writer, e: Any = entity) -> bytes:
            out = io.BytesIO()
            w(out, e)
            return out.getvalue()

        ours, base, kio_time = _compare(
            lambda h=header, r=resp: encode_response(h, r),
            lambda f=hand, r=resp, c=header.correlation_id: f(r, c),
            kio,
        )
        report.value(f"encode {label} (us)", ours * 1e6, "us")
        report.ratio(
            f"  ours / hand-written struct encoder: {label}",
            ours,
            base,
            goal="<= 2x",
            ok=ours <= 2 * base,
        )
        report.ratio(f"  ours / kio body encoder: {label}", ours, kio_time)


def main(report: Report) -> None:
    bench_big_produce_decode(report)
    bench_many_partition_decode(report)
    bench_response_encode(report)
