"""Topics, partitions and offsets wanted (``broker.spark.selection``)."""

from __future__ import annotations

from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from broker.spark.selection import Range, Selection, apply_filter, from_options

COLUMNS = ("topic", "partition", "offset")


def _push(*filters: object) -> tuple[Selection, list[object]]:
    selection = Selection()
    left = []
    for f in filters:
        narrowed = apply_filter(selection, f, COLUMNS)
        if narrowed is None:
            left.append(f)
        else:
            selection = narrowed
    return selection, left


def test_offset_bounds_combine() -> None:
    s, left = _push(
        GreaterThanOrEqual(("offset",), 10),
        GreaterThan(("offset",), 12),
        LessThan(("offset",), 40),
        LessThanOrEqual(("offset",), 30),
    )
    assert not left
    assert s.offsets == Range(13, 31)
    assert [o for o in range(50) if s.wants_offset(o)] == list(range(13, 31))
    assert not s.wants_offset(None)  # SQL: an error row's null offset matches no bound
    assert Selection().wants_offset(None)


def test_equal_and_in_narrow_to_values() -> None:
    s, _ = _push(In(("offset",), (3, 7, 9, 100)), LessThan(("offset",), 50))
    assert [o for o in range(200) if s.wants_offset(o)] == [3, 7, 9]
    assert (s.offsets.effective_low(), s.offsets.effective_high()) == (3, 10)
    s, _ = _push(EqualTo(("partition",), 2), In(("partition",), (1, 2)))
    assert s.wants_partition("t", 2) and not s.wants_partition("t", 1)
    s, _ = _push(EqualTo(("partition",), 2), EqualTo(("partition",), 3))
    assert s.nothing


def test_topics() -> None:
    s, _ = _push(In(("topic",), ("a", "b")), EqualTo(("topic",), "b"))
    assert s.topics == frozenset({"b"})
    assert s.wants_partition("b", 0) and not s.wants_partition("a", 0)


def test_filters_left_to_spark() -> None:
    unsupported = [
        IsNull(("offset",)),
        Not(EqualTo(("topic",), "a")),
        StringStartsWith(("topic",), "a"),
        EqualTo(("timestamp",), 5),
        EqualTo(("offset",), "5"),
        GreaterThan(("offset",), 1.5),
        EqualTo(("offset",), True),
        EqualTo(("headers", "key"), "x"),
    ]
    s, left = _push(*unsupported)
    assert left == unsupported
    assert s == Selection()


def test_options() -> None:
    s = from_options({"topics": "a, b", "partitions": "0,2", "startOffset": "5", "endOffset": "9"})
    assert s.topics == frozenset({"a", "b"})
    assert s.wants_partition("a", 2) and not s.wants_partition("a", 1)
    assert [o for o in range(20) if s.wants_offset(o)] == [5, 6, 7, 8]
    assert from_options({}) == Selection()
