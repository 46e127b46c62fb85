"""``broker/partition/internal_topics.py``: Kafka's ``Topic.isInternal``."""

from __future__ import annotations

from broker.coordinator.group.config import GROUP_METADATA_TOPIC_NAME
from broker.coordinator.transaction.state_topic import TRANSACTION_STATE_TOPIC_NAME
from broker.partition.internal_topics import is_internal_topic


def test_the_coordinator_topics_are_internal_and_others_are_not():
    assert GROUP_METADATA_TOPIC_NAME == "__consumer_offsets"
    assert TRANSACTION_STATE_TOPIC_NAME == "__transaction_state"
    assert is_internal_topic("__consumer_offsets")
    assert is_internal_topic("__transaction_state")
    for name in ("t", "__transaction_state_", "__consumer_offsets_", "_consumer_offsets"):
        assert not is_internal_topic(name)
