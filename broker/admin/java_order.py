"""The order in which a ``java.util.HashMap`` iterates, for output that Kafka's tools print
straight from one.

Kafka's tools print some collections in hash order: kafka-topics.sh joins a
topic's ``Configs:`` in the order of ``admin.Config``'s ``HashMap``,
kafka-log-dirs.sh writes its JSON from ``HashMap`` objects (hence
``{"brokers":[...],"version":1}``), kafka-configs.sh lists all topics from
the ``HashSet`` of ``listTopics().names()``. To print the same bytes the
tools here put keys in the order that map would have::

    String.hashCode   h = 31 * h + c over the UTF-16 code units, in 32 bits
    HashMap.hash      h ^ (h >>> 16)
    bucket            hash & (capacity - 1); capacity 16 (``new HashMap<>()``) or
                      the power of two >= n (``new HashMap<>(n)``), doubled
                      each time the size passes 0.75 * capacity
    iteration         bucket by bucket; inside a bucket, insertion order
                      (a resize splits a bucket keeping its order)

Buckets of 8 keys or more turn into trees in Java (``TREEIFY_THRESHOLD``);
the key sets printed here (a topic's ~40 config names, 2-4 JSON keys, a few
partitions per log dir) do not come near that, and such a bucket keeps its
insertion order here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_MASK = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def to_int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text: str) -> int:
    """``String.hashCode()`` (a signed 32-bit int)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return to_int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``: 31 * (31 + partition) + topic.hashCode()."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


def capacity_for(size: int, initial: int | None = None) -> int:
    """The table size of a ``HashMap`` after ``size`` insertions; ``initial``: the
    capacity it was made with (``tableSizeFor``: the power of two at or above it)."""
    capacity = _DEFAULT_CAPACITY
    if initial is not None:
        capacity = 1
        while capacity < initial:
            capacity *= 2
    while size > capacity * _LOAD_FACTOR:
        capacity *= 2
    return capacity


def hash_order(
    items: Iterable[T], hash_code: Callable[[T], int], initial: int | None = None
) -> list[T]:
    """``items`` (in insertion order) in the order a ``HashMap`` holding them iterates."""
    listed = list(items)
    mask = capacity_for(len(listed), initial) - 1

    def bucket(item: T) -> int:
        h = hash_code(item) & _MASK
        return (h ^ (h >> 16)) & mask

    return sorted(listed, key=bucket)  # sorted() is stable: insertion order within a bucket


def string_order(keys: Iterable[str], initial: int | None = None) -> list[str]:
    """String keys in ``HashMap`` / ``HashSet`` order."""
    return hash_order(keys, string_hash, initial)
