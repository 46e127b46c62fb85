"""Kafka's IncludeList and GetOffsetShell's --topic-partitions rules."""

from __future__ import annotations

import pytest

from broker.admin.topic_filter import (
    INT_MAX,
    FilterError,
    IncludeList,
    partition_rules,
    topic_and_partitions,
)


def test_include_list_matches_whole_names() -> None:
    f = IncludeList.of("orders.*")
    assert f.allows("orders") and f.allows("orders-eu")
    assert not f.allows("old-orders")
    dotted = IncludeList.of("test\\.topic")
    assert dotted.allows("test.topic") and not dotted.allows("testXtopic")


def test_include_list_commas_spaces_and_quotes() -> None:
    # TopicFilter: ',' -> '|', spaces dropped, quotes around it stripped
    f = IncludeList.of(' "a, b" ')
    assert f.regex == "a|b"
    assert f.allows("a") and f.allows("b") and not f.allows("ab")


def test_include_list_internal_topics() -> None:
    f = IncludeList.of(".*")
    assert f.allows("__consumer_offsets")
    assert not f.allows("__consumer_offsets", exclude_internal=True)
    assert f.allows("__mine", exclude_internal=True)


def test_include_list_invalid_regex() -> None:
    with pytest.raises(FilterError, match=r"^\[a is an invalid regex\.$"):
        IncludeList.of("[a")


def test_partition_rules() -> None:
    one, range_, open_low, open_high, every, anyone = partition_rules(
        "t1:1,t2:0-3,t3:5-,t4:-3,t5,:2"
    )
    assert one.allows("t1", 1) and not one.allows("t1", 0) and not one.allows("t2", 1)
    assert [p for p in range(6) if range_.allows("t2", p)] == [0, 1, 2]
    assert (open_low.low, open_low.high) == (5, INT_MAX)
    assert [p for p in range(6) if open_high.allows("t4", p)] == [0, 1, 2]
    assert every.allows("t5", 99) and not every.allows("t6", 0)
    assert anyone.allows("whatever", 2) and not anyone.allows("whatever", 1)
    # a trailing comma is dropped, as Java's String.split drops it
    assert len(partition_rules("t1,")) == 1


def test_partition_rules_refuse_bad_specs() -> None:
    with pytest.raises(FilterError, match="Invalid rule specification: t:x"):
        partition_rules("t:x")


def test_topic_and_partitions() -> None:
    rule = topic_and_partitions(None, "0,2")
    assert rule.allows("any", 0) and rule.allows("any", 2) and not rule.allows("any", 1)
    assert topic_and_partitions("a", None).allows("a", 7)
    with pytest.raises(FilterError, match="numeric partition ids, but received: 0,x"):
        topic_and_partitions(None, "0,x")
