"""Behaviour of the generated codecs beyond plain round trips."""

from __future__ import annotations

import struct
import uuid

import pytest

from broker.errors import InvalidRequestError, UnsupportedVersionError
from broker.protocol import (
    DecodeError,
    EncodeError,
    compile_all,
    decode,
    encode,
    encode_request,
    parse_request_header,
    request_decoder,
)
from broker.protocol.messages import (
    CODECS,
    ApiVersionsResponse,
    ConsumerGroupHeartbeatResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
)

PRODUCE_V3_HEAD = struct.pack(">hhi", -1, 1, 1000)  # null transactional_id, acks, timeout


def produce_request(records: object) -> object:
    part = ProduceRequest.PartitionProduceData(index=3, records=records)
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[part])],
    )


def response(**partition: object) -> object:
    part = ProduceResponse.PartitionProduceResponse(index=0, base_offset=7, **partition)
    topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])
    return ProduceResponse(responses=[topic])


# -- records stay opaque ------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 9])
def test_decoded_records_are_a_view_of_the_frame(version):
    frame = encode_request(version, 1, "c", produce_request(b"x" * 300)).to_bytes()
    body = memoryview(frame)[4:]
    header = parse_request_header(body)
    request = request_decoder(0, version)(body, header.size)[0]
    records = request.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is frame  # no copy: a slice of the caller's buffer
    assert records == b"x" * 300


@pytest.mark.parametrize(("version", "null"), [(3, b"\xff\xff\xff\xff"), (9, b"\x00")])
def test_null_records(version, null):
    wire = encode(produce_request(None), version).to_bytes()
    assert null in wire
    assert decode(ProduceRequest, version, wire).topic_data[0].partition_data[0].records is None


class FileSlice:
    """Stands in for a sendfile range: only a length, no buffer."""

    def __len__(self) -> int:
        return 5000


@pytest.mark.parametrize("version", [4, 12])
def test_encoded_records_are_passed_through_as_segments(version):
    big, small = FileSlice(), memoryview(b"abc")
    parts = [
        FetchResponse.PartitionData(partition_index=0, records=big),
        FetchResponse.PartitionData(partition_index=1, records=small),
        FetchResponse.PartitionData(partition_index=2, records=b""),
        FetchResponse.PartitionData(partition_index=3, records=None),
    ]
    msg = FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=parts)]
    )
    encoded = encode(msg, version)
    assert encoded.segments[1] is big
    assert encoded.segments[3] is small
    assert len(encoded.segments) == 5  # bytes, big, bytes, small, bytes (empty records inline)
    assert encoded.size == sum(len(s) for s in encoded.segments)
    without = encode(FetchResponse(responses=[]), version).size
    assert encoded.size > without + 5000 + 3


def test_response_frame_size_prefix_counts_record_segments():
    header = parse_request_header(encode_request(4, 9, "c", FetchRequest()).to_bytes()[4:])
    part = FetchResponse.PartitionData(records=b"r" * 70000)
    msg = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(partitions=[part])])
    from broker.protocol import encode_response

    encoded = encode_response(header, msg)
    frame = encoded.to_bytes()
    assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 9)
    assert encoded.size == len(frame)


# -- tagged fields ------------------------------------------------------------------------


def test_tagged_struct_written_only_when_not_default():
    partition = (
        struct.pack(">ihqqq", 0, 0, 7, -1, -1) + b"\x01" + b"\x00"
    )  # no errors, null message
    head, tail = b"\x02" + b"\x02t" + b"\x02", b"\x00" + struct.pack(">i", 0) + b"\x00"
    plain = head + partition + b"\x00" + tail
    assert encode(response(), 10).to_bytes() == plain
    # a struct equal to its default is not written either (Kafka compares with equals())
    assert (
        encode(response(current_leader=ProduceResponse.LeaderIdAndEpoch()), 10).to_bytes() == plain
    )
    leader = ProduceResponse.LeaderIdAndEpoch(3, 9)
    tagged = head + partition + b"\x01\x00\x09" + struct.pack(">ii", 3, 9) + b"\x00" + tail
    assert encode(response(current_leader=leader), 10).to_bytes() == tagged
    assert decode(ProduceResponse, 10, tagged).responses[0].partition_responses[
        0
    ].current_leader == (leader)
    assert (
        decode(ProduceResponse, 10, plain).responses[0].partition_responses[0].current_leader
        is None
    )


