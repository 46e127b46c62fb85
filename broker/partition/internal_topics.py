"""The topics the broker keeps for itself (Kafka's ``org.apache.kafka.common.internals.Topic``).

``__consumer_offsets`` is the group coordinator's log; a client may read it
but not produce to it (``ReplicaManager.appendToLocalLog`` with
``internalTopicsAllowed = false``). This broker has no transaction
coordinator, so ``__transaction_state`` is not among them.
"""

from __future__ import annotations

#: ``Topic.GROUP_METADATA_TOPIC_NAME``
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"


def is_internal_topic(topic: str) -> bool:
    """``Topic.isInternal`` for the topics this broker has (no transactions)."""
    return topic == GROUP_METADATA_TOPIC_NAME
