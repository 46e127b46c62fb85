"""``broker/partition/internal_topics.py``: Kafka's ``Topic.isInternal``."""

from __future__ import annotations

from broker.coordinator.group.config import GROUP_METADATA_TOPIC_NAME
from broker.partition.internal_topics import is_internal_topic


def test_the_group_coordinator_topic_is_internal_and_others_are_not():
    assert GROUP_METADATA_TOPIC_NAME == "__consumer_offsets"
    assert is_internal_topic("__consumer_offsets")
    # no transaction coordinator: its topic is an ordinary name here
    for name in ("t", "__transaction_state", "__consumer_offsets_", "_consumer_offsets"):
        assert not is_internal_topic(name)