def test_tagged_scalars_follow_their_defaults():
    base = encode(ApiVersionsResponse(), 3).to_bytes()
    assert base == b"\x00\x00" + b"\x01" + b"\x00\x00\x00\x00" + b"\x00"
    epoch = encode(ApiVersionsResponse(finalized_features_epoch=5), 3).to_bytes()
    assert epoch == base[:-1] + b"\x01" + b"\x01\x08" + struct.pack(">q", 5)
    ready = encode(ApiVersionsResponse(zk_migration_ready=True), 3).to_bytes()
    assert ready == base[:-1] + b"\x01\x03\x01\x01"
    both = encode(ApiVersionsResponse(finalized_features_epoch=5, zk_migration_ready=True), 3)
    assert both.to_bytes() == base[:-1] + b"\x02\x01\x08" + struct.pack(">q", 5) + b"\x03\x01\x01"


def test_nullable_tagged_string_with_null_default():
    # FetchRequest.cluster_id: tag 0, default null; "" is not the default
    absent = encode(FetchRequest(), 12).to_bytes()
    empty = encode(FetchRequest(cluster_id=""), 12).to_bytes()
    assert len(empty) == len(absent) + 3
    assert decode(FetchRequest, 12, empty).cluster_id == ""
    assert decode(FetchRequest, 12, absent).cluster_id is None


# -- nullable structs ----------------------------------------------------------------------


def test_nullable_struct_is_a_marker_byte_then_the_struct():
    # ConsumerGroupHeartbeatResponse.assignment (Kafka's generated write: INT8 -1 for
    # null, 1 then the struct): throttle, error, null message, member id "m", epoch 3,
    # interval 5000, assignment, no tags
    head = struct.pack(">ih", 0, 0) + b"\x00" + b"\x02m" + struct.pack(">ii", 3, 5000)
    null = head + b"\xff" + b"\x00"
    msg = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=5000)
    assert encode(msg, 1).to_bytes() == null
    assert decode(ConsumerGroupHeartbeatResponse, 1, null).assignment is None
    topic = uuid.UUID(int=7)
    tp = ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=topic, partitions=[0, 2])
    msg.assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[tp])
    present = (
        head + b"\x01" + b"\x02" + topic.bytes + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"
        + b"\x00" + b"\x00"
    )  # fmt: skip
    assert encode(msg, 1).to_bytes() == present
    assert decode(ConsumerGroupHeartbeatResponse, 1, present) == msg
    # an empty assignment is not null
    msg.assignment = ConsumerGroupHeartbeatResponse.Assignment()
    empty = head + b"\x01\x01\x00" + b"\x00"
    assert encode(msg, 1).to_bytes() == empty
    assert decode(ConsumerGroupHeartbeatResponse, 1, empty).assignment.topic_partitions == []
    with pytest.raises(DecodeError):
        decode(ConsumerGroupHeartbeatResponse, 1, head + b"\x01")  # cut inside the struct


def _api_versions_v3(tags: bytes) -> bytes:
    return b"\x00\x00" + b"\x01" + b"\x00\x00\x00\x00" + tags


def test_unknown_tags_are_skipped():
    wire = _api_versions_v3(b"\x02" + b"\x07\x02ab" + b"\x01\x08" + struct.pack(">q", 11))
    assert decode(ApiVersionsResponse, 3, wire).finalized_features_epoch == 11


def test_tag_of_a_later_version_is_skipped():
    # ProduceResponse v9 has no tag 0 (current_leader is v10+); Kafka throws here
    part = b"\x00\x00\x00\x00" + b"\x00\x00" + struct.pack(">qqq", 7, -1, -1) + b"\x01\x00"
    wire = b"\x02\x02t\x02" + part + b"\x01\x00\x09" + bytes(9) + b"\x00" + bytes(4) + b"\x00"
    decoded = decode(ProduceResponse, 9, wire)
    assert decoded.responses[0].partition_responses[0].current_leader is None


def test_known_tag_with_wrong_size_is_decode_error():
    wire = _api_versions_v3(b"\x01\x01\x09" + struct.pack(">q", 11) + b"\x00")
    with pytest.raises(DecodeError, match="size does not match"):
        decode(ApiVersionsResponse, 3, wire)


# -- nulls, lengths and errors ------------------------------------------------------------


def test_null_in_a_non_nullable_field_is_decode_error():
    wire = PRODUCE_V3_HEAD + struct.pack(">ihi", 1, -1, 0)  # one topic, name null
    with pytest.raises(DecodeError, match="non-nullable field name"):
        decode(ProduceRequest, 3, wire)


