"""The topics the broker keeps for itself (Kafka's ``org.apache.kafka.common.internals.Topic``).

``__consumer_offsets`` is the group coordinator's log; a client may read it
but not produce to it (``ReplicaManager.appendToLocalLog`` with
``internalTopicsAllowed = false``). ``__transaction_state`` is the
transaction coordinator's, the same (``Topic.INTERNAL_TOPICS``).
"""

from __future__ import annotations

#: ``Topic.GROUP_METADATA_TOPIC_NAME``
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
#: ``Topic.TRANSACTION_STATE_TOPIC_NAME``
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"


#: ``Topic.INTERNAL_TOPICS``
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})


def is_internal_topic(topic: str) -> bool:
    """``Topic.isInternal``."""
    return topic in INTERNAL_TOPICS
