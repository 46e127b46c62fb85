"""Which ``__consumer_offsets`` partition a group lives in.

``GroupCoordinatorService.partitionFor``: ``Utils.abs(groupId.hashCode()) %
numPartitions``, with Java's ``String.hashCode`` (UTF-16 code units,
``h = 31 * h + c`` in 32-bit two's complement) and Kafka's ``Utils.abs``
(``Integer.MIN_VALUE`` maps to 0, not to itself).
"""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """``String.hashCode`` as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: ``n & 0x7fffffff`` for MIN_VALUE."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions
