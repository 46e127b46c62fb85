"""Every message x version: decode(encode(m)) == m, and re-encoding is byte-identical.

Values come from strategies generated from the same schemas as the codec
(``tests/protocol_values.py``). Equality is over the fields the version
carries (``canonical``); fields a version lacks are not on the wire.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import decode, encode
from tests.protocol_values import canonical, message_versions, messages

CASES = message_versions()


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_roundtrip(name, version, data):
    msg = data.draw(messages(name, version))
    encoded = encode(msg, version)
    wire = encoded.to_bytes()
    assert encoded.size == len(wire)
    back = decode(type(msg), version, wire)
    assert canonical(back, version) == canonical(msg, version)
    assert encode(back, version).to_bytes() == wire


def test_every_version_is_covered():
    # 36 APIs, request and response each: Kafka 3.9's version counts (4.0's for KIP-848)
    base = 12 + 18 + 10 + 13 + 7 + 5 + 8 + 7 + 3 + 6 + 5 + 5 + 3 + 5 + 4 + 2 + 2
    # DescribeAcls, CreateAcls, DeleteAcls
    acls = 4 + 4 + 4
    # JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete,
    # DescribeGroups, ListGroups, DeleteGroups
    groups = 10 + 6 + 5 + 6 + 10 + 10 + 1 + 6 + 6 + 3
    # SaslHandshake 0-1, SaslAuthenticate 0-2, Describe/AlterUserScramCredentials 0
    sasl = 2 + 3 + 1 + 1
    # ConsumerGroupHeartbeat, ConsumerGroupDescribe (Kafka 4.0)
    consumer_groups = 2 + 2
    assert len(CASES) == 2 * (base + acls + groups + sasl + consumer_groups)
