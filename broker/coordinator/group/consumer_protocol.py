"""The consumer's embedded protocol (Kafka's ``ConsumerProtocol``), as the coordinator reads it.

A classic member of protocol type "consumer" carries its subscription in
its JoinGroup protocols' metadata and gets its assignment in SyncGroup as
bytes of this protocol; the coordinator reads them only to move a group
between the classic and the consumer protocol (online migration)::

    ConsumerProtocolSubscription  version INT16, Topics [STRING], UserData NULLABLE_BYTES,
                                  OwnedPartitions [Topic STRING, Partitions [INT32]] (v1+),
                                  GenerationId INT32 (v2+), RackId NULLABLE_STRING (v3+)
    ConsumerProtocolAssignment    version INT16, AssignedPartitions [Topic STRING,
                                  Partitions [INT32]], UserData NULLABLE_BYTES

A version above the highest known (3) reads as the highest, as Kafka's
``checkSubscriptionVersion``/``checkAssignmentVersion`` do. Malformed bytes
raise :class:`ConsumerProtocolError` (Kafka's ``SchemaException``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

HIGHEST_VERSION = 3
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

#: (topic name, partitions)
TopicPartitions = list[tuple[str, list[int]]]


class ConsumerProtocolError(ValueError):
    """``SchemaException``: the bytes are not the consumer protocol."""


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions | None = None
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, s: struct.Struct) -> int:
        try:
            (value,) = s.unpack_from(self.data, self.pos)
        except struct.error as exc:
            raise ConsumerProtocolError("Buffer underflow while parsing consumer protocol") from exc
        self.pos += s.size
        return int(value)

    def int16(self) -> int:
        return self._take(_INT16)

    def int32(self) -> int:
        return self._take(_INT32)

    def _bytes(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ConsumerProtocolError("Buffer underflow while parsing consumer protocol")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(out)

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n < 0:
            if nullable:
                return None
            raise ConsumerProtocolError("non-nullable field was serialized as null")
        try:
            return self._bytes(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"invalid string: {exc}") from exc

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else self._bytes(n)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data):
            raise ConsumerProtocolError(f"invalid array length {n}")
        return n

    def topic_partitions(self) -> TopicPartitions:
        out: TopicPartitions = []
        for _ in range(self.count()):
            topic = self.string()
            assert topic is not None
            out.append((topic, [self.int32() for _ in range(self.count())]))
        return out


def _version(reader: _Reader) -> int:
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"Unsupported consumer protocol version: {version}")
    return min(version, HIGHEST_VERSION)


def deserialize_version(data: bytes) -> int:
    """``ConsumerProtocol.deserializeVersion``: the header's version, capped at the highest."""
    return _version(_Reader(data))


def parse_subscription(data: bytes) -> Subscription:
    """``deserializeConsumerProtocolSubscription``."""
    reader = _Reader(data)
    version = _version(reader)
    topics = []
    for _ in range(reader.count()):
        topic = reader.string()
        assert topic is not None
        topics.append(topic)
    user_data = reader.nullable_bytes()
    owned: TopicPartitions | None = None
    generation_id = -1
    rack_id = None
    if version >= 1:
        owned = reader.topic_partitions()
    if version >= 2:
        generation_id = reader.int32()
    if version >= 3:
        rack_id = reader.string(nullable=True)
    return Subscription(version, topics, user_data, owned, generation_id, rack_id)


def parse_assignment(data: bytes) -> TopicPartitions:
    """``deserializeConsumerProtocolAssignment``: the assigned partitions."""
    reader = _Reader(data)
    _version(reader)
    partitions = reader.topic_partitions()
    reader.nullable_bytes()
    return partitions


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _INT16.pack(len(raw)) + raw


def encode_assignment(partitions: Iterable[tuple[str, Iterable[int]]], version: int) -> bytes:
    """``serializeAssignment`` at ``version``, without user data (null)."""
    items = list(partitions)
    out = bytearray(_INT16.pack(version))
    out += _INT32.pack(len(items))
    for topic, parts in items:
        plist = list(parts)
        out += _string(topic) + _INT32.pack(len(plist))
        for p in plist:
            out += _INT32.pack(p)
    out += _INT32.pack(-1)
    return bytes(out)


def encode_subscription(
    topics: Iterable[str],
    version: int = 0,
    owned: Iterable[tuple[str, Iterable[int]]] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
) -> bytes:
    """``serializeSubscription`` (for tests and tools), without user data."""
    names = list(topics)
    out = bytearray(_INT16.pack(version)) + _INT32.pack(len(names))
    for name in names:
        out += _string(name)
    out += _INT32.pack(-1)
    if version >= 1:
        items = list(owned)
        out += _INT32.pack(len(items))
        for topic, parts in items:
            plist = list(parts)
            out += _string(topic) + _INT32.pack(len(plist))
            for p in plist:
                out += _INT32.pack(p)
    if version >= 2:
        out += _INT32.pack(generation_id)
    if version >= 3:
        out += _INT16.pack(-1) if rack_id is None else _string(rack_id)
    return bytes(out)
