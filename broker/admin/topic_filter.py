"""Which topics and partitions a ``--topic`` / ``--topic-partitions`` option names.

``IncludeList`` is Kafka's ``TopicFilter.IncludeList`` (server-common), the
filter of kafka-topics.sh and kafka-get-offsets.sh: the option is a Java
regular expression that must match the whole name, with commas meaning
``|``, spaces dropped and quotes around it stripped (property files bring
them)::

    --topic 'orders.*'        orders, orders-eu, ...
    --topic 'a,b'             a or b
    --topic 'test\\.topic'    the topic test.topic only

``partition_rules`` is GetOffsetShell's ``--topic-partitions`` list::

    List:     Rule(,Rule)*
    Rule:     TopicRegex(:Partitions)? | :Partitions
    Partitions: N | N-M (M exclusive) | N- | -M

Python's ``re`` reads the expressions; the two dialects agree on what
topic names can hold (letters, digits, ``.``, ``_``, ``-``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``Topic.isInternal``: the topics the brokers own
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: GetOffsetShell.TOPIC_PARTITION_PATTERN
TOPIC_PARTITION_PATTERN = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
INT_MAX = 2**31 - 1


class FilterError(ValueError):
    """An option that names no usable filter (Kafka's message)."""


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


@dataclass(frozen=True)
class IncludeList:
    regex: str
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, raw: str) -> IncludeList:
        regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|")))
        regex = regex.replace(" ", "")
        try:
            return cls(regex, re.compile(regex))
        except re.error:
            raise FilterError(f"{regex} is an invalid regex.") from None

    def allows(self, topic: str, exclude_internal: bool = False) -> bool:
        return self.pattern.fullmatch(topic) is not None and not (
            exclude_internal and is_internal(topic)
        )


ANY_TOPIC = IncludeList.of(".*")


@dataclass(frozen=True)
class PartitionRule:
    """A topic filter and the partitions [low, high) it takes (``only``: one partition)."""

    topics: IncludeList
    low: int = 0
    high: int = INT_MAX
    only: int | None = None
    #: a set of partitions (``--partitions 0,1``); empty: every partition
    chosen: frozenset[int] = frozenset()

    def allows_topic(self, topic: str) -> bool:
        return self.topics.allows(topic)

    def allows(self, topic: str, partition: int) -> bool:
        if not self.topics.allows(topic):
            return False
        if self.only is not None:
            return partition == self.only
        if self.chosen:
            return partition in self.chosen
        return self.low <= partition < self.high


def partition_rules(text: str) -> list[PartitionRule]:
    """``--topic-partitions``: one rule per comma-separated item (split as Java's
    ``String.split`` does, trailing empty items dropped)."""
    specs = text.split(",")
    while specs and not specs[-1]:
        specs.pop()
    rules = []
    for spec in specs:
        match = TOPIC_PARTITION_PATTERN.fullmatch(spec)
        if match is None:
            raise FilterError(f"Invalid rule specification: {spec}")
        topic, only, low, high = (g or None for g in match.groups())
        topics = IncludeList.of(topic) if topic is not None else ANY_TOPIC
        if only is not None:
            rules.append(PartitionRule(topics, only=int(only)))
        else:
            rules.append(
                PartitionRule(
                    topics, int(low) if low else 0, int(high) if high is not None else INT_MAX
                )
            )
    return rules


def topic_and_partitions(topic: str | None, partitions: str | None) -> PartitionRule:
    """``--topic`` (default every topic) with ``--partitions 0,1`` (default all)."""
    chosen: frozenset[int] = frozenset()
    if partitions:
        try:
            chosen = frozenset(int(p) for p in partitions.split(","))
        except ValueError:
            raise FilterError(
                "--partitions expects a comma separated list of numeric partition ids, but"
                f" received: {partitions}"
            ) from None
    return PartitionRule(IncludeList.of(topic) if topic is not None else ANY_TOPIC, chosen=chosen)
