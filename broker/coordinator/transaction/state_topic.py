"""``__transaction_state``: its name and which of its partitions a transactional id lives in.

``TransactionStateManager.partitionFor``: ``Utils.abs(transactionalId.hashCode)
% transaction.state.log.num.partitions``, Java's ``String.hashCode``: the
group coordinator's rule for group ids (``broker/coordinator/group/partitioner.py``),
which this module calls.
"""

from __future__ import annotations

from broker.coordinator.group import partitioner
from broker.partition import internal_topics

#: ``Topic.TRANSACTION_STATE_TOPIC_NAME``
TRANSACTION_STATE_TOPIC_NAME = internal_topics.TRANSACTION_STATE_TOPIC_NAME


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id``."""
    return partitioner.partition_for(transactional_id, num_partitions)