def test_metadata_all_topics_is_null_from_v1_only():
    assert decode(MetadataRequest, 1, b"\xff\xff\xff\xff").topics is None
    with pytest.raises(DecodeError):
        decode(MetadataRequest, 0, b"\xff\xff\xff\xff")
    assert encode(MetadataRequest(topics=None), 1).to_bytes() == b"\xff\xff\xff\xff"


def test_compact_string_over_0x7fff_is_decode_error():
    # MetadataRequest v10: one topic (uuid, name of 0x8000 bytes: varint 0x8001 = 81 80 02)
    name = b"\x81\x80\x02" + b"a" * 0x8000
    wire = b"\x02" + bytes(16) + name + b"\x00" + b"\x01\x00\x00" + b"\x00"
    with pytest.raises(DecodeError, match="invalid length"):
        decode(MetadataRequest, 10, wire)


def test_string_too_long_to_encode():
    with pytest.raises(EncodeError, match="too long"):
        encode(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a" * 0x8000)]), 9)


@pytest.mark.parametrize(
    ("msg", "version"),
    [
        (ProduceResponse(throttle_time_ms=2**31), 1),  # out of INT32
        (ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=None)]), 9),
        (ProduceResponse(responses=None), 3),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id="x")]), 10),
    ],
)
def test_unencodable_values_are_encode_errors(msg, version):
    with pytest.raises(EncodeError, match=f"v{version}"):
        encode(msg, version)


def test_fields_a_version_lacks_are_not_written():
    assert encode(response(log_start_offset=5, error_message="x"), 0).to_bytes() == (
        b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01" + struct.pack(">ihq", 0, 0, 7)
    )


def test_trailing_bytes_are_ignored_like_kafka():
    wire = encode(MetadataRequest(topics=[]), 4).to_bytes()
    msg, pos = CODECS["MetadataRequest"].decoder(4)(wire + b"junk", 0)
    assert pos == len(wire)
    assert msg.topics == []


def test_decode_error_is_an_invalid_request():
    assert issubclass(DecodeError, InvalidRequestError)
    with pytest.raises(DecodeError) as info:
        decode(ProduceRequest, 3, b"\x00")
    assert info.value.code == 42


def test_versions_outside_the_range_are_unsupported():
    with pytest.raises(UnsupportedVersionError):
        request_decoder(0, 12)
    with pytest.raises(UnsupportedVersionError):
        encode(ProduceResponse(), -1)


def test_any_bytes_like_input():
    wire = encode(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")]), 1)
    raw = wire.to_bytes()
    for buf in (raw, bytearray(raw), memoryview(raw), memoryview(bytearray(raw)).cast("b")):
        assert decode(MetadataRequest, 1, buf).topics[0].name == "a"


# -- classes ------------------------------------------------------------------------------


def test_classes_have_kafka_defaults_and_fresh_lists():
    a, b = ProduceResponse.PartitionProduceResponse(), ProduceResponse.PartitionProduceResponse()
    assert (a.log_append_time_ms, a.log_start_offset, a.error_message) == (-1, -1, None)
    assert a.record_errors == [] and a.record_errors is not b.record_errors
    assert FetchRequest().max_bytes == 0x7FFFFFFF
    assert MetadataRequest().allow_auto_topic_creation is True
    assert CODECS["CreateTopicsResponse"].classes["CreatableTopicResult"]().topic_id == uuid.UUID(
        int=0
    )


def test_classes_are_slotted_with_equality_and_repr():
    a = ProduceResponse.LeaderIdAndEpoch(1, 2)
    assert a == ProduceResponse.LeaderIdAndEpoch(leader_id=1, leader_epoch=2)
    assert a != ProduceResponse.LeaderIdAndEpoch(1, 3)
    assert repr(a) == "ProduceResponse.LeaderIdAndEpoch(leader_id=1, leader_epoch=2)"
    with pytest.raises(AttributeError):
        a.leader = 3
    with pytest.raises(TypeError):
        ProduceResponse.LeaderIdAndEpoch(leader=3)


def test_every_codec_compiles():
    # decoder and encoder of every (message, version); the ACL APIs add 3 x 2 x 4,
    # SaslHandshake 0-1, SaslAuthenticate 0-2 and the SCRAM APIs v0 (14),
    # ConsumerGroupHeartbeat and ConsumerGroupDescribe 2 x 2 x 2
    assert compile_all() == 2 * (356 + 24 + 14 + 8)
