"""The API table: what ApiVersions will advertise (Kafka 3.9's ranges)."""

from __future__ import annotations

from broker.protocol import API_KEYS

# key: (name, min, max, first flexible version), from Kafka 3.9's message JSON
EXPECTED = {
    0: ("Produce", 0, 11, 9),
    1: ("Fetch", 0, 17, 12),
    2: ("ListOffsets", 0, 9, 6),
    3: ("Metadata", 0, 12, 9),
    8: ("OffsetCommit", 0, 9, 8),
    9: ("OffsetFetch", 0, 9, 6),
    10: ("FindCoordinator", 0, 6, 3),
    11: ("JoinGroup", 0, 9, 6),
    12: ("Heartbeat", 0, 4, 4),
    13: ("LeaveGroup", 0, 5, 4),
    14: ("SyncGroup", 0, 5, 4),
    15: ("DescribeGroups", 0, 5, 5),
    16: ("ListGroups", 0, 5, 3),
    18: ("ApiVersions", 0, 4, 3),
    19: ("CreateTopics", 0, 7, 5),
    20: ("DeleteTopics", 0, 6, 4),
    21: ("DeleteRecords", 0, 2, 2),
    22: ("InitProducerId", 0, 5, 2),
    23: ("OffsetForLeaderEpoch", 0, 4, 4),
    29: ("DescribeAcls", 0, 3, 2),
    30: ("CreateAcls", 0, 3, 2),
    31: ("DeleteAcls", 0, 3, 2),
    32: ("DescribeConfigs", 0, 4, 4),
    33: ("AlterConfigs", 0, 2, 2),
    35: ("DescribeLogDirs", 0, 4, 2),
    37: ("CreatePartitions", 0, 3, 2),
    42: ("DeleteGroups", 0, 2, 2),
    44: ("IncrementalAlterConfigs", 0, 1, 1),
    # never flexible: Versions(0, -1), whose low bound is 0
    47: ("OffsetDelete", 0, 0, 0),
    60: ("DescribeCluster", 0, 1, 0),
    17: ("SaslHandshake", 0, 1, 0),
    36: ("SaslAuthenticate", 0, 2, 2),
    50: ("DescribeUserScramCredentials", 0, 0, 0),
    51: ("AlterUserScramCredentials", 0, 0, 0),
    # KIP-848, as Kafka 4.0 serves them
    68: ("ConsumerGroupHeartbeat", 0, 1, 0),
    69: ("ConsumerGroupDescribe", 0, 1, 0),
}


def test_table_matches_kafka_3_9():
    got = {
        key: (api.name, api.min_version, api.max_version, api.first_flexible_version)
        for key, api in API_KEYS.items()
    }
    assert got == EXPECTED
    assert list(API_KEYS) == sorted(API_KEYS)


def test_support_and_flexibility():
    produce = API_KEYS[0]
    assert produce.supports(0) and produce.supports(11)
    assert not produce.supports(12) and not produce.supports(-1)
    assert not produce.is_flexible(8) and produce.is_flexible(9) and produce.is_flexible(12)
    assert produce.request.name == "ProduceRequest"
    assert produce.response.name == "ProduceResponse"
