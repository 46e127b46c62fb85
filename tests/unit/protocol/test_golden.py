"""Byte vectors written by kafka-python and kio decode to the values they were built from.

The files are in ``tests/golden/protocol/``; ``tests/golden/VECTORS.md``
says which library, version and class wrote each one, from which values.
Every vector is also re-encoded by us, and must come out byte-identical.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from broker.protocol import decode, decode_request, encode, encode_request, parse_request_header
from broker.protocol.messages import (
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from tests.protocol_values import canonical

GOLDEN = Path(__file__).parents[2] / "golden" / "protocol"

# the record data inside the vectors (opaque to the codec; built with kafka-python's
# DefaultRecordBatchBuilder / LegacyRecordBatchBuilder, see VECTORS.md)
V2_BATCH = bytes.fromhex(
    "00000000000000000000004f0000000002ffa5ec440000000000010000018bcfe568000000018bcf"
    "e56801ffffffffffffffffffffffffffff000000021a000000046b310a68656c6c6f001e00020201"
    "0a776f726c640202680276"
)
V1_MESSAGE_SET = bytes.fromhex(
    "00000000000000000000001d0bbdf33f01000000018bcfe56800000000016b000000066c6567616379"
)


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def produce_data(records: bytes) -> list[object]:
    part = ProduceRequest.PartitionProduceData(index=0, records=records)
    return [ProduceRequest.TopicProduceData(name="events", partition_data=[part])]


BODIES = {
    "kafka-python_ProduceRequest_v2.bin": (
        2,
        ProduceRequest(acks=1, timeout_ms=30000, topic_data=produce_data(V1_MESSAGE_SET)),
    ),
    "kafka-python_FetchRequest_v0.bin": (
        0,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            topics=[
                FetchRequest.FetchTopic(
                    topic="events",
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=0, fetch_offset=42, partition_max_bytes=1048576
                        ),
                        FetchRequest.FetchPartition(
                            partition=1, fetch_offset=0, partition_max_bytes=65536
                        ),
                    ],
                )
            ],
        ),
    ),
    "kafka-python_MetadataResponse_v1.bin": (
        1,
        MetadataResponse(
            brokers=[
                MetadataResponse.MetadataResponseBroker(1, "broker-1", 9092, "rack-a"),
                MetadataResponse.MetadataResponseBroker(2, "broker-2", 9093, None),
            ],
            controller_id=1,
            topics=[
                MetadataResponse.MetadataResponseTopic(
                    error_code=0,
                    name="events",
                    is_internal=False,
                    partitions=[
                        MetadataResponse.MetadataResponsePartition(
                            error_code=0,
                            partition_index=0,
                            leader_id=1,
                            replica_nodes=[1, 2],
                            isr_nodes=[1],
                        )
                    ],
                )
            ],
        ),
    ),
    "kio_ProduceResponse_v9.bin": (
        9,
        ProduceResponse(
            responses=[
                ProduceResponse.TopicProduceResponse(
                    name="events",
                    partition_responses=[
                        ProduceResponse.PartitionProduceResponse(
                            index=0, base_offset=100, log_start_offset=0
                        ),
                        ProduceResponse.PartitionProduceResponse(
                            index=1,
                            error_code=32,
                            base_offset=-1,
                            log_start_offset=0,
                            record_errors=[
                                ProduceResponse.BatchIndexAndErrorMessage(
                                    2, "timestamp out of range"
                                )
                            ],
                            error_message="One or more records have been rejected",
                        ),
                    ],
                )
            ],
        ),
    ),
    "kio_ApiVersionsResponse_v3.bin": (
        3,
        ApiVersionsResponse(
            api_keys=[
                ApiVersionsResponse.ApiVersion(0, 0, 11),
                ApiVersionsResponse.ApiVersion(18, 0, 4),
            ],
            supported_features=[ApiVersionsResponse.SupportedFeatureKey("metadata.version", 1, 21)],
            finalized_features_epoch=5,
        ),
    ),
    "kio_FetchResponse_v12.bin": (
        12,
        FetchResponse(
            responses=[
                FetchResponse.FetchableTopicResponse(
                    topic="events",
                    partitions=[
                        FetchResponse.PartitionData(
                            partition_index=0,
                            high_watermark=2,
                            last_stable_offset=2,
                            log_start_offset=0,
                            current_leader=FetchResponse.LeaderIdAndEpoch(1, 3),
                            aborted_transactions=None,
                            records=V2_BATCH,
                        )
                    ],
                )
            ],
        ),
    ),
}


@pytest.mark.parametrize("name", BODIES)
def test_golden_body(name):
    version, expected = BODIES[name]
    wire = golden(name)
    decoded = decode(type(expected), version, wire)
    assert canonical(decoded, version) == canonical(expected, version)
    assert encode(decoded, version).to_bytes() == wire
    assert encode(expected, version).to_bytes() == wire


FRAMES = {
    "kafka-python_ProduceRequest_v9_frame.bin": (
        0,
        9,
        ProduceRequest(
            transactional_id=None, acks=-1, timeout_ms=30000, topic_data=produce_data(V2_BATCH)
        ),
    ),
    "kafka-python_MetadataRequest_v12_frame.bin": (
        3,
        12,
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="events")],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=True,
        ),
    ),
}


@pytest.mark.parametrize("name", FRAMES)
def test_golden_request_frame(name):
    api_key, version, expected = FRAMES[name]
    frame = golden(name)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    body = memoryview(frame)[4:]
    header = parse_request_header(body)
    assert (header.api_key, header.api_version) == (api_key, version)
    assert (header.client_id, header.header_version) == ("golden", 2)
    decoded = decode_request(header, body)
    assert canonical(decoded, version) == canonical(expected, version)
    again = encode_request(version, header.correlation_id, "golden", decoded).to_bytes()
    assert again == frame


def test_golden_records_are_views_into_the_frame():
    frame = golden("kafka-python_ProduceRequest_v9_frame.bin")
    header = parse_request_header(frame[4:])
    body = memoryview(frame)[4:]
    records = decode_request(header, body).topic_data[0].partition_data[0].records
    assert records.obj is frame
    assert records == V2_BATCH
