"""The ``__consumer_offsets`` record schemas (``CoordinatorRecordSerde``) and group routing."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.group.partitioner import java_string_hash, partition_for
from broker.group_records.messages import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_VALUE,
    RECORD_TYPES,
    decode_record,
    encode_key,
    encode_value,
    offset_commit_key,
    offset_commit_value,
)
from broker.group_records.schema import GroupRecordError, UnknownRecordTypeError


def test_offset_commit_record_bytes_are_kafkas():
    # OffsetCommitKey v1: INT16 type 1, group, topic, partition (all non-flexible)
    assert offset_commit_key("g", "t", 3) == bytes.fromhex("000100016700017400000003")
    # OffsetCommitValue v3: offset, leaderEpoch, metadata, commitTimestamp
    assert offset_commit_value(10, -1, "", 123, -1) == bytes.fromhex(
        "0003000000000000000affffffff0000000000000000007b"
    )
    # v1 when the commit expires on its own: offset, metadata, commit and expire timestamps
    assert offset_commit_value(10, 5, "m", 1, 2) == bytes.fromhex(
        "0001000000000000000a00016d00000000000000010000000000000002"
    )


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_value_every_version(version):
    members = [
        {
            "memberId": "m",
            "groupInstanceId": "i" if version >= 3 else None,
            "clientId": "c",
            "clientHost": "/h",
            "rebalanceTimeout": 7,
            "sessionTimeout": 9,
            "subscription": b"s",
            "assignment": b"a",
        }
    ]
    value = GROUP_METADATA_VALUE.new(
        version,
        protocolType="consumer",
        generation=4,
        protocol="range",
        leader="m",
        members=members,
    )
    record = decode_record(encode_key(2, {"group": "g"}), encode_value(2, version, value))
    got = record.value["members"][0]
    assert record.value["generation"] == 4 and got["subscription"] == b"s"
    assert got.get("rebalanceTimeout", -1) == (7 if version >= 1 else -1)
    assert got.get("groupInstanceId") == ("i" if version >= 3 else None)


def test_kip_848_records_round_trip_with_tagged_fields():
    value = CONSUMER_GROUP_MEMBER_METADATA_VALUE.new(
        0,
        ClientId="c",
        ClientHost="/h",
        SubscribedTopicNames=["a", "b"],
        ClassicMemberMetadata={"SessionTimeoutMs": 45000, "SupportedProtocols": []},
    )
    record = decode_record(
        encode_key(5, {"GroupId": "g", "MemberId": "m"}), encode_value(5, 0, value)
    )
    assert record.value["ClassicMemberMetadata"]["SessionTimeoutMs"] == 45000
    assignment = CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.new(
        0, AssignedPartitions=[{"TopicId": uuid.UUID(int=7), "Partitions": [1, 2]}]
    )
    record = decode_record(
        encode_key(8, {"GroupId": "g", "MemberId": "m"}), encode_value(8, 0, assignment)
    )
    assert record.value["AssignedPartitions"][0]["Partitions"] == [1, 2]


def test_tombstone_and_unknown_types():
    assert decode_record(offset_commit_key("g", "t", 0), None).value is None
    with pytest.raises(UnknownRecordTypeError):
        decode_record(b"\x00\x63", b"\x00\x00")
    with pytest.raises(GroupRecordError):
        decode_record(offset_commit_key("g", "t", 0)[:-1], None)
    with pytest.raises(GroupRecordError):
        decode_record(b"\x00", None)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=64)))
def test_hostile_bytes_raise_group_record_errors_only(key, value):
    # anything else (an IndexError, a struct.error) escapes and fails the test
    with contextlib.suppress(GroupRecordError):
        decode_record(key, value)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=20),
    st.integers(0, 2**62),
)
def test_offset_commit_value_round_trip(offset, epoch, metadata, ts):
    record = decode_record(
        offset_commit_key("g", "t", 0), offset_commit_value(offset, epoch, metadata, ts, -1)
    )
    assert (record.value["offset"], record.value["leaderEpoch"], record.value["metadata"]) == (
        offset,
        epoch,
        metadata,
    )


def test_every_record_type_has_key_and_value_schemas():
    assert sorted(RECORD_TYPES) == list(range(9))
    assert OFFSET_COMMIT_VALUE.flexible_from == 4


def test_java_string_hash_code():
    # expected values printed by Java 17's String.hashCode
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("group-1") == 293427299
    assert java_string_hash("my-group") == -1906497762
    # the one String whose hashCode is Integer.MIN_VALUE: Utils.abs maps it to 0
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    # UTF-16 code units: a character outside the BMP counts as two
    assert java_string_hash("\U0001f600") == 1772899


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=10), st.text(max_size=10), st.integers(0, 2**31 - 1), st.text(max_size=10))
def test_packed_offset_commit_records_are_the_schemas_bytes(group, topic, partition, metadata):
    assert offset_commit_key(group, topic, partition) == encode_key(
        1, {"group": group, "topic": topic, "partition": partition}
    )
    value = {"offset": 5, "leaderEpoch": 2, "metadata": metadata, "commitTimestamp": 9}
    assert offset_commit_value(5, 2, metadata, 9, -1) == encode_value(1, 3, value)
